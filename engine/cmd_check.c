/* cmd_check.c — `evo check FILE.cu`: a hand-written kernel (the ABI of templates/evo_attention_abi.h, see
 * docs/templates.md) through the same gates as every candidate, timed against the config's baseline genome on the
 * same GPU. Exit 0 when it passes every gate, 1 for any other verdict, 2 when the file does not compile. */
#include "candidate.h"
#include "cli.h"
#include "compile.h"
#include "cudrv.h"
#include "evaluate.h"
#include "sanitize.h"
#include "store.h"
#include "templates.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first few error lines of a compile log, for the message. */
static void log_errors(const char *log, char *out, size_t n)
{
    size_t len = 0;
    int lines = 0;
    out[0] = '\0';
    for (const char *p = log; *p && lines < 4;) {
        const char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        if (memmem(p, l, "error", 5) && len + l + 2 < n) {
            len += (size_t)snprintf(out + len, n - len, "\n  %.*s", (int)l, p);
            lines++;
        }
        p += l + (eol ? 1 : 0);
    }
}

/* --sanitize: the tools, the sanitizer, and what it found for the file at hand. */
typedef struct {
    const char *tools[EVO_SANITIZE_MAX_TOOLS];
    int n_tools; /* 0: no --sanitize */
    char *sanitizer;
    evo_sanitize_result res[EVO_SANITIZE_MAX_TOOLS];
    int n_res;   /* results for the current file; 0 when it was not run under the sanitizer */
    bool found;  /* some file had errors: the reports are kept */
} sanitize_ctx;

static bool sanitize_clean(const sanitize_ctx *z)
{
    for (int t = 0; t < z->n_res; t++)
        if (!z->res[t].clean) return false;
    return true;
}

static void print_result(const char *file, const evo_result *r, evo_fitness kind, const sanitize_ctx *z, bool json)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "verdict", evo_verdict_name(r->verdict));
        if (isfinite(r->fitness)) cJSON_AddNumberToObject(o, "speedup_vs_baseline", r->fitness);
        cJSON_AddStringToObject(o, "fitness", kind == EVO_FITNESS_WORST ? "worst" : "geomean");
        cJSON_AddStringToObject(o, "gpu", r->gpu);
        cJSON *d = cJSON_Parse(r->detail ? r->detail : "{}");
        cJSON_AddItemToObject(o, "detail", d ? d : cJSON_CreateObject());
        cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
        for (int i = 0; i < r->n_shapes; i++) {
            const evo_shape_result *s = &r->shapes[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "shape", s->shape);
            cJSON_AddNumberToObject(j, "median_us", s->median_us);
            cJSON_AddNumberToObject(j, "p10_us", s->p10_us);
            cJSON_AddNumberToObject(j, "p90_us", s->p90_us);
            cJSON_AddNumberToObject(j, "baseline_us", s->baseline_us);
            cJSON_AddNumberToObject(j, "speedup", s->speedup);
            cJSON_AddNumberToObject(j, "tflops", s->tflops);
            cJSON_AddNumberToObject(j, "max_abs", s->max_abs);
            cJSON_AddNumberToObject(j, "rel_l2", s->rel_l2);
            cJSON_AddNumberToObject(j, "e2e_rel_l2", s->e2e_rel_l2);
            cJSON_AddNumberToObject(j, "e2e_rmse", s->e2e_rmse);
            cJSON_AddItemToArray(shapes, j);
        }
        if (z->n_tools) {
            cJSON *san = cJSON_AddArrayToObject(o, "sanitize");
            for (int t = 0; t < z->n_res; t++) {
                const evo_sanitize_result *x = &z->res[t];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "tool", x->tool);
                cJSON_AddBoolToObject(j, "clean", x->clean);
                cJSON_AddNumberToObject(j, "errors", x->errors);
                cJSON_AddStringToObject(j, "verdict", evo_verdict_name(x->verdict));
                if (x->why[0]) cJSON_AddStringToObject(j, "why", x->why);
                cJSON_AddStringToObject(j, "report", x->report);
                cJSON_AddItemToArray(san, j);
            }
        }
        char *t = cJSON_Print(o);
        puts(t);
        free(t);
        cJSON_Delete(o);
        return;
    }
    printf("%s: %s on %s", file, evo_verdict_name(r->verdict), r->gpu);
    if (isfinite(r->fitness)) printf(", %.3fx the baseline genome (%s)", r->fitness, evo_fitness_describe(kind));
    if (r->verdict == EVO_V_REGRESSED)
        printf("\n  correct, but slower than the baseline on too many shapes for a search to keep it");
    printf("\n");
    cJSON *d = cJSON_Parse(r->detail ? r->detail : "{}");
    const cJSON *reason = cJSON_GetObjectItem(d, "reason");
    if (cJSON_IsString(reason)) {
        printf("  reason: %s\n", reason->valuestring);
        const cJSON *c = cJSON_GetObjectItem(d, "case");
        if (c) {
            char *t = cJSON_PrintUnformatted(c);
            printf("  case:   %s\n", t);
            free(t);
        }
    }
    cJSON_Delete(d);
    if (r->n_shapes && r->shapes[0].median_us > 0) {
        printf("  %-30s %10s %19s %10s %8s %8s %9s %10s %10s\n", "shape", "median us", "p10..p90 us", "baseline",
               "speedup", "TFLOP/s", "rel-L2", "max-abs", "e2e rel-L2");
        for (int i = 0; i < r->n_shapes; i++) {
            const evo_shape_result *s = &r->shapes[i];
            char range[32];
            snprintf(range, sizeof range, "%.2f..%.2f", s->p10_us, s->p90_us);
            printf("  %-30s %10.2f %19s %10.2f %7.3fx %8.1f %9.2e %10.2e %10.2e\n", s->shape, s->median_us, range,
                   s->baseline_us, s->speedup, s->tflops, s->rel_l2, s->max_abs, s->e2e_rel_l2);
        }
    }
    if (z->n_tools && z->n_res) {
        char summary[2400];
        evo_sanitize_summary(z->res, z->n_res, summary, sizeof summary);
        printf("  compute-sanitizer: %s\n", summary);
        for (int t = 0; t < z->n_res; t++)
            if (!z->res[t].clean) printf("  %s report: %s\n", z->res[t].tool, z->res[t].report);
    } else if (z->n_tools) {
        printf("  compute-sanitizer: not run (the kernel did not get to run its cases)\n");
    }
}

