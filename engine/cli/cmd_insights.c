/* cmd_insights.c — `evo insights`: the per-knob-value statistics that guide mutation (count, failure rate, mean
 * log speedup, current mutation weight), computed from the store's evaluations of the config's task, arch and
 * shape set. Reads the database only.
 */
#include "cli.h"
#include "config.h"
#include "insights.h"
#include "store.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* `evo insights`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_insights[] = {
    {"config", 'c', required_argument, true, "F",
     "search configuration (default configs/default.yaml, else the built-in one)"},
    {"db", 'd', required_argument, false, "F", "database (default population.db)"},
    {"json", 'J', no_argument, false, NULL, "machine-readable output"},
    {0},
};

EVO_CMD(insights)
{
    const evo_cmd *self = evo_cli_find("insights");
    const char *config_path = NULL, *db_path = EVO_DEFAULT_DB;
    bool json = false;
    struct option opts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_insights, opts, EVO_ARRAY_LEN(opts));
    optind = 0;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":c:", opts, NULL)) != -1;) {
        switch (c) {
            case 'c': config_path = optarg; break;
            case 'd': db_path = optarg; break;
            case 'J': json = true; break;
            case ':': return evo_cli_usage_error(self, err, "option '%s' needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);

    evo_config *cfg = NULL;
    evo_store *st = NULL;
    evo_insights *ins = NULL;
    evo_status s = evo_cli_config_load(config_path, &cfg, err);
    if (s == EVO_OK) s = evo_store_open(db_path, EVO_STORE_READONLY, &st, err);
    if (s == EVO_OK) {
        char shape_set[65];
        evo_config_shape_set_key(cfg, shape_set);
        /* "auto" means whatever GPU the run found, so every arch's evaluations speak for this config. */
        const char *arch = strcmp(cfg->arch, "auto") == 0 ? NULL : cfg->arch;
        ins = evo_insights_new(cfg->space);
        s = evo_store_foreach_evaluation(st, cfg->task, arch, shape_set, 0, evo_insights_add_stored, ins, err);
    }
    if (s == EVO_OK) {
        evo_str out = {0};
        evo_insights_format(ins, json, &out);
        fputs(evo_str_cstr(&out), stdout);
        evo_str_free(&out);
    }
    evo_insights_free(ins);
    evo_store_close(st);
    evo_config_free(cfg);
    return s;
}
