/* profile.c — ncu for `evo profile` (see profile.h): finding the tools, running ncu with a time limit, reading its
 * CSV, and telling its failures apart (no counter access, unknown metrics, nothing profiled).
 */
#include "profile.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const evo_ncu_metrics[] = {
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    NULL,
};

/* mma.sync on the HMMA pipe (Ampere onwards), wgmma on Hopper's GMMA pipe, and the pipe as a whole where a GPU
 * names it so. */
const char *const evo_ncu_tensor_metrics[] = {
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    NULL,
};

/* ---- CSV ---- */

/* One CSV record starting at *p (ncu quotes every field; "" inside quotes is a quote). Fields are malloc'd.
 * Advances *p past the line. Returns the field count. */
static int csv_record(const char **p, char ***fields)
{
    const char *s = *p;
    int n = 0, cap = 0;
    *fields = NULL;
    for (;;) {
        evo_str f = {0};
        if (*s == '"') {
            s++;
            while (*s) {
                if (*s == '"' && s[1] == '"') {
                    evo_str_appendn(&f, "\"", 1);
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    evo_str_appendn(&f, s++, 1);
                }
            }
        }
        while (*s && *s != ',' && *s != '\n' && *s != '\r') evo_str_appendn(&f, s++, 1);
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            *fields = evo_xrealloc(*fields, (size_t)cap * sizeof **fields);
        }
        (*fields)[n++] = evo_str_take(&f);
        if (*s == ',') {
            s++;
            continue;
        }
        break;
    }
    while (*s && *s != '\n') s++;
    if (*s == '\n') s++;
    *p = s;
    return n;
}

static void fields_free(char **f, int n)
{
    for (int i = 0; i < n; i++) free(f[i]);
    free(f);
}

static int column(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(f[i], name) == 0) return i;
    return -1;
}

/* "1,234.5" -> 1234.5; "n/a", "" or text -> NaN. */
static double metric_value(const char *s)
{
    char buf[128];
    size_t k = 0;
    for (; *s && k + 1 < sizeof buf; s++)
        if (*s != ',' && *s != ' ') buf[k++] = *s;
    buf[k] = '\0';
    if (!k) return NAN;
    char *end;
    double v = strtod(buf, &end);
    return *end || !isfinite(v) ? NAN : v;
}

static int is_header(const char *line) { return strncmp(line, "\"ID\",", 5) == 0; }

evo_status evo_ncu_parse_csv(const char *text, evo_ncu_row **rows, int *n, evo_err *err)
{
    *rows = NULL;
    *n = 0;
    const char *p = text ? text : "";
    while (*p && !is_header(p)) {
        p = strchr(p, '\n');
        p = p ? p + 1 : "";
    }
    if (!*p) return EVO_OK;
    char **h;
    int nh = csv_record(&p, &h);
    const char *names[] = {"ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"};
    int col[5];
    for (int i = 0; i < 5; i++) {
        col[i] = column(h, nh, names[i]);
        if (col[i] < 0) {
            fields_free(h, nh);
            return evo_fail(err, EVO_E_CONFIG, "ncu CSV: the header has no \"%s\" column", names[i]);
        }
    }
    int maxcol = 0;
    for (int i = 0; i < 5; i++) maxcol = col[i] > maxcol ? col[i] : maxcol;
    int cap = 0;
    while (*p) {
        if (*p != '"' || is_header(p)) { /* ==PROF== lines, the program's output, a repeated header */
            p = strchr(p, '\n');
            p = p ? p + 1 : "";
            continue;
        }
        char **f;
        int nf = csv_record(&p, &f);
        if (nf > maxcol && f[col[2]][0]) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 32;
                *rows = evo_xrealloc(*rows, (size_t)cap * sizeof **rows);
            }
            (*rows)[(*n)++] = (evo_ncu_row){.launch = strtoll(f[col[0]], NULL, 10),
                                            .kernel = evo_strdup(f[col[1]]),
                                            .metric = evo_strdup(f[col[2]]),
                                            .unit = evo_strdup(f[col[3]]),
                                            .value = metric_value(f[col[4]])};
        }
        fields_free(f, nf);
    }
    fields_free(h, nh);
    return EVO_OK;
}

void evo_ncu_rows_free(evo_ncu_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free(rows[i].kernel);
        free(rows[i].metric);
        free(rows[i].unit);
    }
    free(rows);
}

