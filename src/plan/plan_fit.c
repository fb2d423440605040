/* memfix plan --gpu-mem: whether the configured step fits a GPU's memory and,
 * when it does not, the changes that make it fit, in order of their cost
 * (include/memfix/plan.h states the order and the search of each step), and
 * the parser of memory sizes ("80GB", "80GiB", "85899345920"). */
#include "mf_internal.h"
#include "memfix/plan.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- sizes -------------------------------------------------------------------------- */
mf_status mf_plan_parse_size(const char *text, size_t *bytes)
{
    MF_CHECK_NOT_NULL(text);
    MF_CHECK_NOT_NULL(bytes);
    *bytes = 0;
    static const struct {
        const char *unit;
        size_t scale;
    } units[] = {
        { "", 1 },
        { "B", 1 },
        { "KB", 1000ULL },
        { "MB", 1000000ULL },
        { "GB", 1000000000ULL },
        { "TB", 1000000000000ULL },
        { "K", 1ULL << 10 },
        { "M", 1ULL << 20 },
        { "G", 1ULL << 30 },
        { "T", 1ULL << 40 },
        { "KiB", 1ULL << 10 },
        { "MiB", 1ULL << 20 },
        { "GiB", 1ULL << 30 },
        { "TiB", 1ULL << 40 },
    };
    const char *p = text;
    if (!isdigit((unsigned char)*p))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "'%s' is not a size: it must start with a digit (e.g. 80GB, 80GiB or a number of bytes)",
                text);
    size_t whole = 0;
    for (; isdigit((unsigned char)*p); p++)
        if (!mf_size_mul(whole, 10, &whole) || !mf_size_add(whole, (size_t)(*p - '0'), &whole))
            MF_FAIL(MF_ERR_OVERFLOW, "the size '%s' does not fit in %zu bytes", text, (size_t)SIZE_MAX);
    size_t frac = 0, frac_den = 1;
    int decimals = 0;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "'%s' is not a size: a digit must follow the decimal point",
                    text);
        for (; isdigit((unsigned char)*p); p++, decimals++) {
            if (decimals == 6) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "'%s' has more than 6 decimals", text);
            frac = frac * 10 + (size_t)(*p - '0');
            frac_den *= 10;
        }
    }
    if (*p == ' ') p++;
    size_t scale = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(p, units[i].unit) == 0) scale = units[i].scale;
    if (scale == 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "'%s' has an unknown unit '%s': use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, "
                "TiB, K, M, G, T (powers of 1024)",
                text, p);
    if (decimals > 0 && scale == 1)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "'%s' is not a whole number of bytes", text);
    size_t b;
    /* frac < 10^6 and scale <= 2^40: frac * scale < 2^60 */
    if (!mf_size_mul(whole, scale, &b) || !mf_size_add(b, frac * scale / frac_den, &b))
        MF_FAIL(MF_ERR_OVERFLOW, "the size '%s' does not fit in %zu bytes", text, (size_t)SIZE_MAX);
    if (b == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "the size '%s' is zero bytes", text);
    *bytes = b;
    return MF_OK;
}

/* ---- the fit ------------------------------------------------------------------------ */
/* The configured total and the states of c; SIZE_MAX for both when c is
 * invalid or its totals overflow (such a configuration never fits). */
static size_t total_of(const mf_plan_config *c, size_t *states)
{
    mf_plan_memory m;
    if (mf_plan_training_memory(c, &m) != MF_OK) {
        if (states) *states = SIZE_MAX;
        return SIZE_MAX;
    }
    if (states) {
        size_t s = 0;
        if (!mf_size_add(m.weights_gpu, m.grads_gpu, &s) || !mf_size_add(s, m.optimizer_gpu, &s))
            s = SIZE_MAX;
        *states = s;
    }
    return m.total;
}

static int fits(const mf_plan_config *c, size_t gpu) { return total_of(c, NULL) <= gpu; }

