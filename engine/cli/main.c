/* main.c — evo's entry point: the subcommand table, usage texts, the only place that prints errors and chooses
 * the exit code, and the small helpers the commands share (cli.h). */
#include "cli.h"
#include "comm.h"
#include "strategy.h"
#include "task.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const evo_cmd commands[] = {
    {"run", cmd_run, "evolve kernels: compile, check and time a population for N generations",
     "usage: evo run [--config F] [--generations N] [--population N] [--seed N] [--db F] [--resume RUN]\n"
     "               [--gpus LIST] [--jobs N] [--time-budget SECONDS] [--strategy NAME] [--no-insights]\n"
     "               [--seed-elites] [--replay DB] [--sanitize[=TOOLS]] [--sanitizer PATH]\n"
     "       mpirun -n N evo run --islands [--migrate-every K] [--migrants M] [the options above]\n"
     "\n"
     "Runs the search described by the config (default configs/default.yaml; where there is none, the one built\n"
     "into evo: see evo init) on the GPUs of this machine and stores every result in the database (default\n"
     "population.db). Needs an NVIDIA driver, except with --replay, which looks results up in a database\n"
     "recorded on a GPU instead. A run in progress belongs to one process (a lease in the database, renewed while\n"
     "it runs): a second --resume of it is refused. The first result that cannot be stored stops the run.\n"
     "\n",
     evo_cli_opts_run, NULL, 0, NULL},
    {"elite", cmd_elite, "show the best kernels found so far",
     "usage: evo elite --show [--top K] [--shape NAME] [--accuracy CLASS] [--json] [--db F] [--task T]\n"
     "                        [--arch sm_XX] [--config F]\n"
     "       evo elite --show --per-shape [--top K] [--shape NAME] [--accuracy CLASS] [--json] [--db F] ...\n"
     "\n"
     "Lists the top-K candidates by fitness (speedup over the baseline genome) with their genome,\n"
     "per-shape times, TFLOP/s, resources and worst error. Reads the database only; never modifies it.\n"
     "With --per-shape: for each timed shape (and its dispatch bucket), the top-K of each accuracy\n"
     "class by that shape's median time (evo export --dispatch takes each bucket's winner).\n"
     "\n"
     "By default it ranks the task, arch and shape set of the latest run; ncu metrics are shown when stored.\n"
     "Each accuracy class (attention: exact, fp8; docs/templates.md) is ranked on its own, in a table each.\n"
     "\n",
     evo_cli_opts_elite, NULL, 0, NULL},
    {"export", cmd_export, "write the best (or a chosen) kernel as a standalone .cu",
     "usage: evo export [--best [--accuracy CLASS] | --id ID | --row N | --key PREFIX] [-o FILE | --torch DIR\n"
     "                  [--module NAME] [--kernel FILE] [TASK OPTION]] [--db F]\n"
     "       evo export --dispatch [--accuracy CLASS] [-o FILE] [--db F]\n"
     "\n"
     "Writes the kernel specialised to its genome as a .cu file that plain nvcc compiles without evo:\n"
     "an extern \"C\" launcher, a provenance header, and a self-test under -DEVO_SELFTEST.\n"
     "Default path: variants/<task>-<arch>-<shortid>.cu (shortid: the first 8 hex digits of the key)\n"
     "--dispatch writes the winner of every dispatch bucket (evo elite --show --per-shape) into one file\n"
     "whose launcher picks the kernel by the problem; default path variants/<task>-<arch>-dispatch.cu\n"
     "(-dispatch-CLASS.cu for a class other than exact).\n"
     "\n"
     "The genome is rendered with the config of the run that measured it; only candidates that passed every\n"
     "gate in a run are exported (kernels checked with `evo check` are hand-written files already). --best\n"
     "passes over such files. Reads the database only. No GPU needed.\n"
     "\n",
     evo_cli_opts_export, NULL, 0, evo_cli_export_task_options},
    {"check", cmd_check, "run a hand-written kernel through the same gates",
     "usage: evo check FILE.cu [FILE.cu...] [--config F] [--accuracy CLASS] [--json] [--db F]\n"
     "                 [--sanitize[=TOOLS]] [--sanitizer PATH] [--retime N]\n"
     "       evo check --genome G [--config F] [--json] [--retime N]\n"
     "\n"
     "Compiles each FILE.cu (which implements the attention ABI of docs/templates.md), runs the correctness gate\n"
     "on every configured case and the timing gate against the baseline genome, and prints the verdict, per-shape\n"
     "times with their 95% intervals and errors. Exit 2 when a file does not compile (whatever the others did),\n"
     "else 1 when one is rejected, 0 when every file passes. Without an NVIDIA driver only the compile gate runs:\n"
     "its log (registers, spills) is printed, then evo says the GPU gates need a driver (exit 1; 2 when a file\n"
     "does not compile). The compiler runs confined: it may read only the file's folder, evo's headers and the\n"
     "CUDA Toolkit's, within the config's compile limits (memory, CPU time, output, open files).\n"
     "\n",
     evo_cli_opts_check, NULL, 0, NULL},
    {"space", cmd_space, "print the search space: knobs, domains, size, valid count",
     "usage: evo space [--config F] [--json] [--arch ARCH]\n"
     "\n"
     "Prints each knob with its domain, the constraints, the total number of genomes and how many satisfy\n"
     "every constraint. No GPU needed. A search leaves out what cannot run on its GPU (evo run says so);\n"
     "--arch shows the space it walks there.\n",
     evo_cli_opts_space, NULL, 0, NULL},
    {"compile", cmd_compile, "compile genomes with NVRTC and report registers, shared memory, spills",
     "usage: evo compile [--config F] [--genome K=V,...] [--sample N] [--arch sm_XX] [--json] [--jobs N]\n"
     "\n"
     "Renders the template for each genome and compiles it with NVRTC for the given architecture (default: the\n"
     "config's arch, sm_90 when that is auto and no GPU is present). No GPU needed.\n"
     "\n",
     evo_cli_opts_compile, NULL, 0, NULL},
    {"history", cmd_history, "per-generation best / median fitness and status counts of a run",
     "usage: evo history [--run ID] [--json] [--db F]\n"
     "\n"
     "Prints one line per generation of the run (default: the latest): best and median fitness, new and reused\n"
     "evaluations, counts by verdict, and the wall time split into compile, check and timing. Reads the database\n"
     "only; never modifies it.\n"
     "\n",
     evo_cli_opts_history, NULL, 0, NULL},
    {"insights", cmd_insights, "per-knob-value statistics that guide mutation",
     "usage: evo insights [--config F] [--db F] [--json]\n"
     "\n"
     "For each knob value: how many stored evaluations had it, their failure rate, the mean log speedup of the\n"
     "measured ones, and the weight mutation gives the value now (1 = no opinion; below 1 avoided, above 1\n"
     "preferred). Counts the evaluations of the config's task, arch and shape set. Reads the database only.\n"
     "\n",
     evo_cli_opts_insights, NULL, 0, NULL},
    {"profile", cmd_profile, "profile a stored kernel with Nsight Compute and store the metrics",
     "usage: evo profile (--id ID | --row N | --key PREFIX) [--shape NAME] [--db F] [--ncu PATH] [--cu FILE]\n"
     "\n"
     "Exports the candidate, builds its self-test with nvcc, runs it under ncu (clocks not locked) and stores, per\n"
     "timed shape, tensor-pipe utilisation, DRAM throughput, achieved occupancy, shared-memory bank conflicts,\n"
     "issue-slot utilisation and the kernel's duration; `evo elite --show` prints them. Needs an NVIDIA GPU, nvcc\n"
     "and Nsight Compute with access to the GPU's performance counters.\n"
     "\n",
     evo_cli_opts_profile, NULL, 0, NULL},
    {"plot", cmd_plot, "draw SVG charts of a run: fitness per generation, speedup per shape",
     "usage: evo plot [--run ID] [-o DIR] [--db F] [--top K]\n"
     "\n"
     "Writes three SVG files for the run (default: the latest) into DIR (default plots/): run<ID>-fitness.svg\n"
     "(best and median fitness per generation), run<ID>-elites.svg (speedup per shape of the top K elites of the\n"
     "run's task, arch and shape set) and run<ID>-evaluations.svg (the fitness of every evaluation). Reads the\n"
     "database only; a browser shows the files.\n"
     "\n",
     evo_cli_opts_plot, NULL, 0, NULL},
    {"merge", cmd_merge, "combine stores (islands, other machines) into one",
     "usage: evo merge OUT.db IN.db [IN.db...] [--quiet]\n"
     "\n"
     "Adds every row of each IN.db to OUT.db (created when missing): runs, candidates, evaluations with their\n"
     "per-shape results, lineage, generations, re-timings and profiles. A candidate is one row per key, with the\n"
     "evaluations of every file; what OUT.db has already is not added again, so merging twice changes nothing.\n"
     "The inputs are only read; an older schema is read as evo reads it, a newer one is refused, and so are files\n"
     "holding different tasks, before anything is written. Each IN.db is merged in one transaction. `evo elite\n"
     "--show` on the result ranks each GPU model on its own. No GPU needed.\n"
     "\n",
     evo_cli_opts_merge, NULL, 0, NULL},
    {"init", cmd_init, "write the default configuration out to edit",
     "usage: evo init [PATH | -]\n"
     "\n"
     "Writes the default search configuration built into evo to PATH (default configs/default.yaml, which evo run,\n"
     "space, compile, check and insights read when no --config is given; without that file they use the built-in\n"
     "one), or to standard output for -. Never replaces a file: an existing PATH is refused. No GPU needed.\n",
     evo_cli_opts_init, NULL, 0, NULL},
    {"help", cmd_help, "show help for a command", "usage: evo help [COMMAND]\n", NULL, NULL, 0, NULL},
    {"worker", cmd_worker, "internal: the GPU worker process",
     "usage: evo worker --gpu N [--config F] [--log FILE] [--fake MODE]   (internal)\n"
     "\n"
     "The process evo starts once per GPU: it owns that GPU's CUDA context and answers requests (one JSON object\n"
     "per line) on stdin/stdout. Not meant to be run by hand.\n"
     "\n",
     evo_cli_opts_worker, NULL, 1, NULL},
};

