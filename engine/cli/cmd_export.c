/* cmd_export.c — `evo export [--best | --id ID] [-o FILE] [--db F]`: the top elite (or a chosen candidate) as a
 * standalone .cu (export.h), written to variants/<task>-<arch>-<shortid>.cu unless -o says otherwise. Opens the
 * store read-only. The output is a regular file (replaced atomically) or a new name (paths.h); nothing else.
 */
#include "cli.h"
#include "export.h"
#include "paths.h"
#include "store.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *db, *id, *output;
    int best;
} export_opts;

static evo_status parse_opts(int argc, char **argv, export_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("export");
    static const struct option longopts[] = {
        {"best", no_argument, NULL, 'B'},          {"id", required_argument, NULL, 'I'},
        {"output", required_argument, NULL, 'o'}, {"db", required_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    *o = (export_opts){.db = EVO_DEFAULT_DB};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'B': o->best = 1; break;
        case 'I': o->id = optarg; break;
        case 'o': o->output = optarg; break;
        case 'D': o->db = optarg; break;
        case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
        default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (o->best && o->id) return evo_cli_usage_error(self, err, "--best and --id exclude each other");
    if (o->id && !*o->id) return evo_cli_usage_error(self, err, "--id wants a candidate id or key prefix");
    if (o->output && !*o->output) return evo_cli_usage_error(self, err, "-o wants a file name");
    return EVO_OK;
}

EVO_CMD(export)
{
    export_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    /* -o is checked before anything is read: a FIFO, a device, a link or a directory is never replaced */
    if (o.output && (s = evo_path_check_output("export -o", o.output, false, err)) != EVO_OK) return s;
    evo_store *st;
    s = evo_store_open(o.db, EVO_STORE_READONLY, &st, err);
    if (s != EVO_OK) return s;
    evo_export_src src;
    evo_export_out out = {0};
    s = evo_export_pick(st, o.id, &src, err);
    if (s == EVO_OK) s = evo_export_render(&src, NULL, &out, err);
    char path[4200];
    if (s == EVO_OK && o.output) {
        snprintf(path, sizeof path, "%s", o.output);
    } else if (s == EVO_OK) {
        char name[200];
        evo_export_default_name(&src, name, sizeof name);
        snprintf(path, sizeof path, "variants/%s", name);
        s = evo_mkdir_p("variants", err);
        if (s == EVO_OK) s = evo_path_check_output("export", path, false, err);
    }
    if (s == EVO_OK) s = evo_write_file_atomic(path, out.text, strlen(out.text), err);
    if (s == EVO_OK) {
        if (src.note[0]) fprintf(stderr, "evo: note: %s\n", src.note);
        if (out.warning[0]) fprintf(stderr, "evo: warning: %s\n", out.warning);
        printf("wrote %s: candidate %lld (%.8s), %.3fx the baseline in run %lld\n  genome %s\n", path,
               (long long)src.cand.id, src.cand.key, src.eval.fitness, (long long)src.run.id, src.cand.genome);
        printf("  build: nvcc -arch=%s -O3 -c %s;  self-test: nvcc -arch=%s -O3 -DEVO_SELFTEST %s -o selftest\n",
               src.cand.arch, path, src.cand.arch, path);
    }
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
    return s;
}
