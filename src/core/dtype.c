/* Storage dtypes and bf16 conversion. */
#include "mf_internal.h"
#include "memfix/check.h"

#include <string.h>

const char *mf_dtype_name(mf_dtype d)
{
    switch (d) {
    case MF_DTYPE_F32: return "f32";
    case MF_DTYPE_BF16: return "bf16";
    }
    return NULL;
}

size_t mf_dtype_size(mf_dtype d)
{
    switch (d) {
    case MF_DTYPE_F32: return 4;
    case MF_DTYPE_BF16: return 2;
    }
    return 0;
}

/* bf16 is the top half of an IEEE binary32. Round to nearest, ties to even:
 * add 0x7fff plus the lowest kept bit, then truncate. NaNs are kept NaN (and
 * quiet) instead of letting the rounding carry turn them into Inf. */
uint16_t mf_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float mf_bf16_to_f32(uint16_t x)
{
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void mf_bf16_to_f32_array(const uint16_t *in, float *out, size_t n)
{
    if (in == NULL || out == NULL) return;
    for (size_t i = 0; i < n; i++) out[i] = mf_bf16_to_f32(in[i]);
}

void mf_f32_to_bf16_array(const float *in, uint16_t *out, size_t n)
{
    if (in == NULL || out == NULL) return;
    for (size_t i = 0; i < n; i++) out[i] = mf_f32_to_bf16(in[i]);
}
