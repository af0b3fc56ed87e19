/* pool.c — N workers, a job queue and one poll() loop (see pool.h).
 * Each worker slot is a small state machine: DEAD -> (spawn, send hello) -> STARTING -> (hello reply) -> IDLE
 * -> (send a job) -> BUSY -> (reply, death or watchdog) -> IDLE or DEAD. Restarts are asynchronous too, so a
 * worker coming back (CUDA initialisation takes seconds) never delays the watchdog of another.
 */
#include "pool.h"

#include "util.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often the loop looks at the interrupt flag when nothing else wakes it. */
#define POLL_SLICE_MS 100
/* A job whose request cannot even be delivered (its worker ended while idle) is retried on a fresh worker this
 * many times before it is charged as CRASHED. */
#define SEND_TRIES 3

typedef enum { W_DEAD, W_STARTING, W_IDLE, W_BUSY } wstate;

typedef struct {
    int gpu;
    char name[32];
    char *log_path;
    char **args;   /* argv after argv[0] */
    evo_worker *w; /* NULL until the first successful spawn */
    wstate state;
    bool restarting; /* the hello being awaited follows a restart */
    int failures;    /* failed (re)starts in a row */
    char last_failure[sizeof(evo_err)];
    int job; /* BUSY: index of the job */
    double sent_at;
    evo_hello_reply hello;
} slot;

struct evo_pool {
    slot slots[EVO_POOL_MAX_WORKERS];
    int n;
    double hello_timeout_s;
    const char *exe;
    char *exe_copy;
    volatile sig_atomic_t interrupts;
    int restarts;
};

/* ---- starting and restarting ---- */

static evo_status spawn_slot(evo_pool *p, slot *s, evo_err *err)
{
    evo_status st;
    if (!s->w) {
        evo_worker_spec spec = {p->exe, (const char *const *)s->args, s->log_path, s->name};
        st = evo_worker_start(&spec, &s->w, err);
    } else {
        st = evo_worker_restart(s->w, err);
    }
    if (st != EVO_OK) return st;
    char *hello = evo_proto_encode_hello_request(0);
    st = evo_worker_send(s->w, hello, p->hello_timeout_s, err);
    free(hello);
    if (st != EVO_OK) return st;
    s->state = W_STARTING;
    return EVO_OK;
}

/* Brings a DEAD slot back (STARTING). EVO_E_WORKER after EVO_POOL_RESTART_TRIES failures in a row. */
static evo_status revive(evo_pool *p, slot *s, evo_err *err)
{
    s->state = W_DEAD;
    s->restarting = true;
    while (s->failures < EVO_POOL_RESTART_TRIES) {
        evo_err e = {0};
        if (spawn_slot(p, s, &e) == EVO_OK) return EVO_OK;
        s->failures++;
        memcpy(s->last_failure, e.msg, sizeof s->last_failure);
    }
    return evo_fail(err, EVO_E_WORKER, "%s could not be restarted %d times in a row; last: %s", s->name, s->failures,
                    s->last_failure);
}

/* A hello arrived, or the call for it failed. */
static evo_status hello_done(evo_pool *p, slot *s, evo_status st, const char *line, evo_err *e)
{
    if (st == EVO_OK) {
        st = evo_proto_decode_hello_reply(line, &s->hello, e);
        if (st == EVO_OK && s->hello.gpu != s->gpu)
            st = evo_fail(e, EVO_E_WORKER, "hello from gpu %d, expected gpu %d", s->hello.gpu, s->gpu);
        if (st != EVO_OK) evo_worker_kill(s->w);
    }
    if (st == EVO_OK) {
        s->state = W_IDLE;
        s->failures = 0;
        if (s->restarting) p->restarts++;
        s->restarting = false;
        return EVO_OK;
    }
    if (evo_worker_running(s->w)) evo_worker_kill(s->w); /* it answered hello with an error: not usable */
    s->state = W_DEAD;
    return st;
}

/* ---- the poll loop ---- */

/* Waits until some slot that is STARTING or BUSY has something to read or reaches its deadline, or an IDLE
 * worker's pipe shows activity (its end, normally), or POLL_SLICE_MS passes. */
