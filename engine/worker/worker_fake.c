/* worker_fake.c — `evo worker --fake MODE`: a worker without a GPU that answers, dies, stalls or talks garbage
 * on demand (see worker.h for the modes). The watchdog and pool tests drive it through the real evo binary, so
 * the fault paths they exercise are the ones a faulting kernel takes. Given a config, it also says which cases the
 * gates would check (cases.h: the GPU worker's own list), with median intervals and --retime rounds, so CPU-only
 * tests see what the driver does with them.
 */
#include "cases.h"
#include "config.h"
#include "protocol.h"
#include "util.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

typedef enum {
    FAKE_OK,
    FAKE_DIE,
    FAKE_EXIT,
    FAKE_STALL,
    FAKE_GARBAGE,
    FAKE_SLOW,
    FAKE_ERROR,
    FAKE_EXIT_AFTER
} fake_action;

typedef struct {
    fake_action action;
    double arg; /* exit status or seconds */
} fake_mode;

typedef struct {
    fake_mode mode;
    int gpu;
    evo_config *cfg; /* NULL: no config given, or it did not load */
} fake_ctx;

static evo_status parse_mode(const char *text, fake_mode *m, evo_err *err)
{
    static const struct {
        const char *name;
        fake_action action;
        int has_arg; /* 1: "name:N" required */
    } modes[] = {
        {"ok", FAKE_OK, 0},           {"die", FAKE_DIE, 0},
        {"exit", FAKE_EXIT, 1},       {"stall", FAKE_STALL, 0},
        {"garbage", FAKE_GARBAGE, 0}, {"slow", FAKE_SLOW, 1},
        {"error", FAKE_ERROR, 0},     {"exit-after", FAKE_EXIT_AFTER, 0},
    };
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    for (size_t i = 0; i < EVO_ARRAY_LEN(modes); i++) {
        if (strlen(modes[i].name) != name_len || strncmp(modes[i].name, text, name_len) != 0) continue;
        m->action = modes[i].action;
        m->arg = 0;
        if (!modes[i].has_arg) {
            if (colon) break;
            return EVO_OK;
        }
        if (!colon) break;
        char *end;
        m->arg = strtod(colon + 1, &end);
        if (end == colon + 1 || *end || !(m->arg >= 0) || m->arg > 1e6) break;
        if (m->action == FAKE_EXIT && (m->arg != floor(m->arg) || m->arg > 255)) break;
        return EVO_OK;
    }
    return evo_fail(err, EVO_E_USAGE,
                    "unknown fake worker mode '%s' (ok, die, exit:N, stall, garbage, slow:SECONDS, error, exit-after)",
                    text);
}

evo_status evo_worker_fake_check_mode(const char *mode, evo_err *err)
{
    fake_mode m;
    return parse_mode(mode, &m, err);
}

static evo_status fake_hello(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    (void)exit_after;
    const fake_ctx *f = ctx;
    evo_hello_reply h;
    memset(&h, 0, sizeof h);
    evo_status s = evo_proto_decode_hello_request(line, &h.id, err);
    if (s != EVO_OK) return s;
    h.protocol = EVO_PROTOCOL_VERSION;
    h.gpu = f->gpu;
    h.pid = (int)getpid();
    snprintf(h.device, sizeof h.device, "fake");
    snprintf(h.arch, sizeof h.arch, "sm_90");
    h.cc_major = 9;
    h.cc_minor = 0;
    h.sm_count = 132;
    h.driver_version = 13000;
    h.l2_bytes = 50 * 1024 * 1024;
    h.smem_optin = 227 * 1024;
    h.regs_per_block = 65536;
    h.regs_per_thread = 255;
    h.max_threads_per_block = 1024;
    if (f->cfg) { /* the cases the GPU worker would prepare; none of them takes time here */
        evo_gate_case *list = NULL;
        h.cases = evo_gate_cases(f->cfg, false, &list);
        free(list);
    }
    *reply = evo_proto_encode_hello_reply(&h);
    return EVO_OK;
}

