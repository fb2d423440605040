/* memfix verify: a candidate kernel against the reference, with defenses
 * (include/memfix/verify.h; the command is tools/cmd_verify.c). Knows no op:
 * the targets are the registry's (mf_op_desc.verify_targets).
 *
 * A target's run_case (src/ops/<op>.c) runs a built-in case exactly as
 * `memfix report` does, calling in place of the optimized entry a guard of the
 * candidate's type, which lists the call's buffers (mf_tb_buffer) and hands
 * them to mf_tb_guard: that copies the inputs into guarded buffers, calls the
 * candidate (mf_tb_candidate()) twice and checks guard bands, inputs, hidden
 * allocations and determinism, then hands the first result back to run_case,
 * which compares it with the reference and checks the scratch ceiling. The
 * defense that rejects a case comes from the guards or from the case's
 * mf_failure kind, never from its message. */
#define _GNU_SOURCE /* opendir */
#include "verify_internal.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MF_HAVE_HOST_KERNELS

/* ---- the driver -------------------------------------------------------------------- */
/* The target named 'name' among the registered ops' verify targets; NULL if none. */
const mf_verify_target *mf_vf_find_target(const char *name, const mf_op_desc **op_out)
{
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; name != NULL && i < n_ops; i++) {
        if (ops[i] == NULL) continue;
        for (int t = 0; t < ops[i]->n_verify_targets; t++)
            if (strcmp(ops[i]->verify_targets[t].name, name) == 0) {
                if (op_out != NULL) *op_out = ops[i];
                return &ops[i]->verify_targets[t];
            }
    }
    return NULL;
}

int mf_verify_supported(const char *op) { return mf_vf_find_target(op, NULL) != NULL; }

static char g_supported[1024];
static pthread_once_t g_supported_once = PTHREAD_ONCE_INIT;

static void list_supported(void)
{
    size_t n_ops = 0, len = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; i < n_ops; i++)
        for (int t = 0; ops[i] != NULL && t < ops[i]->n_verify_targets; t++) {
            const int w = snprintf(g_supported + len, sizeof g_supported - len, "%s%s", len ? ", " : "",
                                   ops[i]->verify_targets[t].name);
            if (w < 0 || (size_t)w >= sizeof g_supported - len) return;
            len += (size_t)w;
        }
}

const char *mf_verify_supported_ops(void)
{
    pthread_once(&g_supported_once, list_supported);
    return g_supported;
}

int mf_verify_n_cases(const char *op)
{
    const mf_op_desc *desc = NULL;
    const mf_verify_target *t = mf_vf_find_target(op, &desc);
    if (t == NULL) return -1;
    return t->n_cases != NULL ? t->n_cases() : desc->n_cases;
}

int mf_verify_default_cases(const char *op)
{
    const mf_verify_target *t = mf_vf_find_target(op, NULL);
    if (t == NULL) return -1;
    return t->default_cases > 4 ? t->default_cases : 4;
}

/* ---- cases by id (fixed, random, large) ------------------------------------ */
/* One case of target tg by id: run_id where the op has it, else run_case (fixed ids only). */
static mf_status run_case_id(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                             const mf_case_id *id, uint64_t salt, mf_case_result *out)
{
    if (tg->run_id != NULL) return tg->run_id(ctx, candidate, id, salt, out);
    if (id->kind != MF_CASE_FIXED) {
        memset(out, 0, sizeof *out);
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s' has no case generator", tg->name);
    }
    return tg->run_case(ctx, candidate, id->index, salt, out);
}

/* --dump (MF_VERIFY_DUMP_DIR, set by memfix verify --dump): name this case's dumps after the target and the
 * case id (the second sweep's with "-rerun"). */