const evo_cmd *evo_cli_commands(int *n)
{
    *n = (int)EVO_ARRAY_LEN(commands);
    return commands;
}

const evo_cmd *evo_cli_find(const char *name)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

int evo_cli_longopts(const evo_cli_opt *opts, struct option *out, int n)
{
    int k = 0;
    for (; opts && opts[k].name; k++) {
        EVO_ASSERT(k + 1 < n); /* room for every option and the end marker */
        out[k] = (struct option){opts[k].name, opts[k].has_arg, NULL, opts[k].key};
    }
    out[k] = (struct option){0};
    return k;
}

void evo_cli_print_opts(FILE *f, const evo_cli_opt *opts)
{
    for (int k = 0; opts && opts[k].name; k++) {
        const evo_cli_opt *o = &opts[k];
        if (!o->help) continue;
        char head[96];
        int len =
            snprintf(head, sizeof head, "  %s--%s%s%s", o->letter ? (char[]){'-', (char)o->key, ',', ' ', 0} : "    ",
                     o->name, o->arg && o->arg[0] != '[' ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "%s%*s", head, len < 24 ? 24 - len : 1, "");
        for (const char *h = o->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "%24s", "");
        }
        fputc('\n', f);
    }
}

void evo_cli_print_usage(const evo_cmd *c)
{
    EVO_ASSERT(strncmp(c->usage, "usage: evo ", 11) == 0); /* every usage text opens the same way */
    fputs(c->usage, stdout);
    evo_cli_print_opts(stdout, c->opts);
    if (c->usage_after) fputs(c->usage_after, stdout);
    if (c->usage_more) c->usage_more(stdout);
}

