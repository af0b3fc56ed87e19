/* test_compile.c — the compile service without a GPU: ptxas report parsing on captured logs, NVRTC compiles for
 * sm_80/89/90, name expressions, compile errors, the disk cache (hit, miss, invalidation, damage), the time limit,
 * parallel batches and service failures. Every test uses its own mkdtemp cache directory.
 * Run: ctest --test-dir build -R test_compile --output-on-failure
 */
#include "check.h"
#include "compile.h"
#include "templates.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- captured ptxas -v output (CUDA 13.0 NVRTC) ---- */

/* sm_80: a template kernel with a local array (stack, no spills), a constant-memory user, a kernel calling a
 * non-inlined recursive device function (which spills), an extern "C" kernel. */
static const char log_sm80[] =
    "ptxas info    : 0 bytes gmem, 400 bytes cmem[3]\n"
    "ptxas info    : Compiling entry function '_Z5spillILi512EEvPfPKi' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z5spillILi512EEvPfPKi\n"
    "ptxas         .     2048 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes cumulative stack size, 1024 bytes smem, 368 "
    "bytes cmem[0]\n"
    "ptxas info    : Compile time = 36.918 ms\n"
    "ptxas info    : Compiling entry function '_Z6usecstPf' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z6usecstPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 1.952 ms\n"
    "ptxas info    : Compiling entry function '_Z6stackyPi' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z6stackyPi\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 25 registers, used 0 barriers, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 11.520 ms\n"
    "ptxas info    : Function properties for _Z3reci\n"
    "ptxas         .     32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads\n"
    "ptxas info    : Compiling entry function 'add' for 'sm_80'\n"
    "ptxas info    : Function properties for add\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 0 barriers, 372 bytes cmem[0]\n"
    "ptxas info    : Compile time = 2.780 ms\n";

/* sm_89: a kernel held to 64 registers by __launch_bounds__ that spills heavily, and one using a named barrier;
 * a ptxas warning line in front. */
static const char log_sm89_spills[] =
    "ptxas warning : Value of threads per SM for entry _Z3hotPfPKf is out of range. .minnctapersm will be ignored\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z4barsPf' for 'sm_89'\n"
    "ptxas info    : Function properties for _Z4barsPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 4 barriers, 4000 bytes smem, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 3.071 ms\n"
    "ptxas info    : Compiling entry function '_Z3hotPfPKf' for 'sm_89'\n"
    "ptxas info    : Function properties for _Z3hotPfPKf\n"
    "ptxas         .     23312 bytes stack frame, 26576 bytes spill stores, 47204 bytes spill loads\n"
    "ptxas info    : Used 64 registers, used 0 barriers, 23312 bytes cumulative stack size, 368 bytes cmem[0]\n"
    "ptxas info    : Compile time = 13067.149 ms\n";

