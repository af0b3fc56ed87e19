/* evo.c — status names, verdict names, error formatting (see evo.h). */
#include "evo.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message names what the user gave, and an argument of 100 KB would push the reason out of the message: a run
 * of more than CLIP_RUN bytes without a blank is cut to its head and tail, saying how long it was. */
#define CLIP_RUN 300
#define CLIP_HEAD 120
#define CLIP_TAIL 60

static size_t utf8_back(const char *s, size_t i) /* to the start of the character at or before byte i */
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

/* A run ends at a blank, a quote, or the ": " after a name. */
static bool ends_run(const char *p)
{
    return *p == ' ' || *p == '\n' || *p == '\'' || *p == '"' || (p[0] == ':' && p[1] == ' ');
}

void evo_format_clipped(char *dst, size_t n, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    const int len = vsnprintf(dst, n, fmt, ap);
    char *full = len >= 0 && (size_t)len > CLIP_RUN ? malloc((size_t)len + 1) : NULL;
    if (!full) { /* short (nothing to clip) or no memory: what vsnprintf wrote stands */
        va_end(ap2);
        return;
    }
    vsnprintf(full, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    size_t o = 0;
    for (size_t i = 0; i < (size_t)len && o + 1 < n;) {
        size_t run = 0;
        while (i + run < (size_t)len && !ends_run(full + i + run)) run++;
        if (run > CLIP_RUN) {
            const size_t head = utf8_back(full + i, CLIP_HEAD), tail = utf8_back(full + i, run - CLIP_TAIL);
            o += (size_t)snprintf(dst + o, n - o, "%.*s...[%zu bytes]...%.*s", (int)head, full + i, run,
                                  (int)(run - tail), full + i + tail);
            i += run;
        } else if (run > 0) {
            const size_t take = run < n - 1 - o ? run : n - 1 - o;
            memcpy(dst + o, full + i, take);
            o += take;
            i += run;
        } else {
            dst[o++] = full[i++];
        }
        if (o >= n) o = n - 1;
    }
    dst[o] = '\0';
    free(full);
}

evo_status evo_fail(evo_err *err, evo_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        evo_format_clipped(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

evo_status evo_failv_prefix(evo_err *err, evo_status s, const char *fmt, ...)
{
    if (err) {
        char old[sizeof err->msg];
        memcpy(old, err->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        evo_format_clipped(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        const int n = (int)strlen(err->msg);
        if (n >= 0 && (size_t)n + 2 < sizeof err->msg) {
            memcpy(err->msg + n, ": ", 2);
            size_t room = sizeof err->msg - (size_t)n - 2;
            size_t oldlen = strnlen(old, sizeof old - 1);
            if (oldlen >= room) oldlen = room - 1;
            memcpy(err->msg + n + 2, old, oldlen);
            err->msg[n + 2 + oldlen] = '\0';
        }
    }
    return s;
}

static const char *const status_names[] = {
    [EVO_OK] = "ok",
    [EVO_E_USAGE] = "usage error",
    [EVO_E_CONFIG] = "configuration error",
    [EVO_E_IO] = "i/o error",
    [EVO_E_NOMEM] = "out of memory",
    [EVO_E_DB] = "database error",
    [EVO_E_DB_SCHEMA] = "database schema error",
    [EVO_E_NVRTC] = "nvrtc error",
    [EVO_E_NODRIVER] = "no CUDA driver",
    [EVO_E_CUDA] = "CUDA error",
    [EVO_E_WORKER] = "worker error",
    [EVO_E_TIMEOUT] = "timeout",
    [EVO_E_INTERRUPTED] = "interrupted",
    [EVO_E_NOTFOUND] = "not found",
    [EVO_E_REJECTED] = "rejected",
    [EVO_E_COMM] = "MPI error",
    [EVO_E_INTERNAL] = "internal error",
};

const char *evo_status_name(evo_status s)
{
    if ((unsigned)s < EVO_ARRAY_LEN(status_names) && status_names[s]) return status_names[s];
    return "unknown status";
}

int evo_exit_code(evo_status s)
{
    if (s == EVO_OK) return 0;
    if (s == EVO_E_USAGE || s == EVO_E_CONFIG) return 2;
    return 1;
}

static const char *const verdict_names[EVO_V_COUNT] = {
    [EVO_V_OK] = "OK",
    [EVO_V_INVALID] = "INVALID",
    [EVO_V_COMPILE_FAIL] = "COMPILE_FAIL",
    [EVO_V_RESOURCE_FAIL] = "RESOURCE_FAIL",
    [EVO_V_LAUNCH_FAIL] = "LAUNCH_FAIL",
    [EVO_V_CRASHED] = "CRASHED",
    [EVO_V_TIMEOUT] = "TIMEOUT",
    [EVO_V_INCORRECT] = "INCORRECT",
    [EVO_V_SLOW] = "SLOW",
    [EVO_V_REGRESSED] = "REGRESSED",
    [EVO_V_NOT_RECORDED] = "NOT_RECORDED",
};

const char *evo_verdict_name(evo_verdict v) { return (unsigned)v < EVO_V_COUNT ? verdict_names[v] : "UNKNOWN"; }

int evo_verdict_parse(const char *name, evo_verdict *v)
{
    for (int i = 0; i < EVO_V_COUNT; i++) {
        if (strcmp(name, verdict_names[i]) == 0) {
            *v = (evo_verdict)i;
            return 0;
        }
    }
    return -1;
}

void evo_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "evo: internal error: assertion '%s' failed at %s:%d\n", cond, file, line);
    abort();
}
