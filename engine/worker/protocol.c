/* protocol.c — encode and decode the worker messages with cJSON (see protocol.h).
 * Decoders go through small typed getters that name the field (with its array index) in every error, so a
 * malformed line from a worker says exactly what was wrong with it.
 */
#include "protocol.h"

#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a decoder is, for messages: kind is "eval reply", prefix is "" or "shapes[2]." */
typedef struct {
    const char *kind;
    char prefix[48];
    evo_err *err;
} where;

static evo_status bad(const where *w, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static evo_status bad(const where *w, const char *key, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return evo_fail(w->err, EVO_E_WORKER, "%s: field '%s%s': %s", w->kind, w->prefix, key, what);
}

/* ---- encoding helpers ---- */

static char *print_line(cJSON *root)
{
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) {
        fprintf(stderr, "evo: out of memory printing a worker message\n");
        abort();
    }
    /* cJSON allocates with malloc unless hooks are installed (evo installs none), so free() releases it. */
    return s;
}

/* cJSON prints a double with 15 digits when that reads back "close enough", and DBL_MAX as a number that
 * overflows, so numbers are printed here instead: the shortest of %.15g..%.17g that strtod turns back into
 * exactly the same double, inserted as a raw item. Non-finite values become strings. */
static cJSON *double_item(double v)
{
    if (isnan(v)) return cJSON_CreateString("NaN");
    if (isinf(v)) return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return cJSON_CreateRaw(buf);
}

static void add_double(cJSON *o, const char *key, double v) { cJSON_AddItemToObject(o, key, double_item(v)); }

static void add_int(cJSON *o, const char *key, long long v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", v);
    cJSON_AddItemToObject(o, key, cJSON_CreateRaw(buf));
}

static cJSON *new_message(const char *op, int64_t id)
{
    cJSON *o = cJSON_CreateObject();
    EVO_ASSERT(o);
    cJSON_AddStringToObject(o, "op", op);
    add_int(o, "id", id);
    return o;
}

/* ---- decoding helpers ---- */

static evo_status parse_message(const char *line, const char *kind, cJSON **root, evo_err *err)
{
    *root = NULL;
    if (!line) return evo_fail(err, EVO_E_WORKER, "%s: no message", kind);
    size_t n = strlen(line);
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithOpts(line, &end, 1); /* whole line, nothing after the object */
    if (!r) {
        size_t col = end && end >= line ? (size_t)(end - line) + 1 : 1;
        if (n == 0) return evo_fail(err, EVO_E_WORKER, "%s: empty line", kind);
        return evo_fail(err, EVO_E_WORKER, "%s: not valid JSON (column %zu of %zu: malformed or truncated)", kind, col,
                        n);
    }
    if (!cJSON_IsObject(r)) {
        cJSON_Delete(r);
        return evo_fail(err, EVO_E_WORKER, "%s: not a JSON object", kind);
    }
    *root = r;
    return EVO_OK;
}