/* sm_90: no cmem in the "Used" line. */
static const char log_sm90[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z3hotPfPKf' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z3hotPfPKf\n"
    "ptxas         .     26160 bytes stack frame, 26156 bytes spill stores, 63448 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers, 26160 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 12407.131 ms\n";

static void expect_res(const evo_kernel_res *r, int regs, int smem, int st, int ld, int stack, int cmem, int bar)
{
    CHECK_EQ_INT(r->registers, regs);
    CHECK_EQ_INT(r->smem_bytes, smem);
    CHECK_EQ_INT(r->spill_store_bytes, st);
    CHECK_EQ_INT(r->spill_load_bytes, ld);
    CHECK_EQ_INT(r->stack_frame_bytes, stack);
    CHECK_EQ_INT(r->cmem_bytes, cmem);
    CHECK_EQ_INT(r->barriers, bar);
}

static void test_ptxas_parse(void)
{
    evo_ptxas_report r;
    evo_ptxas_parse(log_sm80, &r);
    CHECK_EQ_INT(r.n, 5);
    const evo_ptxas_func *f = evo_ptxas_find(&r, "_Z5spillILi512EEvPfPKi");
    CHECK(f && f->is_entry);
    if (f) expect_res(&f->res, 32, 1024, 0, 0, 2048, 368, 1);
    f = evo_ptxas_find(&r, "_Z6usecstPf");
    CHECK(f && f->is_entry);
    if (f) expect_res(&f->res, 8, 0, 0, 0, 0, 360, 0);
    f = evo_ptxas_find(&r, "_Z6stackyPi");
    if (f) expect_res(&f->res, 25, 0, 0, 0, 0, 360, 0);
    f = evo_ptxas_find(&r, "_Z3reci"); /* a device function: stack and spills only */
    CHECK(f && !f->is_entry);
    if (f) expect_res(&f->res, -1, -1, 32, 32, 32, -1, -1);
    f = evo_ptxas_find(&r, "add");
    CHECK(f && f->is_entry);
    if (f) expect_res(&f->res, 10, 0, 0, 0, 0, 372, 0);
    CHECK(evo_ptxas_find(&r, "_Z5spill") == NULL);
    CHECK_STR(r.funcs[0].name, "_Z5spillILi512EEvPfPKi");
    CHECK_STR(r.funcs[4].name, "add");
    evo_ptxas_report_free(&r);

    evo_ptxas_parse(log_sm89_spills, &r);
    CHECK_EQ_INT(r.n, 2);
    f = evo_ptxas_find(&r, "_Z3hotPfPKf");
    CHECK(f && f->is_entry);
    if (f) expect_res(&f->res, 64, 0, 26576, 47204, 23312, 368, 0);
    f = evo_ptxas_find(&r, "_Z4barsPf");
    if (f) expect_res(&f->res, 10, 4000, 0, 0, 0, 360, 4);
    evo_ptxas_report_free(&r);

    evo_ptxas_parse(log_sm90, &r);
    CHECK_EQ_INT(r.n, 1);
    if (r.n == 1) expect_res(&r.funcs[0].res, 32, 0, 26156, 63448, 26160, 0, 0);
    evo_ptxas_report_free(&r);

    /* Older ptxas: no barrier count, two constant banks, properties before the entry line, CRLF endings. */
    evo_ptxas_parse("ptxas info    : Function properties for k1\r\n"
                    "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\r\n"
                    "ptxas info    : Compiling entry function 'k1' for 'sm_80'\r\n"
                    "ptxas info    : Used 24 registers, 64 bytes smem, 352 bytes cmem[0], 8 bytes cmem[2]\r\n",
                    &r);
    CHECK_EQ_INT(r.n, 1);
    if (r.n == 1) {
        CHECK(r.funcs[0].is_entry);
        CHECK_STR(r.funcs[0].name, "k1");
        expect_res(&r.funcs[0].res, 24, 64, 4, 12, 8, 360, 0);
    }
    evo_ptxas_report_free(&r);

    /* Not a ptxas report at all. */
    evo_ptxas_parse("prog.cu(2): error: identifier \"x\" is undefined\nUsed 3 registers\n", &r);
    CHECK_EQ_INT(r.n, 0);
    evo_ptxas_report_free(&r);
    evo_ptxas_parse(NULL, &r);
    CHECK_EQ_INT(r.n, 0);

    char buf[128];
    evo_kernel_res res = {96, 12288, 0, 4, 16, 368, 1};
    evo_kernel_res_format(&res, buf, sizeof buf);
    CHECK_STR(buf, "regs 96, smem 12288 B, spills 0/4 B, stack 16 B, cmem 368 B, barriers 1");
    res.registers = -1;
    evo_kernel_res_format(&res, buf, sizeof buf);
    CHECK_STR(buf, "regs ?, smem 12288 B, spills 0/4 B, stack 16 B, cmem 368 B, barriers 1");
}

/* ---- helpers ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static char *make_cache(void)
{
    char tmpl[] = "/tmp/evo-test-compile-XXXXXX";
    char *d = mkdtemp(tmpl);
    CHECK(d != NULL);
    return evo_strdup(d ? d : "/tmp");
}

static void drop_cache(char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static int count_files(const char *dir, const char *suffix)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            n += count_files(path, suffix);
        else if (strstr(e->d_name, suffix))
            n++;
    }
    closedir(d);
    return n;
}

static bool no_children_left(void) { return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD; }

static const char small_src[] =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_fp8.h>\n"
    "#include \"evo_attention_abi.h\"\n"
    "template <int N, typename T> __global__ void scale(T *x, T a) { x[threadIdx.x * N] *= a; }\n"
    "namespace ns { template <int N> __global__ void k(int *a) { a[threadIdx.x] = N * a[threadIdx.x + 1]; } }\n"
    "extern \"C\" __global__ void to_half(const __nv_fp8_e4m3 *in, __half *out, evo_attn_params p)\n"
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < p.seq) out[i] = __float2half(float(in[i])); }\n";

static const char *const small_exprs[] = {"scale<4, float>", "scale<8, double>", "ns::k<7>", "to_half"};

static evo_compile_header abi_header(void)
{
    const char *text = "";
    size_t len;
    evo_status s = evo_template_get("evo_attention_abi.h", &text, &len, NULL);
    CHECK_EQ_INT(s, EVO_OK);
    return (evo_compile_header){"evo_attention_abi.h", text};
}

static evo_compile_req small_req(const evo_compile_header *h, const char *arch)
{
    return (evo_compile_req){.source = small_src,
                             .program_name = "small.cu",
                             .name_exprs = small_exprs,
                             .n_name_exprs = 4,
                             .headers = h,
                             .n_headers = 1,
                             .arch = arch,
                             .timeout_s = 120};
}

/* ---- compiling ---- */

static void test_archs_and_names(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_header h = abi_header();
    const char *archs[] = {"sm_80", "sm_89", "sm_90", "sm_90a"};
    for (size_t a = 0; a < EVO_ARRAY_LEN(archs); a++) {
        evo_compile_req q = small_req(&h, archs[a]);
        evo_compile_result r;
        evo_err e = {0};
        evo_status s = evo_compile(&o, &q, &r, &e);
        CHECK_EQ_INT(s, EVO_OK);
        if (s != EVO_OK) {
            fprintf(stderr, "%s: %s\n", archs[a], e.msg);
            continue;
        }
        if (r.outcome != EVO_COMPILE_OK) fprintf(stderr, "%s log:\n%s\n", archs[a], r.log);
        CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
        CHECK(!r.cache_hit);
        CHECK(r.cubin_len > 1000);
        CHECK(r.cubin && memcmp(r.cubin, "\177ELF", 4) == 0);
        CHECK_EQ_INT(r.n_kernels, 4);
        CHECK_EQ_INT(r.program_spill_bytes, 0);
        char want_arch[40];
        snprintf(want_arch, sizeof want_arch, "for '%s'", archs[a]);
        CHECK_CONTAINS(r.log, want_arch);
        if (r.n_kernels == 4) {
            CHECK_STR(r.kernels[0].name_expr, "scale<4, float>");
            CHECK_STR(r.kernels[0].lowered, "_Z5scaleILi4EfEvPT0_S0_");
            CHECK_STR(r.kernels[1].lowered, "_Z5scaleILi8EdEvPT0_S0_");
            CHECK_STR(r.kernels[2].lowered, "_ZN2ns1kILi7EEEvPi");
            CHECK_STR(r.kernels[3].lowered, "to_half");
            for (int k = 0; k < 4; k++) {
                CHECK(r.kernels[k].found);
                CHECK(r.kernels[k].res.registers > 0);
                CHECK_EQ_INT(r.kernels[k].res.spill_store_bytes, 0);
                CHECK_EQ_INT(r.kernels[k].res.smem_bytes, 0);
            }
        }
        const evo_compiled_kernel *k = evo_compile_result_kernel(&r, "ns::k<7>");
        CHECK(k && k == &r.kernels[2]);
        CHECK(evo_compile_result_kernel(&r, "ns::k<8>") == NULL);
        evo_compile_result_free(&r);
    }

    /* No name expressions: every entry function, under its symbol. */
    evo_compile_req q = small_req(&h, "sm_80");
    q.n_name_exprs = 0;
    q.name_exprs = NULL;
    q.source = "extern \"C\" __global__ void one(int *a) { a[0] = 1; }\n"
               "extern \"C\" __global__ void two(int *a) { __shared__ int s[64]; s[threadIdx.x] = a[threadIdx.x];\n"
               "  __syncthreads(); a[threadIdx.x] = s[63 - threadIdx.x]; }\n";
    evo_compile_result r;
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
    CHECK_EQ_INT(r.n_kernels, 2);
    const evo_compiled_kernel *two = evo_compile_result_kernel(&r, "two");
    CHECK(evo_compile_result_kernel(&r, "one") != NULL);
    CHECK(two && strcmp(two->lowered, "two") == 0);
    if (two) {
        CHECK_EQ_INT(two->res.smem_bytes, 256);
        CHECK_EQ_INT(two->res.barriers, 1);
    }
    cJSON *j = evo_compile_result_json(&r, false);
    char *txt = cJSON_PrintUnformatted(j);
    CHECK_CONTAINS(txt, "\"outcome\":\"ok\"");
    CHECK_CONTAINS(txt, "\"name_expr\":\"two\",\"lowered\":\"two\",\"found\":true");
    CHECK_CONTAINS(txt, "\"smem_bytes\":256");
    CHECK(strstr(txt, "\"log\"") == NULL);
    free(txt);
    cJSON_Delete(j);
    evo_compile_result_free(&r);
    CHECK(no_children_left());
    drop_cache(cache);
}

static void test_compile_error(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    static const char *const expr[] = {"k"};
    evo_compile_req q = {.source = "extern \"C\" __global__ void k(int *a)\n{\n    a[0] = undefined_name;\n}\n",
                         .program_name = "bad.cu",
                         .name_exprs = expr,
                         .n_name_exprs = 1,
                         .arch = "sm_89",
                         .timeout_s = 60};
    evo_compile_result r;
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
    CHECK_CONTAINS(r.log, "bad.cu(3): error");
    CHECK_CONTAINS(r.log, "undefined_name");
    CHECK(r.cubin == NULL && r.cubin_len == 0 && r.n_kernels == 0);
    CHECK(!r.cache_hit);
    char *first_log = evo_strdup(r.log);
    evo_compile_result_free(&r);
    /* Failures are cached with their log. */
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
    CHECK(r.cache_hit);
    CHECK_STR(r.log, first_log);
    free(first_log);
    evo_compile_result_free(&r);

    /* ptxas refuses 80000 bytes of static shared memory with no message of its own; the log must say why. */
    q.source = "extern \"C\" __global__ void k(float *o) { __shared__ float s[20000]; s[threadIdx.x] = o[1];\n"
               "  __syncthreads(); o[threadIdx.x] = s[threadIdx.x + 1]; }\n";
    q.arch = "sm_80";
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
    CHECK_CONTAINS(r.log, "evo: NVRTC failed without naming an error in the program; not cached");
    CHECK_CONTAINS(r.log, "\nevo: ptxas reported k: regs ");
    CHECK_CONTAINS(r.log, ", smem 80000 B, spills 0/0 B, stack 0 B, cmem ");
    CHECK_CONTAINS(r.log, " B, barriers 1 (static shared memory is limited to 48 KB)\n");
    evo_compile_result_free(&r);
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
    CHECK(!r.cache_hit);
    evo_compile_result_free(&r);

    /* A compiler starved of memory fails (ptxas says so on stderr, which lands in the log) without a fault of the
     * program: not cached, so the same request compiles once memory is back. */
    static const char *const ok_expr[] = {"ok"};
    evo_compile_req fine = {.source = "extern \"C\" __global__ void ok(int *a) { a[threadIdx.x] = 2; }\n",
                            .name_exprs = ok_expr,
                            .n_name_exprs = 1,
                            .arch = "sm_80",
                            .timeout_s = 60};
#if defined(__SANITIZE_ADDRESS__)
    /* The sanitizer's allocator serves from address space reserved up front, so the limit cannot bite. */
    (void)fine;
    printf("memory-starved compile: skipped under AddressSanitizer\n");
#else
    struct rlimit old_as, tight;
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm && fscanf(statm, "%ld", &pages) == 1 && getrlimit(RLIMIT_AS, &old_as) == 0) {
        tight = old_as;
        tight.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (16u << 20);
        CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
        evo_status s = evo_compile(&o, &fine, &r, NULL);
        setrlimit(RLIMIT_AS, &old_as);
        CHECK_EQ_INT(s, EVO_OK);
        CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
        CHECK_CONTAINS(r.log, "evo: ");
        evo_compile_result_free(&r);
        CHECK_EQ_INT(evo_compile(&o, &fine, &r, NULL), EVO_OK);
        CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
        CHECK(!r.cache_hit);
        evo_compile_result_free(&r);
    } else {
        CHECK(!"cannot read /proc/self/statm or RLIMIT_AS");
    }
    if (statm) fclose(statm);
#endif
    drop_cache(cache);
}

