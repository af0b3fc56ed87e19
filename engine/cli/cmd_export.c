/* cmd_export.c — `evo export [--best [--accuracy CLASS] | --id ID | --row N | --key PREFIX] [-o FILE | --torch DIR
 * [--module NAME] [the task's option]] [--db F]`: the top elite of an accuracy class (exact unless told; or a chosen
 * candidate) as a standalone .cu (export.h), written to variants/<task>-<arch>-<shortid>.cu unless -o says otherwise
 * (-o - : standard output); with --torch, that file, the companion file the task's PyTorch op needs (named by the
 * option the task registers, e.g. attention's --quantizer, else found under variants/ here or among the variants
 * installed with evo) and the Python module that
 * registers the ops (task->torch_module) into DIR. Opens the store read-only. Every output is a regular file
 * (replaced atomically) or a new name (paths.h), and never an input (the database and its companions, the
 * companion file); everything is checked before the first file is written.
 */
#include "cli.h"
#include "export.h"
#include "paths.h"
#include "store.h"
#include "task.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <stdio.h>
#include <unistd.h>

#ifndef EVO_DATA_REL
#define EVO_DATA_REL "../share/evo" /* the shipped files, relative to the folder of the evo binary (CMakeLists.txt) */
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *db, *id, *output, *torch, *module, *accuracy;
    const char *companion;    /* the file the task's own option named (NULL: none given) */
    const char *kernel;       /* --kernel: a file evo export wrote, packaged as it is (no database read) */
    const evo_task *opt_task; /* the task whose option named it */
    evo_cand_ref how;         /* how id names the candidate: --id, --row, --key */
    int best;
    int dispatch; /* --dispatch: every bucket's winner in one file */
} export_opts;

static bool python_name(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

/* The options tasks register for --torch (task->torch_option): task i's is getopt value EXPORT_TASK_OPT + i. */
enum { EXPORT_TASK_OPT = 1000 };

void evo_cli_export_task_options(FILE *f)
{
    fprintf(f, "\nOptions the tasks register for --torch:\n");
    for (int i = 0; evo_tasks[i]; i++) {
        const evo_task *t = evo_tasks[i];
        if (!t->torch_module) continue;
        char head[64];
        snprintf(head, sizeof head, "--%s FILE", t->torch_option ? t->torch_option : "?");
        fprintf(f, "  %s (the module is %s unless --module names it):\n      %-18s", t->name,
                t->torch_module_name ? t->torch_module_name : "evo_torch", head);
        for (const char *h = t->torch_option_help ? t->torch_option_help : ""; *h; h++) {
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "%24s", "");
        }
        fputc('\n', f);
    }
}

/* The task options' names, "--quantizer" or "--a, --b", for messages. */
static const char *task_option_names(void)
{
    static char buf[512];
    buf[0] = '\0';
    for (int i = 0; evo_tasks[i]; i++) {
        const char *n = evo_tasks[i]->torch_option;
        if (!n || strstr(buf, n)) continue;
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s--%s", buf[0] ? ", " : "", n);
    }
    return buf;
}

/* `evo export`'s options: parsing (getopt_long through evo_cli_longopts, with the tasks' own options after them)
 * and the usage's option lines. */
