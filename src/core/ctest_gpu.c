/* mf_use_ctest_gpu: the GPU CTest's resource allocation gave this process, as
 * CUDA_VISIBLE_DEVICES (include/memfix/memfix.h; CMake's ctest(1), "Resource
 * Allocation": the environment it gives a test). */
#define _POSIX_C_SOURCE 200809L
#include "mf_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The id of "id:<id>,slots:<n>" into id (letters, digits, '-', '_', '.'; CUDA
 * takes an ordinal or a GPU-/MIG- UUID); 0 when it is not there. */
static int allocation_id(const char *alloc, char *id, size_t cap)
{
    if (strncmp(alloc, "id:", 3) != 0) return 0;
    const char *p = alloc + 3;
    size_t n = 0;
    for (; p[n] != '\0' && p[n] != ',' && p[n] != ';'; n++)
        if (!isalnum((unsigned char)p[n]) && p[n] != '-' && p[n] != '_' && p[n] != '.') return 0;
    if (n == 0 || n >= cap) return 0;
    memcpy(id, p, n);
    id[n] = '\0';
    return 1;
}

int mf_use_ctest_gpu(void)
{
    const char *count = getenv("CTEST_RESOURCE_GROUP_COUNT");
    if (count == NULL || count[0] == '\0') return 0;
    char *end = NULL;
    const long n = strtol(count, &end, 10);
    if (*end != '\0' || n < 0 || n > 1000) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                     "CTEST_RESOURCE_GROUP_COUNT is '%s', not a count of resource groups", count);
        return -1;
    }
    for (long i = 0; i < n; i++) {
        char name[64], id[128];
        snprintf(name, sizeof name, "CTEST_RESOURCE_GROUP_%ld", i);
        const char *type = getenv(name);
        if (type == NULL || strcmp(type, "gpus") != 0) continue;
        snprintf(name, sizeof name, "CTEST_RESOURCE_GROUP_%ld_GPUS", i);
        const char *alloc = getenv(name);
        if (alloc == NULL || !allocation_id(alloc, id, sizeof id)) {
            mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                         "%s is '%s', not CTest's \"id:<gpu>,slots:<n>\"", name, alloc ? alloc : "(unset)");
            return -1;
        }
        if (setenv("CUDA_VISIBLE_DEVICES", id, 1) != 0) {
            mf_set_error(MF_ERR_INTERNAL, __func__, __FILE__, __LINE__,
                         "setenv(CUDA_VISIBLE_DEVICES) failed");
            return -1;
        }
        return 1;
    }
    return 0;
}
