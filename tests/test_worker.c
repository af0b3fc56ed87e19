/* test_worker.c — the watchdog around one worker process, driven through the real binary (`evo worker --fake`):
 * a good call, a worker killed by a signal, one that exits, stalls, talks garbage, reports an error, ends after
 * a reply, cannot be exec'd, or closes its input; every process is reaped (no zombie) and restartable.
 * Also the request loop itself, in-process over pipes. Run: ctest -R test_worker (or build/tests/test_worker).
 */
#include "check.h"
#include "protocol.h"
#include "util.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char log_path[256];

/* A process that was reaped no longer exists at all: kill(pid, 0) fails with ESRCH (a zombie would not). */
static int gone(pid_t pid) { return pid > 0 && kill(pid, 0) == -1 && errno == ESRCH; }

/* True when this test process has no child left, reaped or not. */
static int no_children(void) { return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD; }

static evo_worker *start_fake(const char *mode)
{
    const char *argv[] = {"worker", "--gpu", "0", "--fake", mode, NULL};
    evo_worker_spec spec = {EVO_BINARY, argv, log_path, "worker gpu 0"};
    evo_worker *w = NULL;
    evo_err err = {0};
    evo_status s = evo_worker_start(&spec, &w, &err);
    if (s != EVO_OK) {
        fprintf(stderr, "cannot start the fake worker: %s\n", err.msg);
        exit(1);
    }
    return w;
}

static char *eval_line(int64_t id, const char *fault, int n_best)
{
    evo_eval_request r;
    memset(&r, 0, sizeof r);
    r.id = id;
    snprintf(r.cubin_path, sizeof r.cubin_path, "/nonexistent/cubin.entry");
    snprintf(r.program, sizeof r.program, "attention_fp8");
    r.variants[0] =
        (evo_variant){.name_expr = "attn_fwd_64", .threads = 128, .smem_bytes = 32768, .attr = {64, 0, 64, 0}};
    r.n_variants = 1;
    r.check = r.time = true;
    for (int i = 0; i < n_best; i++) r.best_us[i] = 100 + i;
    r.n_best = n_best;
    if (fault) snprintf(r.fault_injection, sizeof r.fault_injection, "%s", fault);
    return evo_proto_encode_eval_request(&r);
}

/* An eval call; the reply (if any) is decoded into *rep. */
static evo_status eval(evo_worker *w, int64_t id, const char *fault, double timeout, evo_eval_reply *rep, evo_err *err)
{
    char *line = eval_line(id, fault, 3);
    char *reply = NULL;
    memset(rep, 0, sizeof *rep);
    evo_status s = evo_worker_call(w, line, timeout, &reply, err);
    free(line);
    if (s == EVO_OK) {
        CHECK(reply != NULL);
        s = evo_proto_decode_eval_reply(reply, rep, err);
    } else {
        CHECK(reply == NULL);
    }
    free(reply);
    return s;
}

static void hello_ok(evo_worker *w)
{
    char *line = evo_proto_encode_hello_request(1), *reply = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_worker_call(w, line, 10, &reply, &err), EVO_OK);
    evo_hello_reply h;
    CHECK_EQ_INT(evo_proto_decode_hello_reply(reply, &h, &err), EVO_OK);
    CHECK_STR(h.device, "fake");
    CHECK_STR(h.arch, "sm_90");
    CHECK_EQ_INT(h.pid, evo_worker_pid(w));
    free(line);
    free(reply);
}

static void test_call_ok(void)
{
    evo_worker *w = start_fake("ok");
    pid_t pid = evo_worker_pid(w);
    CHECK(pid > 0);
    CHECK(evo_worker_running(w));
    hello_ok(w);
    evo_eval_reply rep;
    evo_err err = {0};
    CHECK_EQ_INT(eval(w, 42, NULL, 10, &rep, &err), EVO_OK);
    CHECK_EQ_INT(rep.id, 42);
    CHECK_EQ_INT(rep.r.verdict, EVO_V_OK);
    CHECK_EQ_INT(rep.r.n_shapes, 3);
    CHECK_NEAR(rep.r.shapes[1].median_us, 110.0, 0);
    CHECK_NEAR(rep.r.shapes[1].speedup, 1.05, 1e-12);
    CHECK_STR(rep.r.detail, "{\"fake\":true,\"request\":42}");
    evo_eval_reply_free(&rep);
    /* Many calls on one process, ids in any order. */
    int all_ok = 1;
    for (int i = 0; i < 20; i++) {
        all_ok &= eval(w, 1000 - i, NULL, 10, &rep, &err) == EVO_OK && rep.id == 1000 - i;
        evo_eval_reply_free(&rep);
    }
    CHECK(all_ok);
    CHECK_EQ_INT(evo_worker_pid(w), pid);
    double t0 = evo_now();
    evo_worker_stop(w);
    CHECK(evo_now() - t0 < 1.0); /* a healthy worker leaves on shutdown, nobody waits for the grace */
    CHECK(gone(pid));
}

