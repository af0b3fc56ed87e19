/* cmd_profile.c — `evo profile --id ID`: export the candidate, build its self-test with nvcc, run it under Nsight
 * Compute once per timed shape (profile.h says which launch) and store tensor-pipe, DRAM, occupancy, bank-conflict,
 * issue-slot and duration figures in the profiles table, where `evo elite --show` finds them.
 */
#include "cli.h"
#include "paths.h"
#include "profile.h"
#include "store.h"
#include "util.h"

#if __has_include("export.h")
#include "export.h"
#define EVO_HAVE_EXPORT 1
#endif

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *db, *id, *shape, *ncu, *cu;
    evo_cand_ref how; /* --id (row id or key prefix), --row, --key */
} profile_opts;

/* `evo profile`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_profile[] = {
    {"id", 'I', required_argument, false, "ID",
     "a candidate's row id or key prefix (see evo elite --show); --row N, --key PREFIX\n"
     "read it one way only"},
    {"shape", 'S', required_argument, false, "NAME",
     "only this shape: its full text or its name, e.g. mission (default: every timed shape)"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {"ncu", 'N', required_argument, false, "PATH",
     "the ncu executable (default: ncu on PATH, then $CUDA_HOME/bin/ncu)"},
    {"cu", 'C', required_argument, false, "FILE",
     "profile this file `evo export` wrote for the candidate instead of exporting it"},
    {"row", 'W', required_argument, false, NULL, NULL}, /* not listed in the usage */
    {"key", 'K', required_argument, false, NULL, NULL}, /* not listed in the usage */
    {0},
};

static evo_status parse_opts(int argc, char **argv, profile_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("profile");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_profile, longopts, EVO_ARRAY_LEN(longopts));
    *o = (profile_opts){.db = EVO_DEFAULT_DB};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
            case 'I':
            case 'W':
            case 'K':
                if (o->id) return evo_cli_usage_error(self, err, "name one candidate: --id, --row or --key, once");
                o->id = optarg;
                o->how = c == 'I' ? EVO_CAND_ID_OR_KEY : c == 'W' ? EVO_CAND_ROW : EVO_CAND_KEY;
                break;
            case 'D': o->db = optarg; break;
            case 'S': o->shape = optarg; break;
            case 'N': o->ncu = optarg; break;
            case 'C': o->cu = optarg; break;
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (!o->id || !*o->id)
        return evo_cli_usage_error(self, err, "--id is required (a candidate id or key prefix; --row N, --key PREFIX)");
    return EVO_OK;
}

