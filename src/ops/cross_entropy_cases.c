/* The registry entry of the linear cross-entropy fix (mf_op_cross_entropy): the variants,
 * the built-in and seeded random cases and their runner for memfix report, verify and the
 * suites, memfix verify's targets with their guards, the op's tolerance rows and the
 * descriptor (its bench and plan parts: cross_entropy_bench.c, cross_entropy_plan.c). */
#include "memfix/cross_entropy.h"

#include "cross_entropy.cuh"
#include "cross_entropy_registry.h"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_internal.h"
#include "op_common.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- registry entry: built-in cases for `memfix report` ---------------------------- */
/* Indices are mf_ce_variant values. */
static const char *const ce_variant_names[] = { "chunked", "fused" };
#define CE_N_VARIANTS ((int)(sizeof(ce_variant_names) / sizeof(ce_variant_names[0])))

typedef struct ce_case {
    int64_t n_rows, hidden_dim, vocab, chunk_rows;
    mf_dtype dtype;
    mf_ce_reduction reduction;
    int shift, bias;
    int64_t seq_len;
    float smoothing, z_loss, softcap;
    /* the ignored rows: labels of rows i % ignore_mod == 3 are ignore_index (0, 0 in the fixed rows:
     * the default -100 every 7th row); a generated ignore_index in [0, V) is also a label of other rows */
    int64_t ignore_index, ignore_mod;
    /* The equivalence and memory suites' cases only (0 in the report cases): CE_F_* flags, and the row of
     * hidden that holds a NaN (CE_F_NAN_ROW). */
    int flags;
    int64_t nan_row;
} ce_case;

/* CE_F_SPLIT: two passes, each into its own NaN-filled outputs and compared in full: the fused
 * forward+backward writing lse too, then mf_cross_entropy_forward saving lse and mf_cross_entropy_backward
 * from it; the upstream gradient in [-1.5, 1.5) (both signs); the chunked variant's plan must pick exactly
 * C rows (the budget is the ceiling at C). CE_F_FWD / CE_F_BWD: one pass only, as memfix verify runs a
 * candidate (mf_cross_entropy_forward compared on loss and lse; mf_cross_entropy_backward from the
 * reference's lse, compared on the gradients): the memory suite's per-pass scratch. CE_F_DEFAULT_BUDGET:
 * the default 1 GiB budget (C = 0 in the table), so the chunked tile is capped at the logits it replaces.
 * CE_F_ALL_IGNORED: every label is ignore_index (the loss and every gradient must be exactly 0).
 * CE_F_NAN_ROW: hidden[nan_row][1] = NaN (its label a valid one; the loss and that row of grad_hidden
 * must be NaN, row 0 finite). CE_F_ONLY_GW: grad_hidden and grad_bias NULL. CE_F_NULL_UPSTREAM:
 * grad_loss NULL (an upstream gradient of 1). CE_F_FUSED_ONLY: the fused variant's tile edges only.
 * CE_F_BIG_V: V = 151,936; the fused variant runs it in its own test case (fused_vocab), not in its sweep. */
enum {
    CE_F_SPLIT = 1,
    CE_F_FWD = 2,
    CE_F_BWD = 4,
    CE_F_DEFAULT_BUDGET = 8,
    CE_F_ALL_IGNORED = 16,
    CE_F_NAN_ROW = 32,
    CE_F_ONLY_GW = 64,
    CE_F_NULL_UPSTREAM = 128,
    CE_F_FUSED_ONLY = 256,
    CE_F_BIG_V = 512
};

/* Small shapes (fast in host mode): the document's shifted mean loss over two
 * sequences in four chunks, fp32 and bf16; every option with a ragged last
 * chunk and a per-row upstream gradient; a one-row chunk. The report cases
 * (the first 5) run on both variants (the fused one ignores C). */
