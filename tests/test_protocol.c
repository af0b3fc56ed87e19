/* test_protocol.c — the worker messages: every record survives encode -> decode unchanged (strings with quotes
 * and newlines, NaN and infinities, the largest arrays), and malformed or truncated lines are EVO_E_WORKER errors
 * that name the field. Run: ctest -R test_protocol (or build/tests/test_protocol).
 */
#include "check.h"
#include "protocol.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bit-faithful enough: NaN matches NaN, infinities keep their sign, finite values are exactly equal. */
static int same_double(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b;
}

static const char *tricky = "a \"quoted\" path\nwith a newline, a tab\t, a backslash \\ and \xc3\xa9";

static void fill_request(evo_eval_request *r)
{
    memset(r, 0, sizeof *r);
    r->id = 4503599627370495; /* 2^52 - 1: ids stay exact */
    snprintf(r->cubin_path, sizeof r->cubin_path, "/cache/nvrtc/ab/%s.entry", tricky);
    snprintf(r->program, sizeof r->program, "attention_fp8 \"g\"\n7");
    for (int i = 0; i < EVO_MAX_VARIANTS; i++) {
        evo_variant *v = &r->variants[i];
        v->attr[0] = i % 2 ? 128 : 64;
        v->attr[1] = i < 2 ? 0 : 1;
        snprintf(v->name_expr, sizeof v->name_expr, "_Z8attn_fwdILi%dELi%dEEvPKhS1_S1_PKfP6__halfiiif", 64 + i,
                 128 - i);
        v->threads = 128 * (i % 8 + 1);
        v->attr[2] = 64 + i;
        v->smem_bytes = 49152 + 1024 * i;
        v->attr[3] = i == 3 ? 1 : 0;
        v->attr[EVO_VARIANT_ATTRS_MAX - 1] = -(1ll << 40) - i; /* any integer a JSON number holds exactly */
    }
    r->n_variants = EVO_MAX_VARIANTS;
    r->check = true;
    r->time = false;
    r->is_baseline = true;
    for (int i = 0; i < EVO_MAX_SHAPES; i++) r->best_us[i] = i == 0 ? 0 : i == 1 ? INFINITY : i == 2 ? NAN : 0.1 * i;
    r->n_best = EVO_MAX_SHAPES;
    snprintf(r->fault_injection, sizeof r->fault_injection, "slow:0.5");
    r->retime = 10;
}