static const cJSON *field(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static evo_status item_double(const where *w, const char *key, const cJSON *it, double *out)
{
    if (!it) return bad(w, key, "missing");
    if (cJSON_IsNumber(it)) {
        *out = it->valuedouble;
        return EVO_OK;
    }
    if (cJSON_IsNull(it)) {
        *out = NAN;
        return EVO_OK;
    }
    if (cJSON_IsString(it)) {
        if (strcmp(it->valuestring, "NaN") == 0)
            *out = NAN;
        else if (strcmp(it->valuestring, "Infinity") == 0)
            *out = INFINITY;
        else if (strcmp(it->valuestring, "-Infinity") == 0)
            *out = -INFINITY;
        else
            return bad(w, key, "expected a number, got the string \"%.64s\"", it->valuestring);
        return EVO_OK;
    }
    return bad(w, key, "expected a number");
}

static evo_status get_double(const where *w, const cJSON *o, const char *key, double *out)
{
    return item_double(w, key, field(o, key), out);
}

static evo_status get_int64(const where *w, const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const cJSON *it = field(o, key);
    if (!it) return bad(w, key, "missing");
    if (!cJSON_IsNumber(it)) return bad(w, key, "expected an integer");
    double d = it->valuedouble;
    if (d != floor(d) || d < (double)lo || d > (double)hi) {
        char range[128];
        snprintf(range, sizeof range, "%.17g is not an integer in [%lld, %lld]", d, (long long)lo, (long long)hi);
        return bad(w, key, "%s", range);
    }
    *out = (int64_t)d;
    return EVO_OK;
}

static evo_status get_int(const where *w, const cJSON *o, const char *key, int lo, int hi, int *out)
{
    int64_t v;
    evo_status s = get_int64(w, o, key, lo, hi, &v);
    if (s == EVO_OK) *out = (int)v;
    return s;
}

static evo_status get_bool(const where *w, const cJSON *o, const char *key, bool *out)
{
    const cJSON *it = field(o, key);
    if (!it) return bad(w, key, "missing");
    if (!cJSON_IsBool(it)) return bad(w, key, "expected true or false");
    *out = cJSON_IsTrue(it);
    return EVO_OK;
}

/* Into a fixed buffer; an over-long string is an error, never silently cut. */
static evo_status get_str(const where *w, const cJSON *o, const char *key, char *buf, size_t cap)
{
    const cJSON *it = field(o, key);
    if (!it) return bad(w, key, "missing");
    if (!cJSON_IsString(it)) return bad(w, key, "expected a string");
    size_t n = strlen(it->valuestring);
    if (n >= cap) {
        char why[96];
        snprintf(why, sizeof why, "too long (%zu bytes, at most %zu)", n, cap - 1);
        return bad(w, key, "%s", why);
    }
    memcpy(buf, it->valuestring, n + 1);
    return EVO_OK;
}

static evo_status get_array(const where *w, const cJSON *o, const char *key, int max, const cJSON **arr, int *n)
{
    const cJSON *it = field(o, key);
    if (!it) return bad(w, key, "missing");
    if (!cJSON_IsArray(it)) return bad(w, key, "expected an array");
    int len = cJSON_GetArraySize(it);
    if (len > max) {
        char why[64];
        snprintf(why, sizeof why, "%d entries, at most %d", len, max);
        return bad(w, key, "%s", why);
    }
    *arr = it;
    *n = len;
    return EVO_OK;
}

/* Envelope: the op must be the expected one (an "error" message returns its own status), and the id readable. */
static evo_status error_status(const cJSON *root, evo_err *err);

static evo_status open_message(const char *line, const char *kind, const char *op, cJSON **root, int64_t *id,
                               evo_err *err)
{
    evo_status s = parse_message(line, kind, root, err);
    if (s == EVO_OK) s = error_status(*root, err);
    if (s != EVO_OK) {
        cJSON_Delete(*root);
        *root = NULL;
        return s;
    }
    where w = {kind, "", err};
    char got[EVO_PROTO_OP_MAX];
    s = get_str(&w, *root, "op", got, sizeof got);
    if (s == EVO_OK && strcmp(got, op) != 0) s = bad(&w, "op", "expected \"%s\"", op);
    if (s == EVO_OK) s = get_int64(&w, *root, "id", 0, EVO_PROTO_ID_MAX, id);
    if (s != EVO_OK) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return s;
}

#define TRY(call) \
    do { \
        if ((s = (call)) != EVO_OK) goto done; \
    } while (0)

/* ---- envelope, errors, shutdown ---- */

evo_status evo_proto_peek(const char *line, char op[EVO_PROTO_OP_MAX], int64_t *id, evo_err *err)
{
    cJSON *root;
    evo_status s = parse_message(line, "message", &root, err);
    if (s != EVO_OK) return s;
    where w = {"message", "", err};
    s = get_str(&w, root, "op", op, EVO_PROTO_OP_MAX);
    if (s == EVO_OK) s = get_int64(&w, root, "id", -1, EVO_PROTO_ID_MAX, id);
    cJSON_Delete(root);
    return s;
}

char *evo_proto_encode_error(int64_t id, evo_status s, const char *message)
{
    EVO_ASSERT(s != EVO_OK);
    cJSON *o = new_message("error", id);
    add_int(o, "code", (double)s);
    cJSON_AddStringToObject(o, "status", evo_status_name(s));
    cJSON_AddStringToObject(o, "message", message && message[0] ? message : evo_status_name(s));
    return print_line(o);
}

/* EVO_OK unless root is an "error" message; then the status it carries, with its message. */
static evo_status error_status(const cJSON *root, evo_err *err)
{
    const cJSON *op = field(root, "op");
    if (!cJSON_IsString(op) || strcmp(op->valuestring, "error") != 0) return EVO_OK;
    const cJSON *code = field(root, "code"), *msg = field(root, "message");
    evo_status carried = EVO_E_WORKER;
    if (cJSON_IsNumber(code) && code->valuedouble >= 1 && code->valuedouble <= EVO_E_INTERNAL &&
        code->valuedouble == floor(code->valuedouble))
        carried = (evo_status)(int)code->valuedouble;
    return evo_fail(err, carried, "worker: %s", cJSON_IsString(msg) ? msg->valuestring : "error without a message");
}

evo_status evo_proto_check_error(const char *line, evo_err *err)
{
    cJSON *root;
    evo_status s = parse_message(line, "message", &root, err);
    if (s != EVO_OK) return s;
    s = error_status(root, err);
    cJSON_Delete(root);
    return s;
}

char *evo_proto_mark_exiting(char *line)
{
    cJSON *root = cJSON_Parse(line);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return line; /* not a message: the parent reports it as such */
    }
    free(line);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "exiting");
    cJSON_AddBoolToObject(root, "exiting", 1);
    return print_line(root);
}

