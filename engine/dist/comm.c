/* comm.c — the islands' messages over MPI (see comm.h); without EVO_HAVE_MPI every entry point says evo was built
 * without MPI. The only file of evo that includes mpi.h.
 */
#include "comm.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NO_MPI_MSG \
    "evo was built without MPI, so --islands is not available; install an MPI (Debian: apt-get install " \
    "libopenmpi-dev openmpi-bin) and build again (CMake's FindMPI picks it up; docs/usage.md, \"Islands\")"

#ifdef EVO_HAVE_MPI
#include <mpi.h>

struct evo_comm {
    int rank, size, local_rank, local_size;
    char host[MPI_MAX_PROCESSOR_NAME + 1];
};

enum { TAG_POST = 101, TAG_FILE = 102, TAG_FIGURES = 103 };

bool evo_comm_built(void) { return true; }

const char *evo_comm_library(void)
{
    static char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    if (!lib[0]) {
        int n = 0;
        MPI_Get_library_version(lib, &n);
        lib[strcspn(lib, "\n,")] = '\0'; /* "Open MPI v4.1.4", "MPICH Version: 4.0" */
    }
    return lib;
}

#define TRY(call) \
    do { \
        evo_status s_ = (call); \
        if (s_ != EVO_OK) return s_; \
    } while (0)

static evo_status mpi_fail(int rc, evo_err *err, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING + 1] = "";
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    return evo_fail(err, EVO_E_COMM, "MPI %s failed: %s", what, msg);
}

#define MPI_TRY(call, what) \
    do { \
        int rc_ = (call); \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, err, what); \
    } while (0)

evo_status evo_comm_open(evo_comm **out, evo_err *err)
{
    *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) return evo_fail(err, EVO_E_INTERNAL, "MPI initialised twice");
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return evo_fail(err, EVO_E_COMM, "MPI_Init failed");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    evo_comm *c = evo_xcalloc(1, sizeof *c);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    int n = 0;
    MPI_Get_processor_name(c->host, &n);
    MPI_Comm local;
    c->local_rank = 0, c->local_size = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &c->local_rank);
        MPI_Comm_size(local, &c->local_size);
        MPI_Comm_free(&local);
    }
    EVO_ASSERT(c->rank >= 0 && c->rank < c->size && c->local_rank >= 0 && c->local_rank < c->local_size);
    *out = c;
    return EVO_OK;
}

void evo_comm_close(evo_comm *c)
{
    if (!c) return;
    free(c);
    MPI_Finalize();
}

void evo_comm_abort(evo_comm *c, int code)
{
    (void)c;
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code); /* MPI_Abort does not return; should an implementation's do, the rank ends anyway */
}

int evo_comm_rank(const evo_comm *c) { return c->rank; }
int evo_comm_size(const evo_comm *c) { return c->size; }
int evo_comm_local_rank(const evo_comm *c) { return c->local_rank; }
int evo_comm_local_size(const evo_comm *c) { return c->local_size; }
const char *evo_comm_host(const evo_comm *c) { return c->host; }

/* Waits for requests without spinning: MPI implementations poll, and a rank waiting for a slower island would take
 * a core from that island's compiles (or, oversubscribed, from the island itself). A few quick tests, then a test
 * every millisecond. */
static int wait_all(int n, MPI_Request *req)
{
    for (int spins = 0;; spins++) {
        int done = 0;
        const int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) return rc;
        if (spins > 64) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

/* A blocking send and receive that wait as wait_all does. */
static int send_wait(const void *buf, int count, MPI_Datatype type, int to, int tag)
{
    MPI_Request req;
    int rc = MPI_Isend(buf, count, type, to, tag, MPI_COMM_WORLD, &req);
    return rc == MPI_SUCCESS ? wait_all(1, &req) : rc;
}

static int recv_wait(void *buf, int count, MPI_Datatype type, int from, int tag)
{
    MPI_Request req;
    int rc = MPI_Irecv(buf, count, type, from, tag, MPI_COMM_WORLD, &req);
    return rc == MPI_SUCCESS ? wait_all(1, &req) : rc;
}

/* MPI counts are ints: larger messages go in pieces. */
static evo_status check_size(size_t n, evo_err *err)
{
    if (n > (size_t)INT32_MAX) return evo_fail(err, EVO_E_INTERNAL, "an MPI message of %zu bytes", n);
    return EVO_OK;
}

evo_status evo_comm_allgather(evo_comm *c, const void *mine, size_t n, void *all, evo_err *err)
{
    (void)c;
    TRY(check_size(n, err));
    MPI_Request req;
    MPI_TRY(MPI_Iallgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD, &req), "Iallgather");
    MPI_TRY(wait_all(1, &req), "Iallgather (wait)");
    return EVO_OK;
}

struct evo_comm_req {
    MPI_Request *r;
    int n;
    uint64_t len; /* a post's length, sent ahead of its bytes */
    char *buf;    /* a post's copy of its bytes; a started allgather's copy of mine */
};

