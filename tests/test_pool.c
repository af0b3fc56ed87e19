/* test_pool.c — the worker pool over fake workers (`evo worker --fake`): ten jobs on two workers where one job
 * kills its worker and one stalls, repeated runs, restart failure, Ctrl-C (once and twice), workers that end
 * after each reply, and no zombie at the end. Run: ctest -R test_pool (or build/tests/test_pool).
 */
#include "check.h"
#include "pool.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_JOBS 16

static char dir[256];

typedef struct {
    int calls[MAX_JOBS];
    evo_status status[MAX_JOBS];
    evo_verdict verdict[MAX_JOBS];
    int64_t reply_id[MAX_JOBS];
    char detail[MAX_JOBS][1024];
    char message[MAX_JOBS][1024];
    int worker[MAX_JOBS];
    int order[MAX_JOBS];
    int n_done;
    evo_pool *interrupt_after_first; /* interrupt the pool from the first callback */
} record;

static void on_done(void *ctx, const evo_pool_job *job, const evo_pool_done *d)
{
    record *r = ctx;
    int j = d->job;
    CHECK(j >= 0 && j < MAX_JOBS);
    CHECK(job->user == (void *)(intptr_t)(j + 100));
    r->calls[j]++;
    r->status[j] = d->status;
    r->verdict[j] = d->reply->r.verdict;
    r->reply_id[j] = d->reply->id;
    snprintf(r->detail[j], sizeof r->detail[j], "%s", d->reply->r.detail ? d->reply->r.detail : "");
    snprintf(r->message[j], sizeof r->message[j], "%s", d->message);
    r->worker[j] = d->worker;
    r->order[r->n_done++] = j;
    if (r->interrupt_after_first) evo_pool_interrupt(r->interrupt_after_first);
}

static evo_eval_request reqs[MAX_JOBS];
static evo_pool_job jobs[MAX_JOBS];

static void make_jobs(int n, const char *const *faults, double timeout)
{
    for (int j = 0; j < n; j++) {
        evo_eval_request *r = &reqs[j];
        memset(r, 0, sizeof *r);
        r->id = 500 + j;
        snprintf(r->cubin_path, sizeof r->cubin_path, "/nonexistent/%d.entry", j);
        snprintf(r->program, sizeof r->program, "job%d", j);
        r->variants[0] = (evo_variant){.name_expr = "attn_fwd", .threads = 128, .attr = {64, 0, 64, 0}};
        r->n_variants = 1;
        r->check = r->time = true;
        r->n_best = 2;
        if (faults && faults[j]) snprintf(r->fault_injection, sizeof r->fault_injection, "%s", faults[j]);
        jobs[j] = (evo_pool_job){r, timeout, (void *)(intptr_t)(j + 100)};
    }
}

static int gone(pid_t pid) { return pid > 0 && kill(pid, 0) == -1 && errno == ESRCH; }
static int no_children(void) { return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD; }

static evo_pool *start(int n, const char *exe, const char *mode)
{
    static const int gpus[] = {0, 1, 2, 3};
    const char *args[] = {"--fake", mode, NULL};
    evo_pool_opts o = {gpus, n, exe, args, dir, 10};
    evo_pool *p = NULL;
    evo_err err = {0};
    evo_status s = evo_pool_start(&o, &p, &err);
    if (s != EVO_OK) {
        fprintf(stderr, "pool start failed: %s\n", err.msg);
        exit(1);
    }
    return p;
}

