/* cmd_space.c — `evo space`: the search space of a config (knobs, domains, conditions, constraints, baseline) with
 * its number of distinct genomes and its exact number of valid genomes, as text or as JSON; with --arch, also how many
 * of them a search on that GPU proposes (the task's can_implement at the arch's limits, the config's classes). */
#include "candidate.h"
#include "cli.h"
#include "config.h"
#include "space.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enumeration budget: a few seconds of work at most; pruning by the constraints keeps far larger spaces exact. */
#define SPACE_COUNT_LIMIT 10000000ULL

/* How many valid genomes a search on arch proposes: those evo_candidate_admit takes at the arch's known limits (what
 * the search loop's filter keeps). -1 when the count is not exact or the task or arch is unknown. */
static long long runnable(evo_config *c, const char *arch, bool exact)
{
    evo_device_limits lim;
    const evo_task *task = evo_task_find(c->task);
    if (!exact || !task || evo_device_limits_for_arch(arch, &lim, NULL) != EVO_OK) return -1;
    evo_build_opts o = {.cfg = c, .task = task, .lim = &lim, .arch = arch};
    evo_space_set_filter(c->space, evo_candidate_admits, &o, "not runnable");
    const long long n = (long long)evo_space_count_filtered(c->space);
    evo_space_set_filter(c->space, NULL, NULL, NULL);
    return n;
}

static void print_text(const evo_config *c, uint64_t total, uint64_t valid, bool exact)
{
    const evo_space *s = c->space;
    int width = 0;
    for (int k = 0; k < evo_space_n_knobs(s); k++) {
        int w = (int)strlen(evo_space_knob_name(s, k));
        if (w > width) width = w;
    }
    printf("config:   %s\ntask:     %s\n\nknobs (%d):\n", c->path, c->task, evo_space_n_knobs(s));
    for (int k = 0; k < evo_space_n_knobs(s); k++) {
        printf("  %-*s  %-4s [", width, evo_space_knob_name(s, k), evo_space_knob_is_enum(s, k) ? "enum" : "int");
        for (int i = 0; i < evo_space_domain_size(s, k); i++)
            printf("%s%s", i ? ", " : "", evo_space_value_text(s, k, i));
        const char *when = evo_space_knob_condition(s, k);
        if (when)
            printf("]  when %s\n", when);
        else
            printf("]\n");
    }
    printf("\nconstraints (%d):\n", evo_space_n_constraints(s));
    for (int i = 0; i < evo_space_n_constraints(s); i++) printf("  %d. %s\n", i + 1, evo_space_constraint_text(s, i));
    char g[EVO_GENOME_TEXT_MAX];
    evo_genome_format(s, &c->baseline, g, sizeof g);
    printf("\nbaseline: %s\n", g);
    printf("total:    %" PRIu64 "%s%s\n", total, total == UINT64_MAX ? " or more" : "",
           evo_space_has_conditions(s) ? " (distinct genomes: summed over the conditions' cases)" : "");
    if (exact)
        printf("valid:    %" PRIu64 " (%.2f%%)\n", valid, total ? 100.0 * (double)valid / (double)total : 0.0);
    else
        printf("valid:    about %" PRIu64 " (estimated by sampling: too many to enumerate)\n", valid);
}

