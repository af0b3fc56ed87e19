/* worker.c — spawning and watching a worker process (parent side) and the worker's request loop (see worker.h).
 * The parent side is careful about three things: the child between fork and exec only makes async-signal-safe
 * calls (the parent may have threads), every process it starts is reaped on every path, and a worker that stops
 * answering is killed at its deadline whatever it is doing.
 */
#include "worker.h"

#include "protocol.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct evo_worker {
    char *exe;
    char **argv;    /* full argv, argv[0] included, NULL-terminated */
    char *log_path; /* may be NULL */
    char *name;
    pid_t pid;       /* 0 when no process */
    int to_fd;       /* the worker's stdin */
    int from_fd;     /* the worker's stdout, non-blocking */
    off_t log_start; /* size of the log when this process started: its own lines come after */
    bool pending;    /* a request was sent and its reply not yet received */
    int64_t call_id;
    double deadline;
    double timeout_s;     /* of the pending call, for messages */
    double stop_deadline; /* set by evo_worker_request_stop */
    char *buf;            /* bytes read from from_fd that do not form a line yet */
    size_t len, cap;
};

/* ---- small helpers ---- */

static pthread_once_t sigpipe_once = PTHREAD_ONCE_INIT;

static void ignore_sigpipe(void)
{
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
    }
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int ms_until(double deadline)
{
    double left = deadline - evo_now();
    if (left <= 0) return 0;
    if (left > 3600) return 3600 * 1000;
    return (int)ceil(left * 1000.0);
}

static const char *signal_abbrev(int sig)
{
    switch (sig) {
        case SIGHUP: return "SIGHUP";
        case SIGINT: return "SIGINT";
        case SIGQUIT: return "SIGQUIT";
        case SIGILL: return "SIGILL";
        case SIGTRAP: return "SIGTRAP";
        case SIGABRT: return "SIGABRT";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGKILL: return "SIGKILL";
        case SIGUSR1: return "SIGUSR1";
        case SIGSEGV: return "SIGSEGV";
        case SIGUSR2: return "SIGUSR2";
        case SIGPIPE: return "SIGPIPE";
        case SIGALRM: return "SIGALRM";
        case SIGTERM: return "SIGTERM";
        case SIGXCPU: return "SIGXCPU";
        case SIGXFSZ: return "SIGXFSZ";
        case SIGSYS: return "SIGSYS";
        default: return NULL;
    }
}

/* "exited with status 3", "was killed by SIGSEGV (Segmentation fault)" */
static void describe_wait_status(int ws, char *buf, size_t n)
{
    if (WIFEXITED(ws)) {
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(ws));
    } else if (WIFSIGNALED(ws)) {
        int sig = WTERMSIG(ws);
        const char *ab = signal_abbrev(sig);
        if (ab)
            snprintf(buf, n, "was killed by %s (%s)%s", ab, strsignal(sig), WCOREDUMP(ws) ? ", core dumped" : "");
        else
            snprintf(buf, n, "was killed by signal %d (%s)", sig, strsignal(sig));
    } else {
        snprintf(buf, n, "ended with wait status 0x%x", (unsigned)ws);
    }
}

/* Waits for pid; -1 in *ws when it was reaped elsewhere (SIGCHLD ignored). */
static void reap(pid_t pid, int *ws)
{
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    *ws = r == pid ? st : -1;
}

/* Waits up to grace seconds for pid to exit on its own; true (and *ws) when it did. */
static bool reap_within(pid_t pid, double grace, int *ws)
{
    double until = evo_now() + grace;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            *ws = st;
            return true;
        }
        if (r < 0 && errno != EINTR) {
            *ws = -1;
            return true;
        }
        if (evo_now() >= until) return false;
        sleep_s(0.005);
    }
}

