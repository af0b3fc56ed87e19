/* paths.c — output path rules, new-file writes, same-file checks, bounded reads (see paths.h). */
#include "paths.h"

#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISREG(st.st_mode)) return EVO_OK;
        struct stat target;
        if (S_ISLNK(st.st_mode) && follow_link && stat(path, &target) == 0 && S_ISREG(target.st_mode)) return EVO_OK;
        return evo_fail(err, EVO_E_USAGE,
                        "%s%s%s: is %s; evo writes only a regular file or a new name in an existing directory", what,
                        sep, path, kind_of(st.st_mode));
    }
    if (errno != ENOENT)
        return evo_fail(err, errno == ENAMETOOLONG || errno == ENOTDIR || errno == ELOOP ? EVO_E_USAGE : EVO_E_IO,
                        "%s%s%s: %s", what, sep, path, strerror(errno));
    char *dir = dir_of(path);
    evo_status s = EVO_OK;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        s = evo_fail(err, EVO_E_USAGE, "%s%s%s: no such directory %s", what, sep, path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        s = evo_fail(err, EVO_E_IO, "%s%s%s: cannot create a file in %s: %s", what, sep, path, dir, strerror(errno));
    free(dir);
    return s;
}

evo_status evo_write_file_new(const char *path, const void *data, size_t len, evo_err *err)
{
    evo_str tmp = {0};
    evo_str_appendf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    const char *t = evo_str_cstr(&tmp);
    unlink(t); /* a leftover of a process with this pid that was killed */
    int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    evo_status s = EVO_OK;
    if (fd < 0) {
        s = evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
    } else {
        if (evo_write_all(fd, data, len) != EVO_OK) s = evo_fail(err, EVO_E_IO, "%s: write failed: %s", t, strerror(errno));
        if (close(fd) != 0 && s == EVO_OK) s = evo_fail(err, EVO_E_IO, "%s: %s", t, strerror(errno));
        if (s == EVO_OK && link(t, path) != 0)
            s = errno == EEXIST ? evo_fail(err, EVO_E_USAGE, "%s exists; evo does not replace it", path)
                                : evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
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

evo_status evo_read_file_max(const char *path, size_t max, char **data, size_t *len, evo_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return evo_fail(err, errno == ENOENT ? EVO_E_NOTFOUND : EVO_E_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    evo_status s = EVO_OK;
    if (fstat(fd, &st) != 0) s = evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode)) s = evo_fail(err, EVO_E_IO, "%s: read failed: %s", path, strerror(EISDIR));
    else if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max)
        s = evo_fail(err, EVO_E_USAGE, "%s: %lld bytes; evo reads at most %zu", path, (long long)st.st_size, max);
    evo_str buf = {0};
    while (s == EVO_OK) {
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) s = evo_fail(err, EVO_E_IO, "%s: read failed: %s", path, strerror(errno));
        if (n <= 0) break;
        evo_str_appendn(&buf, chunk, (size_t)n);
        if (buf.len > max) /* a pipe, a device, or a file that grew while being read */
            s = evo_fail(err, EVO_E_USAGE, "%s: more than %zu bytes; evo reads at most %zu", path, max, max);
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