static const ce_case ce_cases[] = {
    { 64, 32, 500, 16, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 1, 0, 32, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 64, 32, 500, 16, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 1, 0, 32, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 45, 24, 301, 20, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.1f, 1e-3f, 15.0f, 0, 0, 0, 0 },
    { 45, 24, 301, 20, MF_DTYPE_BF16, MF_CE_REDUCTION_SUM, 1, 1, 15, 0.1f, 1e-3f, 15.0f, 0, 0, 0, 0 },
    { 7, 16, 129, 1, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    /* The equivalence suite (tests/equivalence/test_cross_entropy_equiv.c runs every case; flags above).
     * 5-16: dtype x reduction x shift, with bias, a ragged last chunk (24 = 10 + 10 + 4). */
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_SUM, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_NONE, 1, 1, 12, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    /* 17-24: label smoothing, z-loss, softcap (small: tanh far from linear) each alone, then all with shift
     * and reduction none; f32 and bf16. */
    { 21, 16, 257, 7, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.1f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.1f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.01f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.01f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 2.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 2.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 1, 1, 0, 0.1f, 0.01f, 2.0f, 0, 0, CE_F_SPLIT, 0 },
    { 21, 16, 257, 7, MF_DTYPE_BF16, MF_CE_REDUCTION_NONE, 1, 1, 0, 0.1f, 0.01f, 2.0f, 0, 0, CE_F_SPLIT, 0 },
    /* 25-26: a ragged last chunk, 45 = 20 + 20 + 5, sum. 27-28: a chunk of one row (seven chunks). */
    { 45, 16, 301, 20, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 45, 16, 301, 20, MF_DTYPE_BF16, MF_CE_REDUCTION_SUM, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 7, 16, 129, 1, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    { 7, 16, 129, 1, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_SPLIT, 0 },
    /* 29-30: the default 1 GiB budget at a small N: the tile capped at the logits (f32: 9 of 10 rows, bf16:
     * 4); V = 1000 is several 256-thread strides per row. */
    { 10, 16, 1000, 0, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 1, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_DEFAULT_BUDGET, 0 },
    { 10, 16, 1000, 0, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 1, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_DEFAULT_BUDGET, 0 },
    /* 31-32: every row ignored with mean: loss 0 and zero gradients (PyTorch: NaN). 33-34: a NaN in hidden
     * (row 13, in the second chunk) propagates to the mean loss and its row of grad_hidden. */
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_ALL_IGNORED, 0 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_ALL_IGNORED, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_NAN_ROW, 13 },
    { 24, 16, 200, 10, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_NAN_ROW, 13 },
    /* 35: only grad_weight requested (frozen embeddings). 36-38: grad_loss NULL (1) for mean, sum, none. */
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_ONLY_GW, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_NULL_UPSTREAM, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_NULL_UPSTREAM, 0 },
    { 24, 16, 200, 10, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_NULL_UPSTREAM, 0 },
    /* 39-44: odd N, D and V: a ragged 64-row block (67 = 64 + 3: two CTAs of the fused variant, grad_W from
     * both), D = 37 and V = 131 not multiples of the 32 / 64 / 16 tile edges; every option, f32 and bf16 x
     * mean, sum, none. */
    { 67, 37, 131, 20, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT,
      0 },
    { 67, 37, 131, 20, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT,
      0 },
    { 67, 37, 131, 20, MF_DTYPE_F32, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT, 0 },
    { 67, 37, 131, 20, MF_DTYPE_BF16, MF_CE_REDUCTION_SUM, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT,
      0 },
    { 67, 37, 131, 20, MF_DTYPE_F32, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT,
      0 },
    { 67, 37, 131, 20, MF_DTYPE_BF16, MF_CE_REDUCTION_NONE, 0, 1, 0, 0.05f, 0.001f, 5.0f, 0, 0, CE_F_SPLIT,
      0 },
    /* 45-46, fused only: several row blocks and vocabulary strips with ragged edges. bf16 runs 128-row blocks
     * and 512-column strips of 128-column tiles: N = 133 is two CTAs (the second with 5 rows; grad_W and
     * grad_bias get atomics from both), V = 645 a full strip plus a strip of two tiles (the last with 5
     * columns), D = 40 cp.async with a ragged last 32-wide slice; f32 (64-row blocks): three CTAs. Label
     * smoothing and bias: every column's gradient counts. */
    { 133, 40, 645, 50, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.1f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_FUSED_ONLY, 0 },
    { 133, 40, 645, 50, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 1, 0, 0.1f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_FUSED_ONLY, 0 },
    /* 47-48: the document's vocabulary, V = 151,936, on a few rows: ~594 strides per thread in every row
     * loop, an fp32 softmax over 151,936 terms, grad_W accumulated over three chunks (12 = 5 + 5 + 2). The
     * fused variant runs them in its own test case (fused_vocab: 1187 CTAs of 256 threads per pass). */
    { 12, 8, 151936, 5, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 1, 0, 6, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_BIG_V, 0 },
    { 12, 8, 151936, 5, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 1, 0, 6, 0.0f, 0.0f, 0.0f, 0, 0,
      CE_F_SPLIT | CE_F_BIG_V, 0 },
    /* 49-72, the memory suite's (tests/memory/test_cross_entropy_memory.c): N in {48, 96} x V in {300, 900} x
     * f32, bf16, each as fwd+bwd (lse NULL), forward alone and backward alone; D = 16, C = 8, mean. */
    { 48, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 48, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 48, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 48, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 48, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 48, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 48, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 48, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 48, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 48, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 48, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 48, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 96, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 96, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 96, 16, 300, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 96, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 96, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 96, 16, 300, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 96, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 96, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 96, 16, 900, 8, MF_DTYPE_F32, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
    { 96, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, 0, 0 },
    { 96, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_FWD, 0 },
    { 96, 16, 900, 8, MF_DTYPE_BF16, MF_CE_REDUCTION_MEAN, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0, 0, CE_F_BWD, 0 },
};
#define CE_N_CASES ((int)(sizeof(ce_cases) / sizeof(ce_cases[0])))
/* memfix report's rows and memfix verify's fixed cases: the first 5 (the rest are the suites'). */
#define CE_N_REPORT_CASES 5

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed, k = i + seed: ignore_index cycles over -1, a label
 * in [0, V) that also appears among the used labels, -100, and V + 5 (never a
 * label); reductions over mean, sum, none (k mod 3); dtype k / 2 mod 2; shift
 * with a seq_len dividing N on odd k; smoothing, z-loss, softcap, bias and the
 * chunk size drawn. Even N, odd D and V; forward case k mod 4 == 0 has N > 4096
 * (lse beyond index 4096); backward cases have V*D > 4096 (grad_weight). The
 * large case: N*V > 2^31 logits (never materialized by the fix; the reference
 * does). */
static void ce_generate(const mf_case_id *id, int backward, ce_case *c)
{
    mf_tb_rng r = mf_tb_case_rng(backward ? "cross_entropy.backward" : "cross_entropy", id);
    const int k = (int)(((uint64_t)id->index + id->seed) % 12u);
    memset(c, 0, sizeof *c);
    c->dtype = (k / 2) % 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->reduction = (mf_ce_reduction)(k % 3);
    if (backward) { /* grad_weight (V*D) > 4096; a straightforward candidate is O(N*V*D^2) */
        c->n_rows = mf_tb_rand_int(&r, 20, 100) * 2;
        c->hidden_dim = mf_tb_rand_int(&r, 4, 12) * 2 + 1;
        c->vocab = mf_tb_rand_int(&r, 48, 200) * 2 + 1;
        while (c->vocab * c->hidden_dim <= 4096) c->vocab += 2;
    } else if (k % 4 == 0) {
        c->n_rows = mf_tb_rand_int(&r, 2049, 2300) * 2; /* even: a seq_len may divide it */
        c->hidden_dim = mf_tb_rand_int(&r, 4, 8) * 2 + 1;
        c->vocab = mf_tb_rand_int(&r, 32, 90) * 2 + 1;
    } else {
        c->n_rows = mf_tb_rand_int(&r, 20, 300) * 2;
        c->hidden_dim = mf_tb_rand_int(&r, 4, 24) * 2 + 1;
        c->vocab = mf_tb_rand_int(&r, 48, 600) * 2 + 1;
    }
    if (id->kind == MF_CASE_LARGE)
        c->n_rows = 16384, c->hidden_dim = 16, c->vocab = 131101; /* N*V = 2^31 + 2^19 */
    c->chunk_rows = mf_tb_rand_int(&r, c->n_rows / 16 + 1, c->n_rows);
    c->shift = k % 2;
    if (c->shift) { /* seq_len: a divisor of N (or 0: the whole batch one sequence) */
        static const int64_t divs[] = { 2, 4, 5, 8, 10 };
        c->seq_len = 0;
        for (int t = 0; t < 5 && c->seq_len == 0; t++) {
            const int64_t nseq = mf_tb_rand_pick(&r, divs, 5);
            if (c->n_rows % nseq == 0) c->seq_len = c->n_rows / nseq;
        }
    }
    c->bias = mf_tb_rand_chance(&r, 1, 2);
    c->smoothing = mf_tb_rand_chance(&r, 1, 2) ? (float)mf_tb_rand_int(&r, 1, 30) / 100.0f : 0.0f;
    c->z_loss = mf_tb_rand_chance(&r, 1, 2) ? (float)mf_tb_rand_int(&r, 1, 20) * 1e-4f : 0.0f;
    c->softcap = mf_tb_rand_chance(&r, 1, 2) ? (float)mf_tb_rand_int(&r, 3, 30) : 0.0f;
    const int ik = (int)(((uint64_t)id->index + id->seed) % 4u);
    c->ignore_index = ik == 0   ? -1
                      : ik == 1 ? mf_tb_rand_int(&r, 0, c->vocab - 1)
                      : ik == 2 ? -100
                                : c->vocab + 5;
    c->ignore_mod = mf_tb_rand_int(&r, 4, 9); /* rows i % mod == 3 exist */
}

static mf_status ce_case_of(const mf_case_id *id, int backward, ce_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= CE_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "cross_entropy: case %d out of range [0, %d)", id->index,
                    CE_N_CASES);
        *c = ce_cases[id->index];
        c->ignore_index = MF_CE_DEFAULT_IGNORE_INDEX;
        c->ignore_mod = 7;
    } else {
        ce_generate(id, backward, c);
    }
    return MF_OK;
}