static void dump_begin(const mf_verify_target *tg, const mf_case_id *id, uint64_t salt, verify_state *st)
{
    const char *dir = getenv("MF_VERIFY_DUMP_DIR");
    if (dir == NULL || dir[0] == '\0') return;
    char cid[32];
    mf_case_id_format(id, cid, sizeof cid);
    snprintf(st->dump_stem, sizeof st->dump_stem, "%.120s/%.40s-%s%s", dir, tg->name, cid,
             salt ? "-rerun" : "");
    mf_tb_set_dump_stem(st->dump_stem);
}

/* A passing case leaves no dump: its input files are removed. */
static void dump_end(const mf_verify_row *row, verify_state *st)
{
    mf_tb_set_dump_stem(NULL);
    if (st->dump_stem[0] == '\0' || !row->result.pass) return;
    const char *slash = strrchr(st->dump_stem, '/');
    if (slash == NULL) return;
    char dir[200];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - st->dump_stem), st->dump_stem);
    const char *base = slash + 1;
    char pat[240];
    snprintf(pat, sizeof pat, "%s-input-", base);
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, pat, strlen(pat)) != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        (void)remove(path);
    }
    closedir(d);
}

/* The defense of a case that ran and failed its checks: from its failure kind. */
static const char *defense_of(const mf_case_result *r, int all_zero)
{
    if (r->failure == MF_FAILURE_SCRATCH_CEILING) return "scratch-ceiling";
    if (all_zero || r->failure == MF_FAILURE_ALL_ZERO) return "all-zero";
    if (r->failure == MF_FAILURE_NONFINITE) return "nan-prefill";
    return "equivalence";
}

/* One run of case c (salt) in thread order 'sched' (mf_verify_lib) or in process (is == NULL); fills row. */
static void run_once(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                     const mf_case_id *c, uint64_t salt, iso_session *is, int sched, mf_verify_row *row)
{
    verify_state st;
    memset(&st, 0, sizeof st);
    st.candidate = candidate;
    st.iso = is;
    st.sched = sched;
    st.cand_seconds = st.own_seconds = NAN;
    mf_vf_g_state = &st;
    memset(row, 0, sizeof *row);
    row->cand_seconds = row->own_seconds = NAN;
    if (is != NULL && sched == 0) is->case_own_s = NAN; /* measured again by the case's first request */
    mf_clear_error();
    dump_begin(tg, c, salt, &st);
    mf_status s = run_case_id(ctx, tg, candidate, c, salt, &row->result);
    mf_case_result *r = &row->result;
    if (is != NULL) mf_vf_iso_memory_verdict(&st, r); /* the memory memfix measured outside the worker */
    if (st.defense[0] != '\0') {
        r->pass = 0;
        r->failure = MF_FAILURE_ERROR;
        r->max_abs_err = r->max_rel_err = NAN; /* not compared: shown as nan / null */
        snprintf(row->defense, sizeof row->defense, "%s", st.defense);
        snprintf(r->message, sizeof r->message, "%s", st.reason);
    } else if (s != MF_OK) {
        r->pass = 0;
        r->failure = MF_FAILURE_ERROR;
        r->max_abs_err = r->max_rel_err = NAN;
        snprintf(row->defense, sizeof row->defense, "error");
        if (r->message[0] == '\0')
            snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
    } else if (!r->pass) {
        snprintf(row->defense, sizeof row->defense, "%s", defense_of(r, st.all_zero));
    }
    row->cand_seconds = st.cand_seconds;
    row->own_seconds = st.own_seconds;
    const char *note = st.time_note;
    if (is == NULL)
        note = "in process (mf_verify): not timed";
    else if (note == NULL && !(st.cand_seconds > 0 && st.own_seconds > 0))
        note = "the case ended before the candidate's call"; /* e.g. the reference failed */
    snprintf(row->time_note, sizeof row->time_note, "%s", note != NULL ? note : "");
    if (is != NULL) snprintf(row->schedule, sizeof row->schedule, "%s", is->sched[sched].label);
    dump_end(row, &st);
    mf_vf_g_state = NULL;
}