bool evo_proto_is_exiting(const char *line)
{
    cJSON *root = cJSON_Parse(line);
    bool yes = cJSON_IsTrue(field(root, "exiting"));
    cJSON_Delete(root);
    return yes;
}

char *evo_proto_encode_shutdown(int64_t id) { return print_line(new_message("shutdown", id)); }

evo_status evo_proto_decode_shutdown(const char *line, int64_t *id, evo_err *err)
{
    cJSON *root;
    evo_status s = open_message(line, "shutdown", "shutdown", &root, id, err);
    cJSON_Delete(root);
    return s;
}

/* ---- hello ---- */

char *evo_proto_encode_hello_request(int64_t id)
{
    cJSON *o = new_message("hello", id);
    add_int(o, "protocol", EVO_PROTOCOL_VERSION);
    return print_line(o);
}

static evo_status check_protocol(const where *w, const cJSON *root)
{
    int v;
    evo_status s = get_int(w, root, "protocol", 0, 1 << 30, &v);
    if (s != EVO_OK) return s;
    if (v != EVO_PROTOCOL_VERSION)
        return evo_fail(w->err, EVO_E_WORKER, "%s: protocol version %d, this evo speaks %d (a different evo binary?)",
                        w->kind, v, EVO_PROTOCOL_VERSION);
    return EVO_OK;
}

evo_status evo_proto_decode_hello_request(const char *line, int64_t *id, evo_err *err)
{
    cJSON *root;
    evo_status s = open_message(line, "hello request", "hello", &root, id, err);
    if (s != EVO_OK) return s;
    where w = {"hello request", "", err};
    s = check_protocol(&w, root);
    cJSON_Delete(root);
    return s;
}

