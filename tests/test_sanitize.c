/* test_sanitize.c — the pure parts of sanitize.h: the tool list and reading compute-sanitizer's reports (two real
 * ones, captured on an H200 from the planted kernels: tests/data/sanitizer-*.txt). */
#include "check.h"
#include "sanitize.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static char *fixture(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", EVO_SOURCE_DIR, name);
    char *text = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_read_file(path, &text, NULL, &err), EVO_OK);
    return text;
}

static void test_tools(void)
{
    const char *t[EVO_SANITIZE_MAX_TOOLS];
    int n = -1;
    evo_err err = {0};
    CHECK_EQ_INT(evo_sanitize_parse_tools("memcheck,racecheck", t, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_STR(t[0], "memcheck");
    CHECK_STR(t[1], "racecheck");
    CHECK_EQ_INT(evo_sanitize_parse_tools("synccheck,initcheck,synccheck", t, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2); /* duplicates once */
    CHECK_STR(t[0], "synccheck");
    CHECK_EQ_INT(evo_sanitize_parse_tools(EVO_SANITIZE_DEFAULT_TOOLS, t, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(evo_sanitize_parse_tools("memcheck,racechek", t, &n, &err), EVO_E_USAGE);
    CHECK_STR(err.msg, "--sanitize: unknown tool 'racechek' (the tools: memcheck, racecheck, initcheck, synccheck)");
    CHECK_EQ_INT(evo_sanitize_parse_tools("", t, &n, &err), EVO_E_USAGE);
    CHECK_EQ_INT(evo_sanitize_parse_tools("memcheck,", t, &n, &err), EVO_E_USAGE);
    CHECK_STR(err.msg, "--sanitize: 'memcheck,' ends with a comma");
    CHECK_EQ_INT(evo_sanitize_parse_tools(",memcheck", t, &n, &err), EVO_E_USAGE);
    CHECK_EQ_INT(evo_sanitize_parse_tools("memcheckx", t, &n, &err), EVO_E_USAGE);
}

static void test_reports(void)
{
    char first[400];
    /* memcheck on oob_read.cu: 64 errors, 20 printed, then "44 errors were not printed" */
    char *mem = fixture("sanitizer-memcheck.txt");
    CHECK_EQ_INT(evo_sanitize_count_errors(mem, first, sizeof first), 64);
    CHECK_STR(first, "Invalid __global__ read of size 1 bytes");
    free(mem);
    /* racecheck on race.cu: no ERROR SUMMARY line, the RACECHECK SUMMARY counts */
    char *race = fixture("sanitizer-racecheck.txt");
    CHECK_EQ_INT(evo_sanitize_count_errors(race, first, sizeof first), 2);
    CHECK_STR(first, "Error: Race reported between Read access at evo_attn_d64+0x1440");
    free(race);

    CHECK_EQ_INT(evo_sanitize_count_errors("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", first,
                                           sizeof first),
                 0);
    CHECK_STR(first, "");
    CHECK_EQ_INT(evo_sanitize_count_errors("========= ERROR SUMMARY: 1 error\n", NULL, 0), 1);
    CHECK_EQ_INT(evo_sanitize_count_errors("========= RACECHECK SUMMARY: 3 hazards displayed (0 errors, 3 warnings)\n"
                                           "========= ERROR SUMMARY: 0 errors\n",
                                           first, sizeof first),
                 0);
    /* no summary: the sanitizer died before the end */
    CHECK_EQ_INT(evo_sanitize_count_errors("========= COMPUTE-SANITIZER\n========= Invalid __shared__ write of size 4 "
                                           "bytes\n=========     at k+0x10\n",
                                           first, sizeof first),
                 -1);
    CHECK_STR(first, "Invalid __shared__ write of size 4 bytes");
    CHECK_EQ_INT(evo_sanitize_count_errors("", first, sizeof first), -1);
    CHECK_EQ_INT(evo_sanitize_count_errors(NULL, first, sizeof first), -1);
    CHECK_EQ_INT(evo_sanitize_count_errors("ERROR SUMMARY: lots of errors\n", NULL, 0), -1);
}

static void test_summary(void)
{
    evo_sanitize_result r[2] = {{.tool = "memcheck", .clean = true, .errors = 0},
                                {.tool = "racecheck", .clean = false, .errors = 2}};
    snprintf(r[1].why, sizeof r[1].why, "2 errors: Error: Race reported");
    char buf[256];
    evo_sanitize_summary(r, 2, buf, sizeof buf);
    CHECK_STR(buf, "memcheck clean; racecheck: 2 errors: Error: Race reported");
    char tiny[12];
    evo_sanitize_summary(r, 2, tiny, sizeof tiny); /* cut, never overrun */
    CHECK_STR(tiny, "memcheck cl");
}

int main(void)
{
    test_tools();
    test_reports();
    test_summary();
    return check_result();
}