static int output_check(const char *defense)
{
    return strcmp(defense, "equivalence") == 0 || strcmp(defense, "nan-prefill") == 0 ||
           strcmp(defense, "all-zero") == 0;
}

/* One case with every defense and, with workers, in every thread order; fills row (always). */
static void run_one(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void), const mf_case_id *c,
                    uint64_t salt, iso_session *is, mf_verify_row *row)
{
    run_once(ctx, tg, candidate, c, salt, is, 0, row);
    for (int k = 1; is != NULL && salt == 0 && row->result.pass && k < is->n_sched; k++) {
        mf_verify_row other;
        run_once(ctx, tg, candidate, c, salt, is, k, &other);
        if (other.result.pass) continue;
        char msg[sizeof other.result.message], note[sizeof row->time_note];
        snprintf(msg, sizeof msg, "%s", other.result.message);
        snprintf(note, sizeof note, "%s", row->time_note);
        const double cand = row->cand_seconds, own = row->own_seconds;
        *row = other;
        row->cand_seconds = cand;
        row->own_seconds = own;
        snprintf(row->time_note, sizeof row->time_note, "%s", note);
        if (output_check(other.defense)) { /* else the reason names the order already */
            snprintf(row->defense, sizeof row->defense, "schedule");
            char text[2 * sizeof row->result.message];
            snprintf(text, sizeof text,
                     "passed in forward order, failed in %s (a race between threads: a missing "
                     "__syncthreads?): %s",
                     is->sched[k].label, msg);
            mf_tb_copy_msg(row->result.message, sizeof row->result.message, text);
        }
        break;
    }
}

/* A hang is judged once: after a case rejected by 'timeout' (with workers, unless keep_going) the cases not
 * yet run get the defense "not-run", so a candidate that hangs costs one time limit, not one per case. */
static int stops_run(const iso_session *is, const mf_verify_row *row)
{
    return is != NULL && !is->keep_going && !row->result.pass && strcmp(row->defense, "timeout") == 0;
}

static void not_run(const mf_verify_target *tg, const mf_case_id *c, const mf_case_id *hung,
                    mf_verify_row *row)
{
    char cid[32], hid[32], desc[sizeof row->result.shape + sizeof row->result.dtype];
    mf_case_id_format(c, cid, sizeof cid);
    mf_case_id_format(hung, hid, sizeof hid);
    memset(row, 0, sizeof *row);
    row->cand_seconds = row->own_seconds = NAN;
    snprintf(row->time_note, sizeof row->time_note, "not run");
    /* the row names its case as a run row does: the op, the dtype and the shape (the target's describe) */
    size_t bytes = 0;
    const char *dot = strchr(tg->name, '.');
    snprintf(row->result.op, sizeof row->result.op, "%.*s",
             dot != NULL ? (int)(dot - tg->name) : (int)strlen(tg->name), tg->name);
    if (tg->describe != NULL && tg->describe(c, desc, sizeof desc, &bytes) == MF_OK) {
        const char *sp = strchr(desc, ' ');
        snprintf(row->result.dtype, sizeof row->result.dtype, "%.*s", sp != NULL ? (int)(sp - desc) : 0,
                 desc);
        mf_tb_copy_msg(row->result.shape, sizeof row->result.shape, sp != NULL ? sp + 1 : desc);
    }
    snprintf(row->result.variant, sizeof row->result.variant, "candidate");
    snprintf(row->defense, sizeof row->defense, "not-run");
    snprintf(row->result.message, sizeof row->result.message,
             "case %s not run: case %s timed out, which ends the run (--keep-going runs every case)", cid,
             hid);
}