char *evo_proto_encode_hello_reply(const evo_hello_reply *h)
{
    cJSON *o = new_message("hello", h->id);
    add_int(o, "protocol", EVO_PROTOCOL_VERSION);
    add_int(o, "gpu", h->gpu);
    add_int(o, "pid", h->pid);
    cJSON_AddStringToObject(o, "device", h->device);
    cJSON_AddStringToObject(o, "arch", h->arch);
    add_int(o, "cc_major", h->cc_major);
    add_int(o, "cc_minor", h->cc_minor);
    add_int(o, "sm_count", h->sm_count);
    add_int(o, "driver_version", h->driver_version);
    add_int(o, "l2_bytes", h->l2_bytes);
    add_int(o, "smem_optin", h->smem_optin);
    add_int(o, "regs_per_block", h->regs_per_block);
    add_int(o, "regs_per_thread", h->regs_per_thread);
    add_int(o, "max_threads_per_block", h->max_threads_per_block);
    add_int(o, "cases", h->cases);
    add_double(o, "prepare_s", h->prepare_s);
    return print_line(o);
}

evo_status evo_proto_decode_hello_reply(const char *line, evo_hello_reply *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root;
    evo_status s = open_message(line, "hello reply", "hello", &root, &out->id, err);
    if (s != EVO_OK) return s;
    where w = {"hello reply", "", err};
    const int big = 1 << 30;
    TRY(check_protocol(&w, root));
    out->protocol = EVO_PROTOCOL_VERSION;
    TRY(get_int(&w, root, "gpu", 0, 1 << 16, &out->gpu));
    TRY(get_int(&w, root, "pid", 0, big, &out->pid));
    TRY(get_str(&w, root, "device", out->device, sizeof out->device));
    TRY(get_str(&w, root, "arch", out->arch, sizeof out->arch));
    TRY(get_int(&w, root, "cc_major", 0, 1000, &out->cc_major));
    TRY(get_int(&w, root, "cc_minor", 0, 1000, &out->cc_minor));
    TRY(get_int(&w, root, "sm_count", 0, big, &out->sm_count));
    TRY(get_int(&w, root, "driver_version", 0, big, &out->driver_version));
    TRY(get_int(&w, root, "l2_bytes", 0, big, &out->l2_bytes));
    TRY(get_int(&w, root, "smem_optin", 0, big, &out->smem_optin));
    TRY(get_int(&w, root, "regs_per_block", 0, big, &out->regs_per_block));
    TRY(get_int(&w, root, "regs_per_thread", 0, big, &out->regs_per_thread));
    TRY(get_int(&w, root, "max_threads_per_block", 0, big, &out->max_threads_per_block));
    TRY(get_int(&w, root, "cases", 0, big, &out->cases));
    TRY(get_double(&w, root, "prepare_s", &out->prepare_s));
    if (out->prepare_s < 0) TRY(bad(&w, "prepare_s", "negative (%g)", out->prepare_s));
done:
    cJSON_Delete(root);
    return s;
}

void evo_hello_to_limits(const evo_hello_reply *h, evo_device_limits *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->arch, sizeof out->arch, "%s", h->arch);
    out->sm_major = h->cc_major;
    out->sm_minor = h->cc_minor;
    out->max_threads_per_block = h->max_threads_per_block;
    out->max_smem_per_block_optin = h->smem_optin;
    out->max_regs_per_thread = h->regs_per_thread;
    out->max_regs_per_block = h->regs_per_block;
    out->sm_count = h->sm_count;
    out->l2_bytes = h->l2_bytes;
}

/* ---- eval request ---- */

