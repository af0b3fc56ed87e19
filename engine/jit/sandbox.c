/* sandbox.c — the compile child's confinement (see sandbox.h): resource limits with setrlimit, file access with
 * Landlock rules (raw system calls: the C library has no wrappers), the folders of the libraries NVRTC loads, and
 * the resident memory the parent watches.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/landlock.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* Rights of later Landlock ABIs, for headers that predate them. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif

#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_FILE_RIGHTS \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* The cache shard: new files written, then renamed over the entry (rename within one folder needs no REFER). */
#define FS_WRITE_DIR \
    (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
     LANDLOCK_ACCESS_FS_TRUNCATE)

const char *evo_sandbox_mode_name(evo_sandbox_mode m)
{
    switch (m) {
        case EVO_SANDBOX_AUTO: return "auto";
        case EVO_SANDBOX_REQUIRED: return "required";
        case EVO_SANDBOX_OFF: return "off";
    }
    return "?";
}

bool evo_sandbox_mode_parse(const char *s, evo_sandbox_mode *m)
{
    for (int i = EVO_SANDBOX_AUTO; i <= EVO_SANDBOX_OFF; i++)
        if (strcmp(s, evo_sandbox_mode_name((evo_sandbox_mode)i)) == 0) {
            *m = (evo_sandbox_mode)i;
            return true;
        }
    return false;
}

double evo_compile_default_memory_mb(int jobs)
{
    struct sysinfo si;
    double total_mb = 16384;
    if (sysinfo(&si) == 0 && si.totalram > 0) total_mb = (double)si.totalram * si.mem_unit / (1024.0 * 1024.0);
    double mb = total_mb / 2 / (jobs > 0 ? jobs : 1);
    if (mb < 1024) mb = 1024;
    if (mb > 8192) mb = 8192;
    return (double)(int64_t)mb;
}

/* ---- Landlock ---- */