static void test_eval_request_round_trip(void)
{
    evo_eval_request in, out;
    fill_request(&in);
    char *line = evo_proto_encode_eval_request(&in);
    CHECK(strchr(line, '\n') == NULL); /* one message, one line: the newline inside strings is escaped */
    CHECK_CONTAINS(line, "\\\"quoted\\\"");
    CHECK_CONTAINS(line, "\\n");
    CHECK_CONTAINS(line, "\"Infinity\"");
    CHECK_CONTAINS(line, "\"NaN\"");
    evo_err err = {0};
    CHECK_EQ_INT(evo_proto_decode_eval_request(line, &out, &err), EVO_OK);
    CHECK_STR(err.msg, "");
    CHECK_EQ_INT(out.id, 4503599627370495);
    CHECK_STR(out.cubin_path, in.cubin_path);
    CHECK_STR(out.program, "attention_fp8 \"g\"\n7");
    CHECK_EQ_INT(out.n_variants, EVO_MAX_VARIANTS);
    for (int i = 0; i < EVO_MAX_VARIANTS; i++) {
        CHECK_EQ_INT(out.variants[i].attr[0], in.variants[i].attr[0]);
        CHECK_EQ_INT(out.variants[i].attr[1], in.variants[i].attr[1]);
        CHECK_STR(out.variants[i].name_expr, in.variants[i].name_expr);
        CHECK_EQ_INT(out.variants[i].threads, 128 * (i % 8 + 1));
        CHECK_EQ_INT(out.variants[i].attr[2], 64 + i);
        CHECK_EQ_INT(out.variants[i].smem_bytes, 49152 + 1024 * i);
        CHECK(out.variants[i].attr[EVO_VARIANT_ATTRS_MAX - 1] == -(1ll << 40) - i);
    }
    CHECK_EQ_INT(out.variants[3].attr[1], 1);
    CHECK(out.check && !out.time && out.is_baseline);
    CHECK_EQ_INT(out.n_best, EVO_MAX_SHAPES);
    int same = 1;
    for (int i = 0; i < EVO_MAX_SHAPES; i++) same &= same_double(out.best_us[i], in.best_us[i]);
    CHECK(same);
    CHECK(isinf(out.best_us[1]) && out.best_us[1] > 0);
    CHECK(isnan(out.best_us[2]));
    CHECK(out.best_us[63] == 0.1 * 63); /* 6.300000000000001: all 17 digits survive */
    CHECK_STR(out.fault_injection, "slow:0.5");
    CHECK_EQ_INT(out.retime, 10);
    /* The whole record, padding included (both were zeroed before being filled). */
    CHECK(memcmp(&in, &out, sizeof in) == 0);

    /* Without fault injection the key is absent and decodes to "". */
    in.fault_injection[0] = '\0';
    in.n_best = 0;
    in.n_variants = 1;
    in.retime = 0; /* absent on the wire, as from a driver before --retime existed */
    free(line);
    line = evo_proto_encode_eval_request(&in);
    CHECK(strstr(line, "fault_injection") == NULL);
    CHECK(strstr(line, "retime") == NULL);
    CHECK_EQ_INT(evo_proto_decode_eval_request(line, &out, &err), EVO_OK);
    CHECK_STR(out.fault_injection, "");
    CHECK_EQ_INT(out.retime, 0);
    CHECK_EQ_INT(out.n_best, 0);
    CHECK_EQ_INT(out.n_variants, 1);
    free(line);
}

static void fill_reply(evo_eval_reply *r, char *detail)
{
    memset(r, 0, sizeof *r);
    r->id = 17;
    r->r.verdict = EVO_V_INCORRECT;
    r->r.detail = detail;
    r->r.n_shapes = EVO_MAX_SHAPES;
    for (int i = 0; i < EVO_MAX_SHAPES; i++) {
        evo_shape_result *x = &r->r.shapes[i];
        snprintf(x->shape, sizeof x->shape, "s%d(2,8,%d,64)%s", i, 77 * (i + 1), i % 2 ? " causal" : "");
        snprintf(x->fields, sizeof x->fields, "{\"batch\":2,\"heads\":8,\"seq\":%d,\"head_dim\":64,\"causal\":%s}",
                 77 * (i + 1), i % 2 ? "true" : "false");
        x->median_us = 123.456789012345678 + i;
        x->p10_us = 0.1;
        x->p90_us = 1.0 / 3.0;
        x->baseline_us = DBL_MAX;
        x->speedup = DBL_MIN;
        x->rate = 4.9e-324; /* the smallest subnormal */
        x->max_abs = NAN;
        x->rel_l2 = INFINITY;
        x->e2e_rel_l2 = -INFINITY;
        x->e2e_rmse = -1e-300;
        x->ci_lo_us = i % 3 ? 0.99 * x->median_us : 0; /* every third shape: no interval (not on the wire) */
        x->ci_hi_us = i % 3 ? 1.01 * x->median_us : 0;
        x->baseline_ci_lo_us = i % 2 ? 1.0 / 7 : 0;
        x->baseline_ci_hi_us = i % 2 ? 2.0 / 7 : 0;
    }
    r->paired = true;
    r->r.check_s = 0.1 + 0.2; /* 0.30000000000000004: a printer with 15 digits would say 0.3 */
    r->r.time_s = 1e9;
    snprintf(r->r.gpu, sizeof r->r.gpu, "NVIDIA H100 \"80GB\"\nHBM3");
}