char *evo_proto_encode_eval_request(const evo_eval_request *r)
{
    EVO_ASSERT(r->n_variants >= 1 && r->n_variants <= EVO_MAX_VARIANTS);
    EVO_ASSERT(r->n_best >= 0 && r->n_best <= EVO_MAX_SHAPES);
    cJSON *o = new_message("eval", r->id);
    cJSON_AddStringToObject(o, "cubin", r->cubin_path);
    cJSON_AddStringToObject(o, "program", r->program);
    cJSON *vars = cJSON_AddArrayToObject(o, "variants");
    for (int i = 0; i < r->n_variants; i++) {
        const evo_variant *v = &r->variants[i];
        cJSON *vo = cJSON_CreateObject();
        cJSON_AddStringToObject(vo, "symbol", v->name_expr);
        add_int(vo, "threads", v->threads);
        add_int(vo, "smem_bytes", v->smem_bytes);
        add_int(vo, "accuracy", v->accuracy);
        cJSON *attr = cJSON_AddArrayToObject(vo, "attr");
        for (int a = 0; a < EVO_VARIANT_ATTRS_MAX; a++)
            cJSON_AddItemToArray(attr, cJSON_CreateNumber((double)v->attr[a]));
        cJSON_AddItemToArray(vars, vo);
    }
    cJSON_AddBoolToObject(o, "check", r->check);
    cJSON_AddBoolToObject(o, "time", r->time);
    cJSON_AddBoolToObject(o, "is_baseline", r->is_baseline);
    cJSON *best = cJSON_AddArrayToObject(o, "best_us");
    for (int i = 0; i < r->n_best; i++) cJSON_AddItemToArray(best, double_item(r->best_us[i]));
    if (r->fault_injection[0]) cJSON_AddStringToObject(o, "fault_injection", r->fault_injection);
    if (r->retime > 0) add_int(o, "retime", r->retime);
    return print_line(o);
}

evo_status evo_proto_decode_eval_request(const char *line, evo_eval_request *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root;
    evo_status s = open_message(line, "eval request", "eval", &root, &out->id, err);
    if (s != EVO_OK) return s;
    where w = {"eval request", "", err};
    TRY(get_str(&w, root, "cubin", out->cubin_path, sizeof out->cubin_path));
    TRY(get_str(&w, root, "program", out->program, sizeof out->program));
    const cJSON *arr;
    int n;
    TRY(get_array(&w, root, "variants", EVO_MAX_VARIANTS, &arr, &n));
    if (n == 0) {
        s = bad(&w, "variants", "empty: a candidate has at least one kernel");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *vo = cJSON_GetArrayItem(arr, i);
        evo_variant *v = &out->variants[i];
        where wv = {"eval request", "", err};
        snprintf(wv.prefix, sizeof wv.prefix, "variants[%d].", i);
        if (!cJSON_IsObject(vo)) {
            char key[24];
            snprintf(key, sizeof key, "variants[%d]", i);
            s = bad(&w, key, "expected an object");
            goto done;
        }
        TRY(get_str(&wv, vo, "symbol", v->name_expr, sizeof v->name_expr));
        if (!v->name_expr[0]) {
            s = bad(&wv, "symbol", "empty");
            goto done;
        }
        /* 0: a hand-written kernel declares its geometry in the module (task_gpu.h) */
        TRY(get_int(&wv, vo, "threads", 0, 1024, &v->threads));
        TRY(get_int(&wv, vo, "smem_bytes", 0, 1 << 24, &v->smem_bytes));
        if (cJSON_GetObjectItemCaseSensitive(vo, "accuracy")) /* absent: 0, the exact class */
            TRY(get_int(&wv, vo, "accuracy", 0, EVO_ACCURACY_MAX - 1, &v->accuracy));
        const cJSON *attr;
        int na;
        TRY(get_array(&wv, vo, "attr", EVO_VARIANT_ATTRS_MAX, &attr, &na));
        for (int a = 0; a < na; a++) {
            const cJSON *x = cJSON_GetArrayItem(attr, a);
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || fabs(x->valuedouble) > 9e15) {
                char key[32];
                snprintf(key, sizeof key, "attr[%d]", a);
                s = bad(&wv, key, "expected an integer");
                goto done;
            }
            v->attr[a] = (long long)x->valuedouble;
        }
    }
    out->n_variants = n;
    TRY(get_bool(&w, root, "check", &out->check));
    TRY(get_bool(&w, root, "time", &out->time));
    TRY(get_bool(&w, root, "is_baseline", &out->is_baseline));
    TRY(get_array(&w, root, "best_us", EVO_MAX_SHAPES, &arr, &n));
    for (int i = 0; i < n; i++) {
        char key[24];
        snprintf(key, sizeof key, "best_us[%d]", i);
        TRY(item_double(&w, key, cJSON_GetArrayItem(arr, i), &out->best_us[i]));
        if (out->best_us[i] < 0) {
            s = bad(&w, key, "negative");
            goto done;
        }
    }
    out->n_best = n;
    if (field(root, "fault_injection"))
        TRY(get_str(&w, root, "fault_injection", out->fault_injection, sizeof out->fault_injection));
    if (field(root, "retime")) TRY(get_int(&w, root, "retime", 0, EVO_PROTO_MAX_RETIME, &out->retime));