/* ---- cache ---- */

static void test_cache_hit_and_invalidation(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_header h = abi_header();
    evo_compile_header hs[2] = {h, {"extra.h", "#define EXTRA 1\n"}};
    evo_compile_req q = small_req(hs, "sm_80");
    q.n_headers = 2;
    static const char *const opt_a[] = {"-DFOO=1"};
    q.options = opt_a;
    q.n_options = 1;

    evo_compile_result miss, hit;
    CHECK_EQ_INT(evo_compile(&o, &q, &miss, NULL), EVO_OK);
    CHECK_EQ_INT(evo_compile(&o, &q, &hit, NULL), EVO_OK);
    CHECK(!miss.cache_hit);
    CHECK(hit.cache_hit);
    CHECK_EQ_INT(hit.outcome, EVO_COMPILE_OK);
    CHECK_STR(hit.key, miss.key);
    CHECK(hit.seconds * 5 < miss.seconds);
    printf("compile %.3f s, cache hit %.5f s\n", miss.seconds, hit.seconds);
    CHECK(hit.cubin_len == miss.cubin_len && memcmp(hit.cubin, miss.cubin, hit.cubin_len) == 0);
    CHECK_STR(hit.log, miss.log);
    CHECK_EQ_INT(hit.n_kernels, 4);
    if (hit.n_kernels == 4) {
        CHECK_STR(hit.kernels[2].lowered, "_ZN2ns1kILi7EEEvPi");
        CHECK_EQ_INT(hit.kernels[2].res.registers, miss.kernels[2].res.registers);
        CHECK_EQ_INT(hit.kernels[2].res.cmem_bytes, miss.kernels[2].res.cmem_bytes);
    }
    char key[65];
    CHECK_EQ_INT(evo_compile_key(&q, key, NULL), EVO_OK);
    CHECK_STR(key, miss.key);
    CHECK_EQ_INT(count_files(cache, ".entry"), 1);
    evo_compile_result_free(&hit);

    /* Reading the cache can be switched off; the entry is rewritten, not duplicated. */
    setenv("EVO_NO_CACHE", "1", 1);
    CHECK_EQ_INT(evo_compile(&o, &q, &hit, NULL), EVO_OK);
    CHECK(!hit.cache_hit);
    evo_compile_result_free(&hit);
    unsetenv("EVO_NO_CACHE");
    evo_compile_opts fresh = o;
    fresh.no_cache_read = true;
    CHECK_EQ_INT(evo_compile(&fresh, &q, &hit, NULL), EVO_OK);
    CHECK(!hit.cache_hit);
    evo_compile_result_free(&hit);
    CHECK_EQ_INT(count_files(cache, ".entry"), 1);

    /* One change anywhere in the request is a different key and a miss. */
    char *src2 = evo_strdup(small_src);
    *strstr(src2, "*= a") = '+'; /* one character */
    static const char *const opt_b[] = {"-DFOO=2"};
    evo_str t = {0};
    evo_str_append(&t, h.text);
    evo_str_append(&t, "\n");
    evo_compile_header h_text[2] = {{"evo_attention_abi.h", t.p}, {"extra.h", "#define EXTRA 1\n"}};
    evo_compile_header h_name[2] = {h, {"extra2.h", "#define EXTRA 1\n"}};
    static const char *const exprs_b[] = {"scale<4, float>", "scale<8, double>", "ns::k<6>", "to_half"};

    evo_compile_req variants[6];
    const char *what[6] = {"source", "option", "arch", "header text", "header name", "name expression"};
    for (int i = 0; i < 6; i++) variants[i] = q;
    variants[0].source = src2;
    variants[1].options = opt_b;
    variants[2].arch = "sm_90";
    variants[3].headers = h_text;
    variants[4].headers = h_name;
    variants[5].name_exprs = exprs_b;
    evo_compile_result vr[6];
    evo_err e = {0};
    evo_status s = evo_compile_batch(&o, variants, 6, vr, &e);
    CHECK_EQ_INT(s, EVO_OK);
    if (s != EVO_OK) fprintf(stderr, "%s\n", e.msg);
    for (int i = 0; s == EVO_OK && i < 6; i++) {
        if (vr[i].cache_hit || vr[i].outcome != EVO_COMPILE_OK)
            fprintf(stderr, "changed %s: hit %d outcome %s\n%s\n", what[i], vr[i].cache_hit,
                    evo_compile_outcome_name(vr[i].outcome), vr[i].log);
        CHECK(!vr[i].cache_hit);
        CHECK_EQ_INT(vr[i].outcome, EVO_COMPILE_OK);
        CHECK(strcmp(vr[i].key, miss.key) != 0);
        for (int j = 0; j < i; j++) CHECK(strcmp(vr[i].key, vr[j].key) != 0);
    }
    if (s == EVO_OK) {
        CHECK_CONTAINS(vr[2].log, "for 'sm_90'");
        CHECK_STR(vr[5].kernels[2].lowered, "_ZN2ns1kILi6EEEvPi");
    }
    evo_compile_results_free(vr, 6);
    CHECK_EQ_INT(count_files(cache, ".entry"), 7);
    free(src2);
    evo_str_free(&t);
    evo_compile_result_free(&miss);
    drop_cache(cache);
}

