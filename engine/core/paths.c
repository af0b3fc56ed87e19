/* paths.c — output path rules, new-file writes, same-file checks, bounded reads (see paths.h). */
#include "paths.h"

#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* The directory part of path ("." for a bare name), malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return evo_strdup(".");
    if (slash == path) return evo_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = evo_xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

evo_status evo_path_check_output(const char *what, const char *path, bool follow_link, evo_err *err)
{
    const char *sep = what && *what ? " " : "";
    if (!what) what = "";
    if (evo_path_is_stdio(path))
        return evo_fail(err, EVO_E_USAGE,
                        "%s%s-: '-' is not a file name here (standard output is taken only by export "
                        "-o - and init -)",
                        what, sep);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISREG(st.st_mode)) return EVO_OK;
        struct stat target;
        if (S_ISLNK(st.st_mode) && follow_link && stat(path, &target) == 0 && S_ISREG(target.st_mode)) return EVO_OK;
        return evo_fail(err, EVO_E_USAGE,
                        "%s%s%s: is %s; evo writes only a regular file or a new name in an existing directory", what,
                        sep, evo_show(path).s, kind_of(st.st_mode));
    }
    if (errno != ENOENT)
        return evo_fail(err, errno == ENAMETOOLONG || errno == ENOTDIR || errno == ELOOP ? EVO_E_USAGE : EVO_E_IO,
                        "%s%s%s: %s", what, sep, evo_show(path).s, strerror(errno));
    char *dir = dir_of(path);
    evo_status s = EVO_OK;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        s = evo_fail(err, EVO_E_USAGE, "%s%s%s: no such directory %s", what, sep, evo_show(path).s, evo_show(dir).s);
    else if (access(dir, W_OK | X_OK) != 0)
        s = evo_fail(err, EVO_E_IO, "%s%s%s: cannot create a file in %s: %s", what, sep, evo_show(path).s,
                     evo_show(dir).s, strerror(errno));
    free(dir);
    return s;
}

evo_status evo_write_file_new(const char *path, const void *data, size_t len, evo_err *err)
{
    evo_str tmp = {0};
    evo_str_appendf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    const char *t = evo_str_cstr(&tmp);
    unlink(t); /* a leftover of a process with this pid that was killed */
    int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* less the umask */
    evo_status s = EVO_OK;
    if (fd < 0) {
        s = evo_fail(err, EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
    } else {
        if (evo_write_all(fd, data, len) != EVO_OK)
            s = evo_fail(err, EVO_E_IO, "%s: write failed: %s", evo_show(t).s, strerror(errno));
        if (close(fd) != 0 && s == EVO_OK) s = evo_fail(err, EVO_E_IO, "%s: %s", evo_show(t).s, strerror(errno));
        if (s == EVO_OK && link(t, path) != 0)
            s = errno == EEXIST ? evo_fail(err, EVO_E_USAGE, "%s exists; evo does not replace it", evo_show(path).s)
                                : evo_fail(err, EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
        unlink(t);
    }
    evo_str_free(&tmp);
    return s;
}

bool evo_path_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool evo_path_is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }

/* path with its folder's links and dots resolved (the file itself need not exist), malloc'd; NULL when the folder
 * does not exist. A path that is a link to a file resolves to that file. */
static char *canonical(const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real)) return evo_strdup(real);
    char *dir = dir_of(path);
    const char *slash = strrchr(path, '/');
    char *r = NULL;
    if (realpath(dir, real)) {
        evo_str s = {0};
        evo_str_appendf(&s, "%s/%s", strcmp(real, "/") ? real : "", slash ? slash + 1 : path);
        r = evo_str_take(&s);
    }
    free(dir);
    return r;
}

static const char *const companions[] = {"", "-wal", "-shm", "-journal"};

/* The i in [from, to) for which path names db + companions[i]: the same file now, or the name that file would have
 * once SQLite makes it; -1 for none. */
static int companion_index(const char *path, const char *db, size_t from, size_t to)
{
    char *path_c = canonical(path), *db_c = canonical(db);
    int found = -1;
    for (size_t i = from; i < to && found < 0; i++) {
        evo_str c = {0}, cc = {0};
        evo_str_appendf(&c, "%s%s", db, companions[i]);
        evo_str_appendf(&cc, "%s%s", db_c ? db_c : "", companions[i]);
        if (evo_path_same_file(path, evo_str_cstr(&c)) || (path_c && db_c && !strcmp(path_c, cc.p))) found = (int)i;
        evo_str_free(&c);
        evo_str_free(&cc);
    }
    free(path_c);
    free(db_c);
    return found;
}