static void wait_events(evo_pool *p, struct pollfd *fds)
{
    double nearest = evo_now() + POLL_SLICE_MS / 1000.0;
    int nfds = 0;
    for (int i = 0; i < p->n; i++) {
        slot *s = &p->slots[i];
        fds[i].fd = -1;
        fds[i].events = POLLIN;
        fds[i].revents = 0;
        if (s->state == W_DEAD || !s->w || !evo_worker_running(s->w)) continue;
        fds[i].fd = evo_worker_fd(s->w);
        nfds++;
        double d = evo_worker_deadline(s->w);
        if (d > 0 && d < nearest) nearest = d;
    }
    double left = nearest - evo_now();
    int ms = left <= 0 ? 0 : (int)ceil(left * 1000.0);
    if (nfds == 0 && ms == 0) return;
    if (poll(fds, (nfds_t)p->n, ms) < 0 && errno != EINTR) {
        /* Not expected for pipes; the deadline checks below still run, so nothing hangs. */
    }
}

static bool slot_due(const slot *s, const struct pollfd *fd)
{
    if (fd->revents) return true;
    double d = evo_worker_deadline(s->w);
    return d > 0 && evo_now() >= d;
}

/* Waits until no worker is STARTING. retry: a worker that fails to come back is revived (EVO_POOL_RESTART_TRIES
 * in a row at most); otherwise its failure is returned at once (the first start: its message is the clearest). */
static evo_status settle(evo_pool *p, bool retry, evo_err *err)
{
    struct pollfd fds[EVO_POOL_MAX_WORKERS];
    for (;;) {
        int starting = 0;
        for (int i = 0; i < p->n; i++) {
            slot *s = &p->slots[i];
            if (s->state == W_DEAD && retry) {
                evo_status st = revive(p, s, err);
                if (st != EVO_OK) return st;
            }
            starting += s->state == W_STARTING;
        }
        if (starting == 0) return EVO_OK;
        if (retry && p->interrupts) return evo_fail(err, EVO_E_INTERRUPTED, "pool: interrupted");
        wait_events(p, fds);
        for (int i = 0; i < p->n; i++) {
            slot *s = &p->slots[i];
            if (s->state != W_STARTING || !slot_due(s, &fds[i])) continue;
            char *line = NULL;
            evo_err e = {0};
            evo_status st = evo_worker_receive(s->w, &line, &e);
            if (st == EVO_OK && !line) continue;
            st = hello_done(p, s, st, line, &e);
            free(line);
            if (st == EVO_OK) continue;
            if (!retry) {
                if (err) *err = e;
                return evo_failv_prefix(err, st, "starting %s", s->name);
            }
            s->failures++;
            memcpy(s->last_failure, e.msg, sizeof s->last_failure);
        }
    }
}

evo_status evo_pool_wait_ready(evo_pool *p, evo_err *err) { return settle(p, true, err); }

/* ---- start / stop ---- */

static void free_slot(slot *s)
{
    evo_worker_stop(s->w);
    s->w = NULL;
    free(s->log_path);
    for (int i = 0; s->args && s->args[i]; i++) free(s->args[i]);
    free(s->args);
    s->args = NULL;
    s->log_path = NULL;
}

void evo_pool_stop(evo_pool *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++)
        if (p->slots[i].w) evo_worker_request_stop(p->slots[i].w);
    for (int i = 0; i < p->n; i++) free_slot(&p->slots[i]);
    free(p->exe_copy);
    free(p);
}

