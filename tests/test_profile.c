/* test_profile.c — the ncu side of `evo profile` without a GPU: CSV parsing and reduction on ncu output in the
 * format ncu prints (tests/data/ncu/), ncu's failure messages told apart, the tool search, and the process runner
 * (output, exit codes, environment, time limit). Run: build/tests/test_profile (ctest runs it).
 */
#include "check.h"
#include "paths.h"
#include "profile.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *data(const char *name)
{
    char path[1024], *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/tests/data/ncu/%s", EVO_SOURCE_DIR, name);
    evo_err err = {0};
    if (evo_read_file(path, &text, &len, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return text;
}

static void test_parse_metrics(void)
{
    char *text = data("metrics.csv");
    evo_ncu_row *rows;
    int n;
    evo_err err = {0};
    CHECK_EQ_INT(evo_ncu_parse_csv(text, &rows, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 8); /* the ==PROF== lines and the self-test's own output are not rows */
    if (n == 8) {
        CHECK_EQ_INT(rows[0].launch, 0);
        CHECK_STR(rows[0].kernel, "void evo_attn_fwd<64, 0, 64, 64, 4, 1, 2, 1, 1, 1, 0, 1, 1>(evo_attn_params)");
        CHECK_STR(rows[0].metric, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
        CHECK_STR(rows[0].unit, "%");
        CHECK(rows[0].value == 12.47);
        CHECK_STR(rows[1].unit, "nsecond");
        CHECK(rows[1].value == 20416);   /* "20,416" */
        CHECK(rows[2].value == 1234560); /* "1,234,560" */
        CHECK_STR(rows[2].unit, "");
        CHECK(rows[5].value == 0);
    }

    evo_ncu_summary m;
    CHECK_EQ_INT(evo_ncu_summarize(rows, n, &m, &err), EVO_OK);
    CHECK(m.tensor_pipe == 71.33);
    CHECK_STR(m.tensor_metric, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
    CHECK(m.dram == 12.47);
    CHECK(m.occupancy == 18.73);
    CHECK(m.bank_conflicts == 1234567);
    CHECK(m.issue_slots == 40.21);
    CHECK_NEAR(m.duration_us, 20.416, 1e-12);
    CHECK_EQ_INT(m.launch, 0);
    CHECK_STR(m.kernel, "void evo_attn_fwd<64, 0, 64, 64, 4, 1, 2, 1, 1, 1, 0, 1, 1>(evo_attn_params)");
    evo_ncu_rows_free(rows, n);
    free(text);
}

static void test_parse_count(void)
{
    char *text = data("count.csv");
    evo_ncu_row *rows;
    int n;
    CHECK_EQ_INT(evo_ncu_parse_csv(text, &rows, &n, NULL), EVO_OK);
    CHECK_EQ_INT(n, 42); /* 30 correctness launches, 7 warm-up, 5 timed */
    if (n == 42) {
        CHECK_EQ_INT(rows[41].launch, 41);
        CHECK_STR(rows[41].metric, "launch__grid_size");
        CHECK(rows[41].value == 64);
        CHECK(rows[0].value == 6);
    }
    evo_ncu_rows_free(rows, n);
    free(text);
}

/* Hand-made rows for the reduction's corner cases. */
static void test_summarize_units(void)
{
    const char *k = "evo_attn_d64";
    evo_ncu_row rows[] = {
        {3, (char *)k, "gpu__time_duration.sum", "usecond", 1.5},
        {3, (char *)k, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "%", 10},
        {3, (char *)k, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "%", 55.5},
        {3, (char *)k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "", 12},
        {4, (char *)k, "gpu__time_duration.sum", "msecond", 9}, /* a second launch: ignored */
    };
    evo_ncu_summary m;
    CHECK_EQ_INT(evo_ncu_summarize(rows, 5, &m, NULL), EVO_OK);
    CHECK_NEAR(m.duration_us, 1.5, 0);
    CHECK(m.tensor_pipe == 55.5); /* wgmma kernel: the GMMA pipe is the busy one */
    CHECK_STR(m.tensor_metric, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
    CHECK(m.bank_conflicts == 12); /* no store counter: the loads alone */
    CHECK(isnan(m.dram) && isnan(m.occupancy) && isnan(m.issue_slots));
    CHECK_EQ_INT(m.launch, 3);

    rows[0].unit = "msecond";
    rows[0].value = 0.25;
    CHECK_EQ_INT(evo_ncu_summarize(rows, 1, &m, NULL), EVO_OK);
    CHECK_NEAR(m.duration_us, 250, 1e-9);
    CHECK(isnan(m.tensor_pipe) && m.tensor_metric == NULL && isnan(m.bank_conflicts));
    rows[0].unit = "ns";
    rows[0].value = 20416;
    CHECK_EQ_INT(evo_ncu_summarize(rows, 1, &m, NULL), EVO_OK);
    CHECK_NEAR(m.duration_us, 20.416, 1e-12);
    rows[0].unit = "cycle"; /* not a time: no duration rather than a wrong one */
    CHECK_EQ_INT(evo_ncu_summarize(rows, 1, &m, NULL), EVO_OK);
    CHECK(isnan(m.duration_us));

    evo_err err = {0};
    CHECK_EQ_INT(evo_ncu_summarize(rows, 0, &m, &err), EVO_E_NOTFOUND);
    CHECK_STR(err.msg, "ncu profiled no launch");
}

static void test_parse_odd_input(void)
{
    evo_ncu_row *rows;
    int n;
    evo_err err = {0};
    char *perm = data("permission.txt");
    CHECK_EQ_INT(evo_ncu_parse_csv(perm, &rows, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 0);
    free(perm);
    CHECK_EQ_INT(evo_ncu_parse_csv(NULL, &rows, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 0);

    CHECK_EQ_INT(evo_ncu_parse_csv("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n", &rows, &n, &err),
                 EVO_E_CONFIG);
    CHECK_STR(err.msg, "ncu CSV: the header has no \"Metric Unit\" column");

    /* quotes inside a field, "n/a", a short row, CRLF line ends, a repeated header */
    const char *t = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\r\n"
                    "\"1\",\"k<\"\"x\"\">\",\"a.sum\",\"\",\"n/a\"\r\n"
                    "\"1\",\"k\"\r\n"
                    "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\r\n"
                    "\"2\",\"k\",\"b.sum\",\"byte\",\"-3.5e2\"\r\n";
    CHECK_EQ_INT(evo_ncu_parse_csv(t, &rows, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_STR(rows[0].kernel, "k<\"x\">");
        CHECK(isnan(rows[0].value));
        CHECK_STR(rows[1].metric, "b.sum");
        CHECK(rows[1].value == -350);
    }
    evo_ncu_rows_free(rows, n);
}

static void test_diagnose(void)
{
    char *u = NULL;
    char *t = data("permission.txt");
    CHECK_EQ_INT(evo_ncu_diagnose(t, &u), EVO_NCU_NO_PERMISSION);
    CHECK(u == NULL);
    free(t);
    t = data("unknown.txt");
    CHECK_EQ_INT(evo_ncu_diagnose(t, &u), EVO_NCU_UNKNOWN_METRICS);
    CHECK_STR(u, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active, "
                 "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
    free(u);
    free(t);
    t = data("selftest_failed.txt");
    CHECK_EQ_INT(evo_ncu_diagnose(t, NULL), EVO_NCU_APP_FAILED);
    free(t);
    t = data("metrics.csv");
    CHECK_EQ_INT(evo_ncu_diagnose(t, &u), EVO_NCU_OK);
    free(t);
    CHECK_EQ_INT(evo_ncu_diagnose("==WARNING== No kernels were profiled.\n", NULL), EVO_NCU_NO_KERNEL);
    CHECK_EQ_INT(evo_ncu_diagnose("==ERROR== Profiling is not supported on this device\n", NULL), EVO_NCU_UNSUPPORTED);
    CHECK_EQ_INT(evo_ncu_diagnose(NULL, NULL), EVO_NCU_OK);
}

static void write_exe(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, 0755);
}

static void test_find_tool(const char *dir)
{
    char *p = NULL, bin[512], tool[600], plain[600];
    evo_err err = {0};
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0755);
    snprintf(tool, sizeof tool, "%s/ncu", bin);
    write_exe(tool, "#!/bin/sh\nexit 0\n");
    snprintf(plain, sizeof plain, "%s/not-executable", dir);
    FILE *f = fopen(plain, "w");
    fclose(f);

    setenv("CUDA_HOME", "/nonexistent-cuda", 1);
    setenv("PATH", "/nonexistent-dir", 1);
    CHECK_EQ_INT(evo_path_find_tool("ncu", NULL, &p, &err), EVO_E_NOTFOUND);
    CHECK_STR(err.msg, "ncu not found: install Nsight Compute or pass --ncu PATH");
    CHECK_EQ_INT(evo_path_find_tool("nvcc", NULL, &p, &err), EVO_E_NOTFOUND);
    CHECK_STR(err.msg, "nvcc not found: install the CUDA Toolkit or put its bin/ on PATH");
    CHECK_EQ_INT(evo_path_find_tool("ncu", plain, &p, &err), EVO_E_NOTFOUND);
    char want[800];
    snprintf(want, sizeof want, "ncu not found at %s: install Nsight Compute or pass --ncu PATH", plain);
    CHECK_STR(err.msg, want);

    char path[1200];
    snprintf(path, sizeof path, "/nonexistent-dir::%s", bin);
    setenv("PATH", path, 1);
    CHECK_EQ_INT(evo_path_find_tool("ncu", NULL, &p, &err), EVO_OK);
    CHECK_STR(p, tool);
    free(p);
    setenv("PATH", "/nonexistent-dir", 1);
    setenv("CUDA_HOME", dir, 1); /* $CUDA_HOME/bin after PATH */
    CHECK_EQ_INT(evo_path_find_tool("ncu", NULL, &p, &err), EVO_OK);
    CHECK_STR(p, tool);
    free(p);
    CHECK_EQ_INT(evo_path_find_tool("ncu", tool, &p, &err), EVO_OK);
    CHECK_STR(p, tool);
    free(p);
    unsetenv("CUDA_HOME");
    setenv("PATH", "/usr/bin:/bin", 1);
}

static void test_run_capture(void)
{
    char *out = NULL;
    int code = -1;
    evo_err err = {0};
    char *sh1[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    CHECK_EQ_INT(evo_profile_run_capture(sh1, NULL, 10, &out, &code, &err), EVO_OK);
    CHECK_EQ_INT(code, 3);
    CHECK_STR(out, "out\nerr\n");
    free(out);

    setenv("EVO_TEST_REPLACED", "old", 1);
    char *env[] = {"EVO_TEST_REPLACED=new", "EVO_TEST_ADDED=yes", NULL};
    char *sh2[] = {"/bin/sh", "-c", "echo $EVO_TEST_REPLACED $EVO_TEST_ADDED; env | grep -c EVO_TEST_REPLACED", NULL};
    CHECK_EQ_INT(evo_profile_run_capture(sh2, env, 10, &out, &code, &err), EVO_OK);
    CHECK_EQ_INT(code, 0);
    CHECK_STR(out, "new yes\n1\n");
    free(out);

    /* stdin is /dev/null: a program that reads it does not hang */
    char *sh3[] = {"/bin/sh", "-c", "cat; kill -9 $$", NULL};
    CHECK_EQ_INT(evo_profile_run_capture(sh3, NULL, 10, &out, &code, &err), EVO_OK);
    CHECK_EQ_INT(code, 128 + 9);
    free(out);

    /* the limit also ends what the program started */
    double t0 = evo_now();
    char *sh4[] = {"/bin/sh", "-c", "sleep 30 & sleep 30", NULL};
    CHECK_EQ_INT(evo_profile_run_capture(sh4, NULL, 1, &out, &code, &err), EVO_E_TIMEOUT);
    CHECK(evo_now() - t0 < 5);
    CHECK_STR(err.msg, "/bin/sh did not finish in 1 s and was stopped");
    free(out);

    char *none[] = {"/nonexistent/ncu", NULL};
    CHECK_EQ_INT(evo_profile_run_capture(none, NULL, 10, &out, &code, &err), EVO_E_IO);
    CHECK_STR(err.msg, "cannot run /nonexistent/ncu: No such file or directory");
    free(out);
}

int main(void)
{
    char dir[] = "/tmp/evo-test-profile-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_parse_metrics();
    test_parse_count();
    test_summarize_units();
    test_parse_odd_input();
    test_diagnose();
    test_find_tool(dir);
    test_run_capture();
    evo_remove_tree(dir);
    return check_result();
}