evo_status evo_cli_usage_error(const evo_cmd *c, evo_err *err, const char *fmt, ...)
{
    if (err) {
        char what[768];
        va_list ap;
        va_start(ap, fmt);
        evo_format_clipped(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(err->msg, sizeof err->msg, "%s: %s (see 'evo help %s')", c->name, what, c->name);
    }
    return EVO_E_USAGE;
}

static void print_overview(FILE *f)
{
    fprintf(f, "usage: evo COMMAND [OPTIONS]\n\nevo %s — evolutionary search for fast, correct CUDA kernels\n\n",
            EVO_VERSION);
    for (size_t i = 0; i < EVO_ARRAY_LEN(commands); i++)
        if (!commands[i].hidden) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'evo help COMMAND' or 'evo COMMAND --help' shows a command's options.\n");
}

EVO_CMD(help)
{
    (void)err;
    if (argc < 2) {
        print_overview(stdout);
        return EVO_OK;
    }
    const evo_cmd *c = evo_cli_find(argv[1]);
    if (!c) return evo_fail(err, EVO_E_USAGE, "help: unknown command '%s' (see 'evo help')", argv[1]);
    evo_cli_print_usage(c);
    return EVO_OK;
}

void evo_cli_say_error(const char *cmd, evo_status s, evo_err *err)
{
    /* a message may quote a name or a compiler's output: nothing in it may steer the terminal */
    fputs("evo: ", stderr);
    if (err->msg[0])
        evo_fputs_text(err->msg, stderr);
    else
        fprintf(stderr, "%s: %s", cmd, evo_status_name(s));
    fputc('\n', stderr);
    fflush(stderr);
    err->shown = true;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_overview(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("evo %s\n", EVO_VERSION);
        if (evo_comm_built())
            printf("MPI: %s (evo run --islands)\n", evo_comm_library());
        else
            printf("MPI: none (built without MPI: no evo run --islands)\n");
        return 0;
    }
    evo_strategy_register_config_checks();
    const evo_cmd *c = evo_cli_find(argv[1]);
    if (!c) {
        fprintf(stderr, "evo: unknown command '%s' (see 'evo help')\n", argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            evo_cli_print_usage(c);
            return 0;
        }
    }
    /* A reader that goes away (evo run | head) makes writes fail with EPIPE instead of killing evo mid-write; a
     * run then stops as on Ctrl-C (evolve.h). */
    signal(SIGPIPE, SIG_IGN);
    evo_err err = {0};
    evo_status s = c->fn(argc - 1, argv + 1, &err);
    if (s != EVO_OK && !err.shown) evo_cli_say_error(c->name, s, &err);
    return evo_exit_code(s);
}

evo_status evo_cli_config_load(const char *path, evo_config **out, evo_err *err)
{
    bool builtin = false;
    evo_status s = evo_config_load_default(path, out, &builtin, err);
    if (s == EVO_OK && builtin) fprintf(stderr, "evo: note: %s\n", EVO_BUILTIN_CONFIG_NOTE);
    return s;
}

void evo_json_num(cJSON *o, const char *name, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, name, v);
    else
        cJSON_AddNullToObject(o, name);
}