/* Factor to µs of a time unit; NaN when unit is not one. */
static double to_us(const char *unit)
{
    static const struct {
        const char *name;
        double f;
    } units[] = {{"ns", 1e-3}, {"nsecond", 1e-3}, {"us", 1},  {"usecond", 1}, {"µs", 1},
                 {"ms", 1e3},  {"msecond", 1e3},  {"s", 1e6}, {"second", 1e6}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(units); i++)
        if (strcmp(unit, units[i].name) == 0) return units[i].f;
    return NAN;
}

evo_status evo_ncu_summarize(const evo_ncu_row *rows, int n, evo_ncu_summary *out, evo_err *err)
{
    *out = (evo_ncu_summary){.tensor_pipe = NAN,
                             .dram = NAN,
                             .occupancy = NAN,
                             .bank_conflicts = NAN,
                             .issue_slots = NAN,
                             .duration_us = NAN};
    if (n <= 0) return evo_fail(err, EVO_E_NOTFOUND, "ncu profiled no launch");
    out->launch = rows[0].launch;
    snprintf(out->kernel, sizeof out->kernel, "%s", rows[0].kernel);
    double ld = NAN, st = NAN;
    for (int i = 0; i < n; i++) {
        const evo_ncu_row *r = &rows[i];
        if (r->launch != out->launch) continue;
        const char *m = r->metric;
        double v = r->value;
        if (strcmp(m, "gpu__time_duration.sum") == 0)
            out->duration_us = v * to_us(r->unit);
        else if (strcmp(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed") == 0)
            out->dram = v;
        else if (strcmp(m, "sm__warps_active.avg.pct_of_peak_sustained_active") == 0)
            out->occupancy = v;
        else if (strcmp(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") == 0)
            ld = v;
        else if (strcmp(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") == 0)
            st = v;
        else if (strcmp(m, "sm__inst_issued.avg.pct_of_peak_sustained_active") == 0)
            out->issue_slots = v;
        for (int k = 0; evo_ncu_tensor_metrics[k]; k++) {
            if (strcmp(m, evo_ncu_tensor_metrics[k]) != 0 || isnan(v)) continue;
            if (isnan(out->tensor_pipe) || v > out->tensor_pipe) {
                out->tensor_pipe = v;
                out->tensor_metric = evo_ncu_tensor_metrics[k];
            }
        }
    }
    /* One of the two missing is a GPU without that counter: the other alone is still the count. */
    if (!isnan(ld) || !isnan(st)) out->bank_conflicts = (isnan(ld) ? 0 : ld) + (isnan(st) ? 0 : st);
    return EVO_OK;
}

/* ---- ncu's own messages ---- */

evo_ncu_problem evo_ncu_diagnose(const char *output, char **unknown)
{
    if (unknown) *unknown = NULL;
    if (!output) return EVO_NCU_OK;
    if (strstr(output, "ERR_NVGPUCTRPERM")) return EVO_NCU_NO_PERMISSION;
    const char *u = strstr(output, "Failed to access the following");
    if (u) {
        const char *colon = strchr(u, ':');
        if (unknown && colon) {
            colon++;
            while (*colon == ' ') colon++;
            size_t len = strcspn(colon, "\r\n");
            while (len && (colon[len - 1] == ' ' || colon[len - 1] == '.')) len--;
            *unknown = evo_xmalloc(len + 1);
            memcpy(*unknown, colon, len);
            (*unknown)[len] = '\0';
        }
        return EVO_NCU_UNKNOWN_METRICS;
    }
    if (strstr(output, "ERR_NVGPUCTRBUSY") || strstr(output, "Profiling is not supported on this device") ||
        strstr(output, "device is not supported") || strstr(output, "Device not supported"))
        return EVO_NCU_UNSUPPORTED;
    if (strstr(output, "The application returned an error code")) return EVO_NCU_APP_FAILED;
    if (strstr(output, "No kernels were profiled")) return EVO_NCU_NO_KERNEL;
    return EVO_NCU_OK;
}

/* ---- running a program ---- */

evo_status evo_profile_run_capture(char *const argv[], char *const extra_env[], int timeout_s, char **output,
                                   int *exit_code, evo_err *err)
{
    *output = NULL;
    *exit_code = -1;
    int fd[2];
    if (pipe(fd) != 0) return evo_fail(err, EVO_E_IO, "cannot run %s: pipe: %s", argv[0], strerror(errno));

    /* The environment: ours, with the extra entries replacing any of the same name. */
    int ne = 0, nx = 0;
    while (environ[ne]) ne++;
    while (extra_env && extra_env[nx]) nx++;
    char **envp = evo_xcalloc((size_t)(ne + nx + 1), sizeof *envp);
    int k = 0;
    for (int i = 0; i < ne; i++) {
        int replaced = 0;
        for (int j = 0; j < nx && !replaced; j++) {
            size_t len = strcspn(extra_env[j], "=");
            replaced = strncmp(environ[i], extra_env[j], len) == 0 && environ[i][len] == '=';
        }
        if (!replaced) envp[k++] = environ[i];
    }
    for (int j = 0; j < nx; j++) envp[k++] = extra_env[j];

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    posix_spawnattr_init(&at);
    /* Its own process group, so that a timeout also ends what it started (ncu runs the self-test as a child). */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(envp);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return evo_fail(err, EVO_E_IO, "cannot run %s: %s", argv[0], strerror(rc));
    }

    evo_str out = {0};
    /* until every writer closed the pipe: the program and its children are done with it */
    const bool timed_out = evo_read_until(fd[0], evo_now() + (timeout_s > 0 ? timeout_s : EVO_NCU_TIMEOUT_S), 0, &out);
    close(fd[0]);
    if (timed_out) kill(-pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    *output = evo_str_take(&out);
    if (timed_out)
        return evo_fail(err, EVO_E_TIMEOUT, "%s did not finish in %d s and was stopped", argv[0],
                        timeout_s > 0 ? timeout_s : EVO_NCU_TIMEOUT_S);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return EVO_OK;
}

/* ---- ncu ---- */

/* The last lines of text, at most max bytes, for quoting in a message. */
static const char *tail(const char *text, size_t max)
{
    size_t len = strlen(text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) len--;
    if (len <= max) return text;
    const char *p = text + len - max;
    const char *nl = strchr(p, '\n');
    return nl && nl < text + len ? nl + 1 : p;
}

static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ' ' || p[-1] == ',') && (p[len] == '\0' || p[len] == ',' || p[len] == ' ')) return 1;
    return 0;
}

/* One ncu run of the self-test. skip < 0: every launch, else --launch-skip skip --launch-count 1. */
static evo_status ncu_run(const evo_ncu_job *job, const char *metrics, long skip, char **text, int *code, evo_err *err)
{
    char skip_s[32], reps[16];
    snprintf(skip_s, sizeof skip_s, "%ld", skip);
    snprintf(reps, sizeof reps, "%d", EVO_NCU_REPS);
    char *argv[32];
    int k = 0;
    char filter[96];
    snprintf(filter, sizeof filter, "regex:%s", job->kernel_prefix ? job->kernel_prefix : ".");
    const char *fixed[] = {"--clock-control", "none", "--target-processes", "all", "--kernel-name", filter};
    argv[k++] = (char *)job->ncu;
    for (size_t i = 0; i < EVO_ARRAY_LEN(fixed); i++) argv[k++] = (char *)fixed[i];
    if (skip >= 0) {
        argv[k++] = "--launch-skip";
        argv[k++] = skip_s;
        argv[k++] = "--launch-count";
        argv[k++] = "1";
    }
    argv[k++] = "--metrics";
    argv[k++] = (char *)metrics;
    argv[k++] = "--print-units";
    argv[k++] = "base";
    argv[k++] = "--csv";
    argv[k++] = (char *)job->exe;
    argv[k++] = "--shape";
    argv[k++] = (char *)job->shape;
    argv[k++] = "--reps";
    argv[k++] = reps;
    argv[k] = NULL;
    return evo_profile_run_capture(argv, NULL, job->timeout_s, text, code, err);
}

/* The failures every ncu run can meet; EVO_OK when none of them. */
static evo_status run_problem(const evo_ncu_job *job, evo_ncu_problem pr, const char *text, int code, evo_err *err)
{
    switch (pr) {
        case EVO_NCU_NO_PERMISSION:
            return evo_fail(
                err, EVO_E_CUDA,
                "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): the driver lets only "
                "administrators profile. Run evo profile as root, or allow every user by loading the nvidia "
                "module with NVreg_RestrictProfilingToAdminUsers=0 (in a container the host must allow it "
                "and the container needs CAP_SYS_ADMIN)");
        case EVO_NCU_UNSUPPORTED: return evo_fail(err, EVO_E_CUDA, "ncu cannot profile this GPU:\n%s", tail(text, 600));
        case EVO_NCU_APP_FAILED:
            return evo_fail(err, EVO_E_REJECTED, "the self-test failed under ncu for shape %s:\n%s", job->shape,
                            tail(text, 1500));
        default: break;
    }
    if (code != 0)
        return evo_fail(err, EVO_E_REJECTED, "ncu or the self-test failed (exit %d) for shape %s:\n%s", code,
                        job->shape, tail(text, 1500));
    return EVO_OK;
}

/* How many launches a CSV holds (distinct IDs). */
static int launches(const evo_ncu_row *rows, int n)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = rows[j].launch == rows[i].launch;
        count += !seen;
    }
    return count;
}

evo_status evo_ncu_profile(const evo_ncu_job *job, evo_ncu_summary *out, char **output, evo_err *err)
{
    if (output) *output = NULL;
    char *text = NULL;
    int code = 0;
    evo_ncu_row *rows = NULL;
    int n = 0;

    /* 1: count the kernel's launches: with a launch statistic (no replay), else with the duration (one replay) */
    static const char *const count_metrics[] = {"launch__grid_size", "gpu__time_duration.sum"};
    evo_status s = EVO_OK;
    for (size_t i = 0; i < EVO_ARRAY_LEN(count_metrics); i++) {
        free(text);
        text = NULL;
        s = ncu_run(job, count_metrics[i], -1, &text, &code, err);
        if (s != EVO_OK) break;
        evo_ncu_problem pr = evo_ncu_diagnose(text, NULL);
        if (pr == EVO_NCU_UNKNOWN_METRICS && i + 1 < EVO_ARRAY_LEN(count_metrics)) continue;
        if (pr == EVO_NCU_UNKNOWN_METRICS)
            s = evo_fail(err, EVO_E_CUDA, "ncu knows neither launch__grid_size nor gpu__time_duration.sum:\n%s",
                         tail(text, 600));
        else
            s = run_problem(job, pr, text, code, err);
        break;
    }
    if (s == EVO_OK) s = evo_ncu_parse_csv(text, &rows, &n, err);
    int total = s == EVO_OK ? launches(rows, n) : 0;
    evo_ncu_rows_free(rows, n);
    rows = NULL, n = 0;
    if (s == EVO_OK && total < EVO_NCU_REPS)
        s = evo_fail(err, EVO_E_REJECTED,
                     "the self-test made %d launch%s of the kernel, fewer than the %d timed ones asked for shape %s; "
                     "it said:\n%s",
                     total, total == 1 ? "" : "es", EVO_NCU_REPS, job->shape, tail(text, 1500));

    /* 2: the metrics of one timed launch, asking again without any metric this ncu does not know */
    char *unknown_all = evo_strdup("");
    for (int attempt = 0; s == EVO_OK && attempt < 2; attempt++) {
        evo_str metrics = {0};
        for (int pass = 0; pass < 2; pass++) {
            const char *const *list = pass ? evo_ncu_tensor_metrics : evo_ncu_metrics;
            for (int i = 0; list[i]; i++) {
                if (in_list(unknown_all, list[i])) continue;
                if (metrics.len) evo_str_append(&metrics, ",");
                evo_str_append(&metrics, list[i]);
            }
        }
        free(text);
        text = NULL;
        s = ncu_run(job, evo_str_cstr(&metrics), total - EVO_NCU_REPS + EVO_NCU_LAUNCH_SKIP, &text, &code, err);
        evo_str_free(&metrics);
        if (s != EVO_OK) break;
        char *unknown = NULL;
        evo_ncu_problem pr = evo_ncu_diagnose(text, &unknown);
        if (pr == EVO_NCU_UNKNOWN_METRICS && attempt == 0 && unknown && *unknown) {
            char *joined = evo_xmalloc(strlen(unknown_all) + strlen(unknown) + 2);
            sprintf(joined, "%s%s%s", unknown_all, *unknown_all ? "," : "", unknown);
            free(unknown_all);
            unknown_all = joined;
            free(unknown);
            continue;
        }
        free(unknown);
        if (pr == EVO_NCU_UNKNOWN_METRICS)
            s = evo_fail(err, EVO_E_CUDA, "ncu does not know the metrics evo asks for:\n%s", tail(text, 600));
        else
            s = run_problem(job, pr, text, code, err);
        if (s == EVO_OK) s = evo_ncu_parse_csv(text, &rows, &n, err);
        if (s == EVO_OK && n == 0)
            s = evo_fail(err, EVO_E_NOTFOUND,
                         "ncu profiled no launch of the kernel for shape %s (launch %d of %d):\n%s", job->shape,
                         total - EVO_NCU_REPS + EVO_NCU_LAUNCH_SKIP + 1, total, tail(text, 1500));
        if (s == EVO_OK) s = evo_ncu_summarize(rows, n, out, err);
        evo_ncu_rows_free(rows, n);
        break;
    }
    free(unknown_all);
    if (output)
        *output = text;
    else
        free(text);
    return s;
}
