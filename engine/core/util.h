/* util.h — small helpers every module uses: growable strings, whole-file I/O, SHA-256, a deterministic RNG,
 * clocks and directories.
 *
 * Contract: evo_str owns its buffer (free with evo_str_free); buffers returned through out-pointers are malloc'd
 * and owned by the caller. The RNG is a value type: each user owns one, nothing is global, so results depend only
 * on the seed. All functions are thread-safe (no shared state).
 */
#ifndef EVO_UTIL_H
#define EVO_UTIL_H

#include "evo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- growable string ---- */
typedef struct {
    char *p; /* always NUL-terminated once anything was appended; NULL when empty */
    size_t len;
    size_t cap;
} evo_str;

void evo_str_append(evo_str *s, const char *text);
void evo_str_appendn(evo_str *s, const char *text, size_t n);
void evo_str_appendf(evo_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *evo_str_cstr(const evo_str *s); /* "" when empty */
char *evo_str_take(evo_str *s);             /* hands the buffer over (malloc'd, never NULL) and resets s */
void evo_str_free(evo_str *s);

/* strdup that aborts on out-of-memory (allocation failure of a few bytes is not recoverable here). */
char *evo_strdup(const char *s);
/* Whether s equals one of the strings of a NULL-terminated list (list may be NULL: no). */
bool evo_str_in_list(const char *s, const char *const *list);
void *evo_xmalloc(size_t n);
void *evo_xcalloc(size_t n, size_t size);
void *evo_xrealloc(void *p, size_t n);

/* ---- files ---- */
/* Read a whole file; *data is NUL-terminated (len excludes the NUL). */
evo_status evo_read_file(const char *path, char **data, size_t *len, evo_err *err);
/* Write via a temporary file in the same directory and rename(2), so readers never see half a file. rename
 * replaces whatever path names: check a path the user gave with evo_path_check_output (paths.h) first. */
evo_status evo_write_file_atomic(const char *path, const void *data, size_t len, evo_err *err);
evo_status evo_mkdir_p(const char *path, evo_err *err);
/* write(2) all of data to fd, again after EINTR and short writes; EVO_E_IO (errno set) on failure. */
evo_status evo_write_all(int fd, const void *data, size_t len);
/* Reads fd into *out until end of file or until the monotonic clock (evo_now) passes deadline; keeps the first max
 * bytes (0: all) and reads the rest to the end. Returns true when the deadline came first. */
bool evo_read_until(int fd, double deadline, size_t max, evo_str *out);
bool evo_file_exists(const char *path);
/* rm -rf path (files and directories below it, then itself); a missing path is fine. */
evo_status evo_remove_tree(const char *path);

/* ---- hashing ---- */
typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t buf[64];
    size_t nbuf;
} evo_sha256;
void evo_sha256_init(evo_sha256 *c);
void evo_sha256_update(evo_sha256 *c, const void *data, size_t n);
void evo_sha256_final(evo_sha256 *c, uint8_t out[32]);
/* Hex digest of a NUL-terminated string; out must hold 65 bytes. */
void evo_sha256_hex(const void *data, size_t n, char out[65]);
/* 64-bit FNV-1a; stable across runs and machines. */
uint64_t evo_fnv1a64(const void *data, size_t n);

/* ---- deterministic RNG (splitmix64-seeded xoshiro256**) ---- */
typedef struct {
    uint64_t s[4];
} evo_rng;
void evo_rng_seed(evo_rng *r, uint64_t seed);
uint64_t evo_rng_next(evo_rng *r);
double evo_rng_uniform(evo_rng *r);             /* [0, 1) */
uint32_t evo_rng_below(evo_rng *r, uint32_t n); /* [0, n), n > 0, unbiased */
double evo_rng_normal(evo_rng *r);              /* N(0, 1) */

/* ---- names and text shown on a terminal ---- */
/* Appends s[0..n) to out with what a terminal would act on escaped as JSON writes it: control characters (\n, \t,
 * \u001b, ...), DEL and the C1 controls (\u0080..\u009f); bytes that are not UTF-8 as \xNN. keep_lines leaves \n
 * and \t as they are (a log's own lines); a name never keeps them, so it cannot split a message or colour a
 * terminal. Everything else, UTF-8 text included, is copied. */
void evo_escape_append(evo_str *out, const char *s, size_t n, bool keep_lines);
/* A file name (or any user-given text) as messages show it: escaped as above, newlines included; a name longer than
 * the buffer is cut to its head and tail ("...[N bytes]...", as evo_fail cuts long runs). Use it in place:
 * printf("%s", evo_show(path).s). */
typedef struct {
    char s[4200];
} evo_shown;
evo_shown evo_show(const char *name);
/* fputs of text whose own lines are kept (a log, a message) with every other control character escaped. */
void evo_fputs_text(const char *text, FILE *file);

/* ---- processors ---- */
/* The CPUs this process may run on (its affinity mask: what mpirun's or Slurm's binding left it), at least 1;
 * *online, when not NULL, gets the host's online CPUs. */
int evo_usable_cpus(int *online);

/* ---- time ---- */
double evo_now(void);               /* monotonic seconds */
void evo_utc_iso8601(char out[32]); /* "2026-11-21T21:51:00Z" */

#endif
