/* sandbox.h — what a compile child may do: the files it may open (Landlock) and the resources it may take.
 *
 * Kernel source may be hostile (hand-written or machine-generated files through `evo check`, a config's extra
 * options): an `#include` can name any file, and the compiler quotes what it reads in its errors; a template can
 * take gigabytes; a sparse file can feed the compiler forever. So the process NVRTC runs in is confined:
 *
 * - Files (evo_sandbox_enter, in the forked child before NVRTC starts): it may read only the folders of
 *   evo_sandbox_paths.read (the CUDA Toolkit's include folders, the checked file's folder), the shared libraries
 *   NVRTC loads at run time (the folders of the system's libraries and of libnvrtc) and two files of /etc the C
 *   library reads (ld.so.cache, localtime); it may create and replace files in write_dir only (its cache shard).
 *   Anything else — /proc/self/environ, a file a symbolic link in the kernel's folder points to, a path a macro
 *   builds — fails to open with EACCES. This is enforced by the kernel (Landlock, Linux 5.13 and later), not by
 *   reading the source, so no spelling of a path gets around it. Where the kernel has no Landlock, mode AUTO
 *   compiles without it (evo_sandbox_available says why, for a warning); REQUIRED refuses.
 * - Resources: CPU time (RLIMIT_CPU), output size (RLIMIT_FSIZE: the cache entry, the captured compiler output;
 *   SIGXFSZ is ignored, so a write past it fails with EFBIG) and open files (RLIMIT_NOFILE) are set in the child;
 *   resident memory is watched by the parent (evo_proc_rss), since an address-space limit would abort a child built
 *   with AddressSanitizer instead of failing cleanly.
 *
 * Environment: EVO_NO_LANDLOCK=1 behaves as on a kernel without Landlock (to test the fallback).
 * Thread-safety: evo_sandbox_enter runs in a single-threaded forked child; the rest may be called from any thread.
 */
#ifndef EVO_SANDBOX_H
#define EVO_SANDBOX_H

#include "evo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum {
    EVO_SANDBOX_AUTO = 0, /* Landlock where the kernel has it, else without (a warning)  */
    EVO_SANDBOX_REQUIRED, /* Landlock or no compile at all                              */
    EVO_SANDBOX_OFF,      /* no file confinement (the resource limits still hold)       */
} evo_sandbox_mode;

/* A compile child's limits; 0 in a field means its default (EVO_COMPILE_DEFAULT_*), never "none". */
typedef struct {
    double memory_mb; /* resident memory; 0: evo_compile_default_memory_mb(jobs)   */
    double cpu_s;     /* CPU time                                                   */
    double output_mb; /* bytes it may write to one file                             */
    int open_files;   /* file descriptors                                           */
    evo_sandbox_mode sandbox;
} evo_compile_limits;

#define EVO_COMPILE_DEFAULT_CPU_S 300.0
#define EVO_COMPILE_DEFAULT_OUTPUT_MB 256.0
#define EVO_COMPILE_DEFAULT_OPEN_FILES 256

/* The memory limit a child gets by default when jobs children run at once: half the machine's memory shared
 * among them, within 1 GiB and 8 GiB. */
double evo_compile_default_memory_mb(int jobs);

typedef struct {
    const char *const *read; /* folders (or files) it may read, absolute paths */
    int n_read;
    const char *write_dir; /* may be NULL */
} evo_sandbox_paths;

/* "auto", "required", "off"; and back (false for another word). */
const char *evo_sandbox_mode_name(evo_sandbox_mode m);
bool evo_sandbox_mode_parse(const char *s, evo_sandbox_mode *m);

/* The Landlock ABI version of the running kernel (0: none, or EVO_NO_LANDLOCK=1). When 0, why (may be NULL) says
 * what is missing. */
int evo_sandbox_available(char *why, size_t n);

/* Once in the parent before children are forked: finds the folders of the loaded libraries (evo_sandbox_enter lets
 * the child read them). Thread-safe. */
void evo_sandbox_prepare(void);

/* In a forked, single-threaded child: set the limits, then (unless mode OFF, or AUTO without Landlock) allow only
 * the paths. EVO_E_IO with the reason in why when a step failed; the child must not compile then. */
evo_status evo_sandbox_enter(const evo_sandbox_paths *paths, const evo_compile_limits *lim, char *why, size_t n);

/* Resident set size of process pid in bytes (from /proc/PID/statm); -1 when it cannot be read. */
int64_t evo_proc_rss(pid_t pid);

#endif