static void kill_group(pid_t pid)
{
    /* The worker leads its own group; fall back to the pid alone if setpgid lost a race with exec. */
    if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* The last lines the current process wrote to its log, joined by " | ", into buf ("" when none). */
static void log_tail(const evo_worker *w, char *buf, size_t n)
{
    buf[0] = '\0';
    if (!w->log_path) return;
    int fd = open(w->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat sb;
    char text[2048];
    ssize_t got = 0;
    if (fstat(fd, &sb) == 0 && sb.st_size > w->log_start) {
        off_t from = sb.st_size - (off_t)(sizeof text - 1);
        if (from < w->log_start) from = w->log_start;
        got = pread(fd, text, sizeof text - 1, from);
    }
    close(fd);
    if (got <= 0) return;
    text[got] = '\0';
    /* Up to five last non-empty lines, in order. */
    const char *lines[5];
    size_t lens[5];
    int k = 0;
    char *end = text + got;
    while (end > text && k < 5) {
        while (end > text && (end[-1] == '\n' || end[-1] == '\r')) end--;
        char *start = end;
        while (start > text && start[-1] != '\n') start--;
        if (end > start) {
            lines[k] = start;
            lens[k] = (size_t)(end - start);
            k++;
        }
        end = start;
    }
    size_t used = 0;
    for (int i = k - 1; i >= 0 && used + 4 < n; i--) {
        size_t l = lens[i] > 200 ? 200 : lens[i];
        int m = snprintf(buf + used, n - used, "%s%.*s", used ? " | " : "", (int)l, lines[i]);
        if (m < 0) break;
        used += (size_t)m;
        if (used >= n) {
            buf[n - 1] = '\0';
            break;
        }
    }
}

/* ---- spawning ---- */

/* A pipe/log fd may have landed on 0, 1 or 2 when the parent has those closed; move it above them. */
static int above_stdio(int fd)
{
    if (fd > 2) return fd;
    return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static void child_report(int fd, int stage, int e)
{
    int msg[2] = {stage, e};
    ssize_t r = write(fd, msg, sizeof msg);
    (void)r;
}

enum { STAGE_SETUP = 1, STAGE_LOG = 2, STAGE_EXEC = 3 };

/* Between fork and exec: async-signal-safe calls only. */
static void child_exec(const evo_worker *w, int in_r, int out_w, int st_w, pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the parent died before prctl took effect */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    const int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD};
    for (size_t i = 0; i < EVO_ARRAY_LEN(reset); i++) sigaction(reset[i], &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    st_w = above_stdio(st_w);
    in_r = above_stdio(in_r);
    out_w = above_stdio(out_w);
    if (st_w < 0 || in_r < 0 || out_w < 0) _exit(127);
    if (w->log_path) {
        int lf = open(w->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (lf >= 0) lf = above_stdio(lf);
        if (lf < 0 || dup2(lf, 2) < 0) {
            child_report(st_w, STAGE_LOG, errno);
            _exit(127);
        }
    }
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0) {
        child_report(st_w, STAGE_SETUP, errno);
        _exit(127);
    }
    execve(w->exe, w->argv, environ);
    child_report(st_w, STAGE_EXEC, errno);
    _exit(127);
}

static evo_status spawn(evo_worker *w, evo_err *err)
{
    pthread_once(&sigpipe_once, ignore_sigpipe);
    int in[2] = {-1, -1}, out[2] = {-1, -1}, st[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(st, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]);
            close_fd(&out[i]);
            close_fd(&st[i]);
        }
        return evo_fail(err, EVO_E_WORKER, "cannot start %s: pipe: %s", w->name, strerror(e));
    }
    w->log_start = 0;
    if (w->log_path) {
        struct stat sb;
        if (stat(w->log_path, &sb) == 0) w->log_start = sb.st_size;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]);
            close_fd(&out[i]);
            close_fd(&st[i]);
        }
        return evo_fail(err, EVO_E_WORKER, "cannot start %s: fork: %s", w->name, strerror(e));
    }
    if (pid == 0) child_exec(w, in[0], out[1], st[1], parent);

    setpgid(pid, pid); /* also in the child: whichever runs first wins, the other fails harmlessly */
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&st[1]);
    int msg[2];
    ssize_t r;
    while ((r = read(st[0], msg, sizeof msg)) < 0 && errno == EINTR) {
    }
    close_fd(&st[0]);
    if (r == (ssize_t)sizeof msg) {
        int ws;
        reap(pid, &ws);
        close_fd(&in[1]);
        close_fd(&out[0]);
        const char *what = msg[0] == STAGE_EXEC ? "exec" : msg[0] == STAGE_LOG ? "open log" : "set up pipes";
        const char *obj = msg[0] == STAGE_EXEC ? w->exe : msg[0] == STAGE_LOG ? w->log_path : "";
        return evo_fail(err, EVO_E_WORKER, "cannot start %s: %s %s: %s", w->name, what, obj, strerror(msg[1]));
    }
    /* EOF: exec succeeded (the status pipe closed on exec), or the child died before it. Either way the
     * first read of its output will tell. */
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
    w->pid = pid;
    w->to_fd = in[1];
    w->from_fd = out[0];
    w->pending = false;
    w->deadline = 0;
    w->stop_deadline = 0;
    w->len = 0;
    return EVO_OK;
}