done:
    cJSON_Delete(root);
    return s;
}

/* ---- eval reply ---- */

evo_status evo_proto_encode_eval_reply(const evo_eval_reply *reply, char **line, evo_err *err)
{
    const evo_result *r = &reply->r;
    *line = NULL;
    EVO_ASSERT(r->n_shapes >= 0 && r->n_shapes <= EVO_MAX_SHAPES);
    EVO_ASSERT((unsigned)r->verdict < EVO_V_COUNT);
    cJSON *detail = r->detail ? cJSON_Parse(r->detail) : cJSON_CreateObject();
    if (!cJSON_IsObject(detail)) {
        cJSON_Delete(detail);
        return evo_fail(err, EVO_E_INTERNAL, "eval reply: detail is not a JSON object: %.200s", r->detail);
    }
    cJSON *o = new_message("eval", reply->id);
    cJSON_AddStringToObject(o, "verdict", evo_verdict_name(r->verdict));
    cJSON_AddItemToObject(o, "detail", detail);
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    for (int i = 0; i < r->n_shapes; i++) {
        const evo_shape_result *x = &r->shapes[i];
        cJSON *so = cJSON_CreateObject();
        cJSON_AddStringToObject(so, "shape", x->shape);
        cJSON *fields = cJSON_Parse(x->fields[0] ? x->fields : "{}");
        if (!cJSON_IsObject(fields)) {
            cJSON_Delete(fields);
            cJSON_Delete(o);
            return evo_fail(err, EVO_E_INTERNAL, "eval reply: shapes[%d].fields is not a JSON object: %.200s", i,
                            x->fields);
        }
        cJSON_AddItemToObject(so, "fields", fields);
        add_double(so, "median_us", x->median_us);
        add_double(so, "p10_us", x->p10_us);
        add_double(so, "p90_us", x->p90_us);
        add_double(so, "baseline_us", x->baseline_us);
        add_double(so, "speedup", x->speedup);
        add_double(so, "rate", x->rate);
        add_double(so, "max_abs", x->max_abs);
        add_double(so, "rel_l2", x->rel_l2);
        add_double(so, "e2e_rel_l2", x->e2e_rel_l2);
        add_double(so, "e2e_rmse", x->e2e_rmse);
        if (x->ci_hi_us > 0) {
            add_double(so, "ci_lo_us", x->ci_lo_us);
            add_double(so, "ci_hi_us", x->ci_hi_us);
        }
        if (x->baseline_ci_hi_us > 0) {
            add_double(so, "baseline_ci_lo_us", x->baseline_ci_lo_us);
            add_double(so, "baseline_ci_hi_us", x->baseline_ci_hi_us);
        }
        cJSON_AddItemToArray(shapes, so);
    }
    add_double(o, "check_s", r->check_s);
    add_double(o, "time_s", r->time_s);
    cJSON_AddStringToObject(o, "device", r->gpu);
    if (reply->paired) cJSON_AddBoolToObject(o, "paired", true);
    *line = print_line(o);
    return EVO_OK;
}