static void corrupt(const char *path, long offset_from_end, const char *bytes)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, -offset_from_end, SEEK_END);
    fwrite(bytes, 1, strlen(bytes), f);
    fclose(f);
}

static void test_corrupt_entry(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_header h = abi_header();
    evo_compile_req q = small_req(&h, "sm_89");
    evo_compile_result r;
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s/nvrtc/%.2s/%s.entry", cache, r.key, r.key);
    CHECK(evo_file_exists(path));
    evo_compile_result_free(&r);

    /* A flipped cubin byte: the checksum no longer matches, so it is a miss, and the entry is replaced. */
    corrupt(path, 100, "XXXX");
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK(!r.cache_hit);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
    evo_compile_result_free(&r);
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK(r.cache_hit);
    evo_compile_result_free(&r);

    /* Garbage and a truncated file read as misses too. */
    CHECK_EQ_INT(evo_write_file_atomic(path, "not an entry", 12, NULL), EVO_OK);
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK(!r.cache_hit);
    CHECK(r.cubin && memcmp(r.cubin, "\177ELF", 4) == 0);
    evo_compile_result_free(&r);
    CHECK(truncate(path, 200) == 0);
    CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
    CHECK(!r.cache_hit);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
    evo_compile_result_free(&r);
    CHECK_EQ_INT(count_files(cache, ".tmp."), 0);
    drop_cache(cache);
}