static evo_comm_req *req_new(int n_req, size_t bytes)
{
    evo_comm_req *q = evo_xcalloc(1, sizeof *q);
    q->r = evo_xcalloc((size_t)n_req, sizeof *q->r);
    q->buf = evo_xmalloc(bytes ? bytes : 1);
    return q;
}

static void req_free(evo_comm_req *q)
{
    free(q->r);
    free(q->buf);
    free(q);
}

/* Not MPI_Iallgather: its algorithms have ranks forward each other's parts, and a rank busy between MPI calls (an
 * island evaluating its next generation) would hold the others' gather up until its next call — the lock step the
 * pipelining is there to avoid. Each rank sends its bytes straight to every other (small messages, sent eagerly),
 * so a busy rank delays only its own part, which it sent when it started. N - 1 messages a rank: 63 x 88 bytes a
 * generation on 64 islands. */
evo_status evo_comm_allgather_start(evo_comm *c, const void *mine, size_t n, void *all, evo_comm_req **req,
                                    evo_err *err)
{
    *req = NULL;
    TRY(check_size(n, err));
    evo_comm_req *q = req_new(2 * (c->size - 1), n);
    memcpy(q->buf, mine, n);
    memcpy((char *)all + (size_t)c->rank * n, mine, n);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < c->size && rc == MPI_SUCCESS; r++) {
        if (r == c->rank) continue;
        rc = MPI_Irecv((char *)all + (size_t)r * n, (int)n, MPI_BYTE, r, TAG_FIGURES, MPI_COMM_WORLD, &q->r[q->n]);
        if (rc == MPI_SUCCESS) q->n++;
        if (rc == MPI_SUCCESS) rc = MPI_Isend(q->buf, (int)n, MPI_BYTE, r, TAG_FIGURES, MPI_COMM_WORLD, &q->r[q->n]);
        if (rc == MPI_SUCCESS) q->n++;
    }
    if (rc != MPI_SUCCESS) {
        req_free(q); /* the job's messages failed: its requests are abandoned with it */
        return mpi_fail(rc, err, "Isend/Irecv (figures)");
    }
    *req = q;
    return EVO_OK;
}

evo_status evo_comm_post(evo_comm *c, int to, const void *buf, size_t n, evo_comm_req **req, evo_err *err)
{
    (void)c;
    *req = NULL;
    TRY(check_size(n, err));
    evo_comm_req *q = req_new(2, n);
    q->len = n;
    memcpy(q->buf, buf, n);
    int rc = MPI_Isend(&q->len, 1, MPI_UINT64_T, to, TAG_POST, MPI_COMM_WORLD, &q->r[0]);
    if (rc == MPI_SUCCESS) {
        q->n = 1;
        rc = MPI_Isend(q->buf, (int)n, MPI_BYTE, to, TAG_POST, MPI_COMM_WORLD, &q->r[1]);
        if (rc == MPI_SUCCESS) q->n = 2;
    }
    if (rc != MPI_SUCCESS) {
        if (q->n) wait_all(q->n, q->r);
        req_free(q);
        return mpi_fail(rc, err, "Isend (post)");
    }
    *req = q;
    return EVO_OK;
}

evo_status evo_comm_wait(evo_comm *c, evo_comm_req *req, evo_err *err)
{
    (void)c;
    if (!req) return EVO_OK;
    const int rc = wait_all(req->n, req->r);
    req_free(req);
    return rc == MPI_SUCCESS ? EVO_OK : mpi_fail(rc, err, "wait");
}

evo_status evo_comm_take(evo_comm *c, int from, char **in, size_t *in_n, evo_err *err)
{
    (void)c;
    *in = NULL, *in_n = 0;
    uint64_t len = 0;
    MPI_TRY(recv_wait(&len, 1, MPI_UINT64_T, from, TAG_POST), "Recv (message length)");
    if (len > (uint64_t)INT32_MAX)
        return evo_fail(err, EVO_E_COMM, "rank %d announced a message of %llu bytes", from, (unsigned long long)len);
    char *got = evo_xmalloc((size_t)len + 1);
    const int rc = recv_wait(got, (int)len, MPI_BYTE, from, TAG_POST);
    if (rc != MPI_SUCCESS) {
        free(got);
        return mpi_fail(rc, err, "Recv (message)");
    }
    got[len] = '\0';
    *in = got, *in_n = (size_t)len;
    return EVO_OK;
}