/* The verdicts after which a kernel is worth a sanitizer run: it launched on every case or failed one. */
static bool ran(evo_verdict v)
{
    return v == EVO_V_OK || v == EVO_V_REGRESSED || v == EVO_V_INCORRECT || v == EVO_V_CRASHED;
}

/* Compile one kernel file and run it through the gates. Returns EVO_E_CONFIG when it does not compile. */
static evo_status check_one(const evo_config *cfg, evo_evaluator *ev, const char *file, evo_store *st,
                            sanitize_ctx *z, evo_result *r, evo_err *err)
{
    char *source = NULL;
    evo_status s = evo_read_file(file, &source, NULL, err);
    if (s != EVO_OK) return evo_failv_prefix(err, EVO_E_USAGE, "check");
    const char *abi = "";
    evo_template_get("evo_attention_abi.h", &abi, NULL, NULL);
    const evo_compile_header hdr = {"evo_attention_abi.h", abi};
    /* The file's own directory is on the include path, so a kernel may include its helpers. */
    char inc[4200], dir[4096];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    snprintf(inc, sizeof inc, "-I%s", slash ? dir : ".");
    const char *opts[] = {"-std=c++17", inc};
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    evo_compile_req req = {.source = source, .program_name = base, .headers = &hdr, .n_headers = 1,
                           .arch = evo_evaluator_arch(ev), .options = opts, .n_options = 2,
                           .timeout_s = cfg->compile.timeout_s};
    evo_candidate c;
    memset(&c, 0, sizeof c);
    s = evo_compile(NULL, &req, &c.cr, err);
    free(source);
    if (s != EVO_OK) return s;
    snprintf(c.genome_text, sizeof c.genome_text, "file:%s", base);
    memcpy(c.key, c.cr.key, sizeof c.key);
    snprintf(c.prog.program_name, sizeof c.prog.program_name, "%s", base);
    if (c.cr.outcome != EVO_COMPILE_OK) {
        char lines[1024];
        log_errors(c.cr.log, lines, sizeof lines);
        s = evo_fail(err, EVO_E_CONFIG, "check: %s does not compile (%s)%s", file, evo_compile_outcome_name(c.cr.outcome),
                     lines);
        evo_compile_result_free(&c.cr);
        return s;
    }
    /* One variant per head dimension the config's shapes need: evo_attn_d64, evo_attn_d128. */
    bool need[2] = {false, false};
    for (int i = 0; i < cfg->n_shapes; i++) need[cfg->shapes[i].head_dim == 128] = true;
    for (int i = 0; i < cfg->correctness.n_shapes; i++) need[cfg->correctness.shapes[i].head_dim == 128] = true;
    c.verdict = EVO_V_OK;
    for (int k = 0; k < 2 && c.verdict == EVO_V_OK; k++) {
        if (!need[k]) continue;
        const int d = k ? 128 : 64;
        char name[32];
        snprintf(name, sizeof name, "evo_attn_d%d", d);
        int found = -1;
        for (int j = 0; j < c.cr.n_kernels; j++)
            if (c.cr.kernels[j].lowered && !strcmp(c.cr.kernels[j].lowered, name)) found = j;
        if (found < 0) {
            c.verdict = EVO_V_INVALID;
            snprintf(c.why, sizeof c.why, "%s defines no extern \"C\" kernel %s (the config has head dim %d)", file, name,
                     d);
            break;
        }
        const int at = c.prog.n_variants++;
        evo_variant *v = &c.prog.variants[at];
        v->head_dim = d;
        v->format = cfg->format;
        snprintf(v->name_expr, sizeof v->name_expr, "%s", name);
        v->threads = 0; /* the worker reads <name>_launch from the module */
        evo_compiled_kernel t = c.cr.kernels[at]; /* kernels[] in variants order, for the request */
        c.cr.kernels[at] = c.cr.kernels[found];
        c.cr.kernels[found] = t;
    }
    s = evo_evaluator_run(ev, &c, 1, false, r, NULL, NULL, NULL, err);
    z->n_res = 0;
    if (s == EVO_OK && z->n_tools && c.verdict == EVO_V_OK && ran(r->verdict)) {
        if (!z->sanitizer) s = evo_sanitize_find(NULL, &z->sanitizer, err);
        char label[64];
        snprintf(label, sizeof label, "%.8s", c.key);
        if (s == EVO_OK) s = evo_evaluator_sanitize(ev, &c, z->sanitizer, z->tools, z->n_tools, label, z->res, err);
        if (s == EVO_OK) z->n_res = z->n_tools;
        z->found |= !sanitize_clean(z);
    }
    if (s == EVO_OK && st) {
        evo_candidate_rec cr = {.key = c.key, .task = (char *)cfg->task, .arch = (char *)evo_evaluator_arch(ev),
                                .genome = c.genome_text, .template_hash = "", .options = "",
                                .nvrtc_version = (char *)evo_nvrtc_version(), .registers = -1, .smem_bytes = -1,
                                .spill_bytes = -1, .stack_bytes = -1};
        s = evo_store_put_candidate(st, &cr, err);
        char ss[65];
        evo_config_shape_set_key(cfg, ss);
        evo_eval_rec e = {.candidate_id = cr.id, .generation = -1, .shape_set = ss, .verdict = r->verdict,
                          .fitness = r->fitness, .detail = r->detail, .gpu = r->gpu, .check_s = r->check_s,
                          .time_s = r->time_s, .shapes = r->shapes, .n_shapes = r->n_shapes};
        if (s == EVO_OK) s = evo_store_put_evaluation(st, &e, err);
        free(e.created_at);
        if (s == EVO_OK && !sanitize_clean(z)) {
            char summary[1600], reason[1700];
            evo_sanitize_summary(z->res, z->n_res, summary, sizeof summary);
            snprintf(reason, sizeof reason, "compute-sanitizer: %s", summary);
            s = evo_store_demote(st, cr.id, reason, err);
        }
    }
    evo_compile_result_free(&c.cr);
    return s;
}