/* memfix verify's fixed cases: the report cases (the rest are the suites'). */
static mf_status ce_verify_id_check(const mf_case_id *id)
{
    if (id->kind == MF_CASE_FIXED && (id->index < 0 || id->index >= CE_N_REPORT_CASES))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "cross_entropy: verify case %d out of range [0, %d)", id->index,
                CE_N_REPORT_CASES);
    return MF_OK;
}

static int ce_verify_n_cases(void) { return CE_N_REPORT_CASES; }

static void ce_shape(const ce_case *c, const char *suffix, char *buf, size_t cap)
{
    static const char *const red_names[] = { "mean", "sum", "none" };
    char rows[32], extra[96] = "";
    if (c->flags & CE_F_ALL_IGNORED)
        snprintf(rows, sizeof rows, "every row");
    else
        snprintf(rows, sizeof rows, "rows i%%%lld==3", (long long)c->ignore_mod);
    /* the suites' options (none in the report cases) */
    if (c->flags & CE_F_NAN_ROW)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " NaN in row %lld",
                 (long long)c->nan_row);
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "%s%s%s%s",
             (c->flags & CE_F_DEFAULT_BUDGET) ? " default budget" : "",
             (c->flags & CE_F_ONLY_GW) ? " grad_weight only" : "",
             (c->flags & CE_F_NULL_UPSTREAM) ? " grad_loss NULL" : "",
             (c->flags & CE_F_SPLIT) ? " fwd+bwd and fwd;bwd" : "");
    const int n = snprintf(
        buf, cap,
        "N=%lld D=%lld V=%lld C=%lld %s%s%s seq_len=%lld eps=%g z=%g cap=%g ignore_index=%lld on %s%s%s",
        (long long)c->n_rows, (long long)c->hidden_dim, (long long)c->vocab, (long long)c->chunk_rows,
        red_names[c->reduction], c->shift ? " shift" : "", c->bias ? " bias" : "", (long long)c->seq_len,
        (double)c->smoothing, (double)c->z_loss, (double)c->softcap, (long long)c->ignore_index, rows, extra,
        suffix);
    mf_tb_mark_cut(buf, cap, n);
}

