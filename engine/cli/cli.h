/* cli.h — the subcommand table. One cmd_<name>.c per subcommand; each holds its options as one table
 * (evo_cli_opts_<name>: name, argument, help) from which it parses (getopt_long, through evo_cli_longopts) and from
 * which the usage's option lines are printed, and returns an evo_status that main() turns into the exit code (0 ok,
 * 1 runtime failure, 2 usage/config). `evo help NAME` and `evo NAME --help` print the same text: the command's
 * synopsis and description (main.c), its option table, then what follows.
 */
#ifndef EVO_CLI_H
#define EVO_CLI_H

#include "config.h"
#include "evo.h"
#include "store.h"

#include <stdio.h>

#include <getopt.h>
#include <stdbool.h>

/* One option of a command. The table (ended by {0}) drives parsing and the usage; an option without help is parsed
 * but not listed. */
typedef struct {
    const char *name; /* long name, without "--" */
    int key;          /* what getopt_long returns for it; with `letter`, also the short option -key */
    int has_arg;      /* no_argument, required_argument, optional_argument */
    bool letter;      /* listed as "-k, --name" */
    const char *arg;  /* the argument's placeholder ("FILE"; "[=TOOLS]" for an optional one); NULL: a flag */
    const char *help; /* the usage's line(s), '\n' between lines; NULL: not listed */
} evo_cli_opt;
#define EVO_CLI_MAX_OPTS 32
/* getopt_long's table of opts into out (n entries at most, the end marker included); returns the options copied. */
int evo_cli_longopts(const evo_cli_opt *opts, struct option *out, int n);
/* The usage's option lines ("  -o, --output FILE     help", continuation lines at the help column). */
void evo_cli_print_opts(FILE *f, const evo_cli_opt *opts);

typedef struct {
    const char *name;
    evo_status (*fn)(int argc, char **argv, evo_err *err);
    const char *summary;         /* one line for `evo help` */
    const char *usage;           /* synopsis and description, before the options */
    const evo_cli_opt *opts;     /* the command's option table (cmd_<name>.c); NULL: none */
    const char *usage_after;     /* after the options; may be NULL */
    int hidden;                  /* internal commands (the GPU worker) are not listed */
    void (*usage_more)(FILE *f); /* prints what the tasks register (options of their own); may be NULL */
} evo_cmd;

/* `evo export`'s options the tasks register (task->torch_option), for its usage. */
void evo_cli_export_task_options(FILE *f);

/* The option tables, one per command (cmd_<name>.c). */
extern const evo_cli_opt evo_cli_opts_run[];
extern const evo_cli_opt evo_cli_opts_elite[];
extern const evo_cli_opt evo_cli_opts_export[];
extern const evo_cli_opt evo_cli_opts_check[];
extern const evo_cli_opt evo_cli_opts_space[];
extern const evo_cli_opt evo_cli_opts_compile[];
extern const evo_cli_opt evo_cli_opts_history[];
extern const evo_cli_opt evo_cli_opts_insights[];
extern const evo_cli_opt evo_cli_opts_profile[];
extern const evo_cli_opt evo_cli_opts_plot[];
extern const evo_cli_opt evo_cli_opts_merge[];
extern const evo_cli_opt evo_cli_opts_init[];
extern const evo_cli_opt evo_cli_opts_worker[];

const evo_cmd *evo_cli_find(const char *name);
const evo_cmd *evo_cli_commands(int *n);
void evo_cli_print_usage(const evo_cmd *c); /* to stdout */
/* A command's failure on stderr, "evo: MESSAGE" (or the status's name when there is no message), with nothing in it
 * that may steer the terminal; marks err shown, so that it is said once (main says what no command said). */
void evo_cli_say_error(const char *cmd, evo_status s, evo_err *err);
/* Report a usage error for command c: fills err, returns EVO_E_USAGE. */
evo_status evo_cli_usage_error(const evo_cmd *c, evo_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

/* Opens db read-only and reads run *id (0: the latest, *id set to it) and its generation rows (history, plot).
 * *st is NULL when the store could not be opened; otherwise the caller closes it and frees run and gens, whatever
 * the status. */
evo_status evo_cli_open_run(const char *db, int64_t *id, evo_store **st, evo_run_rec *run, evo_gen_rec **gens, int *n,
                            evo_err *err);

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
