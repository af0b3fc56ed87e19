/* cmd_compile.c — `evo compile`: render genomes and compile them with NVRTC (no GPU), reporting registers, shared
 * memory and spills per kernel variant, and the verdict of the pre-GPU gates. */
#include "candidate.h"
#include "cli.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_text(const evo_task *task, const evo_candidate *c, int n, const char *arch, double wall)
{
    int counts[EVO_V_COUNT] = {0};
    printf("%-13s %-44s %s\n", "verdict", "per variant: registers / smem (dynamic+static) / spills", "genome");
    for (int i = 0; i < n; i++) {
        counts[c[i].verdict]++;
        char res[256] = "";
        size_t len = 0;
        for (int k = 0; k < c[i].cr.n_kernels && len < sizeof res; k++) {
            const evo_kernel_res *r = &c[i].cr.kernels[k].res;
            char label[64];
            task->variant_label(&c[i].prog.variants[k], label, sizeof label);
            len += (size_t)snprintf(res + len, sizeof res - len, "%s%s: %d r / %d B / %d B", k ? ", " : "", label,
                                    r->registers,
                                    c[i].prog.variants[k].smem_bytes + (r->smem_bytes > 0 ? r->smem_bytes : 0),
                                    (r->spill_store_bytes > 0 ? r->spill_store_bytes : 0) +
                                        (r->spill_load_bytes > 0 ? r->spill_load_bytes : 0));
        }
        printf("%-13s %-44s %s\n", evo_verdict_name(c[i].verdict), res, c[i].genome_text);
        if (c[i].verdict != EVO_V_OK) printf("%13s %s\n", "", c[i].why);
    }
    printf("\n%d genomes for %s in %.1f s:", n, arch, wall);
    for (int v = 0; v < EVO_V_COUNT; v++)
        if (counts[v]) printf(" %d %s", counts[v], evo_verdict_name((evo_verdict)v));
    printf("\n");
}

static cJSON *candidate_json(const evo_task *task, const evo_candidate *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "genome", c->genome_text);
    cJSON_AddStringToObject(o, "verdict", evo_verdict_name(c->verdict));
    if (c->verdict != EVO_V_OK) cJSON_AddStringToObject(o, "why", c->why);
    cJSON_AddStringToObject(o, "key", c->key);
    cJSON_AddNumberToObject(o, "registers", c->registers);
    cJSON_AddNumberToObject(o, "smem_bytes", c->smem_bytes);
    cJSON_AddNumberToObject(o, "spill_bytes", c->spill_bytes);
    cJSON_AddNumberToObject(o, "stack_bytes", c->stack_bytes);
    cJSON_AddNumberToObject(o, "compile_s", c->cr.seconds);
    cJSON_AddBoolToObject(o, "cache_hit", c->cr.cache_hit);
    cJSON *vs = cJSON_AddArrayToObject(o, "variants");
    for (int k = 0; k < c->prog.n_variants; k++) {
        const evo_variant *v = &c->prog.variants[k];
        cJSON *j = cJSON_CreateObject();
        for (int a = 0; a < task->n_variant_attrs; a++) {
            const evo_field *f = &task->variant_attrs[a];
            char text[64];
            evo_field_value_text(f, (double)v->attr[a], text, sizeof text);
            if (f->type == EVO_FIELD_ENUM)
                cJSON_AddStringToObject(j, f->name, text);
            else
                cJSON_AddNumberToObject(j, f->name, (double)v->attr[a]);
        }
        cJSON_AddStringToObject(j, "name_expr", v->name_expr);
        cJSON_AddNumberToObject(j, "threads", v->threads);
        cJSON_AddNumberToObject(j, "dynamic_smem_bytes", v->smem_bytes);
        if (k < c->cr.n_kernels) {
            const evo_compiled_kernel *ck = &c->cr.kernels[k];
            cJSON_AddStringToObject(j, "lowered", ck->lowered ? ck->lowered : "");
            cJSON_AddNumberToObject(j, "registers", ck->res.registers);
            cJSON_AddNumberToObject(j, "static_smem_bytes", ck->res.smem_bytes);
            cJSON_AddNumberToObject(j, "spill_store_bytes", ck->res.spill_store_bytes);
            cJSON_AddNumberToObject(j, "spill_load_bytes", ck->res.spill_load_bytes);
            cJSON_AddNumberToObject(j, "stack_frame_bytes", ck->res.stack_frame_bytes);
        }
        cJSON_AddItemToArray(vs, j);
    }
    return o;
}