/* 1,234,567 */
static void commas(char *buf, size_t cap, int64_t v)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)v);
    const size_t n = strlen(digits);
    size_t o = 0;
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* Appends the change with cfg as it now is; 1 when it fits (the search stops). */
static int push(mf_plan_fit *fit, mf_plan_change change, const mf_plan_config *cfg, const char *setting,
                const char *what)
{
    if (fit->n_suggestions == MF_PLAN_MAX_SUGGESTIONS) return 1;
    mf_plan_suggestion *s = &fit->suggestions[fit->n_suggestions++];
    memset(s, 0, sizeof *s);
    s->change = change;
    snprintf(s->setting, sizeof s->setting, "%s", setting);
    snprintf(s->what, sizeof s->what, "%s", what);
    s->cfg = *cfg;
    s->total = total_of(cfg, NULL);
    s->fits = s->total <= fit->gpu_bytes;
    fit->reachable = s->fits;
    return s->fits;
}

static const char *const zero_shards[] = { "nothing sharded", "optimizer states sharded",
                                           "optimizer states and gradients sharded",
                                           "weights, gradients and optimizer states sharded" };

/* Step 4: the cheapest (dp, ZeRO stage) that fits: the stages at the configured
 * degree first, then at twice as many GPUs, and so on. When none fits, the
 * cheapest whose states take at most half of the GPU. 1 when it fits. */
static int step_zero_dp(mf_plan_fit *fit, mf_plan_config *cur)
{
    const size_t gpu = fit->gpu_bytes;
    const int64_t max_dp = cur->dp > MF_PLAN_FIT_MAX_DP ? cur->dp : MF_PLAN_FIT_MAX_DP;
    mf_plan_config best = *cur, fallback = *cur;
    size_t cur_states;
    (void)total_of(cur, &cur_states);
    /* a fallback only when the states take more than half of the GPU now */
    const int want_fallback = cur_states > gpu / 2;
    int found = 0, have_fallback = 0;
    for (int64_t dp = cur->dp; !found; dp *= 2) {
        for (int z = cur->zero; z <= 3 && !found; z++) {
            if (dp == cur->dp && z == cur->zero) continue;
            if (dp == 1 && z > cur->zero) continue; /* ZeRO shards nothing over one GPU */
            mf_plan_config c = *cur;
            c.dp = dp;
            c.zero = z;
            size_t states;
            const size_t total = total_of(&c, &states);
            if (total <= gpu) {
                best = c;
                found = 1;
            } else if (want_fallback && !have_fallback && states <= gpu / 2) {
                fallback = c;
                have_fallback = 1;
            }
        }
        if (dp > max_dp / 2) break; /* the next degree would pass max_dp */
    }
    if (!found && !have_fallback) return 0;
    const mf_plan_config chosen = found ? best : fallback;
    char setting[64] = "", what[192], n[32];
    int at = 0;
    if (chosen.dp != cur->dp)
        at += snprintf(setting + at, sizeof setting - (size_t)at, "--dp %lld", (long long)chosen.dp);
    if (chosen.zero != cur->zero)
        snprintf(setting + at, sizeof setting - (size_t)at, "%s--zero %d", at ? " " : "", chosen.zero);
    commas(n, sizeof n, chosen.dp);
    snprintf(what, sizeof what, "ZeRO-%d over %s GPU%s: %s%s", chosen.zero, n, chosen.dp == 1 ? "" : "s",
             zero_shards[chosen.zero],
             chosen.dp != cur->dp ? " (more GPUs, more communication)" : " (more communication)");
    *cur = chosen;
    return push(fit, MF_PLAN_CHANGE_ZERO_DP, cur, setting, what);
}

/* The largest value in [1, hi] for which set(c, v) fits, by bisection (the
 * totals grow with it); 0 when 1 does not fit. */
