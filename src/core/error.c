/* Status names and the thread-local last-error message. */
#include "mf_internal.h"

#include <stdio.h>
#include <string.h>

#define MF_ERROR_CAP 512

static _Thread_local char mf_error_buf[MF_ERROR_CAP];

const char *mf_status_name(mf_status s)
{
    switch (s) {
    case MF_OK: return "MF_OK";
    case MF_ERR_NULL_POINTER: return "MF_ERR_NULL_POINTER";
    case MF_ERR_INVALID_SIZE: return "MF_ERR_INVALID_SIZE";
    case MF_ERR_OVERFLOW: return "MF_ERR_OVERFLOW";
    case MF_ERR_INVALID_ARGUMENT: return "MF_ERR_INVALID_ARGUMENT";
    case MF_ERR_DTYPE: return "MF_ERR_DTYPE";
    case MF_ERR_OUT_OF_RANGE: return "MF_ERR_OUT_OF_RANGE";
    case MF_ERR_BUDGET: return "MF_ERR_BUDGET";
    case MF_ERR_OUT_OF_MEMORY: return "MF_ERR_OUT_OF_MEMORY";
    case MF_ERR_BACKEND_UNAVAILABLE: return "MF_ERR_BACKEND_UNAVAILABLE";
    case MF_ERR_BACKEND: return "MF_ERR_BACKEND";
    case MF_ERR_MISMATCH: return "MF_ERR_MISMATCH";
    case MF_ERR_INTERNAL: return "MF_ERR_INTERNAL";
    }
    return "MF_ERR_UNKNOWN_STATUS";
}

const char *mf_last_error(void) { return mf_error_buf; }

void mf_clear_error(void) { mf_error_buf[0] = '\0'; }

/* "src/core/context.c" rather than the absolute build path: keep the part of
 * the path from the last top-level source directory of the repository on. */
static const char *mf_short_path(const char *file)
{
    static const char *const roots[] = { "/src/",   "/reference/", "/optimized/",
                                         "/tools/", "/tests/",     "/cudahost/" };
    const char *best = NULL;
    if (file == NULL) return "?";
    if (file[0] != '/') return file; /* already relative (-fmacro-prefix-map) */
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        const char *p = file, *hit = NULL;
        while ((p = strstr(p, roots[i])) != NULL) hit = p++;
        if (hit != NULL && (best == NULL || hit > best)) best = hit;
    }
    if (best != NULL) {
        /* cudahost-generated copies live under .../cudahost_gen/<path>; the
         * #line directives normally point at the original, but be safe. */
        return best + 1;
    }
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

mf_status mf_set_error(mf_status status, const char *func, const char *file, int line, const char *fmt, ...)
{
    /* "<func>: <reason> [<file>:<line>]"; a long reason is truncated, the
     * location never is. */
    char suffix[192];
    snprintf(suffix, sizeof suffix, " [%s:%d]", mf_short_path(file), line);
    size_t suffix_len = strlen(suffix);
    int head = snprintf(mf_error_buf, sizeof mf_error_buf, "%s: ", func ? func : "memfix");
    size_t pos = head < 0 ? 0 : (size_t)head;
    if (pos + suffix_len + 1 > sizeof mf_error_buf) pos = sizeof mf_error_buf - suffix_len - 1;
    size_t room = sizeof mf_error_buf - suffix_len - pos; /* includes the terminator */
    mf_error_buf[pos] = '\0';
    if (fmt != NULL && fmt[0] != '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(mf_error_buf + pos, room, fmt, ap);
        va_end(ap);
    }
    if (mf_error_buf[pos] == '\0') snprintf(mf_error_buf + pos, room, "%s", mf_status_name(status));
    memcpy(mf_error_buf + strlen(mf_error_buf), suffix, suffix_len + 1);
    return status;
}