EVO_CMD(check)
{
    const evo_cmd *self = evo_cli_find("check");
    const char *config_path = NULL, *db_path = NULL, *sanitize = NULL, *sanitizer = NULL;
    int json = 0;
    static const struct option longopts[] = {
        {"config", required_argument, 0, 'c'}, {"json", no_argument, 0, 'J'},         {"db", required_argument, 0, 'D'},
        {"sanitize", optional_argument, 0, 'Z'}, {"sanitizer", required_argument, 0, 'Y'}, {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, ":c:", longopts, NULL)) != -1;) {
        switch (ch) {
        case 'c': config_path = optarg; break;
        case 'J': json = 1; break;
        case 'D': db_path = optarg; break;
        case 'Z': sanitize = optarg ? optarg : EVO_SANITIZE_DEFAULT_TOOLS; break;
        case 'Y': sanitizer = optarg; break;
        case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
        default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return evo_cli_usage_error(self, err, "give the kernel file(s) to check");
    sanitize_ctx z = {.n_tools = 0};
    if (sanitize) {
        evo_err why = {{0}};
        if (evo_sanitize_parse_tools(sanitize, z.tools, &z.n_tools, &why) != EVO_OK)
            return evo_cli_usage_error(self, err, "%s", why.msg);
    }
    if (sanitizer && !sanitize) return evo_cli_usage_error(self, err, "--sanitizer goes with --sanitize");
    for (int i = optind; i < argc; i++)
        if (!evo_file_exists(argv[i])) return evo_fail(err, EVO_E_USAGE, "check: %s: no such file", argv[i]);
    evo_config *cfg = NULL;
    evo_status s = evo_cli_config_load(config_path, &cfg, err);
    if (s != EVO_OK) return s;
    if (!getenv("EVO_FAKE_WORKER")) {
        const evo_cudrv *cu;
        evo_err why = {{0}};
        if (evo_cudrv_load(&cu, &why) != EVO_OK) {
            evo_config_free(cfg);
            return evo_fail(err, EVO_E_NODRIVER, "check: %s. evo check runs kernels: it needs an NVIDIA GPU; %s",
                            why.msg, EVO_NO_DRIVER_HINT);
        }
    }
    /* A sanitizer that is not there is refused before anything runs. */
    if (sanitize) s = evo_sanitize_find(sanitizer, &z.sanitizer, err);
    if (s != EVO_OK) {
        evo_config_free(cfg);
        return s;
    }
    char work[256];
    snprintf(work, sizeof work, "%s/evo-check-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    evo_evaluator *ev = NULL;
    evo_evaluator_opts eo = {.cfg = cfg, .config_path = config_path, .work_dir = work, .full_timing = true};
    /* The store first: a database evo cannot use is refused before a worker starts. */
    evo_store *st = NULL;
    if (db_path) s = evo_store_open(db_path, EVO_STORE_READWRITE, &st, err);
    if (s == EVO_OK && !json) fprintf(stderr, "starting the GPU worker (inputs and references are made once)...\n");
    if (s == EVO_OK) s = evo_evaluator_open(&eo, &ev, err);
    int rejected = 0, n_files = argc - optind;
    if (json && n_files > 1) printf("[\n");
    for (int i = optind; s == EVO_OK && i < argc; i++) {
        evo_result r;
        memset(&r, 0, sizeof r);
        s = check_one(cfg, ev, argv[i], st, &z, &r, err);
        if (s == EVO_OK) {
            if (json && n_files > 1 && i > optind) printf(",\n");
            print_result(argv[i], &r, cfg->fitness, &z, json);
            /* REGRESSED is the search's rule against slow candidates; the kernel itself passed every gate. */
            rejected += (r.verdict != EVO_V_OK && r.verdict != EVO_V_REGRESSED) || !sanitize_clean(&z);
        } else if (s == EVO_E_CONFIG && n_files > 1) {
            fprintf(stderr, "evo: %s\n", err->msg); /* the other files are still checked */
            rejected++;
            s = EVO_OK;
        }
        evo_result_free(&r);
    }
    if (json && n_files > 1) printf("]\n");
    if (s == EVO_OK && rejected)
        s = evo_fail(err, EVO_E_REJECTED, "check: %d of %d kernel file%s rejected", rejected, n_files,
                     n_files == 1 ? "" : "s");
    evo_store_close(st);
    evo_evaluator_close(ev);
    evo_config_free(cfg);
    free(z.sanitizer);
    /* The worker's log is kept when the worker or the GPU failed and it says something (the message then says
     * where), the sanitizer reports when they found errors; anything else leaves nothing behind. */
    if (z.found) fprintf(stderr, "evo: sanitizer reports are kept in %s\n", work);
    else evo_work_dir_settle(work, s, err);
    return s;
}