static mf_status ce_describe_dir(const mf_case_id *id, const char *suffix, char *buf, size_t cap,
                                 size_t *bytes)
{
    MF_TRY(ce_verify_id_check(id));
    ce_case c;
    MF_TRY(ce_case_of(id, suffix[1] == 'b', &c));
    char shape[192];
    ce_shape(&c, suffix, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    const size_t n = (size_t)c.n_rows, d = (size_t)c.hidden_dim, v = (size_t)c.vocab;
    /* the reference's N x V logits and probabilities in double, inputs and outputs on both sides */
    *bytes = 16 * n * v + 4 * (3 * (n * d + v * d + v) + 6 * n);
    return MF_OK;
}

MF_TB_DESCRIBE_PASS(ce_describe_fwd, ce_describe_dir, " fwd")

MF_TB_DESCRIBE_PASS(ce_describe_bwd, ce_describe_dir, " bwd")

/* The axes of a buffer by its name (include/memfix/cross_entropy.h's layouts; "fwd;bwd lse" is lse), which a
 * rejection names an element by: hidden, grad_hidden (token, d); weight, grad_weight (class, d); bias,
 * grad_bias (class); labels, lse (token); loss and grad_loss (token) with reduction none, else a scalar. */
static mf_axes ce_axes(const char *name, size_t n_loss, int64_t N, int64_t D, int64_t V)
{
    const char *b = strrchr(name, ' ') != NULL ? strrchr(name, ' ') + 1 : name;
    if (strncmp(b, "grad_", 5) == 0 && strcmp(b, "grad_loss") != 0) b += 5;
    if (strcmp(b, "hidden") == 0) return (mf_axes){ "token d", { N, D } };
    if (strcmp(b, "weight") == 0) return (mf_axes){ "class d", { V, D } };
    if (strcmp(b, "bias") == 0) return (mf_axes){ "class", { V } };
    if (strcmp(b, "loss") == 0 || strcmp(b, "grad_loss") == 0)
        return n_loss == (size_t)N && n_loss > 1 ? (mf_axes){ "token", { N } } : (mf_axes){ "", { 0 } };
    return (mf_axes){ "token", { N } }; /* labels, lse */
}

/* Compare one output (with axes 'ax'); keeps the worst errors in *out. */
static int ce_compare(const float *got, const float *ref, size_t n, const char *tol_name, const char *what,
                      const mf_axes ax, mf_case_result *out)
{
    const mf_tolerance *tol = mf_tolerance_get(tol_name);
    if (tol == NULL) {
        snprintf(out->message, sizeof(out->message), "no tolerance row '%s'", tol_name);
        out->failure = MF_FAILURE_ERROR;
        return 0;
    }
    if (tol->atol > out->atol) out->atol = tol->atol;
    if (tol->rtol > out->rtol) out->rtol = tol->rtol;
    int pass = out->message[0] == '\0'; /* an earlier output failed: keep its message */
    const int first = pass;
    if (mf_tb_compare(got, ref, n, tol, &ax, what, out, &pass) != MF_OK) {
        snprintf(out->message, sizeof(out->message), "%.40s: %.200s", what, mf_last_error());
        out->failure = MF_FAILURE_ERROR;
        return 0;
    }
    return first ? pass : 0; /* the caller's verdict is already a failure */
}

/* The checks of a CE_F_SPLIT case beyond the comparison with the reference: the
 * chunked plan picks the case's chunk (so every chunk edge is the one the case
 * names), all-ignored rows give an exact 0, and a NaN row is NaN where it must
 * be. 1 when they hold; else 0 with the reason in out (kind 'kind'). */
static int ce_plan_check(const ce_case *c, const mf_cross_entropy_options *o, mf_case_result *out)
{
    mf_cross_entropy_plan_info p;
    if (mf_cross_entropy_plan(c->n_rows, c->vocab, c->dtype, o, &p) != MF_OK) {
        snprintf(out->message, sizeof out->message, "plan: %.200s", mf_last_error());
        return 0;
    }
    int64_t want = c->chunk_rows > 0 && c->chunk_rows < c->n_rows ? c->chunk_rows : c->n_rows;
    int ok = 1;
    if (c->flags & CE_F_DEFAULT_BUDGET) { /* the default budget: capped at the logits it replaces */
        const size_t logits = mf_cross_entropy_logits_bytes(c->n_rows, c->vocab, c->dtype);
        const int64_t rows = (int64_t)((logits - 4 * (size_t)c->n_rows - 16) / (4 * (size_t)c->vocab));
        if (rows < want) want = rows;
        ok = p.capped_by_logits && p.logits_bytes == logits && p.scratch_bytes <= logits;
    }
    if (!ok || p.chunk_rows != want || p.n_chunks != (c->n_rows + want - 1) / want) {
        snprintf(out->message, sizeof out->message,
                 "plan: C=%lld in %lld chunks (capped %d, %zu bytes), want C=%lld", (long long)p.chunk_rows,
                 (long long)p.n_chunks, p.capped_by_logits, p.scratch_bytes, (long long)want);
        return 0;
    }
    return 1;
}

/* Every element of the n at p exactly 0 (all rows ignored). */
static int ce_all_zero(const float *p, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (p[i] != 0.0f) return 0;
    return 1;
}

/* One case: mf_cross_entropy_forward_backward (report: loss and the three
 * gradients), or a candidate (memfix verify): 'fwd' in place of
 * mf_cross_entropy_forward, compared on loss and lse against the reference's
 * forward; or 'bwd' in place of mf_cross_entropy_backward, given the
 * reference's lse and compared on the gradients. The ceiling is the chunked
 * variant's at the case's chunk (opts->scratch_budget states it to a
 * candidate). seed_salt != 0 draws other inputs and labels of the same shape.
 * The suites' cases (flags, ce_case) run both passes (CE_F_SPLIT) or one
 * (CE_F_FWD, CE_F_BWD: mf_cross_entropy_forward / _backward as the entry,
 * on the variant's options). */
/* The five outputs of a case (loss, grad_hidden, grad_weight, grad_bias, lse) in one NaN-filled buffer,
 * each followed by MF_TB_GUARD floats that must still be NaN after the run (as the testbed's tensors:
 * a write past an output's end fails, kind MF_FAILURE_NONFINITE, instead of landing in the next output
 * and being overwritten there). */
typedef struct ce_outs {
    float *loss, *gh, *gw, *gb, *lse;
} ce_outs;

static size_t ce_outs_len(size_t n_loss, size_t n, size_t d, size_t v)
{
    return n_loss + n * d + v * d + v + n + 5 * (size_t)MF_TB_GUARD;
}

static ce_outs ce_outs_at(float *base, size_t n_loss, size_t n, size_t d, size_t v)
{
    ce_outs o;
    o.loss = base;
    o.gh = o.loss + n_loss + MF_TB_GUARD;
    o.gw = o.gh + n * d + MF_TB_GUARD;
    o.gb = o.gw + v * d + MF_TB_GUARD;
    o.lse = o.gb + v + MF_TB_GUARD;
    return o;
}

/* 1 when every output's guard is still NaN; else 0 with the message (set 'set' of the outputs). */
static int ce_guards_intact(const float *base, size_t n_loss, size_t n, size_t d, size_t v, const char *set,
                            mf_case_result *out)
{
    static const char *const names[5] = { "loss", "grad_hidden", "grad_weight", "grad_bias", "lse" };
    const size_t len[5] = { n_loss, n * d, v * d, v, n };
    const float *p = base;
    for (int i = 0; i < 5; i++) {
        p += len[i];
        for (size_t k = 0; k < MF_TB_GUARD; k++)
            if (!isnan(p[k])) {
                snprintf(out->message, sizeof out->message,
                         "%s%s: element %zu past its end was written (%g): a write out of bounds", set,
                         names[i], k, (double)p[k]);
                out->failure = MF_FAILURE_NONFINITE;
                return 0;
            }
        p += MF_TB_GUARD;
    }
    return 1;
}

static mf_status ce_run_case_impl(mf_context *ctx, int variant, mf_cross_entropy_forward_candidate_fn fwd,
                                  mf_cross_entropy_backward_candidate_fn bwd, const mf_case_id *id,
                                  uint64_t seed_salt, mf_case_result *out)
{
    MF_TRY(mf_tb_case_begin_id(out, "cross_entropy", ctx, variant, CE_N_VARIANTS, id, CE_N_CASES));
    ce_case cc;
    MF_TRY(ce_case_of(id, bwd != NULL, &cc));
    const ce_case *c = &cc;
    const int case_index = id->index;
    const int cand = fwd != NULL || bwd != NULL;
    const int fl = cand ? 0 : c->flags, split = (fl & CE_F_SPLIT) != 0;
    if (fl & CE_F_FWD) fwd = mf_cross_entropy_forward;
    if (fl & CE_F_BWD) bwd = mf_cross_entropy_backward;
    const int only_gw = (fl & CE_F_ONLY_GW) != 0, want_gb = c->bias && !only_gw;
    mf_tb_case_labels(out, ctx, cand ? "candidate" : ce_variant_names[variant], c->dtype);
    /* the full case: every option, the ignored rows (the labels below) included */
    ce_shape(c, fwd != NULL ? " fwd" : bwd != NULL ? " bwd" : "", out->shape, sizeof(out->shape));

    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.ignore_index = c->ignore_index;
    o.reduction = c->reduction;
    o.shift_labels = c->shift;
    o.seq_len = c->seq_len;
    o.label_smoothing = c->smoothing;
    o.z_loss = c->z_loss;
    o.softcap = c->softcap;
    /* The budget that makes the planner pick exactly chunk_rows (or the default one). */
    if (!(fl & CE_F_DEFAULT_BUDGET))
        o.scratch_budget = mf_cross_entropy_chunked_scratch_ceiling(c->n_rows, c->vocab, c->chunk_rows);
    out->ceiling_bytes = o.scratch_budget;
    if (!cand && variant == MF_CE_VARIANT_FUSED) { /* O(N), no budget */
        o.variant = MF_CE_VARIANT_FUSED;
        out->ceiling_bytes = mf_cross_entropy_fused_scratch_ceiling(c->n_rows);
    }

    const size_t n = (size_t)c->n_rows, d = (size_t)c->hidden_dim, v = (size_t)c->vocab;
    const size_t es = mf_dtype_size(c->dtype);
    const size_t n_loss = c->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    const uint64_t seed = mf_tb_case_seed(id, 0x63726f7373000000ull, 8u, seed_salt);
    mf_status st = MF_OK;
    /* Inputs as the testbed's tensors: MF_TB_GUARD NaNs after each (hidden, weight, bias, the upstream
     * gradient, a candidate's lse), uploaded with it, so a read past an input's end brings a NaN into the
     * result even where a padded tile multiplies it by zero. The labels (int64) have no guard. */
    const size_t G = MF_TB_GUARD;
    void *h = mf_tb_make_input(c->dtype, n * d + G, seed, -1.0f, 1.0f);
    void *w = mf_tb_make_input(c->dtype, v * d + G, seed + 1, -0.5f, 0.5f);
    void *b = c->bias ? mf_tb_make_input(c->dtype, v + G, seed + 2, -1.0f, 1.0f) : NULL;
    float *gl = (float *)malloc((n_loss + G) * sizeof(float));
    float *lse_g = (float *)malloc((n + G) * sizeof(float)); /* a candidate backward's lse: the reference's */
    int64_t *lab = (int64_t *)malloc(n * sizeof(int64_t));
    /* outputs, reference, got, then got by the split passes: loss, grad_hidden, grad_weight, grad_bias, lse,
     * each followed by its guard (ce_outs_at) */
    const size_t n_out = ce_outs_len(n_loss, n, d, v);
    const int n_sets = split ? 3 : 2;
    float *host_out = (float *)malloc((size_t)n_sets * n_out * sizeof(float));
    void *dh = NULL, *dw = NULL, *db = NULL, *dlab = NULL, *dgl = NULL, *dout = NULL, *dlse = NULL,
         *dout2 = NULL;
    if (h == NULL || w == NULL || (c->bias && b == NULL) || gl == NULL || lse_g == NULL || lab == NULL ||
        host_out == NULL) {
        st = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host buffers for case %d",
                          case_index);
        goto done;
    }
    if (fl & CE_F_NULL_UPSTREAM)
        for (size_t i = 0; i < n_loss; ++i) gl[i] = 1.0f; /* what grad_loss = NULL means */
    else
        mf_fill_uniform_f32(gl, n_loss, seed + 3, split ? -1.5f : 0.5f, 1.5f);
    mf_tb_fill_nan(c->dtype, (char *)h + n * d * es, G);
    mf_tb_fill_nan(c->dtype, (char *)w + v * d * es, G);
    if (b != NULL) mf_tb_fill_nan(c->dtype, (char *)b + v * es, G);
    mf_fill_nan_f32(gl + n_loss, G);
    for (size_t i = 0; i < n; ++i) /* every 7th label ignored, the rest spread over V */
        lab[i] = i % (size_t)c->ignore_mod == 3 || (fl & CE_F_ALL_IGNORED)
                     ? c->ignore_index
                     : (int64_t)((i * 2654435761u +
                                  (size_t)(id->kind == MF_CASE_FIXED ? case_index : (int)(seed % 977u)) +
                                  (size_t)seed_salt * 7919u) %
                                 v);
    if (fl & CE_F_NAN_ROW) { /* hidden[row][1] = NaN, and the row's label a valid one */
        const size_t r = (size_t)c->nan_row;
        if (c->dtype == MF_DTYPE_BF16)
            ((uint16_t *)h)[r * d + 1] = mf_f32_to_bf16(NAN);
        else
            ((float *)h)[r * d + 1] = NAN;
        lab[c->shift ? r + 1 : r] = 3;
    }

    float *ref = host_out, *got = host_out + n_out, *got2 = split ? host_out + 2 * n_out : NULL;
    const ce_outs ro = ce_outs_at(ref, n_loss, n, d, v);
    float *r_loss = ro.loss, *r_gh = ro.gh, *r_gw = ro.gw, *r_gb = ro.gb, *r_lse = ro.lse;
    float *g_gb = ce_outs_at(got, n_loss, n, d, v).gb;
    mf_fill_nan_f32(host_out, (size_t)n_sets * n_out);

    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK) goto done;
    if ((st = mf_ref_cross_entropy_forward(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, h, w, b, lab,
                                           &o, r_loss, fwd != NULL || bwd != NULL || split ? r_lse : NULL)) !=
        MF_OK)
        goto done;
    if (fwd == NULL &&
        (st = mf_ref_cross_entropy_backward(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, h, w, b, lab,
                                            &o, gl, r_gh, r_gw, c->bias ? r_gb : NULL)) != MF_OK)
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    if (!c->bias) r_gb[0] = 0.0f; /* unused */

    if ((st = mf_buffer_alloc(ctx, (n * d + G) * es, &dh)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (v * d + G) * es, &dw)) != MF_OK ||
        (c->bias && (st = mf_buffer_alloc(ctx, (v + G) * es, &db)) != MF_OK) ||
        (st = mf_buffer_alloc(ctx, n * sizeof(int64_t), &dlab)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (n_loss + G) * sizeof(float), &dgl)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, n_out * sizeof(float), &dout)) != MF_OK ||
        (split && (st = mf_buffer_alloc(ctx, n_out * sizeof(float), &dout2)) != MF_OK) ||
        (st = mf_buffer_upload(ctx, dh, h, (n * d + G) * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, dw, w, (v * d + G) * es)) != MF_OK ||
        (c->bias && (st = mf_buffer_upload(ctx, db, b, (v + G) * es)) != MF_OK) ||
        (st = mf_buffer_upload(ctx, dlab, lab, n * sizeof(int64_t))) != MF_OK ||
        (st = mf_buffer_upload(ctx, dgl, gl, (n_loss + G) * sizeof(float))) != MF_OK ||
        (st = mf_buffer_upload(ctx, dout, got, n_out * sizeof(float))) != MF_OK ||
        (split && (st = mf_buffer_upload(ctx, dout2, got2, n_out * sizeof(float))) != MF_OK))
        goto done;
    const ce_outs dO = ce_outs_at((float *)dout, n_loss, n, d, v);
    float *d_loss = dO.loss, *d_gh = dO.gh, *d_gw = dO.gw, *d_gb = dO.gb, *d_lse = dO.lse;
    const float *d_up = (fl & CE_F_NULL_UPSTREAM) ? NULL : (const float *)dgl;
    if (bwd != NULL) {
        memcpy(lse_g, r_lse, n * sizeof(float));
        mf_fill_nan_f32(lse_g + n, G);
        if ((st = mf_buffer_alloc(ctx, (n + G) * sizeof(float), &dlse)) != MF_OK ||
            (st = mf_buffer_upload(ctx, dlse, lse_g, (n + G) * sizeof(float))) != MF_OK)
            goto done;
    }
    if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK) goto done;
    if (fwd != NULL)
        st = fwd(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, dh, dw, db, (const int64_t *)dlab, &o,
                 d_loss, d_lse);
    else if (bwd != NULL)
        st = bwd(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, dh, dw, db, (const int64_t *)dlab, &o,
                 (const float *)dlse, (const float *)dgl, d_gh, d_gw, c->bias ? d_gb : NULL);
    else
        st = mf_cross_entropy_forward_backward(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, dh, dw, db,
                                               (const int64_t *)dlab, &o, d_up, d_loss, split ? d_lse : NULL,
                                               only_gw ? NULL : d_gh, d_gw, want_gb ? d_gb : NULL);
    if (st != MF_OK || (st = mf_context_synchronize(ctx)) != MF_OK) goto done;
    out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    if (split) { /* the forward saving lse, then the backward from it, into the second outputs */
        const ce_outs eo = ce_outs_at((float *)dout2, n_loss, n, d, v);
        float *e_loss = eo.loss, *e_gh = eo.gh, *e_gw = eo.gw, *e_gb = eo.gb, *e_lse = eo.lse;
        if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
            (st = mf_cross_entropy_forward(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, dh, dw, db,
                                           (const int64_t *)dlab, &o, e_loss, e_lse)) != MF_OK ||
            (st = mf_cross_entropy_backward(ctx, c->n_rows, c->hidden_dim, c->vocab, c->dtype, dh, dw, db,
                                            (const int64_t *)dlab, &o, e_lse, d_up, only_gw ? NULL : e_gh,
                                            e_gw, want_gb ? e_gb : NULL)) != MF_OK ||
            (st = mf_context_synchronize(ctx)) != MF_OK)
            goto done;
        const size_t peak2 = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
        if (peak2 > out->opt_peak_bytes) out->opt_peak_bytes = peak2;
        if ((st = mf_buffer_download(ctx, got2, dout2, n_out * sizeof(float))) != MF_OK) goto done;
    }
    if ((st = mf_buffer_download(ctx, got, dout, n_out * sizeof(float))) != MF_OK) goto done;
    if (!c->bias) g_gb[0] = 0.0f;

    const int bf = c->dtype == MF_DTYPE_BF16;
    const char *tol_loss = bf ? "cross_entropy.loss.bf16" : "cross_entropy.loss.f32";
    const char *tol_grad = bf ? "cross_entropy.grad.bf16" : "cross_entropy.grad.f32";
    int ok = 1;
    for (int set = 0; set < (split ? 2 : 1); ++set) {
        float *gs = set ? got2 : got;
        if (!(ok = ce_guards_intact(gs, n_loss, n, d, v, set ? "fwd;bwd " : "", out))) break;
        const ce_outs so = ce_outs_at(gs, n_loss, n, d, v);
        const float *s_loss = so.loss, *s_gh = so.gh, *s_gw = so.gw, *s_gb = so.gb, *s_lse = so.lse;
        const int64_t N = c->n_rows, D = c->hidden_dim, V = c->vocab;
        if (bwd == NULL) /* bwd writes no loss */
            ok &= ce_compare(s_loss, r_loss, n_loss, tol_loss, set ? "fwd;bwd loss" : "loss",
                             ce_axes("loss", n_loss, N, D, V), out);
        if (fwd != NULL || split)
            ok &= ce_compare(s_lse, r_lse, n, tol_loss, set ? "fwd;bwd lse" : "lse",
                             ce_axes("lse", n_loss, N, D, V), out);
        if (fwd == NULL) {
            if (!only_gw)
                ok &= ce_compare(s_gh, r_gh, n * d, tol_grad, set ? "fwd;bwd grad_hidden" : "grad_hidden",
                                 ce_axes("hidden", n_loss, N, D, V), out);
            ok &= ce_compare(s_gw, r_gw, v * d, tol_grad, set ? "fwd;bwd grad_weight" : "grad_weight",
                             ce_axes("weight", n_loss, N, D, V), out);
            if (want_gb)
                ok &= ce_compare(s_gb, r_gb, v, tol_grad, set ? "fwd;bwd grad_bias" : "grad_bias",
                                 ce_axes("bias", n_loss, N, D, V), out);
        }
        if (!ok) break;
        const char *why = NULL;
        if ((fl & CE_F_ALL_IGNORED) && !(ce_all_zero(s_loss, n_loss) && ce_all_zero(s_gh, n * d) &&
                                         ce_all_zero(s_gw, v * d) && (!c->bias || ce_all_zero(s_gb, v))))
            why = "every row ignored: the loss and every gradient must be exactly 0";
        if ((fl & CE_F_NAN_ROW) &&
            !(isnan(s_loss[0]) && isnan(s_gh[(size_t)c->nan_row * d]) && !isnan(s_gh[0])))
            why = "a NaN in hidden: the loss and its row of grad_hidden must be NaN, row 0 finite";
        if (why != NULL) {
            snprintf(out->message, sizeof out->message, "%s%s", set ? "fwd;bwd: " : "", why);
            out->failure = MF_FAILURE_TOLERANCE;
            ok = 0;
            break;
        }
    }
    if (ok && split && variant == MF_CE_VARIANT_CHUNKED && !ce_plan_check(c, &o, out)) {
        out->failure = MF_FAILURE_ERROR;
        ok = 0;
    }
    if ((fl & CE_F_DEFAULT_BUDGET) &&
        variant == MF_CE_VARIANT_CHUNKED) { /* the ceiling at the plan's chunk */
        mf_cross_entropy_plan_info p;
        out->ceiling_bytes = mf_cross_entropy_plan(c->n_rows, c->vocab, c->dtype, &o, &p) == MF_OK
                                 ? mf_cross_entropy_chunked_scratch_ceiling(c->n_rows, c->vocab, p.chunk_rows)
                                 : 0;
    }
    mf_tb_verdict(out, ok);

