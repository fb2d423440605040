/* nsa's configuration, validation and memory formulas: used by the reference
 * (reference/nsa.c), the fused entry (src/ops/nsa.c) and memfix plan, so built
 * into the core library even without the kernels (include/memfix/nsa.h); and
 * the reference's tolerance row against PyTorch (op_list.h). */
#include "memfix/check.h"
#include "memfix/nsa.h"
#include "mf_internal.h"
#include "op_list.h"

#include <stdint.h>

mf_nsa_config mf_nsa_config_seed(void)
{
    mf_nsa_config c = { 32, 16, 64, 16, 512, 0.0f };
    return c;
}

static int cfg_ok(const mf_nsa_config *c)
{
    return c != NULL && c->block_cmp > 0 && c->stride > 0 && c->block_sel > 0 && c->n_sel > 0 &&
           c->window > 0 && c->block_cmp % c->stride == 0 && c->block_sel % c->stride == 0 &&
           c->scale == c->scale && c->scale >= 0.0f;
}

int64_t mf_nsa_n_compressed(const mf_nsa_config *cfg, int64_t S)
{
    if (!cfg_ok(cfg) || S <= 0) return -1;
    return S >= cfg->block_cmp ? (S - cfg->block_cmp) / cfg->stride + 1 : 0;
}

int64_t mf_nsa_n_selection(const mf_nsa_config *cfg, int64_t S)
{
    if (!cfg_ok(cfg) || S <= 0) return -1;
    return (S + cfg->block_sel - 1) / cfg->block_sel;
}

mf_status mf_nsa_validate(const char *func, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                          int64_t Hq, int64_t Hk, int64_t D)
{
    if (func == NULL) func = __func__;
    if (cfg == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "cfg is NULL");
    MF_TRY(mf_check_dtype_f32_bf16(func, dtype));
    const int64_t dims[5] = { B, S, Hq, Hk, D };
    static const char *const names[5] = { "B", "S", "Hq", "Hk", "D" };
    MF_TRY(mf_check_dims_positive(func, NULL, 5, dims, names));
    const int64_t cd[5] = { cfg->block_cmp, cfg->stride, cfg->block_sel, cfg->n_sel, cfg->window };
    static const char *const cn[5] = { "block_cmp (l)", "stride (d)", "block_sel (l')", "n_sel (n)",
                                       "window (w)" };
    MF_TRY(mf_check_dims_positive(func, "cfg.", 5, cd, cn));
    if (cfg->block_cmp % cfg->stride != 0 || cfg->block_sel % cfg->stride != 0)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "cfg.block_cmp (l=%lld) and cfg.block_sel (l'=%lld) must be multiples of "
                            "cfg.stride (d=%lld)",
                            (long long)cfg->block_cmp, (long long)cfg->block_sel, (long long)cfg->stride);
    if (!(cfg->scale >= 0.0f) || cfg->scale > 3.4e38f)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "cfg.scale must be finite and >= 0 (0: 1/sqrt(D)); got %g", (double)cfg->scale);
    if (Hq % Hk != 0)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "Hq (%lld) must be a multiple of Hk (%lld) (grouped-query attention)",
                            (long long)Hq, (long long)Hk);
    size_t bytes;
    MF_TRY(mf_dims_product(func, "q/out bytes (B*S*Hq*D*4)", &bytes, 5, B, S, Hq, D, (int64_t)4));
    MF_TRY(mf_dims_product(func, "k/v bytes (B*S*Hk*D*4)", &bytes, 5, B, S, Hk, D, (int64_t)4));
    MF_TRY(mf_dims_product(func, "lse bytes (B*S*Hq*3*4)", &bytes, 5, B, S, Hq, (int64_t)3, (int64_t)4));
    MF_TRY(mf_dims_product(func, "sel bytes (B*S*Hk*n*4)", &bytes, 5, B, S, Hk, cfg->n_sel, (int64_t)4));
    return MF_OK;
}

/* a*b*c*d*e in size_t, or SIZE_MAX */
static size_t mul5(size_t a, size_t b, size_t c, size_t d, size_t e)
{
    size_t x;
    if (!mf_size_mul(a, b, &x) || !mf_size_mul(x, c, &x) || !mf_size_mul(x, d, &x) || !mf_size_mul(x, e, &x))
        return SIZE_MAX;
    return x;
}