/* ---- time limit ---- */

/* ptxas needs more than ten seconds for this (a fully unrolled 96x96 loop over 96 values held in 64 registers). */
static const char slow_src[] = "__global__ void __launch_bounds__(1024, 2) hot(float *o, const float *in)\n"
                               "{\n"
                               "    float r[96];\n"
                               "#pragma unroll\n"
                               "    for (int i = 0; i < 96; i++) r[i] = in[threadIdx.x + i * 1024];\n"
                               "    float s = 0;\n"
                               "#pragma unroll\n"
                               "    for (int j = 0; j < 96; j++)\n"
                               "#pragma unroll\n"
                               "        for (int i = 0; i < 96; i++) s += r[i] * r[(i + j) % 96];\n"
                               "    o[threadIdx.x] = s;\n"
                               "}\n";

static void test_timeout(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_req q = {.source = slow_src, .program_name = "slow.cu", .arch = "sm_80", .timeout_s = 1.0};
    for (int round = 0; round < 2; round++) {
        evo_compile_result r;
        double t0 = evo_now();
        CHECK_EQ_INT(evo_compile(&o, &q, &r, NULL), EVO_OK);
        double wall = evo_now() - t0;
        CHECK_EQ_INT(r.outcome, EVO_COMPILE_TIMEOUT);
        CHECK(!r.cache_hit); /* timeouts are never cached */
        CHECK(r.seconds >= 1.0 && r.seconds < 2.5);
        CHECK(wall < 2.5);
        CHECK_CONTAINS(r.log, "time limit");
        CHECK(r.cubin == NULL && r.n_kernels == 0);
        CHECK(no_children_left());
        evo_compile_result_free(&r);
    }
    CHECK_EQ_INT(count_files(cache, ".entry"), 0);
    CHECK_EQ_INT(count_files(cache, ".tmp."), 0);

    /* The interrupt flag stops a batch at once and leaves no child behind. */
    volatile sig_atomic_t stop = 1;
    o.interrupt = &stop;
    q.timeout_s = 0;
    evo_compile_result r;
    evo_err e = {0};
    double t0 = evo_now();
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_E_INTERRUPTED);
    CHECK(evo_now() - t0 < 2.0);
    CHECK(r.log == NULL && r.cubin == NULL);
    CHECK(no_children_left());
    drop_cache(cache);
}

/* ---- batches ---- */

typedef struct {
    int calls;
    int seen[16];
} progress;

static void on_result(void *ctx, int index, const evo_compile_result *r)
{
    progress *p = ctx;
    p->calls++;
    if (index >= 0 && index < 16 && r->log) p->seen[index]++;
}

static void test_parallel_batch(void)
{
    char *cache = make_cache();
    progress pg = {0};
    evo_compile_opts o = {.cache_dir = cache, .jobs = 2, .on_result = on_result, .ctx = &pg};
    enum { N = 6 };
    char *src[N], *expr_text[N], lowered[N][64];
    const char *exprs[N][1];
    evo_compile_req q[N];
    for (int i = 0; i < N; i++) {
        evo_str s = {0};
        evo_str_appendf(&s,
                        "template <int N> __global__ void k%d(float *x) {\n"
                        "  float acc = 0;\n"
                        "#pragma unroll\n"
                        "  for (int j = 0; j < 64; j++) acc += x[threadIdx.x + j * N] * %d.0f;\n"
                        "  x[threadIdx.x] = acc; }\n",
                        i, i + 1);
        src[i] = evo_str_take(&s);
        evo_str_appendf(&s, "k%d<%d>", i, 10 + i);
        expr_text[i] = evo_str_take(&s);
        exprs[i][0] = expr_text[i];
        snprintf(lowered[i], sizeof lowered[i], "_Z2k%dILi%dEEvPf", i, 10 + i);
        q[i] = (evo_compile_req){.source = src[i],
                                 .name_exprs = exprs[i],
                                 .n_name_exprs = 1,
                                 .arch = i % 2 ? "sm_89" : "sm_90",
                                 .timeout_s = 120};
    }
    evo_compile_result r[N];
    double t0 = evo_now();
    evo_err e = {0};
    evo_status s = evo_compile_batch(&o, q, N, r, &e);
    double wall = evo_now() - t0;
    CHECK_EQ_INT(s, EVO_OK);
    if (s != EVO_OK) fprintf(stderr, "%s\n", e.msg);
    double sum = 0;
    for (int i = 0; s == EVO_OK && i < N; i++) {
        CHECK_EQ_INT(r[i].outcome, EVO_COMPILE_OK);
        CHECK(!r[i].cache_hit);
        CHECK_EQ_INT(r[i].n_kernels, 1);
        if (r[i].n_kernels == 1) {
            CHECK_STR(r[i].kernels[0].name_expr, expr_text[i]);
            CHECK_STR(r[i].kernels[0].lowered, lowered[i]);
            CHECK(r[i].kernels[0].found && r[i].kernels[0].res.registers > 0);
        }
        CHECK_CONTAINS(r[i].log, lowered[i]);
        CHECK_CONTAINS(r[i].log, i % 2 ? "'sm_89'" : "'sm_90'");
        CHECK_EQ_INT(pg.seen[i], 1);
        sum += r[i].seconds;
    }
    CHECK_EQ_INT(pg.calls, N);
    /* Two children at a time: their compile times overlap, so they add up to more than the wall time. */
    printf("batch of %d with 2 jobs: wall %.3f s, sum of compiles %.3f s\n", N, wall, sum);
    CHECK(sum > 1.4 * wall);
    CHECK(no_children_left());
    evo_compile_results_free(r, N);

    /* Identical requests in one batch compile once; the copy says it was not compiled. */
    evo_compile_req dup[3] = {q[0], q[1], q[0]};
    dup[0].arch = dup[2].arch = "sm_80";
    pg = (progress){0};
    CHECK_EQ_INT(evo_compile_batch(&o, dup, 3, r, NULL), EVO_OK);
    CHECK(!r[0].cache_hit && r[1].cache_hit && r[2].cache_hit);
    CHECK_STR(r[0].key, r[2].key);
    CHECK(r[2].cubin != r[0].cubin && r[2].cubin_len == r[0].cubin_len);
    CHECK(r[2].n_kernels == 1 && strcmp(r[2].kernels[0].lowered, lowered[0]) == 0);
    CHECK_EQ_INT(pg.calls, 3);
    evo_compile_results_free(r, 3);
    for (int i = 0; i < N; i++) {
        free(src[i]);
        free(expr_text[i]);
    }
    drop_cache(cache);
}