done:
    mf_tb_case_error(out, st);
    mf_buffer_free(ctx, dout2);
    mf_buffer_free(ctx, dlse);
    mf_buffer_free(ctx, dout);
    mf_buffer_free(ctx, dgl);
    mf_buffer_free(ctx, dlab);
    mf_buffer_free(ctx, db);
    mf_buffer_free(ctx, dw);
    mf_buffer_free(ctx, dh);
    free(host_out);
    free(lab);
    free(gl);
    free(lse_g);
    free(b);
    free(w);
    free(h);
    return st;
}

static mf_status ce_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return ce_run_case_impl(ctx, variant, NULL, NULL, &id, 0, out);
}

/* The suites' cases for one variant only (ce_case flags): the fused tile-edge
 * cases are not the chunked variant's; the V = 151,936 cases run in the fused
 * variant's own test case (fused_vocab), not in its sweep. */
static int ce_case_applies(int variant, int case_index)
{
    if (case_index < 0 || case_index >= CE_N_CASES) return 0;
    const int f = ce_cases[case_index].flags;
    return variant == MF_CE_VARIANT_CHUNKED ? !(f & CE_F_FUSED_ONLY) : !(f & CE_F_BIG_V);
}

/* memfix verify: exactly one of fwd, bwd (a guard of the candidate's type) in
 * place of mf_cross_entropy_forward / mf_cross_entropy_backward. */