static void test_eval_reply_round_trip(void)
{
    /* Canonical (unformatted) JSON comes back byte for byte. */
    char detail[] = "{\"case\":{\"shape\":\"odd(1,8,77,64)\",\"causal\":true,\"seed\":2,\"dist\":\"outliers\"},"
                    "\"max_abs\":0.5,\"rel_l2\":0.03125,\"frac_over\":0.001,\"nonfinite\":3,\"first_bad_index\":1234,"
                    "\"launch_error\":\"CUDA_ERROR_ILLEGAL_ADDRESS: \\\"an illegal\\\"\\nsecond line\"}";
    evo_eval_reply in, out;
    fill_reply(&in, detail);
    char *line = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_OK);
    CHECK(line && strchr(line, '\n') == NULL);
    CHECK_CONTAINS(line, "\"verdict\":\"INCORRECT\"");
    CHECK_CONTAINS(line, "\"detail\":{\"case\":{"); /* an object on the wire, not a string */
    CHECK_EQ_INT(evo_proto_decode_eval_reply(line, &out, &err), EVO_OK);
    CHECK_EQ_INT(out.id, 17);
    CHECK_EQ_INT(out.r.verdict, EVO_V_INCORRECT);
    CHECK_STR(out.r.detail, detail);
    CHECK_EQ_INT(out.r.n_shapes, EVO_MAX_SHAPES);
    int same = 1;
    for (int i = 0; i < EVO_MAX_SHAPES; i++) {
        const evo_shape_result *a = &in.r.shapes[i], *b = &out.r.shapes[i];
        same &= strcmp(a->shape, b->shape) == 0 && strcmp(a->fields, b->fields) == 0;
        same &= same_double(a->median_us, b->median_us) && same_double(a->p10_us, b->p10_us) &&
                same_double(a->p90_us, b->p90_us) && same_double(a->baseline_us, b->baseline_us) &&
                same_double(a->speedup, b->speedup) && same_double(a->rate, b->rate) &&
                same_double(a->max_abs, b->max_abs) && same_double(a->rel_l2, b->rel_l2) &&
                same_double(a->e2e_rel_l2, b->e2e_rel_l2) && same_double(a->e2e_rmse, b->e2e_rmse);
        same &= same_double(a->ci_lo_us, b->ci_lo_us) && same_double(a->ci_hi_us, b->ci_hi_us) &&
                same_double(a->baseline_ci_lo_us, b->baseline_ci_lo_us) &&
                same_double(a->baseline_ci_hi_us, b->baseline_ci_hi_us);
    }
    CHECK(same);
    CHECK(out.paired);
    CHECK(out.r.shapes[1].baseline_ci_hi_us == 2.0 / 7);
    CHECK_STR(out.r.shapes[5].shape, "s5(2,8,462,64) causal");
    CHECK_STR(out.r.shapes[5].fields, "{\"batch\":2,\"heads\":8,\"seq\":462,\"head_dim\":64,\"causal\":true}");
    CHECK(out.r.shapes[0].median_us == 123.456789012345678);
    CHECK(out.r.shapes[0].p90_us == 1.0 / 3.0);
    CHECK(out.r.shapes[0].rate == 4.9e-324);
    CHECK(isnan(out.r.shapes[0].max_abs));
    CHECK(isinf(out.r.shapes[0].rel_l2) && out.r.shapes[0].rel_l2 > 0);
    CHECK(isinf(out.r.shapes[0].e2e_rel_l2) && out.r.shapes[0].e2e_rel_l2 < 0);
    CHECK(out.r.check_s == 0.1 + 0.2);
    CHECK(out.r.shapes[0].baseline_us == DBL_MAX);
    CHECK(out.r.shapes[0].e2e_rmse == -1e-300);
    CHECK_NEAR(out.r.time_s, 1e9, 0);
    CHECK_STR(out.r.gpu, "NVIDIA H100 \"80GB\"\nHBM3");
    evo_eval_reply_free(&out);
    CHECK(out.r.detail == NULL);
    free(line);

    /* Detail written with spaces comes back canonical; NULL detail is {}. */
    fill_reply(&in, NULL);
    in.r.n_shapes = 0;
    in.paired = false;
    in.r.verdict = EVO_V_OK;
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_OK);
    CHECK_EQ_INT(evo_proto_decode_eval_reply(line, &out, &err), EVO_OK);
    CHECK_STR(out.r.detail, "{}");
    CHECK(!out.paired); /* "paired" is absent unless true */
    CHECK(strstr(line, "paired") == NULL);
    CHECK_EQ_INT(out.r.n_shapes, 0);
    CHECK_EQ_INT(out.r.verdict, EVO_V_OK);
    evo_eval_reply_free(&out);
    free(line);
    char spaced[] = "{ \"a\" : [1, 2],\n \"b\" : \"x\" }";
    in.r.detail = spaced;
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_OK);
    CHECK_EQ_INT(evo_proto_decode_eval_reply(line, &out, &err), EVO_OK);
    CHECK_STR(out.r.detail, "{\"a\":[1,2],\"b\":\"x\"}");
    evo_eval_reply_free(&out);
    free(line);

    /* Every verdict travels by name. */
    for (int v = 0; v < EVO_V_COUNT; v++) {
        in.r.verdict = (evo_verdict)v;
        in.r.detail = NULL;
        CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_OK);
        char want[64];
        snprintf(want, sizeof want, "\"verdict\":\"%s\"", evo_verdict_name((evo_verdict)v));
        CHECK_CONTAINS(line, want);
        CHECK_EQ_INT(evo_proto_decode_eval_reply(line, &out, &err), EVO_OK);
        CHECK_EQ_INT(out.r.verdict, v);
        evo_eval_reply_free(&out);
        free(line);
    }

    /* A detail that is not a JSON object is the encoder's caller's bug. */
    char not_object[] = "[1,2]", not_json[] = "{\"max_abs\": nan}";
    in.r.detail = not_object;
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_E_INTERNAL);
    CHECK(line == NULL);
    CHECK_CONTAINS(err.msg, "detail is not a JSON object");
    in.r.detail = not_json;
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&in, &line, &err), EVO_E_INTERNAL);
}