/* ---- failures of the service itself ---- */

static void test_service_errors(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    static const char *const expr[] = {"k"};
    evo_compile_req q = {.source = "extern \"C\" __global__ void k(int *a) { a[0] = 1; }\n",
                         .name_exprs = expr,
                         .n_name_exprs = 1,
                         .arch = "sm_80",
                         .timeout_s = 60};
    evo_compile_result r[2];
    evo_err e = {0};

    static const char *const bad_opt[] = {"--no-such-option"};
    evo_compile_req bad = q;
    bad.options = bad_opt;
    bad.n_options = 1;
    evo_compile_req two[2] = {q, bad};
    CHECK_EQ_INT(evo_compile_batch(&o, two, 2, r, &e), EVO_E_CONFIG);
    CHECK_CONTAINS(e.msg, "--no-such-option");
    CHECK(r[0].log == NULL && r[1].log == NULL); /* nothing half-returned */
    CHECK(no_children_left());

    const char *bad_archs[] = {"sm_8", "compute_80", "sm_80x", "", NULL};
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad_archs); i++) {
        bad = q;
        bad.arch = bad_archs[i];
        CHECK_EQ_INT(evo_compile(&o, &bad, r, &e), EVO_E_CONFIG);
        CHECK_CONTAINS(e.msg, "sm_NN");
    }
    bad = q;
    bad.source = NULL;
    CHECK_EQ_INT(evo_compile(&o, &bad, r, &e), EVO_E_CONFIG);

    /* A cache directory that cannot exist (below a regular file). */
    char file_path[4096];
    snprintf(file_path, sizeof file_path, "%s/plain-file", cache);
    CHECK_EQ_INT(evo_write_file_atomic(file_path, "x", 1, NULL), EVO_OK);
    strcat(file_path, "/cache");
    evo_compile_opts bad_cache = {.cache_dir = file_path};
    CHECK_EQ_INT(evo_compile(&bad_cache, &q, r, &e), EVO_E_IO);
    CHECK_CONTAINS(e.msg, "plain-file");
    CHECK(no_children_left());
    drop_cache(cache);
}

static void test_cache_dir_and_version(void)
{
    char *dir = NULL;
    char *home = getenv("HOME") ? evo_strdup(getenv("HOME")) : NULL;
    evo_err e = {0};
    setenv("EVO_CACHE", "/tmp/evo-cache", 1);
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, NULL), EVO_OK);
    CHECK_STR(dir, "/tmp/evo-cache");
    free(dir);
    /* the cache folder is made, but never a folder above the one the variable names */
    setenv("EVO_CACHE", "/nonexistent-evo/evo-cache", 1);
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, &e), EVO_E_CONFIG);
    CHECK_STR(e.msg, "compile cache /nonexistent-evo/evo-cache: EVO_CACHE=/nonexistent-evo/evo-cache, but "
                     "/nonexistent-evo is not a folder; evo does not create it (set EVO_CACHE to a folder whose "
                     "parent exists)");
    unsetenv("EVO_CACHE");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, NULL), EVO_OK);
    CHECK_STR(dir, "/tmp/xdg/evo");
    free(dir);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/tmp", 1);
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, NULL), EVO_OK);
    CHECK_STR(dir, "/tmp/.cache/evo");
    free(dir);
    setenv("HOME", "/nonexistent", 1); /* was: /nonexistent/.cache/evo created */
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, &e), EVO_E_CONFIG);
    CHECK_CONTAINS(e.msg, "HOME=/nonexistent, but /nonexistent is not a folder; evo does not create it");
    unsetenv("HOME");
    CHECK_EQ_INT(evo_compile_cache_dir(&dir, &e), EVO_E_CONFIG);
    CHECK_CONTAINS(e.msg, "EVO_CACHE");
    if (home) setenv("HOME", home, 1);
    free(home);

    const char *v = evo_nvrtc_version();
    int major = 0, minor = -1, used = 0;
    CHECK(sscanf(v, "%d.%d%n", &major, &minor, &used) == 2 && v[used] == '\0');
    CHECK(major >= 12 && minor >= 0);
    printf("NVRTC %s\n", v);
}

/* ---- the compile process's limits and sandbox ---- */