evo_status evo_comm_send_file(evo_comm *c, int to, const char *path, evo_err *err)
{
    (void)c;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    uint64_t size = 0;
    if (fd >= 0 && fstat(fd, &sb) == 0) size = (uint64_t)sb.st_size;
    /* The size goes first even when the file cannot be read (as 0 bytes and a message): the receiver must not wait
     * for chunks that never come. */
    const int rc = send_wait(&size, 1, MPI_UINT64_T, to, TAG_FILE);
    if (fd < 0) return evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
    if (rc != MPI_SUCCESS) {
        close(fd);
        return mpi_fail(rc, err, "Send (file size)");
    }
    char *buf = evo_xmalloc(EVO_COMM_CHUNK);
    evo_status s = EVO_OK;
    for (uint64_t sent = 0; sent < size && s == EVO_OK;) {
        const size_t want = size - sent < EVO_COMM_CHUNK ? (size_t)(size - sent) : EVO_COMM_CHUNK;
        size_t got = 0;
        while (got < want) {
            ssize_t r = read(fd, buf + got, want - got);
            if (r <= 0) {
                /* a file that shrank: pad with zeros so the receiver's count holds, and report it */
                memset(buf + got, 0, want - got);
                s = evo_fail(err, EVO_E_IO, "%s: %s", path, r < 0 ? strerror(errno) : "shorter than its size");
                break;
            }
            got += (size_t)r;
        }
        const int rc2 = send_wait(buf, (int)want, MPI_BYTE, to, TAG_FILE);
        if (rc2 != MPI_SUCCESS && s == EVO_OK) s = mpi_fail(rc2, err, "Send (file)");
        sent += want;
    }
    free(buf);
    close(fd);
    return s;
}

evo_status evo_comm_recv_file(evo_comm *c, int from, const char *path, size_t *bytes, evo_err *err)
{
    (void)c;
    *bytes = 0;
    uint64_t size = 0;
    MPI_TRY(recv_wait(&size, 1, MPI_UINT64_T, from, TAG_FILE), "Recv (file size)");
    const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const int open_errno = errno;
    char *buf = evo_xmalloc(EVO_COMM_CHUNK);
    evo_status s = fd < 0 ? evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(open_errno)) : EVO_OK;
    /* every chunk is received, whatever happens to the file: the sender sends them all */
    for (uint64_t got = 0; got < size;) {
        const size_t want = size - got < EVO_COMM_CHUNK ? (size_t)(size - got) : EVO_COMM_CHUNK;
        const int rc = recv_wait(buf, (int)want, MPI_BYTE, from, TAG_FILE);
        if (rc != MPI_SUCCESS) {
            if (s == EVO_OK) s = mpi_fail(rc, err, "Recv (file)");
            break;
        }
        for (size_t off = 0; s == EVO_OK && off < want;) {
            ssize_t w = write(fd, buf + off, want - off);
            if (w < 0)
                s = evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
            else
                off += (size_t)w;
        }
        got += want;
    }
    free(buf);
    if (fd >= 0 && fsync(fd) != 0 && s == EVO_OK) s = evo_fail(err, EVO_E_IO, "%s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    if (s == EVO_OK) *bytes = (size_t)size;
    return s;
}

#else /* built without MPI */

struct evo_comm {
    int unused;
};

bool evo_comm_built(void) { return false; }
const char *evo_comm_library(void) { return "none"; }

evo_status evo_comm_open(evo_comm **out, evo_err *err)
{
    *out = NULL;
    return evo_fail(err, EVO_E_USAGE, NO_MPI_MSG);
}

void evo_comm_close(evo_comm *c) { (void)c; }
void evo_comm_abort(evo_comm *c, int code)
{
    (void)c;
    _exit(code);
}
int evo_comm_rank(const evo_comm *c) { return (void)c, 0; }
int evo_comm_size(const evo_comm *c) { return (void)c, 1; }
int evo_comm_local_rank(const evo_comm *c) { return (void)c, 0; }
int evo_comm_local_size(const evo_comm *c) { return (void)c, 1; }
const char *evo_comm_host(const evo_comm *c) { return (void)c, "localhost"; }

static evo_status no_mpi(evo_err *err) { return evo_fail(err, EVO_E_USAGE, NO_MPI_MSG); }
evo_status evo_comm_allgather(evo_comm *c, const void *mine, size_t n, void *all, evo_err *err)
{
    (void)c, (void)mine, (void)n, (void)all;
    return no_mpi(err);
}
evo_status evo_comm_allgather_start(evo_comm *c, const void *mine, size_t n, void *all, evo_comm_req **req,
                                    evo_err *err)
{
    (void)c, (void)mine, (void)n, (void)all;
    *req = NULL;
    return no_mpi(err);
}
evo_status evo_comm_post(evo_comm *c, int to, const void *buf, size_t n, evo_comm_req **req, evo_err *err)
{
    (void)c, (void)to, (void)buf, (void)n;
    *req = NULL;
    return no_mpi(err);
}
evo_status evo_comm_wait(evo_comm *c, evo_comm_req *req, evo_err *err)
{
    (void)c;
    return req ? no_mpi(err) : EVO_OK;
}
evo_status evo_comm_take(evo_comm *c, int from, char **in, size_t *in_n, evo_err *err)
{
    (void)c, (void)from;
    *in = NULL, *in_n = 0;
    return no_mpi(err);
}
evo_status evo_comm_send_file(evo_comm *c, int to, const char *path, evo_err *err)
{
    (void)c, (void)to, (void)path;
    return no_mpi(err);
}
evo_status evo_comm_recv_file(evo_comm *c, int from, const char *path, size_t *bytes, evo_err *err)
{
    (void)c, (void)from, (void)path;
    *bytes = 0;
    return no_mpi(err);
}

#endif