static mf_status cross_entropy_verify_case(mf_context *ctx, mf_cross_entropy_forward_candidate_fn fwd,
                                           mf_cross_entropy_backward_candidate_fn bwd, const mf_case_id *id,
                                           uint64_t seed_salt, mf_case_result *out)
{
    if ((fwd == NULL) == (bwd == NULL)) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        MF_FAIL(fwd == NULL ? MF_ERR_NULL_POINTER : MF_ERR_INVALID_ARGUMENT,
                "exactly one of fwd and bwd must be given");
    }
    const mf_status st = ce_verify_id_check(id);
    if (st != MF_OK) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        return st;
    }
    return ce_run_case_impl(ctx, 0, fwd, bwd, id, seed_salt, out);
}

/* ---- memfix verify: the guards of cross_entropy candidates (src/testbed/testbed.h) --------- */
typedef struct ce_guard_args {
    int64_t n_rows, hidden_dim, vocab;
    mf_dtype dtype;
    int has_bias;
    const mf_cross_entropy_options *opts;
} ce_guard_args;

/* bufs: hidden, weight, labels, bias, loss, lse */
static mf_status ce_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const ce_guard_args *a = (const ce_guard_args *)args;
    return ((mf_cross_entropy_forward_candidate_fn)mf_tb_candidate())(
        ctx, a->n_rows, a->hidden_dim, a->vocab, a->dtype, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 3), (const int64_t *)mf_tb_ptr(bufs, 2), a->opts, (float *)mf_tb_ptr(bufs, 4),
        (float *)mf_tb_ptr(bufs, 5));
}

