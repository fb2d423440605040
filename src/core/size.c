/* Overflow-checked size arithmetic. All index math in memfix is size_t:
 * 131072 x 151936 logits already exceed 2^31 elements. */
#include "mf_internal.h"

#include <stdarg.h>
#include <stdint.h>

/* The result of a checked operation: r, or SIZE_MAX when it overflowed. */
static int size_result(int overflowed, size_t r, size_t *out)
{
    if (out) *out = overflowed ? SIZE_MAX : r;
    return !overflowed;
}

int mf_size_mul(size_t a, size_t b, size_t *out)
{
    size_t r;
    const int overflowed = __builtin_mul_overflow(a, b, &r);
    return size_result(overflowed, r, out);
}

int mf_size_add(size_t a, size_t b, size_t *out)
{
    size_t r;
    const int overflowed = __builtin_add_overflow(a, b, &r);
    return size_result(overflowed, r, out);
}

mf_status mf_dims_product(const char *func, const char *what, size_t *out, int n, ...)
{
    if (func == NULL) func = "mf_dims_product";
    if (what == NULL) what = "size";
    if (out == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "out is NULL");
    *out = 0;
    if (n <= 0)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "%s: number of dims must be > 0 (got %d)", what, n);
    va_list ap;
    va_start(ap, n);
    size_t prod = 1;
    int overflow = 0;
    for (int i = 0; i < n; i++) {
        int64_t d = va_arg(ap, int64_t);
        if (d <= 0) {
            va_end(ap);
            return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                                "%s: dim %d must be > 0 (got %lld)", what, i, (long long)d);
        }
        if (!overflow && ((uint64_t)d > SIZE_MAX || !mf_size_mul(prod, (size_t)d, &prod)))
            overflow = 1; /* keep checking the remaining dims for <= 0 */
    }
    va_end(ap);
    if (overflow)
        return mf_set_error(MF_ERR_OVERFLOW, func, __FILE__, __LINE__,
                            "%s: product of %d dims overflows size_t", what, n);
    *out = prod;
    return MF_OK;
}