static int landlock_abi_raw(void)
{
    const long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

int evo_sandbox_available(char *why, size_t n)
{
    const char *off = getenv("EVO_NO_LANDLOCK");
    if (off && *off && strcmp(off, "0") != 0) {
        if (why && n) snprintf(why, n, "EVO_NO_LANDLOCK is set");
        return 0;
    }
    errno = 0;
    const int abi = landlock_abi_raw();
    if (abi == 0 && why && n)
        snprintf(why, n, "this kernel has no Landlock (%s; it needs Linux 5.13 or later with Landlock among its LSMs)",
                 errno == ENOSYS       ? "the system call is missing"
                 : errno == EOPNOTSUPP ? "it is disabled"
                                       : strerror(errno));
    return abi;
}

/* The folders of every shared library loaded now (libc, libnvrtc, ...): NVRTC loads its builtins library and the
 * C++ runtime from there at its first compile. Found once in the parent, before any child is forked. */
#define MAX_LIB_DIRS 32
static char g_lib_dirs[MAX_LIB_DIRS][512];
static int g_n_lib_dirs;
static pthread_once_t g_lib_once = PTHREAD_ONCE_INIT;

static int add_lib_dir(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    const char *name = info->dlpi_name;
    if (!name || name[0] != '/') return 0;
    const char *slash = strrchr(name, '/');
    const size_t len = (size_t)(slash - name);
    if (len == 0 || len >= sizeof g_lib_dirs[0]) return 0;
    for (int i = 0; i < g_n_lib_dirs; i++)
        if (strlen(g_lib_dirs[i]) == len && strncmp(g_lib_dirs[i], name, len) == 0) return 0;
    if (g_n_lib_dirs < MAX_LIB_DIRS) {
        memcpy(g_lib_dirs[g_n_lib_dirs], name, len);
        g_lib_dirs[g_n_lib_dirs++][len] = '\0';
    }
    return 0;
}

static void find_lib_dirs(void) { dl_iterate_phdr(add_lib_dir, NULL); }

/* One rule: path (opened O_PATH, so a symbolic link is followed to what it names) with the rights it may have. A
 * missing path is skipped. */
static int allow(int ruleset, const char *path, uint64_t rights, uint64_t handled, char *why, size_t n)
{
    const int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) return 0;
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) rights &= FS_FILE_RIGHTS;
    struct landlock_path_beneath_attr pb = {.allowed_access = rights & handled, .parent_fd = fd};
    const long r = pb.allowed_access ? syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) : 0;
    const int e = errno;
    close(fd);
    if (r != 0) {
        snprintf(why, n, "Landlock rule for %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

static evo_status landlock_enter(const evo_sandbox_paths *p, int abi, char *why, size_t n)
{
    uint64_t handled = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                       LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                       LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                       LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                       LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) handled |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    struct landlock_ruleset_attr ra = {.handled_access_fs = handled};
    const int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
    if (rs < 0) {
        snprintf(why, n, "Landlock: cannot create a ruleset: %s", strerror(errno));
        return EVO_E_IO;
    }
    int bad = 0;
    for (int i = 0; !bad && i < p->n_read; i++) bad = allow(rs, p->read[i], FS_READ, handled, why, n);
    for (int i = 0; !bad && i < g_n_lib_dirs; i++) bad = allow(rs, g_lib_dirs[i], FS_READ, handled, why, n);
    static const char *const etc[] = {"/etc/ld.so.cache", "/etc/localtime"};
    for (size_t i = 0; !bad && i < sizeof etc / sizeof etc[0]; i++) bad = allow(rs, etc[i], FS_READ, handled, why, n);
    if (!bad && p->write_dir) bad = allow(rs, p->write_dir, FS_WRITE_DIR, handled, why, n);
    if (!bad && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(why, n, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
        bad = 1;
    }
    if (!bad && syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        snprintf(why, n, "Landlock: cannot restrict the compile process: %s", strerror(errno));
        bad = 1;
    }
    close(rs);
    return bad ? EVO_E_IO : EVO_OK;
}

/* ---- limits ---- */

static int set_limit(int resource, double value, char *why, size_t n, const char *name)
{
    rlim_t v = value >= (double)RLIM_INFINITY ? RLIM_INFINITY : (rlim_t)value;
    struct rlimit old;
    if (getrlimit(resource, &old) == 0 && old.rlim_max != RLIM_INFINITY && v > old.rlim_max) v = old.rlim_max;
    /* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL a second later should it be caught */
    struct rlimit r = {v, resource == RLIMIT_CPU && v != RLIM_INFINITY ? v + 1 : v};
    if (old.rlim_max != RLIM_INFINITY && r.rlim_max > old.rlim_max) r.rlim_max = old.rlim_max;
    if (setrlimit(resource, &r) != 0) {
        snprintf(why, n, "setrlimit(%s): %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

evo_status evo_sandbox_enter(const evo_sandbox_paths *paths, const evo_compile_limits *lim, char *why, size_t n)
{
    const double cpu = lim->cpu_s > 0 ? lim->cpu_s : EVO_COMPILE_DEFAULT_CPU_S;
    const double out = (lim->output_mb > 0 ? lim->output_mb : EVO_COMPILE_DEFAULT_OUTPUT_MB) * 1024 * 1024;
    const int files = lim->open_files > 0 ? lim->open_files : EVO_COMPILE_DEFAULT_OPEN_FILES;
    signal(SIGXFSZ, SIG_IGN); /* a write past the output limit fails with EFBIG instead of killing the child */
    if (set_limit(RLIMIT_CPU, cpu + 0.999, why, n, "RLIMIT_CPU") ||
        set_limit(RLIMIT_FSIZE, out, why, n, "RLIMIT_FSIZE") ||
        set_limit(RLIMIT_NOFILE, files, why, n, "RLIMIT_NOFILE"))
        return EVO_E_IO;
    if (lim->sandbox == EVO_SANDBOX_OFF) return EVO_OK;
    const int abi = evo_sandbox_available(NULL, 0);
    if (abi == 0) {
        if (lim->sandbox == EVO_SANDBOX_AUTO) return EVO_OK;
        evo_sandbox_available(why, n);
        return EVO_E_IO;
    }
    return landlock_enter(paths, abi, why, n);
}

void evo_sandbox_prepare(void) { pthread_once(&g_lib_once, find_lib_dirs); }

int64_t evo_proc_rss(pid_t pid)
{
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/%ld/statm", (long)pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) return -1;
    buf[got] = '\0';
    long long size = 0, resident = 0;
    if (sscanf(buf, "%lld %lld", &size, &resident) != 2) return -1;
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}