static mf_status ce_guard(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype,
                          const void *hidden, const void *weight, const void *bias, const int64_t *labels,
                          const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    const size_t es = mf_dtype_size(dtype), n = (size_t)n_rows, d = (size_t)hidden_dim, v = (size_t)vocab;
    const size_t n_loss = opts != NULL && opts->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    mf_tb_buffer sp[6] = { { "hidden", hidden, n * d * es, dtype, { 0 } },
                           { "weight", weight, v * d * es, dtype, { 0 } },
                           { "labels", labels, n * sizeof(int64_t), MF_DTYPE_F32, { 0 } },
                           { "bias", bias, v * es, dtype, { 0 } },
                           { "loss", loss, n_loss * sizeof(float), MF_DTYPE_F32, { 0 } },
                           { "lse", lse, n * sizeof(float), MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 6; i++) sp[i].axes = ce_axes(sp[i].name, n_loss, n_rows, hidden_dim, vocab);
    const ce_guard_args args = { n_rows, hidden_dim, vocab, dtype, bias != NULL, opts };
    mf_tb_guarded bufs[6];
    return mf_tb_guard(ctx, sp, 4, 6, ce_call, &args, bufs);
}

/* bufs: hidden, weight, bias, labels, lse, grad_loss, grad_hidden, grad_weight, grad_bias */
static mf_status ce_bwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const ce_guard_args *a = (const ce_guard_args *)args;
    return ((mf_cross_entropy_backward_candidate_fn)mf_tb_candidate())(
        ctx, a->n_rows, a->hidden_dim, a->vocab, a->dtype, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 2), (const int64_t *)mf_tb_ptr(bufs, 3), a->opts, (const float *)mf_tb_ptr(bufs, 4),
        (const float *)mf_tb_ptr(bufs, 5), (float *)mf_tb_ptr(bufs, 6), (float *)mf_tb_ptr(bufs, 7),
        (float *)mf_tb_ptr(bufs, 8));
}