/* A template whose instantiations double with each level: ~2^40 types, gigabytes within seconds. */
static const char bomb_src[] = "template <int D, long I> struct T { T<D - 1, 2 * I> a; T<D - 1, 2 * I + 1> b; };\n"
                               "template <long I> struct T<0, I> { char c; };\n"
                               "extern \"C\" __global__ void k(long *o) { *o = sizeof(T<40, 0>); }\n";

typedef struct {
    const evo_compile_opts *o;
    const evo_compile_req *q;
    evo_status s;
} limits_probe;

static void *compile_in_thread(void *arg)
{
    limits_probe *p = arg;
    evo_compile_result r;
    p->s = evo_compile(p->o, p->q, &r, NULL);
    evo_compile_result_free(&r);
    return NULL;
}

/* /proc/PID/limits of a child of this process, once one exists (the compile process); "" until then. */
static void read_child_limits(char *out, size_t n)
{
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], line[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long ppid = 0;
        const char *rp = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
        fclose(f);
        if (!rp || sscanf(rp + 2, "%*c %ld", &ppid) != 1 || ppid != (long)getpid()) continue;
        snprintf(path, sizeof path, "/proc/%s/limits", e->d_name);
        char *text = NULL;
        size_t len = 0;
        if (evo_read_file(path, &text, &len, NULL) == EVO_OK) snprintf(out, n, "%s", text);
        free(text);
    }
    if (d) closedir(d);
}

static void test_limits(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_result r;
    evo_err e = {0};

    /* memory, watched by the parent: 1 GiB (what CI can spare), killed within seconds, not cached */
    evo_compile_req q = {
        .source = bomb_src, .program_name = "bomb.cu", .arch = "sm_80", .timeout_s = 60, .limits = {.memory_mb = 1024}};
    double t0 = evo_now();
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_LIMIT);
    CHECK(evo_now() - t0 < 30);
    CHECK(r.peak_rss > (int64_t)1024 << 20);
    CHECK_CONTAINS(r.why, "memory limit: the compile process grew to ");
    CHECK_CONTAINS(r.why, "MiB, past its limit of 1024 MiB (compile.max_memory_mb)");
    CHECK_CONTAINS(r.log, r.why);
    CHECK_STR(evo_compile_outcome_name(r.outcome), "limit");
    CHECK(no_children_left());
    evo_compile_result_free(&r);
    CHECK_EQ_INT(count_files(cache, ".entry"), 0);

    /* CPU time (RLIMIT_CPU): ptxas takes ten seconds and more over slow_src */
    q = (evo_compile_req){
        .source = slow_src, .program_name = "slow.cu", .arch = "sm_80", .timeout_s = 60, .limits = {.cpu_s = 1}};
    t0 = evo_now();
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_LIMIT);
    CHECK(evo_now() - t0 < 10);
    CHECK_CONTAINS(r.why, "CPU time limit: the compile process used ");
    CHECK_CONTAINS(r.why, "s of CPU, its limit is 1 s (compile.max_cpu_s)");
    evo_compile_result_free(&r);

    /* the wall-clock limit names itself and its value */
    q.limits.cpu_s = 0;
    q.timeout_s = 1;
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_TIMEOUT);
    CHECK_STR(r.why, "timeout: the compile process was killed at its time limit of 1 s (compile.timeout_s)");
    CHECK_STR(evo_compile_result_why(&r), r.why);
    evo_compile_result_free(&r);

    /* output (RLIMIT_FSIZE): a log of megabytes cannot be written into a 1 MiB cache entry */
    evo_str big = {0};
    evo_str_append(&big, "extern \"C\" __global__ void k(float *o) { o[0] = 1; }\n");
    for (int i = 0; i < 30000; i++) evo_str_appendf(&big, "#warning a line to make the log large, number %d\n", i);
    q = (evo_compile_req){.source = evo_str_cstr(&big),
                          .program_name = "loud.cu",
                          .arch = "sm_80",
                          .timeout_s = 60,
                          .limits = {.output_mb = 1}};
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_LIMIT);
    CHECK_STR(r.why, "output limit: the compile process wrote more than 1 MiB to one file (compile.max_output_mb)");
    evo_compile_result_free(&r);
    q.limits.output_mb = 0; /* the default, 256 MiB, holds it */
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
    evo_compile_result_free(&r);
    evo_str_free(&big);

    /* every limit is the compile process's own: read from /proc while it compiles */
    q = (evo_compile_req){.source = slow_src,
                          .program_name = "slow.cu",
                          .arch = "sm_80",
                          .timeout_s = 30,
                          .limits = {.cpu_s = 7, .output_mb = 3, .open_files = 40}};
    volatile sig_atomic_t stop = 0;
    evo_compile_opts stoppable = {.cache_dir = cache, .interrupt = &stop};
    limits_probe lp = {.o = &stoppable, .q = &q};
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, compile_in_thread, &lp), 0);
    char limits[8192] = "";
    /* the child sets its limits right after it starts: read until they show (or 10 s pass) */
    for (double end = evo_now() + 10; !strstr(limits, "Max open files            40 ") && evo_now() < end;
         usleep(20000))
        read_child_limits(limits, sizeof limits);
    stop = 1; /* seen, no need to wait for the compile */
    pthread_join(th, NULL);
    CHECK_EQ_INT(lp.s, EVO_E_INTERRUPTED);
    CHECK(strstr(limits, "Max cpu time              7                    8                    seconds") != NULL);
    CHECK(strstr(limits, "Max file size             3145728              3145728              bytes") != NULL);
    CHECK(strstr(limits, "Max open files            40                   40                   files") != NULL);
    if (!strstr(limits, "Max open files            40")) fprintf(stderr, "the compile process's limits:\n%s\n", limits);

    /* bad limits are a malformed request */
    q.limits = (evo_compile_limits){.memory_mb = -1};
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_E_CONFIG);
    CHECK_CONTAINS(e.msg, "a limit is negative");
    CHECK(no_children_left());
    drop_cache(cache);
}