static void test_hello_shutdown_error(void)
{
    evo_err err = {0};
    char *line = evo_proto_encode_hello_request(5);
    int64_t id = -7;
    CHECK_EQ_INT(evo_proto_decode_hello_request(line, &id, &err), EVO_OK);
    CHECK_EQ_INT(id, 5);
    free(line);
    CHECK_EQ_INT(evo_proto_decode_hello_request("{\"op\":\"hello\",\"id\":5,\"protocol\":99}", &id, &err),
                 EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "protocol version 99, this evo speaks 3");

    evo_hello_reply h, g;
    memset(&h, 0, sizeof h);
    h.id = 6;
    h.protocol = EVO_PROTOCOL_VERSION;
    h.gpu = 3;
    h.pid = 4242;
    snprintf(h.device, sizeof h.device, "NVIDIA H200 \"quoted\"\nname");
    snprintf(h.arch, sizeof h.arch, "sm_90");
    h.cc_major = 9;
    h.cc_minor = 0;
    h.sm_count = 132;
    h.driver_version = 13000;
    h.l2_bytes = 62914560;
    h.smem_optin = 232448;
    h.regs_per_block = 65536;
    h.regs_per_thread = 255;
    h.max_threads_per_block = 1024;
    h.cases = 748;
    h.prepare_s = 41.25;
    line = evo_proto_encode_hello_reply(&h);
    CHECK_EQ_INT(evo_proto_decode_hello_reply(line, &g, &err), EVO_OK);
    CHECK(memcmp(&h, &g, sizeof h) == 0);
    CHECK_STR(g.device, "NVIDIA H200 \"quoted\"\nname");
    CHECK_EQ_INT(g.l2_bytes, 62914560);
    CHECK_EQ_INT(g.cases, 748);
    CHECK(g.prepare_s == 41.25);
    free(line);
    /* a negative preparation time is refused, naming the field */
    h.prepare_s = -1;
    line = evo_proto_encode_hello_reply(&h);
    CHECK_EQ_INT(evo_proto_decode_hello_reply(line, &g, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "prepare_s");
    free(line);
    evo_device_limits lim;
    evo_hello_to_limits(&g, &lim);
    CHECK_STR(lim.arch, "sm_90");
    CHECK_EQ_INT(lim.sm_major, 9);
    CHECK_EQ_INT(lim.max_smem_per_block_optin, 232448);
    CHECK_EQ_INT(lim.max_regs_per_block, 65536);
    CHECK_EQ_INT(lim.max_regs_per_thread, 255);
    CHECK_EQ_INT(lim.max_threads_per_block, 1024);
    CHECK_EQ_INT(lim.sm_count, 132);
    CHECK_EQ_INT(lim.l2_bytes, 62914560);

    line = evo_proto_encode_shutdown(9);
    CHECK_STR(line, "{\"op\":\"shutdown\",\"id\":9}");
    CHECK_EQ_INT(evo_proto_decode_shutdown(line, &id, &err), EVO_OK);
    CHECK_EQ_INT(id, 9);
    char op[EVO_PROTO_OP_MAX];
    CHECK_EQ_INT(evo_proto_peek(line, op, &id, &err), EVO_OK);
    CHECK_STR(op, "shutdown");
    free(line);

    /* An error reply carries its status through every decoder. */
    line = evo_proto_encode_error(11, EVO_E_CUDA, "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE \"x\"\n");
    CHECK_EQ_INT(evo_proto_peek(line, op, &id, &err), EVO_OK);
    CHECK_STR(op, "error");
    CHECK_EQ_INT(id, 11);
    CHECK_EQ_INT(evo_proto_check_error(line, &err), EVO_E_CUDA);
    CHECK_STR(err.msg, "worker: cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE \"x\"\n");
    evo_eval_reply rep;
    memset(err.msg, 0, sizeof err.msg);
    CHECK_EQ_INT(evo_proto_decode_eval_reply(line, &rep, &err), EVO_E_CUDA);
    CHECK_CONTAINS(err.msg, "CUDA_ERROR_INVALID_IMAGE");
    CHECK(rep.r.detail == NULL);
    CHECK_EQ_INT(evo_proto_decode_hello_reply(line, &g, &err), EVO_E_CUDA);
    free(line);
    line = evo_proto_encode_error(-1, EVO_E_NODRIVER, NULL);
    CHECK_EQ_INT(evo_proto_check_error(line, &err), EVO_E_NODRIVER);
    CHECK_STR(err.msg, "worker: no CUDA driver");
    free(line);
    /* A code evo does not know is still an error, never OK. */
    CHECK_EQ_INT(evo_proto_check_error("{\"op\":\"error\",\"id\":1,\"code\":0,\"message\":\"m\"}", &err), EVO_E_WORKER);
    CHECK_EQ_INT(evo_proto_check_error("{\"op\":\"error\",\"id\":1,\"code\":999}", &err), EVO_E_WORKER);
    CHECK_STR(err.msg, "worker: error without a message");
    CHECK_EQ_INT(evo_proto_check_error("{\"op\":\"eval\",\"id\":1}", &err), EVO_OK);
}

/* Replace the first occurrence of `from` in line with `to`; returns a malloc'd string. */
static char *edit(const char *line, const char *from, const char *to)
{
    const char *at = strstr(line, from);
    if (!at) {
        fprintf(stderr, "edit: '%s' not in %s\n", from, line);
        abort();
    }
    evo_str s = {0};
    evo_str_appendn(&s, line, (size_t)(at - line));
    evo_str_append(&s, to);
    evo_str_append(&s, at + strlen(from));
    return evo_str_take(&s);
}

static void expect_request_error(const char *line, const char *want)
{
    evo_eval_request r;
    evo_err err = {0};
    CHECK_EQ_INT(evo_proto_decode_eval_request(line, &r, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, want);
}

static void test_malformed(void)
{
    evo_eval_request in;
    fill_request(&in);
    in.n_variants = 1;
    in.n_best = 2;
    in.best_us[1] = 5;
    char *good = evo_proto_encode_eval_request(&in);

    /* Every truncation of a valid line is an error, never a crash or a partial record. */
    size_t n = strlen(good);
    int all_fail = 1;
    for (size_t cut = 0; cut < n; cut++) {
        char *t = evo_xmalloc(cut + 1);
        memcpy(t, good, cut);
        t[cut] = '\0';
        evo_eval_request r;
        evo_err err = {0};
        all_fail &= evo_proto_decode_eval_request(t, &r, &err) == EVO_E_WORKER && err.msg[0];
        free(t);
    }
    CHECK(all_fail);
    expect_request_error("", "eval request: empty line");
    expect_request_error("{\"op\":\"eval\",\"id\":1", "eval request: not valid JSON (column");
    expect_request_error("[1,2]", "eval request: not a JSON object");
    expect_request_error("{\"op\":\"shutdown\",\"id\":1} x", "not valid JSON");

    struct {
        const char *from, *to, *want;
    } cases[] = {
        {"\"cubin\":", "\"cubinX\":", "field 'cubin': missing"},
        {"\"id\":4503599627370495", "\"id\":1.5", "field 'id': 1.5 is not an integer"},
        {"\"id\":4503599627370495", "\"id\":-3", "field 'id'"},
        {"\"id\":4503599627370495", "\"id\":\"7\"", "field 'id': expected an integer"},
        {"\"op\":\"eval\"", "\"op\":\"hello\"", "field 'op': expected \"eval\""},
        {"\"op\":\"eval\"", "\"op\":3", "field 'op': expected a string"},
        {"\"threads\":128", "\"threads\":\"128\"", "field 'variants[0].threads': expected an integer"},
        {"\"threads\":128", "\"threads\":2048", "field 'variants[0].threads': 2048 is not an integer in [0, 1024]"},
        {"\"attr\":[64,", "\"attr\":[6.5,", "field 'variants[0].attr[0]': expected an integer"},
        {"\"attr\":[", "\"attrX\":[", "field 'variants[0].attr': missing"},
        {"\"symbol\":\"", "\"symbolX\":\"", "field 'variants[0].symbol': missing"},
        {"\"check\":true", "\"check\":1", "field 'check': expected true or false"},
        {"\"best_us\":[0,5]", "\"best_us\":[0,\"fast\"]", "field 'best_us[1]': expected a number, got the string"},
        {"\"best_us\":[0,5]", "\"best_us\":[0,-5]", "field 'best_us[1]': negative"},
        {"\"best_us\":[0,5]", "\"best_us\":{}", "field 'best_us': expected an array"},
        {"\"variants\":[", "\"variants\":[3,", "field 'variants[0]': expected an object"},
        {"\"fault_injection\":\"slow:0.5\"",
         "\"fault_injection\":\"0123456789012345678901234567890123456789"
         "0123456789012345678901234567890123456789\"",
         "field 'fault_injection': too long (80 bytes, at most 63)"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        char *bad = edit(good, cases[i].from, cases[i].to);
        expect_request_error(bad, cases[i].want);
        free(bad);
    }
    /* No variants, or more than fit. */
    evo_eval_request r;
    evo_err err = {0};
    char *v0 = strstr(good, "\"variants\":[");
    char *v1 = strstr(v0, "}]") + 1; /* the end of the variants array (attr holds a ']' of its own) */
    evo_str s = {0};
    evo_str_appendn(&s, good, (size_t)(v0 - good));
    evo_str_append(&s, "\"variants\":[]");
    evo_str_append(&s, v1 + 1);
    expect_request_error(evo_str_cstr(&s), "field 'variants': empty");
    evo_str_free(&s);
    const char *obj = v0 + strlen("\"variants\":[");
    size_t objlen = (size_t)(v1 - obj);
    evo_str_appendn(&s, good, (size_t)(obj - good));
    for (int i = 0; i < EVO_MAX_VARIANTS + 1; i++) {
        if (i) evo_str_append(&s, ",");
        evo_str_appendn(&s, obj, objlen);
    }
    evo_str_append(&s, v1);
    char want[64];
    snprintf(want, sizeof want, "field 'variants': %d entries, at most %d", EVO_MAX_VARIANTS + 1, EVO_MAX_VARIANTS);
    expect_request_error(evo_str_cstr(&s), want);
    evo_str_free(&s);
    /* Keys this side does not know are ignored. */
    char *extra = edit(good, "\"check\":", "\"future\":{\"x\":[1,2]},\"check\":");
    CHECK_EQ_INT(evo_proto_decode_eval_request(extra, &r, &err), EVO_OK);
    CHECK_EQ_INT(r.best_us[1], 5);
    free(extra);
    free(good);

    /* Reply fields. */
    evo_eval_reply rin, rout;
    fill_reply(&rin, NULL);
    rin.r.n_shapes = 2;
    char *rg = NULL;
    CHECK_EQ_INT(evo_proto_encode_eval_reply(&rin, &rg, &err), EVO_OK);
    struct {
        const char *from, *to, *want;
    } rcases[] = {
        {"\"verdict\":\"INCORRECT\"", "\"verdict\":\"MAYBE\"", "field 'verdict': \"MAYBE\" is not a verdict"},
        {"\"detail\":{}", "\"detail\":\"{}\"", "field 'detail': expected an object"},
        {"\"detail\":{}", "\"detailX\":{}", "field 'detail': missing"},
        {"\"median_us\":124.", "\"median_us\":\"fast\",\"x\":124.",
         "eval reply: field 'shapes[1].median_us': expected a number"},
        {"\"fields\":{", "\"fields\":\"x\",\"y\":{", "field 'shapes[0].fields': expected an object"},
        {"\"device\":", "\"devicX\":", "field 'device': missing"},
        {"\"shape\":\"s1", "\"shape\":\"0123456789012345678901234567890123456789012345678901234567890123s1",
         "field 'shapes[1].shape': too long"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(rcases); i++) {
        char *bad = edit(rg, rcases[i].from, rcases[i].to);
        CHECK_EQ_INT(evo_proto_decode_eval_reply(bad, &rout, &err), EVO_E_WORKER);
        CHECK_CONTAINS(err.msg, rcases[i].want);
        CHECK(rout.r.detail == NULL); /* nothing to free after a failure */
        free(bad);
    }
    /* null reads as NaN (what a plain cJSON printer makes of one). */
    char *nul = edit(rg, "\"max_abs\":\"NaN\"", "\"max_abs\":null");
    CHECK_EQ_INT(evo_proto_decode_eval_reply(nul, &rout, &err), EVO_OK);
    CHECK(isnan(rout.r.shapes[0].max_abs));
    evo_eval_reply_free(&rout);
    free(nul);
    free(rg);

    /* A hello reply missing a field. */
    evo_hello_reply h;
    CHECK_EQ_INT(evo_proto_decode_hello_reply("{\"op\":\"hello\",\"id\":1,\"protocol\":3,\"gpu\":0}", &h, &err),
                 EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "hello reply: field 'pid': missing");
    int64_t id;
    CHECK_EQ_INT(evo_proto_decode_shutdown("{\"op\":\"shutdown\"}", &id, &err), EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "field 'id': missing");
    char op[EVO_PROTO_OP_MAX];
    CHECK_EQ_INT(evo_proto_peek("{\"op\":\"a-very-long-operation-name-indeed-yes\",\"id\":1}", op, &id, &err),
                 EVO_E_WORKER);
    CHECK_CONTAINS(err.msg, "field 'op': too long");
}

int main(void)
{
    test_eval_request_round_trip();
    test_eval_reply_round_trip();
    test_hello_shutdown_error();
    test_malformed();
    return check_result();
}