static void test_faults_hit_one_job_each(void)
{
    evo_pool *p = start(2, EVO_BINARY, "slow:0.05");
    CHECK_EQ_INT(evo_pool_size(p), 2);
    CHECK_STR(evo_pool_hello(p, 0)->device, "fake");
    CHECK_EQ_INT(evo_pool_hello(p, 1)->gpu, 1);
    pid_t first[2] = {evo_pool_worker_pid(p, 0), evo_pool_worker_pid(p, 1)};
    CHECK(first[0] > 0 && first[1] > 0 && first[0] != first[1]);

    const char *faults[10] = {NULL, NULL, NULL, "die", NULL, NULL, "stall", NULL, NULL, NULL};
    make_jobs(10, faults, 1.5);
    record r;
    memset(&r, 0, sizeof r);
    evo_err err = {0};
    double t0 = evo_now();
    CHECK_EQ_INT(evo_pool_run(p, jobs, 10, on_done, &r, &err), EVO_OK);
    double took = evo_now() - t0;
    CHECK(took >= 1.5 && took < 5.0); /* the stall costs its watchdog, the rest runs beside it */
    CHECK_EQ_INT(r.n_done, 10);
    int ok = 0, once = 1, used[2] = {0, 0};
    for (int j = 0; j < 10; j++) {
        once &= r.calls[j] == 1;
        CHECK_EQ_INT(r.reply_id[j], 500 + j);
        used[r.worker[j]]++;
        if (j == 3 || j == 6) continue;
        ok += r.status[j] == EVO_OK && r.verdict[j] == EVO_V_OK;
    }
    CHECK(once);
    CHECK_EQ_INT(ok, 8);
    CHECK(used[0] > 0 && used[1] > 0);
    CHECK_EQ_INT(r.status[3], EVO_E_WORKER);
    CHECK_EQ_INT(r.verdict[3], EVO_V_CRASHED);
    CHECK_CONTAINS(r.message[3], "was killed by SIGSEGV");
    CHECK_CONTAINS(r.detail[3], "\"worker\":\"worker gpu ");
    CHECK_CONTAINS(r.detail[3], "SIGSEGV");
    CHECK_CONTAINS(r.detail[3], "request 503: dying of SIGSEGV as asked"); /* from that worker's log */
    CHECK_EQ_INT(r.status[6], EVO_E_TIMEOUT);
    CHECK_EQ_INT(r.verdict[6], EVO_V_TIMEOUT);
    CHECK_CONTAINS(r.message[6], "did not reply within 1.5 s; killed");
    /* The run does not wait for the second restart's hello; this does. */
    CHECK_EQ_INT(evo_pool_wait_ready(p, &err), EVO_OK);
    CHECK_EQ_INT(evo_pool_restarts(p), 2);
    /* Both faulted workers were replaced and reaped; the pool is whole again. */
    pid_t now[2] = {evo_pool_worker_pid(p, 0), evo_pool_worker_pid(p, 1)};
    CHECK(now[0] > 0 && now[1] > 0);
    int replaced = (now[0] != first[0]) + (now[1] != first[1]);
    CHECK(replaced >= 1);
    for (int i = 0; i < 2; i++)
        if (now[i] != first[i]) CHECK(gone(first[i]));
    CHECK_EQ_INT(evo_pool_hello(p, 0)->pid, now[0]);
    CHECK_EQ_INT(evo_pool_hello(p, 1)->pid, now[1]);

    /* The same pool runs again; the workers persist between runs. */
    make_jobs(4, NULL, 5);
    memset(&r, 0, sizeof r);
    CHECK_EQ_INT(evo_pool_run(p, jobs, 4, on_done, &r, &err), EVO_OK);
    CHECK_EQ_INT(r.n_done, 4);
    for (int j = 0; j < 4; j++) CHECK(r.calls[j] == 1 && r.status[j] == EVO_OK);
    CHECK_EQ_INT(evo_pool_worker_pid(p, 0), now[0]);
    CHECK_EQ_INT(evo_pool_worker_pid(p, 1), now[1]);
    /* No jobs is fine too. */
    CHECK_EQ_INT(evo_pool_run(p, jobs, 0, on_done, &r, &err), EVO_OK);
    double t1 = evo_now();
    evo_pool_stop(p);
    CHECK(evo_now() - t1 < 1.0);
    CHECK(gone(now[0]) && gone(now[1]));
    CHECK(no_children());
}

