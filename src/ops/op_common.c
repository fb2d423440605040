/* The backend dispatch shared by src/ops/<op>.c (see op_common.h). */
#include "op_common.h"

mf_status mf_op_pick_backend(const char *func, mf_context *ctx, const char *kernels, int *is_cuda)
{
    switch (mf_context_backend(ctx)) {
    case MF_BACKEND_HOST: *is_cuda = 0; return MF_OK;
    case MF_BACKEND_CUDA:
#ifdef MF_HAVE_CUDA
        *is_cuda = 1;
        return MF_OK;
#else
        return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, func, __FILE__, __LINE__,
                            "memfix was built without the CUDA backend");
#endif
    default: break;
    }
    return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, func, __FILE__, __LINE__,
                        "the context's backend %d has no %s kernels", (int)mf_context_backend(ctx), kernels);
}

mf_status mf_op_check_required(const char *func, const mf_op_extent *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i].required && ops[i].ptr == NULL)
            return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "%s is NULL", ops[i].name);
    return MF_OK;
}

mf_status mf_op_check_extents(const char *func, mf_context *ctx, const mf_op_extent *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        MF_TRY(mf_check_device_extent(func, ctx, ops[i].ptr, ops[i].bytes, ops[i].name));
    return MF_OK;
}