evo_status evo_pool_start(const evo_pool_opts *o, evo_pool **out, evo_err *err)
{
    *out = NULL;
    if (o->n_gpus < 1 || o->n_gpus > EVO_POOL_MAX_WORKERS)
        return evo_fail(err, EVO_E_USAGE, "pool: %d GPUs given, 1 to %d allowed", o->n_gpus, EVO_POOL_MAX_WORKERS);
    for (int i = 0; i < o->n_gpus; i++) {
        if (o->gpus[i] < 0) return evo_fail(err, EVO_E_USAGE, "pool: GPU ordinal %d is negative", o->gpus[i]);
        for (int j = 0; j < i; j++)
            if (o->gpus[j] == o->gpus[i]) return evo_fail(err, EVO_E_USAGE, "pool: GPU %d is listed twice", o->gpus[i]);
    }
    if (o->log_dir) {
        evo_status st = evo_mkdir_p(o->log_dir, err);
        if (st != EVO_OK) return st;
    }
    evo_pool *p = evo_xcalloc(1, sizeof *p);
    p->n = o->n_gpus;
    p->hello_timeout_s = o->hello_timeout_s > 0 ? o->hello_timeout_s : EVO_POOL_HELLO_TIMEOUT_S;
    p->exe_copy = o->exe ? evo_strdup(o->exe) : NULL;
    p->exe = p->exe_copy;
    int n_extra = 0;
    while (o->args && o->args[n_extra]) n_extra++;
    for (int i = 0; i < p->n; i++) {
        slot *s = &p->slots[i];
        s->gpu = o->gpus[i];
        s->state = W_DEAD;
        snprintf(s->name, sizeof s->name, "worker gpu %d", s->gpu);
        if (o->log_dir) {
            evo_str path = {0};
            evo_str_appendf(&path, "%s/worker-gpu%d.log", o->log_dir, s->gpu);
            s->log_path = evo_str_take(&path);
        }
        s->args = evo_xcalloc((size_t)n_extra + 4, sizeof *s->args);
        char num[16];
        snprintf(num, sizeof num, "%d", s->gpu);
        s->args[0] = evo_strdup("worker");
        s->args[1] = evo_strdup("--gpu");
        s->args[2] = evo_strdup(num);
        for (int k = 0; k < n_extra; k++) s->args[3 + k] = evo_strdup(o->args[k]);
    }

    evo_status st = EVO_OK;
    for (int i = 0; i < p->n && st == EVO_OK; i++) {
        st = spawn_slot(p, &p->slots[i], err);
        if (st != EVO_OK) evo_failv_prefix(err, st, "starting %s", p->slots[i].name);
    }
    if (st == EVO_OK) st = settle(p, false, err);
    if (st != EVO_OK) {
        evo_pool_stop(p);
        return st;
    }
    *out = p;
    return EVO_OK;
}

/* ---- running jobs ---- */

typedef struct {
    const evo_pool_job *jobs;
    int *queue; /* job indices still to hand out, from head */
    int head, n;
    int *tries; /* delivery attempts per job */
    evo_pool_done_fn on_done;
    void *ctx;
} run_state;

/* The reply for a job that got none from its worker. */
static void finish_failed(evo_pool *p, run_state *r, slot *s, int job, evo_status st, evo_verdict v,
                          const char *message)
{
    evo_eval_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.id = r->jobs[job].req->id;
    rep.r.verdict = v;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "worker", message);
    cJSON_AddNumberToObject(d, "gpu", s->gpu);
    rep.r.detail = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    snprintf(rep.r.gpu, sizeof rep.r.gpu, "%s", s->hello.device);
    rep.r.fitness = rep.r.fitness_lo = rep.r.fitness_hi = NAN;
    evo_pool_done done = {job, (int)(s - p->slots), st, &rep, message, evo_now() - s->sent_at};
    r->on_done(r->ctx, &r->jobs[job], &done);
    free(rep.r.detail);
}

/* A BUSY slot's call ended: st and line as evo_worker_receive gave them. */
static void job_done(evo_pool *p, run_state *r, slot *s, evo_status st, const char *line, const evo_err *e)
{
    int job = s->job;
    s->state = evo_worker_running(s->w) ? W_IDLE : W_DEAD;
    if (st == EVO_OK) {
        evo_eval_reply rep;
        evo_err de = {0};
        st = evo_proto_decode_eval_reply(line, &rep, &de);
        if (st == EVO_OK) {
            evo_pool_done done = {job, (int)(s - p->slots), EVO_OK, &rep, "", evo_now() - s->sent_at};
            r->on_done(r->ctx, &r->jobs[job], &done);
            evo_eval_reply_free(&rep);
            return;
        }
        /* A reply that is a message but not an eval reply: the worker is not to be trusted any more. */
        evo_worker_kill(s->w);
        s->state = W_DEAD;
        finish_failed(p, r, s, job, EVO_E_WORKER, EVO_V_CRASHED, de.msg);
        return;
    }
    finish_failed(p, r, s, job, st, st == EVO_E_TIMEOUT ? EVO_V_TIMEOUT : EVO_V_CRASHED, e->msg);
}

