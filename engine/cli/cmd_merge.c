/* cmd_merge.c — `evo merge OUT.db IN.db...`: stores combined losslessly and idempotently (store.h, evo_store_merge).
 * Every input is looked at before anything is written: one that is missing, no evo store, damaged or of a newer
 * schema, or a set of files that holds more than one task, leaves OUT as it was.
 */
#include "cli.h"
#include "paths.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tasks of a store, or "" for an empty one; an input is read without creating anything beside it. */
static evo_status tasks_of(const char *path, bool input, char **tasks, evo_err *err)
{
    evo_store *st = NULL;
    *tasks = NULL;
    evo_status s = evo_store_open(path, input ? EVO_STORE_IMMUTABLE : EVO_STORE_READONLY, &st, err);
    if (s == EVO_OK) s = evo_store_tasks(st, tasks, err);
    evo_store_close(st);
    return s;
}

static void print_counts(FILE *out, const char *what, const evo_merge_counts *a, const evo_merge_counts *k)
{
    fprintf(out,
            "%s: runs %lld new (%lld there already), candidates %lld new (%lld), evaluations %lld new (%lld) with "
            "%lld per-shape results, lineage %lld new, generations %lld new, re-timings %lld new, profile figures "
            "%lld new or newer\n",
            what, (long long)a->runs, (long long)k->runs, (long long)a->candidates, (long long)k->candidates,
            (long long)a->evaluations, (long long)k->evaluations, (long long)a->results, (long long)a->lineage,
            (long long)a->generations, (long long)a->retimes, (long long)a->profiles);
}

/* `evo merge`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_merge[] = {
    {"quiet", 'q', no_argument, true, NULL, "print nothing but errors"},
    {0},
};

EVO_CMD(merge)
{
    const evo_cmd *self = evo_cli_find("merge");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_merge, longopts, EVO_ARRAY_LEN(longopts));
    bool quiet = false;
    optind = 0;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, ":q", longopts, NULL)) != -1;) {
        switch (ch) {
            case 'q': quiet = true; break;
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind < 2) return evo_cli_usage_error(self, err, "give the output and at least one store to merge");
    const char *out = argv[optind];
    char **ins = argv + optind + 1;
    const int n_in = argc - optind - 1;

    /* Everything is judged before anything is written. */
    char *first_task = NULL, *first_file = NULL;
    evo_status s = EVO_OK;
    /* no database is another's -wal, -shm or -journal (SQLite would use or delete it), checked before any is opened */
    for (int i = 0; i < n_in && s == EVO_OK; i++)
        if (!evo_path_same_file(ins[i], out) && /* that one is said below */
            (s = evo_path_check_not_input("merge: the output", out, "input", ins[i], true, err)) == EVO_OK)
            s = evo_path_check_not_companion("merge: input", ins[i], "the output", out, err);
    for (int i = -1; i < n_in && s == EVO_OK; i++) {
        const char *path = i < 0 ? out : ins[i];
        if (i >= 0 && !evo_file_exists(path)) {
            s = evo_fail(err, EVO_E_USAGE, "merge: %s: no such file", path);
            break;
        }
        if (i >= 0 && evo_path_same_file(path, out)) {
            s = evo_fail(err, EVO_E_USAGE, "merge: %s is the output itself; name the output first, then the inputs",
                         path);
            break;
        }

        if (i < 0 && !evo_file_exists(out)) continue; /* a new output */
        char *tasks = NULL;
        s = tasks_of(path, i >= 0, &tasks, err);
        if (s != EVO_OK) {
            s = evo_failv_prefix(err, s, "merge");
            free(tasks);
            break;
        }
        if (strchr(tasks, ','))
            s = evo_fail(err, EVO_E_USAGE,
                         "merge: %s holds more than one task (%s); evo merge combines stores of one task", path, tasks);
        else if (*tasks && first_task && strcmp(tasks, first_task) != 0)
            s = evo_fail(err, EVO_E_USAGE,
                         "merge: %s holds task %s but %s holds %s; evo merge combines stores of one task", path, tasks,
                         first_file, first_task);
        else if (*tasks && !first_task)
            first_task = evo_strdup(tasks), first_file = evo_strdup(path);
        free(tasks);
    }
    evo_store *st = NULL;
    if (s == EVO_OK) s = evo_store_open(out, EVO_STORE_READWRITE, &st, err);
    evo_merge_counts sum = {0};
    for (int i = 0; i < n_in && s == EVO_OK; i++) {
        evo_merge_counts a, k;
        s = evo_store_merge(st, ins[i], &a, &k, err);
        if (s != EVO_OK) break;
        if (!quiet) {
            char what[4200];
            snprintf(what, sizeof what, "merged %s", ins[i]);
            print_counts(stdout, what, &a, &k);
        }
        sum.runs += a.runs, sum.candidates += a.candidates, sum.evaluations += a.evaluations;
    }
    if (s == EVO_OK && !quiet)
        printf("%s: %lld runs, %lld candidates, %lld evaluations added%s%s\n", out, (long long)sum.runs,
               (long long)sum.candidates, (long long)sum.evaluations, first_task ? "; task " : "",
               first_task ? first_task : "");
    evo_store_close(st);
    free(first_task);
    free(first_file);
    return s;
}