evo_status evo_worker_start(const evo_worker_spec *spec, evo_worker **out, evo_err *err)
{
    *out = NULL;
    evo_worker *w = evo_xcalloc(1, sizeof *w);
    w->exe = evo_strdup(spec->exe ? spec->exe : "/proc/self/exe");
    int n = 0;
    while (spec->argv && spec->argv[n]) n++;
    w->argv = evo_xcalloc((size_t)n + 2, sizeof *w->argv);
    const char *base = strrchr(w->exe, '/');
    w->argv[0] = evo_strdup(spec->exe ? (base ? base + 1 : w->exe) : "evo");
    for (int i = 0; i < n; i++) w->argv[i + 1] = evo_strdup(spec->argv[i]);
    w->log_path = spec->log_path ? evo_strdup(spec->log_path) : NULL;
    w->name = evo_strdup(spec->name ? spec->name : "worker");
    w->to_fd = w->from_fd = -1;
    evo_status s = spawn(w, err);
    if (s != EVO_OK) {
        evo_worker_stop(w);
        return s;
    }
    *out = w;
    return EVO_OK;
}

/* ---- ending a process ---- */

static void drop_process(evo_worker *w)
{
    close_fd(&w->to_fd);
    close_fd(&w->from_fd);
    w->pid = 0;
    w->pending = false;
    w->deadline = 0;
    w->len = 0;
}

void evo_worker_kill(evo_worker *w)
{
    if (!w || w->pid <= 0) return;
    int ws;
    kill_group(w->pid);
    reap(w->pid, &ws);
    drop_process(w);
}

/* The worker closed its output or its input: give it a moment to exit, then make sure. Fills err. */
static evo_status died(evo_worker *w, const char *what, evo_err *err)
{
    pid_t pid = w->pid;
    close_fd(&w->to_fd);
    int ws;
    char how[160];
    if (reap_within(pid, EVO_WORKER_EXIT_GRACE_S, &ws)) {
        if (ws == -1)
            snprintf(how, sizeof how, "%s and exited", what);
        else
            describe_wait_status(ws, how, sizeof how);
    } else {
        kill_group(pid);
        reap(pid, &ws);
        snprintf(how, sizeof how, "%s but did not exit; killed", what);
    }
    char tail[700];
    log_tail(w, tail, sizeof tail);
    drop_process(w);
    if (tail[0])
        return evo_fail(err, EVO_E_WORKER, "%s (pid %ld) %s; last lines of %s: %s", w->name, (long)pid, how,
                        w->log_path, tail);
    return evo_fail(err, EVO_E_WORKER, "%s (pid %ld) %s", w->name, (long)pid, how);
}

static evo_status protocol_error(evo_worker *w, evo_err *err)
{
    pid_t pid = w->pid;
    evo_worker_kill(w);
    return evo_failv_prefix(err, EVO_E_WORKER, "%s (pid %ld) broke the protocol and was killed", w->name, (long)pid);
}

static evo_status timed_out(evo_worker *w, double timeout_s, evo_err *err)
{
    pid_t pid = w->pid;
    evo_worker_kill(w);
    return evo_fail(err, EVO_E_TIMEOUT, "%s (pid %ld) did not reply within %.3g s; killed", w->name, (long)pid,
                    timeout_s);
}

evo_status evo_worker_restart(evo_worker *w, evo_err *err)
{
    evo_worker_kill(w);
    return spawn(w, err);
}