static void test_error_reply_and_garbage(void)
{
    evo_pool *p = start(1, EVO_BINARY, "ok");
    pid_t pid = evo_pool_worker_pid(p, 0);
    const char *faults[4] = {"error", NULL, "garbage", NULL};
    make_jobs(4, faults, 5);
    record r;
    memset(&r, 0, sizeof r);
    evo_err err = {0};
    CHECK_EQ_INT(evo_pool_run(p, jobs, 4, on_done, &r, &err), EVO_OK);
    CHECK_EQ_INT(r.status[0], EVO_E_CUDA); /* the worker's own error: reported, the worker kept */
    CHECK_EQ_INT(r.verdict[0], EVO_V_CRASHED);
    CHECK_CONTAINS(r.message[0], "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK_EQ_INT(r.status[1], EVO_OK);
    CHECK_EQ_INT(r.status[2], EVO_E_WORKER);
    CHECK_CONTAINS(r.message[2], "malformed reply");
    CHECK_EQ_INT(r.status[3], EVO_OK);
    CHECK_EQ_INT(evo_pool_wait_ready(p, &err), EVO_OK);
    CHECK_EQ_INT(evo_pool_restarts(p), 1); /* garbage only */
    CHECK(gone(pid));
    evo_pool_stop(p);
}

static void test_exit_after_each_reply(void)
{
    /* Each reply is followed by the worker's exit: every job is still OK, never charged with the exit. */
    evo_pool *p = start(1, EVO_BINARY, "exit-after");
    make_jobs(3, NULL, 5);
    record r;
    memset(&r, 0, sizeof r);
    evo_err err = {0};
    CHECK_EQ_INT(evo_pool_run(p, jobs, 3, on_done, &r, &err), EVO_OK);
    for (int j = 0; j < 3; j++) CHECK(r.calls[j] == 1 && r.status[j] == EVO_OK && r.verdict[j] == EVO_V_OK);
    CHECK_EQ_INT(evo_pool_wait_ready(p, &err), EVO_OK);
    CHECK_EQ_INT(evo_pool_restarts(p), 3);
    evo_pool_stop(p);
}

static void test_restart_fails(void)
{
    /* The binary disappears after the pool started: the worker that dies cannot come back. */
    char link[300];
    snprintf(link, sizeof link, "%s/evo-link", dir);
    unlink(link);
    CHECK(symlink(EVO_BINARY, link) == 0);
    evo_pool *p = start(1, link, "ok");
    CHECK(unlink(link) == 0);
    const char *faults[3] = {"die", NULL, NULL};
    make_jobs(3, faults, 5);
    record r;
    memset(&r, 0, sizeof r);
    evo_err err = {0};
    CHECK_EQ_INT(evo_pool_run(p, jobs, 3, on_done, &r, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "worker gpu 0 could not be restarted 3 times in a row; last: cannot start worker gpu 0: "
                            "exec ");
    CHECK_CONTAINS(err.msg, "No such file or directory");
    CHECK_EQ_INT(r.n_done, 1); /* the job that killed it; the others never ran */
    CHECK_EQ_INT(r.status[0], EVO_E_WORKER);
    CHECK_EQ_INT(r.calls[1] + r.calls[2], 0);
    /* A later run tries again (three times) and says the same. */
    CHECK_EQ_INT(evo_pool_run(p, jobs + 1, 2, on_done, &r, &err), EVO_E_WORKER);
    CHECK_EQ_INT(r.n_done, 1);
    evo_pool_stop(p);
    CHECK(no_children());

    /* A pool whose worker cannot start at all. */
    static const int gpus[] = {0};
    evo_pool_opts o = {gpus, 1, "/nonexistent/evo", NULL, NULL, 5};
    CHECK_EQ_INT(evo_pool_start(&o, &p, &err), EVO_E_WORKER);
    CHECK(p == NULL);
    CHECK_CONTAINS(err.msg, "starting worker gpu 0: cannot start worker gpu 0: exec /nonexistent/evo");
    /* One whose worker answers hello with an error (here: bad options make it exit). */
    const char *bad_args[] = {"--fake", "bogus", NULL};
    evo_pool_opts o2 = {gpus, 1, EVO_BINARY, bad_args, dir, 5};
    CHECK_EQ_INT(evo_pool_start(&o2, &p, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "exited with status 2");
    CHECK_CONTAINS(err.msg, "unknown fake worker mode 'bogus'");
    int twice[] = {1, 1};
    evo_pool_opts o3 = {twice, 2, EVO_BINARY, NULL, NULL, 5};
    CHECK_EQ_INT(evo_pool_start(&o3, &p, &err), EVO_E_USAGE);
    CHECK_STR(err.msg, "pool: GPU 1 is listed twice");
    CHECK(no_children());
}

static void test_interrupt(void)
{
    /* Ctrl-C once: no new job is handed out; the running ones finish and are reported. */
    evo_pool *p = start(2, EVO_BINARY, "slow:0.3");
    make_jobs(10, NULL, 5);
    record r;
    memset(&r, 0, sizeof r);
    r.interrupt_after_first = p;
    evo_err err = {0};
    CHECK_EQ_INT(evo_pool_run(p, jobs, 10, on_done, &r, &err), EVO_E_INTERRUPTED);
    CHECK_EQ_INT(r.n_done, 2);
    CHECK(r.calls[0] == 1 && r.calls[1] == 1 && r.status[0] == EVO_OK && r.status[1] == EVO_OK);
    /* The flag stays: a later run hands out nothing. */
    r.interrupt_after_first = NULL;
    CHECK_EQ_INT(evo_pool_run(p, jobs + 2, 8, on_done, &r, &err), EVO_E_INTERRUPTED);
    CHECK_EQ_INT(r.n_done, 2);
    evo_pool_stop(p);
}

static evo_pool *alarm_pool;

static void on_alarm(int sig)
{
    (void)sig;
    evo_pool_interrupt(alarm_pool);
    evo_pool_interrupt(alarm_pool);
}

static void test_interrupt_twice(void)
{
    /* Ctrl-C twice (from a signal handler): the stalled job is abandoned at once, no callback. */
    evo_pool *p = start(1, EVO_BINARY, "ok");
    pid_t pid = evo_pool_worker_pid(p, 0);
    const char *faults[2] = {"stall", NULL};
    make_jobs(2, faults, 60);
    record r;
    memset(&r, 0, sizeof r);
    alarm_pool = p;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    evo_err err = {0};
    double t0 = evo_now();
    CHECK_EQ_INT(evo_pool_run(p, jobs, 2, on_done, &r, &err), EVO_E_INTERRUPTED);
    CHECK(evo_now() - t0 < 2.0);
    CHECK_EQ_INT(r.n_done, 0);
    CHECK(gone(pid));
    evo_pool_stop(p);
    CHECK(no_children());
}

int main(void)
{
    snprintf(dir, sizeof dir, "test_pool.%ld", (long)getpid());
    mkdir(dir, 0755);
    test_faults_hit_one_job_each();
    test_error_reply_and_garbage();
    test_exit_after_each_reply();
    test_restart_fails();
    test_interrupt();
    test_interrupt_twice();
    CHECK(no_children());
    /* Logs: one file per GPU, holding what the fake workers said. */
    char log0[300];
    snprintf(log0, sizeof log0, "%s/worker-gpu0.log", dir);
    char *text = NULL;
    size_t len = 0;
    CHECK_EQ_INT(evo_read_file(log0, &text, &len, NULL), EVO_OK);
    CHECK_CONTAINS(text, "as asked");
    free(text);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (check_failures == 0 && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_result();
}
