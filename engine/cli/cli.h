/* cli.h — the subcommand table. One cmd_<name>.c per subcommand; each parses its own options with getopt_long
 * and returns an evo_status that main() turns into the exit code (0 ok, 1 runtime failure, 2 usage/config).
 * Usage texts live in the table only: `evo help NAME` and `evo NAME --help` print the same string.
 */
#ifndef EVO_CLI_H
#define EVO_CLI_H

#include "config.h"
#include "evo.h"
#include "store.h"

#include <stdio.h>

typedef struct {
    const char *name;
    evo_status (*fn)(int argc, char **argv, evo_err *err);
    const char *summary; /* one line for `evo help` */
    const char *usage;   /* full text for `evo help NAME` and `--help` */
    int hidden;          /* internal commands (the GPU worker) are not listed */
    void (*usage_more)(FILE *f); /* prints what the tasks register (options of their own); may be NULL */
} evo_cmd;

/* `evo export`'s options the tasks register (task->torch_option), for its usage. */
void evo_cli_export_task_options(FILE *f);

const evo_cmd *evo_cli_find(const char *name);
const evo_cmd *evo_cli_commands(int *n);
void evo_cli_print_usage(const evo_cmd *c); /* to stdout */
/* Report a usage error for command c: fills err, returns EVO_E_USAGE. */
evo_status evo_cli_usage_error(const evo_cmd *c, evo_err *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* JSON output of the reading commands: a number that is not finite, or a NULL string, becomes null. */
struct cJSON;
void evo_json_num(struct cJSON *o, const char *name, double v);
void evo_json_str(struct cJSON *o, const char *name, const char *s);
/* One per-shape result as JSON, the one form every command writes: shape, the task's fields, times, speedup,
 * rate (under the task's key: "tflops" for attention), errors. task NULL: the fields only as stored. */
struct evo_task;
struct cJSON *evo_json_shape_result(const evo_shape_result *r, const struct evo_task *task);
/* The task of a stored candidate; the first of evo_tasks (the only task of older databases) when the name is
 * unknown. */
const struct evo_task *evo_cli_task_of(const char *name);

/* The default store path. */
#define EVO_DEFAULT_DB "population.db"

/* --config F, or the default (config.h: evo_config_load_default); a note on stderr says when the built-in one is
 * used. */
evo_status evo_cli_config_load(const char *path, evo_config **out, evo_err *err);

#define EVO_CMD(name) evo_status cmd_##name(int argc, char **argv, evo_err *err)
EVO_CMD(run);
EVO_CMD(elite);
EVO_CMD(export);
EVO_CMD(check);
EVO_CMD(space);
EVO_CMD(compile);
EVO_CMD(history);
EVO_CMD(insights);
EVO_CMD(profile);
EVO_CMD(plot);
EVO_CMD(init);
EVO_CMD(help);
EVO_CMD(worker);
EVO_CMD(merge);

#endif