static void fake_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* With a config: what the GPU worker would check (cases run, the values of each axis, the largest value of each
 * integer field) and, for --retime N, N rounds of made-up medians 0.1 % apart. */
static void add_config_detail(const fake_ctx *f, const evo_eval_request *req, const evo_eval_reply *r, cJSON *d)
{
    const evo_task *task = f->cfg->task_ops;
    evo_gate_case *list = NULL;
    const int n = evo_gate_cases(f->cfg, false, &list);
    int checked = 0;
    long long largest[EVO_FIELDS_MAX] = {0};
    for (int i = 0; i < n; i++) {
        if (list[i].timing) continue;
        for (int k = 0; k < req->n_variants; k++) checked += task->serves(&req->variants[k], &list[i].s);
        for (int j = 0; j < task->n_shape_fields; j++)
            if (task->shape_fields[j].type == EVO_FIELD_INT && list[i].s.v[j] > largest[j]) largest[j] = list[i].s.v[j];
    }
    free(list);
    if (req->check) {
        cJSON *c = cJSON_AddObjectToObject(d, "cases");
        cJSON_AddNumberToObject(c, "checked", checked);
        cJSON *axes = cJSON_AddObjectToObject(c, "axes"), *big = cJSON_AddObjectToObject(c, "largest");
        for (int a = 0; a < f->cfg->correctness.n_axes; a++) {
            const evo_field *fd = &task->shape_fields[f->cfg->correctness.axes[a].field];
            cJSON *vals = cJSON_AddArrayToObject(axes, fd->name);
            for (int j = 0; j < f->cfg->correctness.axes[a].n; j++) {
                const double v = evo_field_load(fd, f->cfg->correctness.axes[a].values[j]);
                cJSON_AddItemToArray(vals,
                                     fd->type == EVO_FIELD_BOOL ? cJSON_CreateBool(v != 0) : cJSON_CreateNumber(v));
            }
        }
        for (int j = 0; j < task->n_shape_fields; j++)
            if (task->shape_fields[j].type == EVO_FIELD_INT)
                cJSON_AddNumberToObject(big, task->shape_fields[j].name, (double)largest[j]);
    }
    if (req->retime > 0 && req->time) {
        cJSON *rt = cJSON_AddObjectToObject(d, "retime");
        cJSON_AddStringToObject(rt, "method", evo_timing_method_name(f->cfg->timing.method));
        cJSON *rounds = cJSON_AddArrayToObject(rt, "rounds");
        for (int k = 0; k < req->retime; k++) {
            cJSON *round = cJSON_CreateObject();
            cJSON *m = cJSON_AddArrayToObject(round, "median_us"), *b = cJSON_AddArrayToObject(round, "baseline_us");
            for (int i = 0; i < r->r.n_shapes; i++) {
                cJSON_AddItemToArray(m, cJSON_CreateNumber(r->r.shapes[i].median_us * (1 + 0.001 * (k % 3 - 1))));
                cJSON_AddItemToArray(b, cJSON_CreateNumber(r->r.shapes[i].baseline_us));
            }
            cJSON_AddNumberToObject(round, "time_s", 0.02);
            cJSON_AddItemToArray(rounds, round);
        }
    }
}

