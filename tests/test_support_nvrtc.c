/* test_support_nvrtc.c — templates/support.cu and tasks/attention_fp8/attn_support.cu compile with NVRTC for sm_80,
 * sm_89 and sm_90 (no GPU needed): every kernel is there, none spills or uses a stack frame, and the copies built
 * into evo are the files on disk.
 * Run: ctest --test-dir build -R test_support_nvrtc --output-on-failure
 */
#include "check.h"
#include "nvrtc_support.h"
#include "templates.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Reads "N bytes stack frame, N bytes spill stores, N bytes spill loads" that ptxas prints for kernel name. */
static int kernel_props(const char *log, const char *name, int *stack, int *spill_st, int *spill_ld)
{
    char key[128];
    snprintf(key, sizeof key, "Function properties for %s\n", name);
    const char *p = strstr(log, key);
    if (!p) return -1;
    p += strlen(key);
    while (*p && *p != '\n' && (*p < '0' || *p > '9')) p++;
    return sscanf(p, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", stack, spill_st, spill_ld) ==
                   3
               ? 0
               : -1;
}

/* Every kernel of names[] in the build of file (with extra_header) for each arch: present, no stack, no spills. */
static void check_module(const char *file, const char *name, const char *extra_header, const char *const *names,
                         size_t n_names)
{
    char *src;
    size_t len;
    evo_err err = {0};
    if (evo_read_file(file, &src, &len, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
        return;
    }
    const char *embedded = NULL;
    size_t embedded_len = 0;
    CHECK(evo_template_get(name, &embedded, &embedded_len, &err) == EVO_OK);
    CHECK(embedded && embedded_len == len && memcmp(embedded, src, len) == 0);
    const char *archs[] = {"sm_80", "sm_89", "sm_90"};
    for (size_t a = 0; a < EVO_ARRAY_LEN(archs); a++) {
        support_build b;
        int rc = support_compile_named(src, name, extra_header, archs[a], &b);
        CHECK_EQ_INT(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "%s %s:\n%s\n", name, archs[a], b.log);
            support_build_free(&b);
            continue;
        }
        for (size_t k = 0; k < n_names; k++) {
            int stack = -1, st = -1, ld = -1;
            int found = kernel_props(b.log, names[k], &stack, &st, &ld);
            if (found != 0) fprintf(stderr, "%s %s: no ptxas report for %s\n", name, archs[a], names[k]);
            CHECK_EQ_INT(found, 0);
            CHECK_EQ_INT(stack, 0);
            CHECK_EQ_INT(st, 0);
            CHECK_EQ_INT(ld, 0);
        }
        CHECK(strstr(b.log, "warning") == NULL);
        support_build_free(&b);
    }
    free(src);
}

int main(void)
{
    check_module(EVO_SOURCE_DIR "/tasks/attention_fp8/attn_support.cu", "attn_support.cu", "attn_numerics.h",
                 attn_support_kernels, EVO_ARRAY_LEN(attn_support_kernels));
    check_module(EVO_SOURCE_DIR "/tasks/attention_fp8/attn_ref.cu", "attn_ref.cu", NULL, attn_ref_kernels,
                 EVO_ARRAY_LEN(attn_ref_kernels));
    char *src;
    size_t len;
    evo_err err = {0};
    if (evo_read_file(EVO_SOURCE_DIR "/templates/support.cu", &src, &len, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }

    const char *embedded = NULL;
    size_t embedded_len = 0;
    unsetenv("EVO_TEMPLATE_DIR");
    CHECK(evo_template_get("support.cu", &embedded, &embedded_len, &err) == EVO_OK);
    CHECK(embedded && embedded_len == len && memcmp(embedded, src, len) == 0);

    const char *archs[] = {"sm_80", "sm_89", "sm_90"};
    for (size_t a = 0; a < EVO_ARRAY_LEN(archs); a++) {
        support_build b;
        int rc = support_compile(src, archs[a], &b);
        CHECK_EQ_INT(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "%s:\n%s\n", archs[a], b.log);
            support_build_free(&b);
            continue;
        }
        CHECK(b.size > 1000);
        for (size_t k = 0; k < EVO_ARRAY_LEN(support_kernels); k++) {
            int stack = -1, st = -1, ld = -1;
            int found = kernel_props(b.log, support_kernels[k], &stack, &st, &ld);
            if (found != 0) fprintf(stderr, "%s: no ptxas report for %s\n", archs[a], support_kernels[k]);
            CHECK_EQ_INT(found, 0);
            CHECK_EQ_INT(stack, 0);
            CHECK_EQ_INT(st, 0);
            CHECK_EQ_INT(ld, 0);
        }
        CHECK(strstr(b.log, "warning") == NULL);
        support_build_free(&b);
    }

    /* PTX: each kernel is an entry point under its plain (extern "C") name */
    support_build ptx;
    CHECK_EQ_INT(support_compile(src, "compute_80", &ptx), 0);
    for (size_t k = 0; ptx.image && k < EVO_ARRAY_LEN(support_kernels); k++) {
        char entry[96];
        snprintf(entry, sizeof entry, ".entry %s(", support_kernels[k]);
        CHECK_CONTAINS(ptx.image, entry);
    }
    support_build_free(&ptx);
    free(src);
    return check_result();
}