evo_status evo_pool_run(evo_pool *p, const evo_pool_job *jobs, int n, evo_pool_done_fn on_done, void *ctx, evo_err *err)
{
    for (int j = 0; j < n; j++) {
        const evo_eval_request *q = jobs[j].req;
        if (!q || !(jobs[j].timeout_s > 0) || q->n_variants < 1 || q->n_variants > EVO_MAX_VARIANTS || q->n_best < 0 ||
            q->n_best > EVO_MAX_SHAPES)
            return evo_fail(err, EVO_E_INTERNAL, "pool: job %d: no request, no timeout or a malformed request", j);
    }
    run_state r = {
        jobs, evo_xcalloc((size_t)n + 1, sizeof(int)), 0, n, evo_xcalloc((size_t)n + 1, sizeof(int)), on_done, ctx};
    for (int j = 0; j < n; j++) r.queue[j] = j;
    evo_status fatal = EVO_OK;
    evo_err fatal_err = {0};

    /* Workers lost at the end of an earlier run come back now, with a fresh allowance of tries. */
    for (int i = 0; i < p->n && fatal == EVO_OK; i++) {
        slot *s = &p->slots[i];
        if (s->state != W_DEAD) continue;
        s->failures = 0;
        fatal = revive(p, s, &fatal_err);
    }

    struct pollfd fds[EVO_POOL_MAX_WORKERS];
    for (;;) {
        if (p->interrupts >= 2) {
            for (int i = 0; i < p->n; i++) {
                slot *s = &p->slots[i];
                if (s->state == W_BUSY) {
                    evo_worker_kill(s->w);
                    s->state = W_DEAD;
                }
            }
        }
        /* Hand out jobs. */
        for (int i = 0; i < p->n && !p->interrupts && fatal == EVO_OK && r.head < n; i++) {
            slot *s = &p->slots[i];
            if (s->state != W_IDLE) continue;
            int job = r.queue[r.head++];
            char *line = evo_proto_encode_eval_request(jobs[job].req);
            evo_err e = {0};
            s->sent_at = evo_now();
            evo_status st = evo_worker_send(s->w, line, jobs[job].timeout_s, &e);
            free(line);
            if (st == EVO_OK) {
                s->state = W_BUSY;
                s->job = job;
                continue;
            }
            /* Not delivered: the worker had ended (or stopped reading). Not the job's fault, up to a point. */
            s->state = evo_worker_running(s->w) ? W_IDLE : W_DEAD;
            if (++r.tries[job] >= SEND_TRIES)
                finish_failed(p, &r, s, job, EVO_E_WORKER, EVO_V_CRASHED, e.msg);
            else
                r.queue[--r.head] = job;
            if (s->state == W_DEAD) fatal = revive(p, s, &fatal_err);
        }

        int busy = 0;
        for (int i = 0; i < p->n; i++) busy += p->slots[i].state == W_BUSY;
        bool nothing_to_hand_out = r.head >= n || p->interrupts || fatal != EVO_OK;
        if (busy == 0 && nothing_to_hand_out) break;

        wait_events(p, fds);
        for (int i = 0; i < p->n; i++) {
            slot *s = &p->slots[i];
            if (s->state == W_DEAD || !slot_due(s, &fds[i])) continue;
            char *line = NULL;
            evo_err e = {0};
            evo_status st;
            if (s->state == W_IDLE) {
                /* Activity on an idle worker's pipe: it ended (after a handler's exit_after) or misbehaved. */
                if (evo_worker_check_idle(s->w, &e) == EVO_OK) continue;
                s->state = W_DEAD;
            } else {
                st = evo_worker_receive(s->w, &line, &e);
                if (st == EVO_OK && !line) continue;
                if (s->state == W_BUSY) {
                    job_done(p, &r, s, st, line, &e);
                } else if (hello_done(p, s, st, line, &e) != EVO_OK) {
                    s->failures++;
                    memcpy(s->last_failure, e.msg, sizeof s->last_failure);
                }
                free(line);
            }
            if (s->state == W_DEAD && fatal == EVO_OK) fatal = revive(p, s, &fatal_err);
        }
    }
    free(r.queue);
    free(r.tries);
    if (fatal != EVO_OK) return evo_fail(err, fatal, "%s", fatal_err.msg);
    if (p->interrupts) return evo_fail(err, EVO_E_INTERRUPTED, "pool: interrupted");
    return EVO_OK;
}

void evo_pool_interrupt(evo_pool *p) { p->interrupts = p->interrupts + 1; }

int evo_pool_size(const evo_pool *p) { return p->n; }

const evo_hello_reply *evo_pool_hello(const evo_pool *p, int i) { return &p->slots[i].hello; }

pid_t evo_pool_worker_pid(const evo_pool *p, int i) { return p->slots[i].w ? evo_worker_pid(p->slots[i].w) : 0; }

int evo_pool_restarts(const evo_pool *p) { return p->restarts; }