/* "mission(1,8,512,64) causal" -> "mission": what the self-test's --shape takes. */
static void shape_name(const char *shape, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", (int)strcspn(shape, "( "), shape);
}

/* The candidate's best correct evaluation: the per-shape results profiling follows. */
static evo_status best_evaluation(evo_store *st, const evo_candidate_rec *c, evo_elite_rec **all, int *n,
                                  const evo_eval_rec **best, evo_err *err)
{
    *best = NULL;
    evo_status s = evo_store_elites(st, c->task, c->arch, NULL, NULL, 1 << 30, all, n, err);
    for (int i = 0; s == EVO_OK && i < *n && !*best; i++)
        if ((*all)[i].cand.id == c->id) *best = &(*all)[i].eval;
    if (s == EVO_OK && !*best)
        s = evo_fail(err, EVO_E_NOTFOUND,
                     "%s: candidate %lld (%.8s) has no correct evaluation; only kernels that passed every gate are "
                     "profiled",
                     evo_store_path(st), (long long)c->id, c->key);
    return s;
}

/* The .cu to build: --cu FILE (it must be an export of this candidate: its key appears in it), else a fresh export
 * into dir. */
static evo_status get_source(evo_store *st, const profile_opts *o, const evo_candidate_rec *c, const char *dir,
                             char *path, size_t n, evo_err *err)
{
    if (o->cu) {
        char *text;
        size_t len;
        evo_status s = evo_read_file(o->cu, &text, &len, err);
        if (s != EVO_OK) return s;
        int mine = strstr(text, c->key) != NULL;
        free(text);
        if (!mine)
            return evo_fail(err, EVO_E_CONFIG,
                            "%s: not an export of candidate %lld (its key %.16s... does not appear in the file)", o->cu,
                            (long long)c->id, c->key);
        snprintf(path, n, "%s", o->cu);
        return EVO_OK;
    }
#ifdef EVO_HAVE_EXPORT
    evo_export_src src;
    evo_status s = evo_export_pick(st, c->key, EVO_CAND_KEY, NULL, &src, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "profile: cannot export candidate %lld", (long long)c->id);
    evo_export_out out = {0};
    s = evo_export_render(&src, NULL, &out, err);
    char name[256];
    evo_export_default_name(&src, name, sizeof name);
    snprintf(path, n, "%s/%s", dir, name);
    if (s == EVO_OK) s = evo_write_file_atomic(path, out.text, strlen(out.text), err);
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    return s;
#else
    (void)st;
    (void)dir;
    (void)path;
    (void)n;
    return evo_fail(err, EVO_E_USAGE,
                    "profile: this evo was built without the export module; pass --cu FILE, the file `evo export` "
                    "wrote for candidate %lld",
                    (long long)c->id);
#endif
}

/* nvcc's target for an exported file: the arch its EVO_EXPORT_ARCH names ("sm_90a" for the sm_90a attention family,
 * which needs the -gencode form), else the candidate's. */
static void target_option(const char *arch, const char *cu, char *opt, size_t n)
{
#ifdef EVO_HAVE_EXPORT
    char file_arch[32] = "";
    char *text = NULL;
    if (evo_read_file(cu, &text, NULL, NULL) == EVO_OK) {
        if (!evo_export_define(text, "EVO_EXPORT_ARCH", file_arch, sizeof file_arch)) file_arch[0] = '\0';
        free(text);
    }
    evo_export_nvcc_arch(file_arch[0] ? file_arch : arch, opt, n);
#else
    (void)cu;
    snprintf(opt, n, "-arch=%s", arch);
#endif
}

static evo_status build_selftest(const char *nvcc, const char *arch, const char *cu, const char *exe, evo_err *err)
{
    char arch_opt[64];
    target_option(arch, cu, arch_opt, sizeof arch_opt);
    char *argv[] = {(char *)nvcc, arch_opt, "-O3", "-lineinfo", "-DEVO_SELFTEST", "-o", (char *)exe, (char *)cu, NULL};
    char *log = NULL;
    int code = 0;
    evo_status s = evo_profile_run_capture(argv, NULL, EVO_NCU_TIMEOUT_S, &log, &code, err);
    if (s == EVO_OK && code != 0) {
        size_t len = strlen(log);
        s = evo_fail(err, EVO_E_IO, "nvcc could not build the self-test of %s (exit %d):\n%s", cu, code,
                     len > 1500 ? log + len - 1500 : log);
    }
    free(log);
    return s;
}

static void fmt(char *buf, size_t n, const char *f, double v, const char *unit)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else {
        int k = snprintf(buf, n, f, v);
        if (unit && k >= 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "%s", unit);
    }
}

/* Writes one shape's figures in one transaction; a figure ncu did not report is left out. */
static evo_status store_summary(evo_store *st, int64_t cand, const char *shape, const evo_ncu_summary *m, evo_err *err)
{
    const struct {
        const char *metric;
        double v;
        const char *unit;
    } rows[] = {
        {EVO_PROFILE_TENSOR_PIPE, m->tensor_pipe, "%"}, {EVO_PROFILE_DRAM, m->dram, "%"},
        {EVO_PROFILE_OCCUPANCY, m->occupancy, "%"},     {EVO_PROFILE_BANK_CONFLICTS, m->bank_conflicts, NULL},
        {EVO_PROFILE_ISSUE_SLOTS, m->issue_slots, "%"}, {EVO_PROFILE_DURATION, m->duration_us, "us"},
    };
    evo_status s = evo_store_begin(st, err);
    for (size_t i = 0; s == EVO_OK && i < EVO_ARRAY_LEN(rows); i++)
        if (!isnan(rows[i].v)) s = evo_store_put_profile(st, cand, shape, rows[i].metric, rows[i].v, rows[i].unit, err);
    if (s == EVO_OK) return evo_store_commit(st, err);
    evo_store_rollback(st);
    return s;
}

static void print_summary(const char *shape, const evo_ncu_summary *m)
{
    char t[32], d[32], oc[32], b[32], is[32], du[32];
    fmt(t, sizeof t, "%.1f", m->tensor_pipe, " %");
    fmt(d, sizeof d, "%.1f", m->dram, " %");
    fmt(oc, sizeof oc, "%.1f", m->occupancy, " %");
    fmt(b, sizeof b, "%.0f", m->bank_conflicts, "");
    fmt(is, sizeof is, "%.1f", m->issue_slots, " %");
    fmt(du, sizeof du, "%.2f", m->duration_us, " µs");
    printf("%s: tensor pipe %s, DRAM throughput %s, achieved occupancy %s, bank conflicts %s, issue slots %s, "
           "duration %s\n",
           shape, t, d, oc, b, is, du);
    printf("  ncu launch %lld, %s; tensor pipe from %s\n", m->launch, m->kernel,
           m->tensor_metric ? m->tensor_metric : "no tensor-pipe metric this ncu knows");
}