void evo_worker_request_stop(evo_worker *w)
{
    if (!w || w->pid <= 0 || w->stop_deadline > 0) return;
    if (w->to_fd >= 0) {
        char *line = evo_proto_encode_shutdown(0);
        size_t n = strlen(line);
        line = evo_xrealloc(line, n + 2);
        line[n] = '\n';
        ssize_t r = write(w->to_fd, line, n + 1); /* non-blocking; a full pipe only means EOF must do */
        (void)r;
        free(line);
    }
    close_fd(&w->to_fd); /* EOF ends the request loop too */
    w->stop_deadline = evo_now() + EVO_WORKER_STOP_GRACE_S;
}

void evo_worker_stop(evo_worker *w) { evo_worker_stop_within(w, 0); }

void evo_worker_stop_within(evo_worker *w, double grace_s)
{
    if (!w) return;
    if (w->pid > 0) {
        const double t0 = evo_now();
        evo_worker_request_stop(w);
        int ws;
        double left = w->stop_deadline - evo_now();
        if (t0 + grace_s - evo_now() > left) left = t0 + grace_s - evo_now();
        if (!reap_within(w->pid, left > 0 ? left : 0, &ws)) {
            kill_group(w->pid);
            reap(w->pid, &ws);
        }
        drop_process(w);
    }
    for (int i = 0; w->argv && w->argv[i]; i++) free(w->argv[i]);
    free(w->argv);
    free(w->exe);
    free(w->log_path);
    free(w->name);
    free(w->buf);
    free(w);
}

/* ---- calls ---- */