const evo_cli_opt evo_cli_opts_export[] = {
    {"best", 'B', no_argument, false, NULL, "the top elite (the default) of the accuracy class --accuracy names"},
    {"dispatch", 'P', no_argument, false, NULL,
     "one file with the winner of every dispatch bucket (evo elite --show --per-shape)\n"
     "and a launcher that picks among them by the problem; default name\n"
     "variants/<task>-<arch>-dispatch.cu (-dispatch-CLASS.cu for a class other than\n"
     "exact); with --torch DIR, into DIR with the PyTorch op"},
    {"accuracy", 'C', required_argument, false, "CLASS",
     "with --best or --dispatch: the class to take it from (default exact; attention:\n"
     "exact, fp8)"},
    {"id", 'I', required_argument, false, "ID",
     "a candidate's row id or key prefix (see evo elite --show); its class is its own. A\n"
     "number that is both (two candidates) is refused: then --row or --key says which"},
    {"row", 'W', required_argument, false, "N", "the candidate with row id N"},
    {"key", 'K', required_argument, false, "PREFIX", "the candidate whose key starts with PREFIX (4 to 64 hex digits)"},
    {"output", 'o', required_argument, true, "FILE",
     "where to write (- : standard output); never the database or another input"},
    {"torch", 'T', required_argument, false, "DIR",
     "a PyTorch package instead: the kernel's .cu, the .cu its op needs (named by the\n"
     "task's option below) and NAME.py, which registers torch.ops.evo.* (built with nvcc\n"
     "at first use); DIR is created if missing. Tasks with a PyTorch op only (below)"},
    {"module", 'M', required_argument, false, "NAME", "the Python module's name (default: the task's, below)"},
    {"kernel", 'k', required_argument, false, "FILE",
     "with --torch: package FILE, a kernel evo export wrote, instead of reading the\n"
     "database (its task from its name, <task>-..., its arch from the file)"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {0},
};

static evo_status parse_opts(int argc, char **argv, export_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("export");
    struct option longopts[EVO_CLI_MAX_OPTS + 16];
    int n = evo_cli_longopts(evo_cli_opts_export, longopts, EVO_ARRAY_LEN(longopts));
    /* the tasks' own options join the table (evo_cli_export_task_options prints them) */
    for (int i = 0; evo_tasks[i] && n + 1 < (int)EVO_ARRAY_LEN(longopts); i++)
        if (evo_tasks[i]->torch_option)
            longopts[n++] = (struct option){evo_tasks[i]->torch_option, required_argument, NULL, EXPORT_TASK_OPT + i};
    longopts[n] = (struct option){0};
    *o = (export_opts){.db = EVO_DEFAULT_DB};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        switch (c) {
            case 'B': o->best = 1; break;
            case 'P': o->dispatch = 1; break;
            case 'I':
            case 'W':
            case 'K':
                if (o->id) return evo_cli_usage_error(self, err, "name one candidate: --id, --row or --key, once");
                o->id = optarg;
                o->how = c == 'I' ? EVO_CAND_ID_OR_KEY : c == 'W' ? EVO_CAND_ROW : EVO_CAND_KEY;
                break;
            case 'o': o->output = optarg; break;
            case 'D': o->db = optarg; break;
            case 'T': o->torch = optarg; break;
            case 'M': o->module = optarg; break;
            case 'k': o->kernel = optarg; break;
            case 'C': o->accuracy = optarg; break;
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default:
                if (c >= EXPORT_TASK_OPT && c - EXPORT_TASK_OPT < 64) {
                    o->companion = optarg;
                    o->opt_task = evo_tasks[c - EXPORT_TASK_OPT];
                    break;
                }
                return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (o->best && o->id) return evo_cli_usage_error(self, err, "--best and --id (--row, --key) exclude each other");
    if (o->dispatch && (o->best || o->id))
        return evo_cli_usage_error(self, err,
                                   "--dispatch exports every bucket's winner: no --best, --id, --row or --key");
    if (o->dispatch && o->kernel)
        return evo_cli_usage_error(self, err,
                                   "--dispatch and --kernel exclude each other: --dispatch --torch DIR packages the "
                                   "dispatching export it writes, --kernel FILE one evo export wrote");
    if (o->accuracy && o->id)
        return evo_cli_usage_error(self, err,
                                   "--accuracy goes with --best (a candidate given by --id has its own class)");
    if (o->accuracy && !*o->accuracy) return evo_cli_usage_error(self, err, "--accuracy wants a class name");
    if (o->id && !*o->id) return evo_cli_usage_error(self, err, "--id wants a candidate id or key prefix");
    if (o->output && !*o->output) return evo_cli_usage_error(self, err, "-o wants a file name");
    if (o->torch && o->output) return evo_cli_usage_error(self, err, "-o and --torch exclude each other");
    if (o->torch && !*o->torch) return evo_cli_usage_error(self, err, "--torch wants a directory");
    if (o->torch && evo_path_is_stdio(o->torch))
        return evo_cli_usage_error(self, err, "--torch wants a directory, not '-' (three files go there)");
    if (!o->torch && (o->companion || o->module))
        return evo_cli_usage_error(self, err, "%s and --module go with --torch DIR", task_option_names());
    if (o->kernel && !o->torch)
        return evo_cli_usage_error(self, err, "--kernel goes with --torch DIR (it packages a file evo export wrote)");
    if (o->kernel && (o->best || o->id || o->accuracy))
        return evo_cli_usage_error(self, err, "--kernel names the kernel itself: no --best, --id or --accuracy");
    if (o->kernel && !*o->kernel) return evo_cli_usage_error(self, err, "--kernel wants a file name");
    if (o->companion && !*o->companion)
        return evo_cli_usage_error(self, err, "--%s wants a file name", o->opt_task->torch_option);
    if (o->module && !python_name(o->module))
        return evo_cli_usage_error(self, err, "--module: '%s' is not a Python module name", o->module);
    return EVO_OK;
}

/* --torch DIR must be a directory or a name that does not exist yet (created with its parents). */
static evo_status check_torch_dir(const char *dir, evo_err *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? EVO_OK
                               : evo_fail(err, EVO_E_IO, "export --torch %s: %s", evo_show(dir).s, strerror(errno));
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
        return evo_fail(err, EVO_E_USAGE, "export --torch %s: %s", evo_show(dir).s,
                        S_ISLNK(st.st_mode) ? "is a symbolic link; give the directory itself" : "is not a directory");
    return EVO_OK;
}

/* The companion file: the task's option (--quantizer), else the one file the task's glob finds for the arch. */
static evo_status find_companion(const evo_task *task, const char *given, const char *arch, char *path, size_t n,
                                 evo_err *err)
{
    const char *opt = task->torch_option ? task->torch_option : "companion";
    if (given) {
        struct stat st;
        if (stat(given, &st) != 0)
            return evo_fail(err, EVO_E_USAGE, "export --%s %s: %s", opt, evo_show(given).s,
                            errno == ENOENT ? "no such file" : strerror(errno));
        if (!S_ISREG(st.st_mode))
            return evo_fail(err, EVO_E_USAGE, "export --%s %s: not a regular file", opt, evo_show(given).s);
        snprintf(path, n, "%s", given);
        return EVO_OK;
    }
    if (!task->torch_companion)
        return evo_fail(err, EVO_E_USAGE, "export --torch: task %s needs --%s FILE", task->name, opt);
    /* variants/ of the working directory first (a clone of the repository), then the variants installed with evo
     * (cmake --install puts them in PREFIX/share/evo/variants, EVO_DATA_REL from PREFIX/bin/evo) */
    char pattern[2][4600], exe[4096];
    snprintf(pattern[0], sizeof pattern[0], task->torch_companion, arch);
    int n_pat = 1;
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        char installed[4400];
        snprintf(installed, sizeof installed, "%s/%s/%s", exe, EVO_DATA_REL, task->torch_companion);
        snprintf(pattern[n_pat++], sizeof pattern[1], installed, arch);
    }
    evo_status s = EVO_OK;
    for (int k = 0; k < n_pat; k++) {
        glob_t g;
        const int r = glob(pattern[k], 0, NULL, &g);
        const size_t found = r == 0 ? g.gl_pathc : 0;
        if (found > 1)
            s = evo_fail(err, EVO_E_USAGE, "export --torch: %zu files match %s (%s, %s...); choose one with --%s",
                         found, evo_show(pattern[k]).s, evo_show(g.gl_pathv[0]).s, evo_show(g.gl_pathv[1]).s, opt);
        else if (found == 1)
            snprintf(path, n, "%s", g.gl_pathv[0]);
        if (r == 0) globfree(&g);
        if (found) return s;
    }
    return evo_fail(err, EVO_E_USAGE,
                    "export --torch: no %s given and no file matches %s here%s%s; give "
                    "--%s FILE.cu (a file evo export wrote)",
                    opt, evo_show(pattern[0]).s, n_pat > 1 ? " nor " : "", n_pat > 1 ? evo_show(pattern[1]).s : "",
                    opt);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* The kernel's text (already rendered), the companion and the module, into dir. */
/* src: the stored candidate the kernel was rendered from; NULL for --kernel (a file evo export wrote) and --dispatch,
 * whose task, arch and name are task_name, arch and kname, and `what` says what it is. */
static evo_status write_torch(const export_opts *o, const evo_export_src *src, const char *task_name, const char *arch,
                              const char *kernel_text, const char *kname_in, const char *what, evo_err *err)
{
    const evo_task *task = evo_task_find(task_name);
    if (!task || !task->torch_module)
        return evo_fail(err, EVO_E_USAGE, "export --torch: task %s has no PyTorch op", task_name);
    if (o->companion && o->opt_task != task)
        return evo_fail(err, EVO_E_USAGE, "export --torch: --%s is task %s's option; the candidate is of task %s",
                        o->opt_task->torch_option, o->opt_task->name, task->name);
    const char *opt = task->torch_option ? task->torch_option : "companion";
    const char *module = o->module ? o->module : task->torch_module_name ? task->torch_module_name : "evo_torch";
    /* the default as the usage prints it (evo_cli_export_task_options) */
    char comp[4096], kname[200], paths[3][4400];
    char base_arch[32]; /* the companion of an sm_90a kernel is an sm_90 file */
    snprintf(base_arch, sizeof base_arch, "%.*s", (int)strcspn(arch, "af"), arch);
    evo_status s = find_companion(task, o->companion, base_arch, comp, sizeof comp, err);
    if (s != EVO_OK) return s;
    char *comp_text = NULL, *py = NULL;
    s = evo_read_file_max(comp, (size_t)64 << 20, &comp_text, NULL, err);
    if (s != EVO_OK) return s;
    if (src)
        evo_export_default_name(src, kname, sizeof kname);
    else
        snprintf(kname, sizeof kname, "%s", kname_in);
    const char *cname = base_name(comp);
    char pyname[300];
    snprintf(pyname, sizeof pyname, "%s.py", module);
    const evo_torch_files f = {.kernel_text = kernel_text,
                               .kernel_name = kname,
                               .kernel_path = kname,
                               .companion_text = comp_text,
                               .companion_name = cname,
                               .companion_path = comp};
    if (strcmp(cname, kname) == 0 || strcmp(cname, pyname) == 0)
        s = evo_fail(err, EVO_E_USAGE,
                     "export --torch: the %s %s would take the name of another file of "
                     "the module",
                     opt, evo_show(comp).s);
    if (s == EVO_OK) s = task->torch_module(&f, module, &py, err);
    if (s == EVO_OK) s = evo_mkdir_p(o->torch, err);
    const char *names[3] = {kname, cname, pyname};
    const char *texts[3] = {kernel_text, comp_text, py};
    bool skip[3] = {false, false, false};
    char opt_name[80];
    snprintf(opt_name, sizeof opt_name, "--%s", opt);
    for (int i = 0; s == EVO_OK && i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", o->torch, names[i]);
        skip[i] = i == 1 && evo_path_same_file(comp, paths[i]); /* the quantizer is already there */
        if (!skip[i]) s = evo_path_check_output("export --torch", paths[i], false, err);
        if (s == EVO_OK) s = evo_path_check_not_input("export --torch", paths[i], "--db", o->db, true, err);
        if (s == EVO_OK && !skip[i])
            s = evo_path_check_not_input("export --torch", paths[i], opt_name, comp, false, err);
    }
    for (int i = 0; s == EVO_OK && i < 3; i++)
        if (!skip[i]) s = evo_write_file_atomic(paths[i], texts[i], strlen(texts[i]), err);
    if (s == EVO_OK && !src) {
        printf("wrote %s: PyTorch ops of %s\n", evo_show(paths[2]).s, what);
        printf("  beside it: %s and %s\n", evo_show(names[0]).s, evo_show(names[1]).s);
        printf(
            "  use: PYTHONPATH=%s python3 -c \"import torch, %s\"   (torch.ops.evo.*; nvcc builds it at the first import)\n",
            evo_show(o->torch).s, module);
    } else if (s == EVO_OK) {
        printf("wrote %s: PyTorch ops of candidate %lld (%.8s%s%s), accuracy class %s, %.3fx the baseline in run "
               "%lld\n",
               evo_show(paths[2]).s, (long long)src->cand.id, src->cand.key, src->taken ? ", by its " : "",
               src->taken ? src->taken : "", src->eval.accuracy ? src->eval.accuracy : EVO_ACCURACY_EXACT,
               src->eval.fitness, (long long)src->run.id);
        printf("  beside it: %s (genome %s) and %s\n", names[0], src->cand.genome, evo_show(names[1]).s);
        printf(
            "  use: PYTHONPATH=%s python3 -c \"import torch, %s\"   (torch.ops.evo.*; nvcc builds it at the first import)\n",
            evo_show(o->torch).s, module);
    }
    free(comp_text);
    free(py);
    return s;
}

/* `#define NAME "value"` of an exported file, into buf; false when the file has none. */
static bool export_define(const char *text, const char *name, char *buf, size_t n)
{
    char key[64];
    snprintf(key, sizeof key, "#define %s \"", name);
    const char *p = strstr(text, key);
    if (!p) return false;
    p += strlen(key);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= n) return false;
    snprintf(buf, n, "%.*s", (int)(e - p), p);
    return true;
}

/* --torch DIR --kernel FILE: the module for a kernel evo export already wrote. Its task: the one its name starts
 * with (<task>-<arch>-<key>.cu, export's default), else the only task with a PyTorch op; its arch: its
 * EVO_EXPORT_ARCH. */
static evo_status package_kernel(const export_opts *o, evo_err *err)
{
    char *text = NULL, arch[32];
    evo_status s = evo_read_file_max(o->kernel, (size_t)64 << 20, &text, NULL, err);
    if (s != EVO_OK) return s;
    if (!export_define(text, "EVO_EXPORT_ARCH", arch, sizeof arch)) {
        free(text);
        return evo_fail(err, EVO_E_USAGE, "export --kernel %s: not a file evo export wrote (no EVO_EXPORT_ARCH)",
                        evo_show(o->kernel).s);
    }
    const char *kname = base_name(o->kernel);
    const evo_task *task = NULL, *only = NULL;
    int n_torch = 0;
    for (int i = 0; evo_tasks[i]; i++) {
        const size_t len = strlen(evo_tasks[i]->name);
        if (evo_tasks[i]->torch_module) only = evo_tasks[i], n_torch++;
        if (strncmp(kname, evo_tasks[i]->name, len) == 0 && kname[len] == '-') task = evo_tasks[i];
    }
    if (!task && n_torch == 1) task = only;
    if (!task)
        s = evo_fail(err, EVO_E_USAGE, "export --kernel %s: its name does not say its task (<task>-...)",
                     evo_show(o->kernel).s);
    else {
        char what[4400];
        snprintf(what, sizeof what, "%s as evo export wrote it", evo_show(o->kernel).s);
        s = write_torch(o, NULL, task->name, arch, text, kname, what, err);
    }
    free(text);
    return s;
}

/* The file's path: -o, or variants/NAME (the folder made); checked as an output that is no input. */
static evo_status output_path(const export_opts *o, const char *name, char *path, size_t n, evo_err *err)
{
    if (o->output) {
        snprintf(path, n, "%s", o->output);
        return EVO_OK;
    }
    snprintf(path, n, "variants/%s", name);
    evo_status s = evo_mkdir_p("variants", err);
    if (s == EVO_OK) s = evo_path_check_output("export", path, false, err);
    if (s == EVO_OK) s = evo_path_check_not_input("export", path, "--db", o->db, true, err);
    return s;
}

/* The text to standard output, or atomically to path. */
static evo_status write_text(const char *path, const char *text, bool to_stdout, evo_err *err)
{
    if (!to_stdout) return evo_write_file_atomic(path, text, strlen(text), err);
    fputs(text, stdout);
    fflush(stdout);
    return ferror(stdout) ? evo_fail(err, EVO_E_IO, "export -o -: standard output: %s", strerror(errno)) : EVO_OK;
}

/* --dispatch: every bucket's winner in one file, and its table on stdout (stderr with -o -). */
static evo_status export_dispatch(evo_store *st, const export_opts *o, bool to_stdout, evo_err *err)
{
    evo_export_dispatch_ctx d;
    evo_export_out out = {0};
    char path[4200], name[200];
    evo_status s = evo_export_dispatch_pick(st, o->accuracy, &d, err);
    if (s == EVO_OK) s = evo_export_dispatch_render(&d, NULL, &out, err);
    if (s == EVO_OK) evo_export_dispatch_default_name(&d, name, sizeof name);
    if (s == EVO_OK && o->torch) { /* the dispatching file, the companion and the module into DIR */
        char what[256];
        snprintf(what, sizeof what, "the dispatching export (%d bucket%s, %d kernel%s, accuracy class %s)", d.n_buckets,
                 d.n_buckets == 1 ? "" : "s", d.n_entries, d.n_entries == 1 ? "" : "s", d.accuracy);
        char arch[32];
        if (!export_define(out.text, "EVO_EXPORT_ARCH", arch, sizeof arch))
            snprintf(arch, sizeof arch, "%s", d.scope.arch);
        s = write_torch(o, NULL, d.scope.task, arch, out.text, name, what, err);
        if (s == EVO_OK && out.warning[0]) fprintf(stderr, "evo: warning: %s\n", out.warning);
        evo_export_out_free(&out);
        evo_export_dispatch_free(&d);
        return s;
    }
    if (s == EVO_OK) s = output_path(o, name, path, sizeof path, err);
    if (s == EVO_OK) s = write_text(path, out.text, to_stdout, err);
    if (s == EVO_OK) {
        FILE *said = to_stdout ? stderr : stdout;
        if (out.warning[0]) fprintf(stderr, "evo: warning: %s\n", out.warning);
        fprintf(said, "%s %s: %d bucket%s, %d kernel%s (accuracy class %s%s%s)\n", to_stdout ? "exported" : "wrote",
                to_stdout ? "to standard output" : evo_show(path).s, d.n_buckets, d.n_buckets == 1 ? "" : "s",
                d.n_entries, d.n_entries == 1 ? "" : "s", d.accuracy, d.model[0] ? ", times of " : "", d.model);
        for (int b = 0; b < d.n_buckets; b++) {
            const evo_export_bucket_row *r = &d.buckets[b];
            const evo_export_entry *e = &d.entries[r->entry];
            fprintf(said, "  %-40s entry %d  %.8s  %6.3fx  %s\n", r->bucket.label, r->entry, e->src.cand.key,
                    r->speedup, r->shapes);
        }
        for (int i = 0; i < d.n_entries; i++)
            fprintf(said, "  entry %d: candidate %lld, genome %s\n", i, (long long)d.entries[i].src.cand.id,
                    d.entries[i].src.cand.genome);
        if (!to_stdout)
            fprintf(said, "  build: nvcc %s -O3 -c %s;  self-test: nvcc %s -O3 -DEVO_SELFTEST %s -o selftest\n",
                    out.nvcc_arch, evo_show(path).s, out.nvcc_arch, evo_show(path).s);
    }
    evo_export_out_free(&out);
    evo_export_dispatch_free(&d);
    return s;
}

EVO_CMD(export)
{
    export_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    /* -o is checked before anything is read: a FIFO, a device, a link or a directory is never replaced, and neither
     * is the database (or its -wal, -shm, -journal) the export reads; -o - is standard output */
    const bool to_stdout = o.output && evo_path_is_stdio(o.output);
    if (o.output && !to_stdout && (s = evo_path_check_output("export -o", o.output, false, err)) != EVO_OK) return s;
    if (o.output && !to_stdout &&
        (s = evo_path_check_not_input("export -o", o.output, "--db", o.db, true, err)) != EVO_OK)
        return s;
    if (o.torch && (s = check_torch_dir(o.torch, err)) != EVO_OK) return s;
    if (o.kernel) return package_kernel(&o, err);
    evo_store *st;
    s = evo_store_open(o.db, EVO_STORE_READONLY, &st, err);
    if (s != EVO_OK) return s;
    if (o.dispatch) {
        s = export_dispatch(st, &o, to_stdout, err);
        evo_store_close(st);
        return s;
    }
    evo_export_src src;
    evo_export_out out = {0};
    s = evo_export_pick(st, o.id, o.how, o.accuracy, &src, err);
    if (s == EVO_OK) s = evo_export_render(&src, NULL, &out, err);
    char path[4200];
    if (s == EVO_OK && o.torch) {
        s = write_torch(&o, &src, src.cand.task, src.cand.arch, out.text, NULL, NULL, err);
        if (s == EVO_OK && src.note[0]) fprintf(stderr, "evo: note: %s\n", src.note);
        if (s == EVO_OK && out.warning[0]) fprintf(stderr, "evo: warning: %s\n", out.warning);
        evo_export_out_free(&out);
        evo_export_src_free(&src);
        evo_store_close(st);
        return s;
    }
    if (s == EVO_OK && o.output) {
        snprintf(path, sizeof path, "%s", o.output);
    } else if (s == EVO_OK) {
        char name[200];
        evo_export_default_name(&src, name, sizeof name);
        snprintf(path, sizeof path, "variants/%s", name);
        s = evo_mkdir_p("variants", err);
        if (s == EVO_OK) s = evo_path_check_output("export", path, false, err);
        if (s == EVO_OK) s = evo_path_check_not_input("export", path, "--db", o.db, true, err);
    }
    if (s == EVO_OK && to_stdout) { /* the file on stdout, what would have been said about it on stderr */
        fputs(out.text, stdout);
        fflush(stdout);
        if (ferror(stdout)) s = evo_fail(err, EVO_E_IO, "export -o -: standard output: %s", strerror(errno));
    } else if (s == EVO_OK) {
        s = evo_write_file_atomic(path, out.text, strlen(out.text), err);
    }
    if (s == EVO_OK) {
        FILE *said = to_stdout ? stderr : stdout;
        if (src.note[0]) fprintf(stderr, "evo: note: %s\n", src.note);
        if (out.warning[0]) fprintf(stderr, "evo: warning: %s\n", out.warning);
        fprintf(said,
                "%s %s: candidate %lld (%.8s%s%s), accuracy class %s, %.3fx the baseline in run %lld\n"
                "  genome %s\n",
                to_stdout ? "exported" : "wrote", to_stdout ? "to standard output" : evo_show(path).s,
                (long long)src.cand.id, src.cand.key, src.taken ? ", by its " : "", src.taken ? src.taken : "",
                src.eval.accuracy ? src.eval.accuracy : EVO_ACCURACY_EXACT, src.eval.fitness, (long long)src.run.id,
                out.genome);
        if (!to_stdout)
            fprintf(said, "  build: nvcc %s -O3 -c %s;  self-test: nvcc %s -O3 -DEVO_SELFTEST %s -o selftest\n",
                    out.nvcc_arch, evo_show(path).s, out.nvcc_arch, evo_show(path).s);
    }
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
    return s;
}