static evo_status print_json(const evo_config *c, uint64_t total, uint64_t valid, bool exact, const char *arch,
                             long long runs, evo_err *err)
{
    const evo_space *s = c->space;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "config", c->path);
    cJSON_AddStringToObject(root, "task", c->task);
    cJSON *knobs = cJSON_AddArrayToObject(root, "knobs");
    for (int k = 0; k < evo_space_n_knobs(s); k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", evo_space_knob_name(s, k));
        bool is_enum = evo_space_knob_is_enum(s, k);
        cJSON_AddStringToObject(o, "kind", is_enum ? "enum" : "int");
        cJSON *dom = cJSON_AddArrayToObject(o, "domain");
        for (int i = 0; i < evo_space_domain_size(s, k); i++)
            cJSON_AddItemToArray(dom, is_enum ? cJSON_CreateString(evo_space_value_text(s, k, i))
                                              : cJSON_CreateNumber(evo_space_value(s, k, i)));
        if (evo_space_knob_condition(s, k)) cJSON_AddStringToObject(o, "when", evo_space_knob_condition(s, k));
        cJSON_AddItemToArray(knobs, o);
    }
    cJSON *cons = cJSON_AddArrayToObject(root, "constraints");
    for (int i = 0; i < evo_space_n_constraints(s); i++)
        cJSON_AddItemToArray(cons, cJSON_CreateString(evo_space_constraint_text(s, i)));
    char g[EVO_GENOME_TEXT_MAX];
    evo_genome_format(s, &c->baseline, g, sizeof g);
    cJSON_AddStringToObject(root, "baseline", g);
    /* counts above 2^53 lose precision as JSON numbers; the spaces evo searches stay far below */
    cJSON_AddNumberToObject(root, "total", (double)total);
    cJSON_AddNumberToObject(root, "valid", (double)valid);
    cJSON_AddBoolToObject(root, "exact", exact);
    if (arch && runs >= 0) {
        cJSON *r = cJSON_AddObjectToObject(root, "proposed_on_arch");
        cJSON_AddStringToObject(r, "arch", arch);
        cJSON_AddNumberToObject(r, "genomes", (double)runs);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return evo_fail(err, EVO_E_NOMEM, "space: out of memory writing JSON");
    printf("%s\n", text);
    free(text);
    return EVO_OK;
}

/* `evo space`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_space[] = {
    {"config", 'c', required_argument, false, NULL, NULL}, /* not listed in the usage */
    {"json", 'J', no_argument, false, NULL, NULL},         /* not listed in the usage */
    {"arch", 'A', required_argument, false, "ARCH",
     "the space a search on that GPU (sm_80, sm_86, sm_89, sm_90) walks: with the task's rule for\n"
     "what cannot run there among the constraints, and how many genomes it proposes (those the task\n"
     "can implement at that GPU's limits, of a class the config admits)"},
    {0},
};

EVO_CMD(space)
{
    struct option opts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_space, opts, EVO_ARRAY_LEN(opts));
    const evo_cmd *self = evo_cli_find("space");
    const char *path = NULL; /* the default (config.h) */
    const char *arch = NULL;
    bool json = false;
    optind = 0;
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
        switch (o) {
            case 'c': path = optarg; break;
            case 'J': json = true; break;
            case 'A': arch = optarg; break;
            default: return evo_cli_usage_error(self, err, "option '%s' is unknown or needs a value", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", NULL};
    if (arch && !evo_str_in_list(arch, archs))
        return evo_cli_usage_error(self, err, "--arch takes sm_80, sm_86, sm_89 or sm_90, not '%s'", evo_show(arch).s);

    evo_config *c;
    evo_status st = evo_cli_config_load(path, &c, err);
    if (st != EVO_OK) return st;
    char why[256] = "";
    const char *rule = NULL;
    if (arch && (st = evo_config_keep_to_arch(c, arch, &rule, why, sizeof why, err)) != EVO_OK) {
        evo_config_free(c);
        return st;
    }
    if (rule && !json) printf("on %s a search keeps to %s: %s\n", arch, rule, why);
    uint64_t total, valid;
    bool exact;
    st = evo_space_count(c->space, SPACE_COUNT_LIMIT, &total, &valid, &exact, err);
    const long long runs = st == EVO_OK && arch ? runnable(c, arch, exact) : -1;
    if (st == EVO_OK) {
        if (json)
            st = print_json(c, total, valid, exact, arch, runs, err);
        else
            print_text(c, total, valid, exact);
    }
    if (st == EVO_OK && !json && runs >= 0)
        printf("proposed: %lld on %s (what the task can implement at its limits, of a class the config admits)\n", runs,
               arch);
    evo_config_free(c);
    return st;
}