static int64_t largest_fitting(const mf_plan_config *cur, size_t gpu, int64_t hi, int seq)
{
    int64_t lo = 1;
    mf_plan_config c = *cur;
    if (seq)
        c.seq = 1;
    else
        c.batch = 1;
    if (!fits(&c, gpu)) return 0;
    while (lo < hi) { /* lo fits; is there a larger one? */
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (seq)
            c.seq = mid;
        else
            c.batch = mid;
        if (fits(&c, gpu))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

mf_status mf_plan_fit_gpu(const mf_plan_config *cfg, size_t gpu_bytes, mf_plan_fit *out)
{
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof *out);
    MF_CHECK_NOT_NULL(cfg);
    if (gpu_bytes == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "gpu_bytes must be > 0");
    mf_plan_memory m;
    MF_TRY(mf_plan_training_memory(cfg, &m));
    if (m.total == SIZE_MAX)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "the %s loss has no figure in this build (no op plans the loss)",
                cfg->loss == MF_PLAN_LOSS_FUSED ? "fused" : "chunked");
    out->gpu_bytes = gpu_bytes;
    out->total = m.total;
    out->fits = m.total <= gpu_bytes;
    out->reachable = out->fits;
    if (out->fits) {
        out->headroom = gpu_bytes - m.total;
        return MF_OK;
    }
    out->over = m.total - gpu_bytes;

    mf_plan_config cur = *cfg;
    char setting[64], what[192], a[32], b[32];
    if (cur.attention == MF_PLAN_ATTENTION_STANDARD) {
        cur.attention = MF_PLAN_ATTENTION_TILED;
        if (push(out, MF_PLAN_CHANGE_ATTENTION, &cur, "--attention tiled",
                 "tiled attention (FlashAttention): the same result without the N x N scores"))
            return MF_OK;
    }
    if (cur.loss != MF_PLAN_LOSS_FUSED && m.loss_fused != SIZE_MAX) {
        cur.loss = MF_PLAN_LOSS_FUSED;
        if (push(out, MF_PLAN_CHANGE_LOSS, &cur, "--loss fused",
                 "the fused linear cross-entropy: the same loss, logits recomputed in tiles in the "
                 "backward pass instead of stored"))
            return MF_OK;
    }
    if (!cur.checkpointing) {
        cur.checkpointing = 1;
        if (push(out, MF_PLAN_CHANGE_CHECKPOINTING, &cur, "--ckpt 1",
                 "full activation checkpointing: each layer's forward pass runs again in the backward "
                 "pass (about a third more compute)"))
            return MF_OK;
    }
    if (step_zero_dp(out, &cur)) return MF_OK;
    if (cur.batch > 1) {
        const int64_t was = cur.batch, bt = largest_fitting(&cur, gpu_bytes, cur.batch - 1, 0);
        cur.batch = bt > 0 ? bt : 1;
        const int64_t steps = (was + cur.batch - 1) / cur.batch;
        snprintf(setting, sizeof setting, "--batch %lld", (long long)cur.batch);
        snprintf(what, sizeof what,
                 "micro-batch %lld instead of %lld: accumulate gradients over %lld micro-batches for the "
                 "same global batch (%s)",
                 (long long)cur.batch, (long long)was, (long long)steps,
                 was % cur.batch == 0 ? "more steps, same math" : "more steps; round the global batch");
        if (push(out, MF_PLAN_CHANGE_BATCH, &cur, setting, what)) return MF_OK;
    }
    if (cur.seq > 1) {
        int64_t s = largest_fitting(&cur, gpu_bytes, cur.seq - 1, 1);
        if (s >= 1024) s -= s % 1024;
        if (s > 0) {
            commas(a, sizeof a, s);
            commas(b, sizeof b, cur.seq);
            cur.seq = s;
            snprintf(setting, sizeof setting, "--seq %lld", (long long)s);
            snprintf(what, sizeof what,
                     "%s tokens per sequence instead of %s: the model trains on shorter contexts", a, b);
            if (push(out, MF_PLAN_CHANGE_SEQ, &cur, setting, what)) return MF_OK;
        }
    }
    return MF_OK;
}