/* Reads whatever the worker has written. 1 = got bytes or nothing yet, 0 = EOF, -1 = line too long. */
static int read_available(evo_worker *w)
{
    for (;;) {
        if (w->cap - w->len < 4096) {
            w->cap = w->cap ? w->cap * 2 : 8192;
            w->buf = evo_xrealloc(w->buf, w->cap);
        }
        ssize_t r = read(w->from_fd, w->buf + w->len, w->cap - w->len - 1);
        if (r > 0) {
            w->len += (size_t)r;
            if (w->len > EVO_WORKER_LINE_MAX) return -1;
            continue;
        }
        if (r == 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
        return 0; /* a read error on a pipe means the other end is unusable */
    }
}

evo_status evo_worker_check_idle(evo_worker *w, evo_err *err)
{
    if (w->pid <= 0) return evo_fail(err, EVO_E_WORKER, "%s is not running (restart it)", w->name);
    if (w->pending) return EVO_OK;
    /* Anything the worker wrote while idle is either its end (EOF) or a stray line: both end it. */
    int got = read_available(w);
    if (got == 0 && w->len == 0) {
        evo_status s = died(w, "closed its output", err);
        return evo_failv_prefix(err, s, "between requests");
    }
    if (w->len > 0 || got <= 0) {
        w->buf[w->len < 100 ? w->len : 100] = '\0';
        evo_fail(err, EVO_E_WORKER, "wrote %zu bytes nobody asked for: \"%s\"", w->len, w->buf);
        return protocol_error(w, err);
    }
    return EVO_OK;
}

evo_status evo_worker_send(evo_worker *w, const char *request, double timeout_s, evo_err *err)
{
    if (w->pid <= 0) return evo_fail(err, EVO_E_WORKER, "%s is not running (restart it)", w->name);
    if (w->pending) return evo_fail(err, EVO_E_INTERNAL, "%s: a call is already pending", w->name);
    if (strchr(request, '\n')) return evo_fail(err, EVO_E_INTERNAL, "%s: a request must be one line", w->name);
    char op[EVO_PROTO_OP_MAX];
    int64_t id;
    evo_status s = evo_proto_peek(request, op, &id, err);
    if (s != EVO_OK) return evo_failv_prefix(err, EVO_E_INTERNAL, "%s: bad request", w->name);

    s = evo_worker_check_idle(w, err);
    if (s != EVO_OK) return s;

    w->pending = true;
    w->call_id = id;
    w->timeout_s = timeout_s;
    w->deadline = evo_now() + timeout_s;
    size_t n = strlen(request);
    char *line = evo_xmalloc(n + 1);
    memcpy(line, request, n);
    line[n] = '\n';
    size_t off = 0;
    while (off < n + 1) {
        ssize_t r = write(w->to_fd, line + off, n + 1 - off);
        if (r > 0) {
            off += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (evo_now() >= w->deadline) {
                free(line);
                return timed_out(w, timeout_s, err);
            }
            struct pollfd p = {w->to_fd, POLLOUT, 0};
            poll(&p, 1, ms_until(w->deadline));
            continue;
        }
        free(line);
        return died(w, "closed its input", err); /* EPIPE */
    }
    free(line);
    return EVO_OK;
}

/* The worker said it ends after this reply: reap it now, so that nobody sends it another request. */
static void reap_leaving(evo_worker *w)
{
    int ws;
    close_fd(&w->to_fd);
    if (!reap_within(w->pid, EVO_WORKER_EXIT_GRACE_S, &ws)) {
        kill_group(w->pid);
        reap(w->pid, &ws);
    }
    drop_process(w);
}

evo_status evo_worker_receive(evo_worker *w, char **reply, evo_err *err)
{
    *reply = NULL;
    if (w->pid <= 0 || !w->pending) return evo_fail(err, EVO_E_INTERNAL, "%s: no call is pending", w->name);
    int got = read_available(w);
    char *nl = w->len ? memchr(w->buf, '\n', w->len) : NULL;
    if (!nl) {
        if (got < 0) {
            evo_fail(err, EVO_E_WORKER, "a reply line longer than %u bytes", EVO_WORKER_LINE_MAX);
            return protocol_error(w, err);
        }
        if (got == 0) {
            char partial[100] = "";
            if (w->len > 0) snprintf(partial, sizeof partial, "%.*s", (int)(w->len < 80 ? w->len : 80), w->buf);
            evo_status s = died(w, "closed its output", err);
            if (partial[0]) evo_failv_prefix(err, s, "unterminated reply \"%s\"", partial);
            return s;
        }
        if (evo_now() >= w->deadline) return timed_out(w, w->timeout_s, err);
        return EVO_OK;
    }
    size_t n = (size_t)(nl - w->buf);
    char *line = evo_xmalloc(n + 1);
    memcpy(line, w->buf, n);
    line[n] = '\0';
    bool extra = w->len > n + 1;
    w->len = 0;
    w->pending = false;
    w->deadline = 0;

    char op[EVO_PROTO_OP_MAX];
    int64_t id;
    evo_status s = evo_proto_peek(line, op, &id, err);
    bool exiting = s == EVO_OK && evo_proto_is_exiting(line);
    if (s != EVO_OK) {
        char shown[160];
        snprintf(shown, sizeof shown, "%.120s", line);
        free(line);
        evo_failv_prefix(err, EVO_E_WORKER, "malformed reply \"%s\"", shown);
        return protocol_error(w, err);
    }
    if (strcmp(op, "error") == 0) {
        s = evo_proto_check_error(line, err);
        free(line);
        if (extra) return protocol_error(w, err);
        if (exiting) reap_leaving(w);
        return s == EVO_OK ? EVO_E_WORKER : s;
    }
    if (id != w->call_id || extra) {
        free(line);
        if (extra)
            evo_fail(err, EVO_E_WORKER, "more than one reply line to request %lld", (long long)w->call_id);
        else
            evo_fail(err, EVO_E_WORKER, "reply id %lld to request %lld", (long long)id, (long long)w->call_id);
        return protocol_error(w, err);
    }
    if (exiting) reap_leaving(w);
    *reply = line;
    return EVO_OK;
}

evo_status evo_worker_call(evo_worker *w, const char *request, double timeout_s, char **reply, evo_err *err)
{
    *reply = NULL;
    evo_status s = evo_worker_send(w, request, timeout_s, err);
    if (s != EVO_OK) return s;
    for (;;) {
        s = evo_worker_receive(w, reply, err);
        if (s != EVO_OK || *reply) return s;
        struct pollfd p = {w->from_fd, POLLIN, 0};
        poll(&p, 1, ms_until(w->deadline));
    }
}

int evo_worker_fd(const evo_worker *w) { return w->pid > 0 ? w->from_fd : -1; }
double evo_worker_deadline(const evo_worker *w) { return w->pending ? w->deadline : 0; }
bool evo_worker_running(const evo_worker *w) { return w->pid > 0; }
pid_t evo_worker_pid(const evo_worker *w) { return w->pid > 0 ? w->pid : 0; }
const char *evo_worker_name(const evo_worker *w) { return w->name; }

/* ---- worker side ---- */

static evo_status write_line(int fd, const char *text)
{
    size_t n = strlen(text);
    char *line = evo_xmalloc(n + 1);
    memcpy(line, text, n);
    line[n] = '\n';
    size_t off = 0;
    evo_status s = EVO_OK;
    while (off < n + 1) {
        ssize_t r = write(fd, line + off, n + 1 - off);
        if (r > 0) {
            off += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, -1);
        } else {
            s = EVO_E_WORKER;
            break;
        }
    }
    free(line);
    return s;
}