EVO_CMD(profile)
{
    profile_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    /* Read-write would create a missing file; profiling needs one with results in it. */
    if (!evo_file_exists(o.db))
        return evo_fail(err, EVO_E_NOTFOUND, "no database at %s — run `evo run` first", evo_show(o.db).s);
    if ((s = evo_path_check_not_input("--db", o.db, "--cu", o.cu, false, err)) != EVO_OK) return s;
    if ((s = evo_path_check_not_companion("--cu", o.cu, "--db", o.db, err)) != EVO_OK) return s;
    evo_store *st;
    s = evo_store_open(o.db, EVO_STORE_READWRITE, &st, err);
    if (s != EVO_OK) return s;

    evo_candidate_rec c = {0};
    evo_elite_rec *all = NULL;
    int n_all = 0;
    const evo_eval_rec *best = NULL;
    char *ncu = NULL, *nvcc = NULL;
    char dir[64] = "";
    int *pick = NULL, n_pick = 0;

    const char *taken = NULL;
    s = evo_store_find_candidate(st, o.id, o.how, &c, &taken, err);
    if (s == EVO_OK) s = best_evaluation(st, &c, &all, &n_all, &best, err);
    if (s == EVO_OK) {
        pick = evo_xcalloc((size_t)(best->n_shapes ? best->n_shapes : 1), sizeof *pick);
        evo_str names = {0};
        for (int i = 0; i < best->n_shapes; i++) {
            const char *sh = best->shapes[i].shape;
            char name[64];
            shape_name(sh, name, sizeof name);
            if (!o.shape || strcmp(o.shape, sh) == 0 || strcmp(o.shape, name) == 0) pick[n_pick++] = i;
            evo_str_appendf(&names, "%s%s", i ? ", " : "", sh);
        }
        if (n_pick == 0)
            s = evo_cli_usage_error(evo_cli_find("profile"), err,
                                    "candidate %.8s has no timed shape '%s' (its shapes: %s)", c.key,
                                    o.shape ? o.shape : "", evo_str_cstr(&names));
        evo_str_free(&names);
    }
    if (s == EVO_OK) s = evo_path_find_tool("ncu", o.ncu, &ncu, err);
    if (s == EVO_OK) s = evo_path_find_tool("nvcc", NULL, &nvcc, err);
    if (s == EVO_OK) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/evo-profile-XXXXXX", tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            s = evo_fail(err, EVO_E_IO, "cannot make a temporary directory %s", dir);
            dir[0] = '\0';
        }
    }
    char cu[4096], exe[4096];
    if (s == EVO_OK) s = get_source(st, &o, &c, dir, cu, sizeof cu, err);
    if (s == EVO_OK) {
        snprintf(exe, sizeof exe, "%s/selftest", dir);
        printf("candidate %lld (%.8s, by its %s), %s: building the self-test of %s\n", (long long)c.id, c.key, taken,
               c.genome, evo_show(cu).s);
        fflush(stdout);
        s = build_selftest(nvcc, c.arch, cu, exe, err);
    }
    for (int k = 0; s == EVO_OK && k < n_pick; k++) {
        const char *shape = best->shapes[pick[k]].shape;
        char name[64];
        shape_name(shape, name, sizeof name);
        printf("profiling %s with %s\n", shape, ncu);
        fflush(stdout);
        evo_ncu_job job = {
            .ncu = ncu, .exe = exe, .shape = name, .kernel_prefix = evo_cli_task_of(c.task)->kernel_prefix};
        evo_ncu_summary m;
        s = evo_ncu_profile(&job, &m, NULL, err);
        if (s == EVO_OK) s = store_summary(st, c.id, shape, &m, err);
        if (s == EVO_OK) print_summary(shape, &m);
    }
    if (s == EVO_OK) printf("stored in %s for candidate %lld; `evo elite --show` prints them\n", o.db, (long long)c.id);
    if (dir[0]) evo_remove_tree(dir);
    free(pick);
    free(ncu);
    free(nvcc);
    evo_store_elites_free(all, n_all);
    evo_store_candidate_free(&c);
    evo_store_close(st);
    return s;
}