/* `evo compile`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_compile[] = {
    {"genome", 'G', required_argument, false, "G", "one genome in canonical text form"},
    {"sample", 'n', required_argument, false, "N", "a deterministic sample of N valid genomes, extremes included"},
    {"arch", 'a', required_argument, false, "sm_XX", "target architecture"},
    {"json", 'J', no_argument, false, NULL, "machine-readable output"},
    {"jobs", 'j', required_argument, true, "N", "parallel compiles (default: all cores)"},
    {"config", 'c', required_argument, false, NULL, NULL}, /* not listed in the usage */
    {0},
};

EVO_CMD(compile)
{
    const evo_cmd *self = evo_cli_find("compile");
    const char *config_path = NULL, *genome_text = NULL, *arch = NULL;
    int sample = 0, jobs = 0, json = 0;
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_compile, longopts, EVO_ARRAY_LEN(longopts));
    optind = 0;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, "c:j:", longopts, NULL)) != -1;) {
        char *end;
        switch (ch) {
            case 'c': config_path = optarg; break;
            case 'G': genome_text = optarg; break;
            case 'a': arch = optarg; break;
            case 'J': json = 1; break;
            case 'n':
                sample = (int)strtol(optarg, &end, 10);
                if (*end || sample < 1 || sample > 100000)
                    return evo_cli_usage_error(self, err, "--sample takes a count from 1 to 100000, not '%s'", optarg);
                break;
            case 'j':
                jobs = (int)strtol(optarg, &end, 10);
                if (*end || jobs < 1 || jobs > 1024)
                    return evo_cli_usage_error(self, err, "--jobs takes a count from 1 to 1024, not '%s'", optarg);
                break;
            default: return evo_cli_usage_error(self, err, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (genome_text && sample) return evo_cli_usage_error(self, err, "--genome and --sample exclude each other");

    evo_config *cfg = NULL;
    evo_status s = evo_cli_config_load(config_path, &cfg, err);
    if (s != EVO_OK) return s;
    if (!arch) arch = strcmp(cfg->arch, "auto") == 0 ? "sm_90" : cfg->arch;
    evo_device_limits lim;
    s = evo_device_limits_for_arch(arch, &lim, err);
    const evo_task *task = evo_task_find(cfg->task);
    evo_genome *genomes = NULL;
    int n = 0;
    if (s == EVO_OK && !task)
        s = evo_fail(err, EVO_E_CONFIG, "%s: unknown task '%s'", evo_show(cfg->path).s, cfg->task);
    if (s == EVO_OK && genome_text) {
        genomes = evo_xcalloc(1, sizeof *genomes);
        s = evo_genome_parse(cfg->space, genome_text, genomes, err);
        if (s != EVO_OK) s = evo_failv_prefix(err, EVO_E_USAGE, "compile: --genome");
        n = 1;
    } else if (s == EVO_OK) {
        s = evo_sample_genomes(cfg, sample ? sample : 1, cfg->evolution.seed, &genomes, &n, err);
    }
    evo_candidate *c = NULL;
    double t0 = evo_now();
    if (s == EVO_OK) {
        c = evo_xcalloc((size_t)n, sizeof *c);
        for (int i = 0; i < n; i++) c[i].genome = genomes[i];
        evo_build_opts bo = {.cfg = cfg, .task = task, .lim = &lim, .arch = arch, .jobs = jobs};
        s = evo_candidates_build(&bo, c, n, err);
    }
    if (s == EVO_OK) {
        if (json) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddStringToObject(root, "arch", arch);
            cJSON_AddStringToObject(root, "nvrtc", evo_nvrtc_version());
            cJSON *arr = cJSON_AddArrayToObject(root, "candidates");
            for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, candidate_json(cfg->task_ops, &c[i]));
            char *txt = cJSON_Print(root);
            puts(txt);
            free(txt);
            cJSON_Delete(root);
        } else {
            print_text(cfg->task_ops, c, n, arch, evo_now() - t0);
        }
        if (genome_text && c[0].verdict != EVO_V_OK)
            s = evo_fail(err, EVO_E_CONFIG, "compile: %s: %s", evo_verdict_name(c[0].verdict), c[0].why);
    }
    for (int i = 0; c && i < n; i++) evo_candidate_free(&c[i]);
    free(c);
    free(genomes);
    evo_config_free(cfg);
    return s;
}