/* Both sweeps over the cases ids[0..n). */
void mf_vf_run_all(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                   const mf_case_id *ids, int n, iso_session *is, mf_verify_row *rows)
{
    /* Sweep 1: every case in order. */
    for (int c = 0; c < n; c++) {
        run_one(ctx, tg, candidate, &ids[c], 0, is, &rows[c]);
        if (stops_run(is, &rows[c])) {
            char backend[sizeof rows[c].result.backend];
            snprintf(backend, sizeof backend, "%s", rows[c].result.backend);
            for (int r = c + 1; r < n; r++) {
                not_run(tg, &ids[r], &ids[c], &rows[r]);
                snprintf(rows[r].result.backend, sizeof rows[r].result.backend, "%s", backend);
            }
            return;
        }
    }
    /* Sweep 2: the cases that passed, in reverse order, fresh buffers, other inputs. */
    for (int c = n - 1; c >= 0; c--) {
        if (!rows[c].result.pass) continue;
        mf_verify_row again;
        run_one(ctx, tg, candidate, &ids[c], 1, is, &again);
        if (again.result.pass) continue;
        char msg[sizeof again.result.message], note[sizeof rows[c].time_note];
        snprintf(msg, sizeof msg, "%s", again.result.message);
        snprintf(note, sizeof note, "%s", rows[c].time_note);
        const double cand = rows[c].cand_seconds, own = rows[c].own_seconds;
        rows[c] = again;
        rows[c].cand_seconds = cand;
        rows[c].own_seconds = own;
        snprintf(rows[c].time_note, sizeof rows[c].time_note, "%s", note);
        if (output_check(again.defense)) {
            snprintf(rows[c].defense, sizeof rows[c].defense, "rerun");
            char text[sizeof msg + 80];
            snprintf(text, sizeof text,
                     "second sweep (reverse case order, fresh buffers, different inputs): %s", msg);
            mf_tb_copy_msg(rows[c].result.message, sizeof rows[c].result.message, text);
        }
        if (stops_run(is, &rows[c]))
            return; /* the second sweep's cases before it stay as the first left them */
    }
}

mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows, size_t cap,
                    size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(op);
    const int n = mf_verify_n_cases(op);
    if (n < 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    mf_case_id *ids = (mf_case_id *)calloc((size_t)n + 1, sizeof *ids);
    if (ids == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "case ids");
    for (int c = 0; c < n; c++) ids[c] = mf_tb_fixed_id(c);
    mf_status s = mf_verify_ids(ctx, op, candidate, ids, (size_t)n, rows, cap, n_rows);
    free(ids);
    return s;
}

mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void), const mf_case_id *ids,
                        size_t n_ids, mf_verify_row *rows, size_t cap, size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(candidate);
    MF_CHECK_NOT_NULL(rows);
    MF_CHECK_NOT_NULL(ids);
    const mf_verify_target *tg = mf_vf_find_target(op, NULL);
    if (tg == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    if (cap < n_ids) MF_FAIL(MF_ERR_INVALID_SIZE, "rows holds %zu rows; %zu cases asked for", cap, n_ids);
    mf_vf_run_all(ctx, tg, candidate, ids, (int)n_ids, NULL, rows);
    *n_rows = n_ids;
    return MF_OK;
}

#else /* no host kernels: no ops, so nothing takes candidates */

mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void), const mf_case_id *ids,
                        size_t n_ids, mf_verify_row *rows, size_t cap, size_t *n_rows)
{
    (void)ctx, (void)candidate, (void)ids, (void)n_ids, (void)rows, (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

int mf_verify_supported(const char *op)
{
    (void)op;
    return 0;
}

const char *mf_verify_supported_ops(void) { return ""; }

int mf_verify_n_cases(const char *op)
{
    (void)op;
    return -1;
}

int mf_verify_default_cases(const char *op)
{
    (void)op;
    return -1;
}

mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows, size_t cap,
                    size_t *n_rows)
{
    (void)ctx;
    (void)candidate;
    (void)rows;
    (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels, so no candidates",
            op != NULL ? op : "(null)");
}

#endif