static mf_status ce_bwd_guard(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                              mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                              const int64_t *labels, const mf_cross_entropy_options *opts, const float *lse,
                              const float *grad_loss, float *grad_hidden, float *grad_weight,
                              float *grad_bias)
{
    const size_t es = mf_dtype_size(dtype), n = (size_t)n_rows, d = (size_t)hidden_dim, v = (size_t)vocab;
    const size_t n_loss = opts != NULL && opts->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    mf_tb_buffer sp[9] = { { "hidden", hidden, n * d * es, dtype, { 0 } },
                           { "weight", weight, v * d * es, dtype, { 0 } },
                           { "bias", bias, v * es, dtype, { 0 } },
                           { "labels", labels, n * sizeof(int64_t), MF_DTYPE_F32, { 0 } },
                           { "lse", lse, n * 4, MF_DTYPE_F32, { 0 } },
                           { "grad_loss", grad_loss, n_loss * 4, MF_DTYPE_F32, { 0 } },
                           { "grad_hidden", grad_hidden, n * d * 4, MF_DTYPE_F32, { 0 } },
                           { "grad_weight", grad_weight, v * d * 4, MF_DTYPE_F32, { 0 } },
                           { "grad_bias", grad_bias, v * 4, MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 9; i++) sp[i].axes = ce_axes(sp[i].name, n_loss, n_rows, hidden_dim, vocab);
    const ce_guard_args args = { n_rows, hidden_dim, vocab, dtype, bias != NULL, opts };
    mf_tb_guarded bufs[9];
    return mf_tb_guard(ctx, sp, 6, 9, ce_bwd_call, &args, bufs);
}

static mf_status ce_forward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                      uint64_t seed_salt, mf_case_result *out)
{
    return cross_entropy_verify_case(ctx, candidate != NULL ? ce_guard : NULL, NULL, id, seed_salt, out);
}

static mf_status ce_backward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                       uint64_t seed_salt, mf_case_result *out)
{
    return cross_entropy_verify_case(ctx, NULL, candidate != NULL ? ce_bwd_guard : NULL, id, seed_salt, out);
}

MF_TB_RUN_FIXED(ce_forward_verify, ce_forward_verify_id)

MF_TB_RUN_FIXED(ce_backward_verify, ce_backward_verify_id)

#define CE_ARGS_PTR offsetof(ce_guard_args, opts), sizeof(mf_cross_entropy_options)
static const mf_verify_target ce_targets[] = {
    { "cross_entropy", ce_forward_verify, ce_verify_n_cases, ce_forward_verify_id, ce_describe_fwd, ce_call,
      sizeof(ce_guard_args), CE_ARGS_PTR, MF_TB_OWN(mf_cross_entropy_forward), 0 },
    { "cross_entropy.forward", ce_forward_verify, ce_verify_n_cases, ce_forward_verify_id, ce_describe_fwd,
      ce_call, sizeof(ce_guard_args), CE_ARGS_PTR, MF_TB_OWN(mf_cross_entropy_forward), 0 },
    { "cross_entropy.backward", ce_backward_verify, ce_verify_n_cases, ce_backward_verify_id, ce_describe_bwd,
      ce_bwd_call, sizeof(ce_guard_args), CE_ARGS_PTR, MF_TB_OWN(mf_cross_entropy_backward), 0 }
};

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "cross_entropy.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance cross_entropy_tolerances[] = {
    { "cross_entropy.loss.f32", 2e-6, 2e-6, 1e-11,
      "fp32 logits (D-term fp32 dot, ~1e-7), fp32 max/exp/log over V and a row loss ~ lse ~ log V < 10: a "
      "few ulp of 10 (~1e-6); the final sum is double" },
    { "cross_entropy.loss.bf16", 2e-6, 2e-6, 1e-11,
      "same as loss.f32: bf16 inputs are widened exactly and the logits tile, softmax and loss stay fp32 "
      "(only the gradient tile is narrowed)" },
    { "cross_entropy.grad.f32", 2e-6, 1e-4, 1e-10,
      "p = exp(s - lse) with lse rounded to fp32 (2 ulp of lse <= 10: 1.9e-6 rel), so sum_j |dG| <= "
      "|g|*1.9e-6; times max|W| <= 0.5, |g| <= 1.5: 1.4e-6; rtol: fp32 sums over V or N" },
    { "cross_entropy.grad.bf16", 6e-3, 8e-3, 2e-5,
      "dL/dz narrowed to bf16 (u = 2^-8) for the bf16 GEMMs: |err| <= u * sum |G||x|, dominated by the "
      "target term |g| <= 1.5 with |x| <= 1 (5.9e-3); rtol 2u; nmse ~ u^2/3 = 5e-6, x4 for partial "
      "cancellation" },
};

const mf_op_desc mf_op_cross_entropy = {
    "cross_entropy",
    "linear cross-entropy forward+backward in chunks or fused tiles, never the N x V logits (seed 000, bug "
    "1)",
    CE_N_VARIANTS,
    ce_variant_names,
    CE_N_CASES,
    ce_run_case,
    3,
    ce_targets,
    &mf_cross_entropy_internal_bench,
    (int)(sizeof cross_entropy_tolerances / sizeof cross_entropy_tolerances[0]),
    cross_entropy_tolerances,
    &mf_cross_entropy_internal_plan,
    CE_N_REPORT_CASES, /* report: the first 5 (the rest are the equivalence and memory suites') */
    ce_case_applies,   /* the fused tile-edge cases and V = 151,936 (fused_vocab): ce_case flags */
    1,
    mf_cross_entropy_internal_bench_targets,
};