const evo_task *evo_cli_task_of(const char *name)
{
    const evo_task *t = name ? evo_task_find(name) : NULL;
    return t ? t : evo_tasks[0];
}

cJSON *evo_json_shape_result(const evo_shape_result *r, const evo_task *task)
{
    cJSON *s = cJSON_CreateObject();
    evo_json_str(s, "shape", r->shape);
    cJSON *fields = cJSON_Parse(r->fields[0] ? r->fields : "{}");
    for (cJSON *f = fields ? fields->child : NULL; f; f = f->next)
        cJSON_AddItemToObject(s, f->string, cJSON_Duplicate(f, 1));
    cJSON_Delete(fields);
    evo_json_num(s, "median_us", r->median_us);
    evo_json_num(s, "p10_us", r->p10_us);
    evo_json_num(s, "p90_us", r->p90_us);
    evo_json_num(s, "ci_lo_us", r->ci_lo_us > 0 ? r->ci_lo_us : NAN);
    evo_json_num(s, "ci_hi_us", r->ci_hi_us > 0 ? r->ci_hi_us : NAN);
    evo_json_num(s, "baseline_us", r->baseline_us);
    evo_json_num(s, "speedup", r->speedup);
    evo_json_num(s, task ? task->rate_key : "rate", r->rate);
    evo_json_num(s, "max_abs", r->max_abs);
    evo_json_num(s, "rel_l2", r->rel_l2);
    evo_json_num(s, "e2e_rel_l2", r->e2e_rel_l2);
    evo_json_num(s, "e2e_rmse", r->e2e_rmse);
    return s;
}

void evo_json_str(cJSON *o, const char *name, const char *s)
{
    if (s)
        cJSON_AddStringToObject(o, name, s);
    else
        cJSON_AddNullToObject(o, name);
}
