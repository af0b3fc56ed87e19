/* evo.h — what every engine module shares: the status enum, the error buffer, candidate verdicts.
 *
 * Contract: engine functions return evo_status and, on failure, fill the caller's evo_err (optional: NULL is
 * allowed everywhere) with one line that names the file, line, key or knob at fault. Only main() prints and
 * chooses the exit code (evo_exit_code). A failed *candidate* is not an error: it is an evo_verdict, stored as
 * data. A message over 300 bytes without a blank (a 100 KB argument) is cut to its head and tail, so the reason
 * after it survives; formatting such a message allocates a temporary buffer. Everything is thread-safe.
 */
#ifndef EVO_H
#define EVO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVO_VERSION "0.1.0"

typedef enum {
    EVO_OK = 0,
    EVO_E_USAGE,       /* bad command line                                          exit 2 */
    EVO_E_CONFIG,      /* bad config, genome, kernel file or other user input      exit 2 */
    EVO_E_IO,          /* file system                                              exit 1 */
    EVO_E_NOMEM,       /*                                                          exit 1 */
    EVO_E_DB,          /* store missing, corrupt, locked, read-only, full          exit 1 */
    EVO_E_DB_SCHEMA,   /* store written by a newer evo                             exit 1 */
    EVO_E_NVRTC,       /* NVRTC itself failed (not a candidate's compile error)    exit 1 */
    EVO_E_NODRIVER,    /* libcuda.so.1 not found or no device                      exit 1 */
    EVO_E_CUDA,        /* a driver API call failed outside a candidate             exit 1 */
    EVO_E_WORKER,      /* worker process protocol or lifecycle                     exit 1 */
    EVO_E_TIMEOUT,     /*                                                          exit 1 */
    EVO_E_INTERRUPTED, /* Ctrl-C: work so far is stored                            exit 1 */
    EVO_E_NOTFOUND,    /* the asked-for run, candidate or file does not exist      exit 1 */
    EVO_E_INTERNAL,    /* a bug in evo                                             exit 1 */
    EVO_E_REJECTED,    /* `evo check`: the kernel failed a gate (the verdict says) exit 1 */
    EVO_E_COMM,        /* the messages between the islands of a job (MPI) failed  exit 1 */
    /* new values go last: the numbers travel between evo and its workers */
} evo_status;

typedef struct {
    char msg[1024];
    bool shown; /* the message was printed already (an island says its own failure before the job ends) */
} evo_err;

/* Fill err (if not NULL) with a formatted message and return s. Usage: return evo_fail(err, EVO_E_IO, "...", ...). */
evo_status evo_fail(evo_err *err, evo_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefix an existing message: "ctx: old message". */
evo_status evo_failv_prefix(evo_err *err, evo_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* vsnprintf into dst[n], with runs of more than 300 bytes without a blank cut to their head and tail. */
void evo_format_clipped(char *dst, size_t n, const char *fmt, va_list ap);
const char *evo_status_name(evo_status s);
int evo_exit_code(evo_status s); /* 0 ok, 2 usage/config, 1 everything else */

/* The verdict on one candidate; stored by name (evo_verdict_name) so the store stays readable. */
typedef enum {
    EVO_V_OK = 0,
    EVO_V_INVALID,       /* violates a constraint, can_implement, or a static_assert          */
    EVO_V_COMPILE_FAIL,  /* NVRTC error (log kept) or compile time limit                      */
    EVO_V_RESOURCE_FAIL, /* spills, shared memory, registers or threads over the device limits */
    EVO_V_LAUNCH_FAIL,   /* the launch itself was refused                                     */
    EVO_V_CRASHED,       /* fault, trap, or the worker died                                   */
    EVO_V_TIMEOUT,       /* the kernel did not finish in time                                 */
    EVO_V_INCORRECT,     /* a correctness case failed (case, metrics, first bad index kept)   */
    EVO_V_SLOW,          /* timing aborted early at k x the best                              */
    EVO_V_REGRESSED,     /* correct but slower than baseline on too many shapes               */
    EVO_V_NOT_RECORDED,  /* replay: the replayed database has no result for it (not a failure) */
    /* new verdicts go last (stored by name; a new one needs a store migration, see store.c) */
    EVO_V_COUNT
} evo_verdict;

/* Every task's first (strictest) accuracy class (task.h): what a verdict is judged in when a task has no others, and
 * what stored results from before accuracy classes count as. */
#define EVO_ACCURACY_EXACT "exact"

const char *evo_verdict_name(evo_verdict v);
/* Returns 0 and sets *v when name is a verdict name, else -1. */
int evo_verdict_parse(const char *name, evo_verdict *v);

/* Programmer bugs only; never for input. */
#define EVO_ASSERT(c) \
    do { \
        if (!(c)) evo_assert_fail(#c, __FILE__, __LINE__); \
    } while (0)
void evo_assert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

#define EVO_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