static size_t add2(size_t a, size_t b)
{
    size_t x;
    if (a == SIZE_MAX || b == SIZE_MAX || !mf_size_add(a, b, &x)) return SIZE_MAX;
    return x;
}

size_t mf_ref_nsa_forward_scratch_bytes(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                        int64_t Hk, int64_t D)
{
    if (!cfg_ok(cfg) || B <= 0 || S <= 0 || Hq <= 0 || Hk <= 0 || D <= 0) return SIZE_MAX;
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S), nb = (size_t)mf_nsa_n_selection(cfg, S);
    const size_t s = (size_t)S;
    size_t cols;
    if (!mf_size_mul(s, 2, &cols) || !mf_size_add(cols, nc, &cols)) return SIZE_MAX;
    size_t x = mul5(8, (size_t)B, (size_t)Hq, s, cols);
    x = add2(x, mul5(8, (size_t)B, (size_t)Hk, s, nb));
    x = add2(x, mul5(16, (size_t)B, (size_t)Hk, nc, (size_t)D));
    x = add2(x, mul5(1, (size_t)B, (size_t)Hk, s, nb));
    x = add2(x, s); /* one row's mask */
    return x;
}

/* The fused forward's scratch with the caller's sel: kc, vc (fp32) and, with a
 * compressed block, the compression kernel's certificate (the list of tokens to
 * rank again, 8 bytes each, its 8-byte count, max |kc| per (b, KV group)). */
static size_t nsa_fwd_core_bytes(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hk, int64_t D)
{
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S);
    size_t x = mul5(8, (size_t)B, (size_t)Hk, nc, (size_t)D);
    if (nc > 0) {
        x = add2(x, mul5(8, (size_t)B, (size_t)S, (size_t)Hk, 1));
        x = add2(x, add2(mul5(4, (size_t)B, (size_t)Hk, 1, 1), 8));
    }
    return x;
}

size_t mf_nsa_forward_scratch_ceiling(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                      int64_t D)
{
    if (!cfg_ok(cfg) || B <= 0 || S <= 0 || Hq <= 0 || Hk <= 0 || D <= 0) return SIZE_MAX;
    /* kc, vc (fp32) and the certificate + the selection of the bf16 tensor-core path when sel is NULL */
    return add2(nsa_fwd_core_bytes(cfg, B, S, Hk, D),
                mul5(4, (size_t)B, (size_t)S, (size_t)Hk, (size_t)cfg->n_sel));
}

size_t mf_ref_nsa_backward_scratch_bytes(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                         int64_t Hk, int64_t D)
{
    const size_t fwd = mf_ref_nsa_forward_scratch_bytes(cfg, B, S, Hq, Hk, D);
    if (fwd == SIZE_MAX) return SIZE_MAX;
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S);
    size_t x = mul5(32, (size_t)B, (size_t)S, (size_t)Hk, (size_t)D);
    x = add2(x, mul5(16, (size_t)B, (size_t)Hk, nc, (size_t)D));
    x = add2(x, mul5(32, (size_t)D, 1, 1, 1));
    return add2(fwd, x);
}

size_t mf_nsa_backward_scratch_ceiling(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                       int64_t D)
{
    if (!cfg_ok(cfg) || B <= 0 || S <= 0 || Hq <= 0 || Hk <= 0 || D <= 0) return SIZE_MAX;
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S);
    /* kc, vc, dkc, dvc (fp32), or the forward's with sel given if larger (a forward then a backward) */
    const size_t bwd = mul5(16, (size_t)B, (size_t)Hk, nc, (size_t)D),
                 fwd = nsa_fwd_core_bytes(cfg, B, S, Hk, D);
    return bwd > fwd ? bwd : fwd;
}

/* ---- the reference against PyTorch float64 (tests/equivalence/test_nsa_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "nsa.torch.f32", 1e-12, 2.4e-7, 1e-13,
      "reference (double, dense masked branches) vs NSA's equations + autograd in torch float64, both "
      "rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary" },
};
const mf_tolerance_rows mf_nsa_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