static void test_die(void)
{
    evo_worker *w = start_fake("ok");
    hello_ok(w);
    pid_t pid = evo_worker_pid(w);
    evo_eval_reply rep;
    evo_err err = {0};
    CHECK_EQ_INT(eval(w, 3, "die", 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "worker gpu 0 (pid ");
    CHECK_CONTAINS(err.msg, "was killed by SIGSEGV (Segmentation fault)");
    CHECK_CONTAINS(err.msg, "request 3: dying of SIGSEGV as asked"); /* the tail of its log */
    CHECK(!evo_worker_running(w));
    CHECK_EQ_INT(evo_worker_pid(w), 0);
    CHECK_EQ_INT(evo_worker_fd(w), -1);
    CHECK(gone(pid));
    /* A call on a dead handle says so instead of hanging. */
    CHECK_EQ_INT(eval(w, 4, NULL, 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "is not running");
    /* Restartable, with a new process. */
    CHECK_EQ_INT(evo_worker_restart(w, &err), EVO_OK);
    CHECK(evo_worker_pid(w) > 0 && evo_worker_pid(w) != pid);
    hello_ok(w);
    CHECK_EQ_INT(eval(w, 5, NULL, 10, &rep, &err), EVO_OK);
    CHECK_EQ_INT(rep.r.verdict, EVO_V_OK);
    evo_eval_reply_free(&rep);
    evo_worker_stop(w);

    /* The mode given on the command line, on the first evaluate. */
    w = start_fake("die");
    hello_ok(w);
    pid = evo_worker_pid(w);
    CHECK_EQ_INT(eval(w, 1, NULL, 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "SIGSEGV");
    CHECK(gone(pid));
    evo_worker_stop(w);
}

static void test_exit_status(void)
{
    evo_worker *w = start_fake("ok");
    pid_t pid = evo_worker_pid(w);
    evo_eval_reply rep;
    evo_err err = {0};
    CHECK_EQ_INT(eval(w, 8, "exit:3", 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "exited with status 3");
    CHECK(gone(pid));
    evo_worker_stop(w);
}

static void test_stall(void)
{
    evo_worker *w = start_fake("ok");
    hello_ok(w);
    pid_t pid = evo_worker_pid(w);
    evo_eval_reply rep;
    evo_err err = {0};
    double t0 = evo_now();
    CHECK_EQ_INT(eval(w, 6, "stall", 1.0, &rep, &err), EVO_E_TIMEOUT);
    double took = evo_now() - t0;
    CHECK(took >= 1.0 && took < 2.0);
    CHECK_CONTAINS(err.msg, "did not reply within 1 s; killed");
    CHECK(gone(pid));
    CHECK(!evo_worker_running(w));
    CHECK_EQ_INT(evo_worker_restart(w, &err), EVO_OK);
    hello_ok(w);
    evo_worker_stop(w);

    /* Slow but within its time is fine; slower than its time is not. */
    w = start_fake("slow:0.3");
    CHECK_EQ_INT(eval(w, 1, NULL, 5, &rep, &err), EVO_OK);
    evo_eval_reply_free(&rep);
    pid = evo_worker_pid(w);
    t0 = evo_now();
    CHECK_EQ_INT(eval(w, 2, "slow:5", 0.5, &rep, &err), EVO_E_TIMEOUT);
    CHECK(evo_now() - t0 < 1.5);
    CHECK(gone(pid));
    evo_worker_stop(w);
}

static void test_garbage_and_errors(void)
{
    evo_worker *w = start_fake("ok");
    pid_t pid = evo_worker_pid(w);
    evo_eval_reply rep;
    evo_err err = {0};
    CHECK_EQ_INT(eval(w, 9, "garbage", 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "broke the protocol and was killed");
    CHECK_CONTAINS(err.msg, "malformed reply \"this is {not a reply\"");
    CHECK(gone(pid));
    CHECK_EQ_INT(evo_worker_restart(w, &err), EVO_OK);

    /* An error reply carries the worker's status; the worker stays up and in step. */
    pid = evo_worker_pid(w);
    CHECK_EQ_INT(eval(w, 10, "error", 10, &rep, &err), EVO_E_CUDA);
    CHECK_STR(err.msg, "worker: fake worker: CUDA_ERROR_ILLEGAL_ADDRESS as asked (request 10)");
    CHECK_EQ_INT(evo_worker_pid(w), pid);
    CHECK_EQ_INT(eval(w, 11, NULL, 10, &rep, &err), EVO_OK);
    evo_eval_reply_free(&rep);
    /* A request the worker cannot read gets an error reply too. */
    CHECK_EQ_INT(eval(w, 12, "no-such-mode", 10, &rep, &err), EVO_E_USAGE);
    CHECK_CONTAINS(err.msg, "unknown fake worker mode 'no-such-mode'");
    char *reply = NULL;
    CHECK_EQ_INT(evo_worker_call(w, "{\"op\":\"frobnicate\",\"id\":13}", 10, &reply, &err), EVO_E_WORKER);
    CHECK_STR(err.msg, "worker: unknown op 'frobnicate'");
    CHECK_EQ_INT(evo_worker_call(w, "{\"op\":\"eval\",\"id\":14}", 10, &reply, &err), EVO_E_WORKER);
    CHECK_STR(err.msg, "worker: eval request: field 'cubin': missing");
    /* Requests that are not one message are refused before they reach the pipe. */
    CHECK_EQ_INT(evo_worker_call(w, "{\"op\":\"eval\",\n\"id\":15}", 10, &reply, &err), EVO_E_INTERNAL);
    CHECK_EQ_INT(evo_worker_call(w, "not json", 10, &reply, &err), EVO_E_INTERNAL);
    CHECK_EQ_INT(evo_worker_pid(w), pid);
    CHECK_EQ_INT(eval(w, 16, NULL, 10, &rep, &err), EVO_OK);
    evo_eval_reply_free(&rep);
    evo_worker_stop(w);
    CHECK(gone(pid));
}

static void test_exit_after(void)
{
    /* A worker that ends after replying (as after a kernel timeout) says so in the reply: the reply counts and
     * the process is reaped at once, so no later request is sent to a worker on its way out. */
    evo_worker *w = start_fake("exit-after");
    pid_t pid = evo_worker_pid(w);
    evo_eval_reply rep;
    evo_err err = {0};
    CHECK_EQ_INT(eval(w, 1, NULL, 10, &rep, &err), EVO_OK);
    CHECK_EQ_INT(rep.r.verdict, EVO_V_OK);
    evo_eval_reply_free(&rep);
    CHECK(!evo_worker_running(w));
    CHECK(gone(pid));
    CHECK_EQ_INT(eval(w, 2, NULL, 10, &rep, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "is not running");
    CHECK_EQ_INT(evo_worker_restart(w, &err), EVO_OK);
    CHECK_EQ_INT(eval(w, 3, NULL, 10, &rep, &err), EVO_OK);
    evo_eval_reply_free(&rep);
    evo_worker_stop(w);

    /* One that dies between requests without a word is found out before the next request is written. */
    w = start_fake("ok");
    pid = evo_worker_pid(w);
    CHECK_EQ_INT(evo_worker_check_idle(w, &err), EVO_OK);
    kill(pid, SIGTERM);
    usleep(200 * 1000);
    CHECK_EQ_INT(evo_worker_check_idle(w, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "between requests: worker gpu 0 (pid ");
    CHECK_CONTAINS(err.msg, "was killed by SIGTERM (Terminated)");
    CHECK(gone(pid));
    evo_worker_stop(w);
}

static void test_start_failures(void)
{
    const char *argv[] = {"worker", NULL};
    evo_worker_spec spec = {"/nonexistent/evo", argv, NULL, "worker gpu 7"};
    evo_worker *w = (evo_worker *)1;
    evo_err err = {0};
    CHECK_EQ_INT(evo_worker_start(&spec, &w, &err), EVO_E_WORKER);
    CHECK(w == NULL);
    CHECK_STR(err.msg, "cannot start worker gpu 7: exec /nonexistent/evo: No such file or directory");
    CHECK(no_children());

    spec.exe = EVO_BINARY;
    spec.log_path = "/nonexistent/dir/worker.log";
    CHECK_EQ_INT(evo_worker_start(&spec, &w, &err), EVO_E_WORKER);
    CHECK_STR(err.msg, "cannot start worker gpu 7: open log /nonexistent/dir/worker.log: No such file or directory");
    CHECK(no_children());

    /* Bad options: the worker exits with status 2 before reading anything; its message is in the log. */
    const char *bad[] = {"worker", "--gpu", "x", NULL};
    evo_worker_spec spec2 = {EVO_BINARY, bad, log_path, "worker gpu x"};
    CHECK_EQ_INT(evo_worker_start(&spec2, &w, &err), EVO_OK);
    char *line = evo_proto_encode_hello_request(1), *reply = NULL;
    CHECK_EQ_INT(evo_worker_call(w, line, 10, &reply, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "exited with status 2");
    CHECK_CONTAINS(err.msg, "--gpu: 'x' is not a GPU ordinal");
    free(line);
    evo_worker_stop(w);
}

static void test_closed_input_and_sigpipe(void)
{
    /* A "worker" that closes its input at once and keeps its output open: writing the request raises EPIPE,
     * which must be an error value (SIGPIPE would kill this test), and the process that does not exit by
     * itself is killed. */
    const char *argv[] = {"-c", "exec 0<&-; exec sleep 30", NULL};
    evo_worker_spec spec = {"/bin/sh", argv, NULL, "odd worker"};
    evo_worker *w;
    evo_err err = {0};
    CHECK_EQ_INT(evo_worker_start(&spec, &w, &err), EVO_OK);
    pid_t pid = evo_worker_pid(w);
    usleep(300 * 1000);
    char *line = eval_line(1, NULL, 0), *reply = NULL;
    double t0 = evo_now();
    CHECK_EQ_INT(evo_worker_call(w, line, 10, &reply, &err), EVO_E_WORKER);
    CHECK(evo_now() - t0 < EVO_WORKER_EXIT_GRACE_S + 1.0);
    CHECK_CONTAINS(err.msg, "odd worker (pid ");
    CHECK_CONTAINS(err.msg, "closed its input but did not exit; killed");
    CHECK(gone(pid));
    free(line);
    evo_worker_stop(w);
}

static void test_stop_stuck(void)
{
    /* Stopping a worker that is stuck in a request: shutdown goes unanswered, the grace runs out, SIGKILL. */
    evo_worker *w = start_fake("stall");
    pid_t pid = evo_worker_pid(w);
    char *line = eval_line(1, NULL, 0);
    evo_err err = {0};
    CHECK_EQ_INT(evo_worker_send(w, line, 60, &err), EVO_OK);
    CHECK(evo_worker_deadline(w) > evo_now() + 50);
    free(line);
    usleep(100 * 1000);
    double t0 = evo_now();
    evo_worker_stop(w);
    double took = evo_now() - t0;
    CHECK(took >= EVO_WORKER_STOP_GRACE_S - 0.2 && took < EVO_WORKER_STOP_GRACE_S + 1.0);
    CHECK(gone(pid));
    evo_worker_stop(NULL);
}

/* ---- the request loop, in-process ---- */

static int n_echo;

static evo_status h_echo(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    (void)exit_after;
    (void)err;
    n_echo++;
    CHECK(ctx == &n_echo);
    char op[EVO_PROTO_OP_MAX];
    int64_t id;
    CHECK_EQ_INT(evo_proto_peek(line, op, &id, NULL), EVO_OK);
    evo_str s = {0};
    evo_str_appendf(&s, "{\"op\":\"echo\",\"id\":%lld}", (long long)id);
    *reply = evo_str_take(&s);
    return EVO_OK;
}

static evo_status h_fail(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    (void)ctx;
    (void)line;
    *reply = evo_strdup("{\"op\":\"x\",\"id\":0}"); /* dropped: a failure sends an error reply instead */
    *exit_after = strstr(line, "\"last\"") != NULL;
    return evo_fail(err, EVO_E_CUDA, "launch failed: CUDA_ERROR_LAUNCH_FAILED");
}

static evo_status h_two_lines(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    (void)ctx;
    (void)line;
    (void)exit_after;
    (void)err;
    *reply = evo_strdup("{\"op\":\"x\",\n\"id\":0}");
    return EVO_OK;
}

/* Feeds `input` to evo_worker_serve and returns what it wrote. */
static char *serve(const char *input, evo_status *result, evo_err *err)
{
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    ssize_t wrote = write(in[1], input, strlen(input));
    CHECK_EQ_INT(wrote, (ssize_t)strlen(input));
    close(in[1]);
    static const evo_worker_handler handlers[] = {{"echo", h_echo}, {"fail", h_fail}, {"two", h_two_lines}};
    *result = evo_worker_serve(in[0], out[1], handlers, 3, &n_echo, err);
    close(in[0]);
    close(out[1]);
    evo_str s = {0};
    char buf[4096];
    ssize_t r;
    while ((r = read(out[0], buf, sizeof buf)) > 0) evo_str_appendn(&s, buf, (size_t)r);
    close(out[0]);
    return evo_str_take(&s);
}

static void test_serve_loop(void)
{
    evo_status st;
    evo_err err = {0};
    n_echo = 0;
    char *out = serve("{\"op\":\"echo\",\"id\":1}\n"
                      "\n"
                      "{\"op\":\"echo\",\"id\":2}\n"
                      "not json\n"
                      "{\"op\":\"nope\",\"id\":3}\n"
                      "{\"op\":\"fail\",\"id\":4}\n"
                      "{\"op\":\"two\",\"id\":5}\n"
                      "{\"op\":\"shutdown\",\"id\":6}\n"
                      "{\"op\":\"echo\",\"id\":7}\n",
                      &st, &err);
    CHECK_EQ_INT(st, EVO_OK);
    CHECK_EQ_INT(n_echo, 2); /* the request after shutdown is never served */
    CHECK_STR(out, "{\"op\":\"echo\",\"id\":1}\n"
                   "{\"op\":\"echo\",\"id\":2}\n"
                   "{\"op\":\"error\",\"id\":-1,\"code\":10,\"status\":\"worker error\",\"message\":\"message: not "
                   "valid JSON (column 1 of 8: malformed or truncated)\"}\n"
                   "{\"op\":\"error\",\"id\":3,\"code\":10,\"status\":\"worker error\",\"message\":\"unknown op "
                   "'nope'\"}\n"
                   "{\"op\":\"error\",\"id\":4,\"code\":9,\"status\":\"CUDA error\",\"message\":\"launch failed: "
                   "CUDA_ERROR_LAUNCH_FAILED\"}\n"
                   "{\"op\":\"error\",\"id\":5,\"code\":14,\"status\":\"internal error\",\"message\":\"handler of "
                   "'two' gave a reply of several lines\"}\n"
                   "{\"op\":\"shutdown\",\"id\":6,\"exiting\":true}\n");
    free(out);

    /* EOF ends the loop, also in the middle of a line; exit_after ends it after the reply. */
    n_echo = 0;
    out = serve("{\"op\":\"echo\",\"id\":1}\n{\"op\":\"echo\",\"id\"", &st, &err);
    CHECK_EQ_INT(st, EVO_OK);
    CHECK_EQ_INT(n_echo, 1);
    CHECK_STR(out, "{\"op\":\"echo\",\"id\":1}\n");
    free(out);
    out = serve("{\"op\":\"fail\",\"id\":1,\"last\":1}\n{\"op\":\"echo\",\"id\":2}\n", &st, &err);
    CHECK_EQ_INT(st, EVO_OK);
    CHECK_CONTAINS(out, "\"id\":1,\"code\":9");
    CHECK_CONTAINS(out, "\"exiting\":true}\n");
    CHECK(strstr(out, "\"id\":2") == NULL);
    free(out);

    /* Replies to a parent that is gone: an error value, not SIGPIPE (the process ignores it, as evo worker does). */
    signal(SIGPIPE, SIG_IGN);
    int in[2], o[2];
    CHECK(pipe(in) == 0 && pipe(o) == 0);
    close(o[0]);
    ssize_t wr = write(in[1], "{\"op\":\"echo\",\"id\":1}\n", 22);
    CHECK_EQ_INT(wr, 22);
    close(in[1]);
    static const evo_worker_handler h[] = {{"echo", h_echo}};
    CHECK_EQ_INT(evo_worker_serve(in[0], o[1], h, 1, &n_echo, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "writing a reply");
    close(in[0]);
    close(o[1]);
}

int main(void)
{
    snprintf(log_path, sizeof log_path, "test_worker.%ld.log", (long)getpid());
    unlink(log_path);
    test_call_ok();
    test_die();
    test_exit_status();
    test_stall();
    test_garbage_and_errors();
    test_exit_after();
    test_start_failures();
    test_closed_input_and_sigpipe();
    test_stop_stuck();
    CHECK(no_children()); /* every worker of every test was reaped */
    test_serve_loop();
    unlink(log_path);
    return check_result();
}