/* An include of a file outside the allowed folders, spelled every way a scan of the text would miss. */
static void test_sandbox(void)
{
    char *cache = make_cache();
    evo_compile_opts o = {.cache_dir = cache};
    evo_compile_result r;
    evo_err e = {0};
    char why[256];
    if (!evo_sandbox_available(why, sizeof why)) {
        printf("test_sandbox: skipped, %s\n", why);
        drop_cache(cache);
        return;
    }
    char secret_dir[4096], secret[4200], kdir[4096], link[4200];
    snprintf(secret_dir, sizeof secret_dir, "%s/x", cache);
    snprintf(kdir, sizeof kdir, "%s/kernels", cache);
    CHECK_EQ_INT(evo_mkdir_p(secret_dir, NULL), EVO_OK);
    CHECK_EQ_INT(evo_mkdir_p(kdir, NULL), EVO_OK);
    snprintf(secret, sizeof secret, "%s/secret.txt", secret_dir);
    CHECK_EQ_INT(evo_write_file_atomic(secret, "SECRET_7b1d_TOKEN\n", 18, NULL), EVO_OK);
    snprintf(link, sizeof link, "%s/inside.h", kdir);
    CHECK_EQ_INT(symlink(secret, link), 0);
    setenv("EVO_TEST_SECRET", "SECRET_7b1d_TOKEN", 1); /* in /proc/self/environ of the compile process */
    evo_str src[4] = {{0}};
    evo_str_appendf(&src[0], "#include \"%s\"\n", secret);
    evo_str_append(&src[1], "#include \"/proc/self/environ\"\n");
    evo_str_append(&src[2], "#include \"inside.h\"\n"); /* a link in the kernel's own folder */
    evo_str_appendf(&src[3],
                    "#define STR(x) #x\n#define XSTR(x) STR(x)\n#define DIR %s\n#include XSTR(DIR/secret.txt)\n",
                    secret_dir);
    const char *names[] = {secret, "/proc/self/environ", "inside.h", secret};
    const char *const read_dirs[] = {kdir};
    for (int i = 0; i < 4; i++) {
        evo_compile_req q = {.source = evo_str_cstr(&src[i]),
                             .program_name = "hostile.cu",
                             .arch = "sm_80",
                             .timeout_s = 60,
                             .read_dirs = read_dirs,
                             .n_read_dirs = 1};
        CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
        CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
        char want[600];
        snprintf(want, sizeof want, "access denied: \"%s\" is outside what the compiler may read", names[i]);
        CHECK_CONTAINS(r.why, want);
        CHECK(strstr(r.log, "SECRET_7b1d_TOKEN") == NULL);
        evo_compile_result_free(&r);
        /* a denial depends on the sandbox, not the text alone: never taken from the cache */
        CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
        CHECK(!r.cache_hit);
        CHECK_CONTAINS(r.why, want);
        evo_compile_result_free(&r);
    }

    /* the kernel's own folder is readable, and it is the working directory: its helper wins over the cwd's */
    char helper[4200];
    snprintf(helper, sizeof helper, "%s/helper.h", kdir);
    CHECK_EQ_INT(evo_write_file_atomic(helper, "#define TWO 2\n", 14, NULL), EVO_OK);
    static const char *const expr[] = {"k"};
    evo_compile_req q = {.source = "#include \"helper.h\"\nextern \"C\" __global__ void k(int *o) { o[0] = TWO; }\n",
                         .program_name = "fine.cu",
                         .name_exprs = expr,
                         .n_name_exprs = 1,
                         .arch = "sm_80",
                         .timeout_s = 60,
                         .read_dirs = read_dirs,
                         .n_read_dirs = 1};
    CHECK_EQ_INT(evo_compile(&o, &q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_OK);
    evo_compile_result_free(&r);

    /* without Landlock (EVO_NO_LANDLOCK=1 stands for such a kernel): "auto" compiles unconfined, and the secret
     * is quoted, which is what the sandbox is for; "required" refuses to compile at all */
    setenv("EVO_NO_LANDLOCK", "1", 1);
    evo_compile_req open_q = {
        .source = evo_str_cstr(&src[0]), .program_name = "hostile.cu", .arch = "sm_80", .timeout_s = 60};
    CHECK_EQ_INT(evo_compile(&o, &open_q, &r, &e), EVO_OK);
    CHECK_EQ_INT(r.outcome, EVO_COMPILE_ERROR);
    CHECK_CONTAINS(r.log, "SECRET_7b1d_TOKEN");
    evo_compile_result_free(&r);
    open_q.limits.sandbox = EVO_SANDBOX_REQUIRED;
    CHECK_EQ_INT(evo_compile(&o, &open_q, &r, &e), EVO_E_CONFIG);
    CHECK_STR(e.msg, "compile.sandbox is required, but EVO_NO_LANDLOCK is set");
    unsetenv("EVO_NO_LANDLOCK");
    unsetenv("EVO_TEST_SECRET");
    for (int i = 0; i < 4; i++) evo_str_free(&src[i]);
    CHECK(no_children_left());
    drop_cache(cache);
}

int main(void)
{
    /* Nothing here may touch the user's cache: every compile below names its own directory. */
    unsetenv("EVO_NO_CACHE");
    test_ptxas_parse();
    test_archs_and_names();
    test_compile_error();
    test_cache_hit_and_invalidation();
    test_corrupt_entry();
    test_timeout();
    test_parallel_batch();
    test_service_errors();
    test_cache_dir_and_version();
    test_limits();
    test_sandbox();
    return check_result();
}