evo_status evo_path_check_not_input(const char *what, const char *out, const char *in_what, const char *in, bool is_db,
                                    evo_err *err)
{
    if (!out || !in) return EVO_OK;
    const int i = companion_index(out, in, 0, is_db ? EVO_ARRAY_LEN(companions) : 1);
    if (i < 0) return EVO_OK;
    return evo_fail(err, EVO_E_USAGE, "%s %s is %s%s%s %s %s, an input: evo never writes over what it reads", what,
                    evo_show(out).s, i ? "the " : "the same file as", companions[i], i ? " file of" : "", in_what,
                    evo_show(in).s);
}

evo_status evo_path_check_not_companion(const char *what, const char *path, const char *db_what, const char *db,
                                        evo_err *err)
{
    if (!path || !db) return EVO_OK;
    const int i = companion_index(path, db, 1, EVO_ARRAY_LEN(companions));
    if (i < 0) return EVO_OK;
    return evo_fail(err, EVO_E_USAGE,
                    "%s %s is the name of the %s file of %s %s: SQLite would take it for that database's journal; "
                    "give it another name",
                    what, evo_show(path).s, companions[i], db_what, evo_show(db).s);
}

evo_status evo_read_file_max(const char *path, size_t max, char **data, size_t *len, evo_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return evo_fail(err, errno == ENOENT ? EVO_E_NOTFOUND : EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
    struct stat st;
    evo_status s = EVO_OK;
    if (fstat(fd, &st) != 0)
        s = evo_fail(err, EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        s = evo_fail(err, EVO_E_IO, "%s: read failed: %s", evo_show(path).s, strerror(EISDIR));
    else if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max)
        s = evo_fail(err, EVO_E_USAGE, "%s: %lld bytes; evo reads at most %zu", evo_show(path).s, (long long)st.st_size,
                     max);
    evo_str buf = {0};
    while (s == EVO_OK) {
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) s = evo_fail(err, EVO_E_IO, "%s: read failed: %s", evo_show(path).s, strerror(errno));
        if (n <= 0) break;
        evo_str_appendn(&buf, chunk, (size_t)n);
        if (buf.len > max) /* a pipe, a device, or a file that grew while being read */
            s = evo_fail(err, EVO_E_USAGE, "%s: more than %zu bytes; evo reads at most %zu", evo_show(path).s, max,
                         max);
    }
    close(fd);
    if (s != EVO_OK) {
        evo_str_free(&buf);
        return s;
    }
    if (len) *len = buf.len;
    *data = evo_str_take(&buf);
    return EVO_OK;
}

bool evo_dir_has_nonempty(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    const size_t ls = strlen(suffix);
    for (struct dirent *e; !found && (e = readdir(d));) {
        const size_t ln = strlen(e->d_name);
        if (ln < ls || strcmp(e->d_name + ln - ls, suffix) != 0) continue;
        struct stat st;
        found = fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
    }
    closedir(d);
    return found;
}

static int path_executable(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

evo_status evo_path_find_tool(const char *name, const char *given, char **path, evo_err *err)
{
    *path = NULL;
    int is_ncu = strcmp(name, "ncu") == 0;
    const char *what =
        is_ncu ? "install Nsight Compute or pass --ncu PATH" : "install the CUDA Toolkit or put its bin/ on PATH";
    if (given) {
        if (!path_executable(given)) return evo_fail(err, EVO_E_NOTFOUND, "%s not found at %s: %s", name, given, what);
        *path = evo_strdup(given);
        return EVO_OK;
    }
    const char *env = getenv("PATH");
    for (const char *p = env ? env : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len) {
            char buf[4096];
            snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, name);
            if (path_executable(buf)) {
                *path = evo_strdup(buf);
                return EVO_OK;
            }
        }
        p += len;
        if (*p == ':') p++;
    }
    const char *home = getenv("CUDA_HOME");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/bin/%s", home && *home ? home : "/usr/local/cuda", name);
    if (path_executable(buf)) {
        *path = evo_strdup(buf);
        return EVO_OK;
    }
    return evo_fail(err, EVO_E_NOTFOUND, "%s not found: %s", name, what);
}