evo_status evo_worker_serve(int in_fd, int out_fd, const evo_worker_handler *handlers, int n, void *ctx, evo_err *err)
{
    evo_str in = {0};
    size_t scanned = 0; /* bytes of `in` known to hold no newline */
    evo_status result = EVO_OK;
    for (;;) {
        char *nl = in.len > scanned ? memchr(in.p + scanned, '\n', in.len - scanned) : NULL;
        if (!nl) {
            scanned = in.len;
            if (in.len > EVO_WORKER_LINE_MAX) {
                result =
                    evo_fail(err, EVO_E_WORKER, "worker: a request line longer than %u bytes", EVO_WORKER_LINE_MAX);
                break;
            }
            char chunk[65536];
            ssize_t r = read(in_fd, chunk, sizeof chunk);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                result = evo_fail(err, EVO_E_IO, "worker: reading requests: %s", strerror(errno));
                break;
            }
            if (r == 0) break; /* the parent closed our input: done */
            evo_str_appendn(&in, chunk, (size_t)r);
            continue;
        }
        size_t len = (size_t)(nl - in.p);
        char *line = evo_xmalloc(len + 1);
        memcpy(line, in.p, len);
        line[len] = '\0';
        size_t rest = in.len - len - 1;
        memmove(in.p, nl + 1, rest);
        in.len = rest;
        in.p[rest] = '\0';
        scanned = 0;
        if (len == 0) {
            free(line);
            continue;
        }

        char op[EVO_PROTO_OP_MAX];
        int64_t id = -1;
        char *reply = NULL;
        bool exit_after = false;
        evo_err herr = {0};
        evo_status s = evo_proto_peek(line, op, &id, &herr);
        if (s != EVO_OK) {
            reply = evo_proto_encode_error(-1, EVO_E_WORKER, herr.msg);
        } else if (strcmp(op, "shutdown") == 0) {
            reply = evo_proto_encode_shutdown(id);
            exit_after = true;
        } else {
            const evo_worker_handler *h = NULL;
            for (int i = 0; i < n && !h; i++)
                if (strcmp(handlers[i].op, op) == 0) h = &handlers[i];
            if (!h) {
                snprintf(herr.msg, sizeof herr.msg, "unknown op '%s'", op);
                reply = evo_proto_encode_error(id, EVO_E_WORKER, herr.msg);
            } else {
                s = h->fn(ctx, line, &reply, &exit_after, &herr);
                if (s == EVO_OK && (!reply || strchr(reply, '\n'))) {
                    s = EVO_E_INTERNAL;
                    snprintf(herr.msg, sizeof herr.msg, "handler of '%s' gave %s", op,
                             reply ? "a reply of several lines" : "no reply");
                }
                if (s != EVO_OK) {
                    free(reply);
                    reply = evo_proto_encode_error(id, s, herr.msg);
                }
            }
        }
        free(line);
        if (exit_after) reply = evo_proto_mark_exiting(reply);
        evo_status ws = write_line(out_fd, reply);
        free(reply);
        if (ws != EVO_OK) {
            result = evo_fail(err, EVO_E_WORKER, "worker: writing a reply: %s (is the parent gone?)", strerror(errno));
            break;
        }
        if (exit_after) break;
    }
    evo_str_free(&in);
    return result;
}