evo_status evo_proto_decode_eval_reply(const char *line, evo_eval_reply *reply, evo_err *err)
{
    memset(reply, 0, sizeof *reply);
    evo_result *out = &reply->r;
    out->fitness = out->fitness_lo = out->fitness_hi = NAN;
    cJSON *root;
    evo_status s = open_message(line, "eval reply", "eval", &root, &reply->id, err);
    if (s != EVO_OK) return s;
    where w = {"eval reply", "", err};
    char verdict[32];
    TRY(get_str(&w, root, "verdict", verdict, sizeof verdict));
    if (evo_verdict_parse(verdict, &out->verdict) != 0) {
        s = bad(&w, "verdict", "\"%s\" is not a verdict", verdict);
        goto done;
    }
    const cJSON *detail = field(root, "detail");
    if (!detail) {
        s = bad(&w, "detail", "missing");
        goto done;
    }
    if (!cJSON_IsObject(detail)) {
        s = bad(&w, "detail", "expected an object");
        goto done;
    }
    const cJSON *arr;
    int n;
    TRY(get_array(&w, root, "shapes", EVO_MAX_SHAPES, &arr, &n));
    for (int i = 0; i < n; i++) {
        const cJSON *so = cJSON_GetArrayItem(arr, i);
        evo_shape_result *x = &out->shapes[i];
        where ws = {"eval reply", "", err};
        snprintf(ws.prefix, sizeof ws.prefix, "shapes[%d].", i);
        if (!cJSON_IsObject(so)) {
            char key[24];
            snprintf(key, sizeof key, "shapes[%d]", i);
            s = bad(&w, key, "expected an object");
            goto done;
        }
        TRY(get_str(&ws, so, "shape", x->shape, sizeof x->shape));
        const cJSON *fields = field(so, "fields");
        char *ft = cJSON_IsObject(fields) ? cJSON_PrintUnformatted(fields) : NULL;
        if (!ft || strlen(ft) >= sizeof x->fields) {
            s = ft ? bad(&ws, "fields", "longer than %zu bytes", sizeof x->fields - 1)
                   : bad(&ws, "fields", "expected an object");
            free(ft);
            goto done;
        }
        strcpy(x->fields, ft);
        free(ft);
        TRY(get_double(&ws, so, "median_us", &x->median_us));
        TRY(get_double(&ws, so, "p10_us", &x->p10_us));
        TRY(get_double(&ws, so, "p90_us", &x->p90_us));
        TRY(get_double(&ws, so, "baseline_us", &x->baseline_us));
        TRY(get_double(&ws, so, "speedup", &x->speedup));
        TRY(get_double(&ws, so, "rate", &x->rate));
        TRY(get_double(&ws, so, "max_abs", &x->max_abs));
        TRY(get_double(&ws, so, "rel_l2", &x->rel_l2));
        TRY(get_double(&ws, so, "e2e_rel_l2", &x->e2e_rel_l2));
        TRY(get_double(&ws, so, "e2e_rmse", &x->e2e_rmse));
        /* optional (protocol 1 workers before intervals existed send none) */
        if (field(so, "ci_lo_us")) TRY(get_double(&ws, so, "ci_lo_us", &x->ci_lo_us));
        if (field(so, "ci_hi_us")) TRY(get_double(&ws, so, "ci_hi_us", &x->ci_hi_us));
        if (field(so, "baseline_ci_lo_us")) TRY(get_double(&ws, so, "baseline_ci_lo_us", &x->baseline_ci_lo_us));
        if (field(so, "baseline_ci_hi_us")) TRY(get_double(&ws, so, "baseline_ci_hi_us", &x->baseline_ci_hi_us));
    }
    out->n_shapes = n;
    TRY(get_double(&w, root, "check_s", &out->check_s));
    TRY(get_double(&w, root, "time_s", &out->time_s));
    TRY(get_str(&w, root, "device", out->gpu, sizeof out->gpu));
    if (field(root, "paired")) TRY(get_bool(&w, root, "paired", &reply->paired));
    out->detail = cJSON_PrintUnformatted(detail);
    if (!out->detail) {
        s = evo_fail(err, EVO_E_NOMEM, "eval reply: out of memory printing detail");
        goto done;
    }
done:
    cJSON_Delete(root);
    if (s != EVO_OK) evo_eval_reply_free(reply);
    return s;
}

void evo_eval_reply_free(evo_eval_reply *r) { evo_result_free(&r->r); }