/* Plausible numbers for a correct candidate: a few percent faster than the baseline on every shape. */
static evo_status ok_reply(const fake_ctx *f, const evo_eval_request *req, char **reply, evo_err *err)
{
    evo_eval_reply r;
    memset(&r, 0, sizeof r);
    r.id = req->id;
    r.r.verdict = EVO_V_OK;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddBoolToObject(d, "fake", true);
    cJSON_AddNumberToObject(d, "request", (double)req->id);
    r.r.n_shapes = req->n_best > 0 ? req->n_best : 1;
    for (int i = 0; i < r.r.n_shapes; i++) {
        evo_shape_result *x = &r.r.shapes[i];
        const int size = 512 << (i % 3), flag = i % 2;
        snprintf(x->shape, sizeof x->shape, "fake%d(%d)%s", i, size, flag ? " flag" : "");
        snprintf(x->fields, sizeof x->fields, "{\"size\":%d,\"flag\":%s}", size, flag ? "true" : "false");
        if (req->time) {
            x->median_us = 100.0 + 10.0 * i;
            x->p10_us = 0.97 * x->median_us;
            x->p90_us = 1.04 * x->median_us;
            x->baseline_us = req->is_baseline ? x->median_us : 1.05 * x->median_us;
            x->ci_lo_us = 0.995 * x->median_us;
            x->ci_hi_us = 1.005 * x->median_us;
            x->speedup = x->baseline_us / x->median_us;
            x->rate = (double)size * size / (x->median_us * 1e-6) / 1e9;
        }
        if (req->check) {
            x->max_abs = 0.0078125;
            x->rel_l2 = 0.0021;
            x->e2e_rel_l2 = 0.021;
            x->e2e_rmse = 0.0032;
        }
    }
    r.r.check_s = req->check ? 0.01 : 0;
    r.r.time_s = req->time ? 0.02 : 0;
    snprintf(r.r.gpu, sizeof r.r.gpu, "fake");
    if (f->cfg) add_config_detail(f, req, &r, d);
    r.r.detail = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    evo_status s = evo_proto_encode_eval_reply(&r, reply, err);
    free(r.r.detail);
    return s;
}

static evo_status fake_eval(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    const fake_ctx *f = ctx;
    evo_eval_request req;
    evo_status s = evo_proto_decode_eval_request(line, &req, err);
    if (s != EVO_OK) return s;
    fake_mode m = f->mode;
    if (req.fault_injection[0]) {
        s = parse_mode(req.fault_injection, &m, err);
        if (s != EVO_OK) return s;
    }
    /* EVO_FAKE_TRACE=FILE: one line per candidate evaluation started, so tests can count what was evaluated */
    const char *trace = getenv("EVO_FAKE_TRACE");
    if (trace && *trace && !req.is_baseline) {
        FILE *t = fopen(trace, "a");
        if (t) fprintf(t, "eval %lld\n", (long long)req.id), fclose(t);
    }
    switch (m.action) {
        case FAKE_OK: break;
        case FAKE_DIE: {
            fprintf(stderr, "fake worker: request %lld: dying of SIGSEGV as asked\n", (long long)req.id);
            fflush(stderr);
            prctl(PR_SET_DUMPABLE, 0); /* no core file */
            signal(SIGSEGV, SIG_DFL);
            raise(SIGSEGV);
            _exit(126); /* not reached */
        }
        case FAKE_EXIT:
            fprintf(stderr, "fake worker: request %lld: exiting with status %d as asked\n", (long long)req.id,
                    (int)m.arg);
            fflush(stderr);
            _exit((int)m.arg);
        case FAKE_STALL:
            fprintf(stderr, "fake worker: request %lld: stalling as asked\n", (long long)req.id);
            for (;;) pause();
        case FAKE_GARBAGE: *reply = evo_strdup("this is {not a reply"); return EVO_OK;
        case FAKE_SLOW: fake_sleep(m.arg); break;
        case FAKE_ERROR:
            return evo_fail(err, EVO_E_CUDA, "fake worker: CUDA_ERROR_ILLEGAL_ADDRESS as asked (request %lld)",
                            (long long)req.id);
        case FAKE_EXIT_AFTER: *exit_after = true; break;
    }
    return ok_reply(f, &req, reply, err);
}

evo_status evo_worker_fake_serve(const char *mode, int gpu, const char *config_path, int in_fd, int out_fd,
                                 evo_err *err)
{
    fake_ctx f = {.gpu = gpu};
    evo_status s = parse_mode(mode, &f.mode, err);
    if (s != EVO_OK) return s;
    if (config_path && evo_config_load(config_path, &f.cfg, NULL) != EVO_OK) f.cfg = NULL;
    static const evo_worker_handler handlers[] = {{"hello", fake_hello}, {"eval", fake_eval}};
    s = evo_worker_serve(in_fd, out_fd, handlers, (int)EVO_ARRAY_LEN(handlers), &f, err);
    evo_config_free(f.cfg);
    return s;
}
