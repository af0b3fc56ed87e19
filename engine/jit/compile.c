/* compile.c — the compile service (see compile.h): request keys, the on-disk cache, the NVRTC child process and
 * the batch loop that keeps `jobs` children running, each under its time limit.
 * A cache entry is one file, <cache>/nvrtc/<key[0..1]>/<key>.entry: a header line
 * "evo-nvrtc-entry 1 <json bytes> <cubin bytes>\n", the result as JSON, then the cubin. One file, so one
 * rename(2) publishes an entry whole; the JSON carries the cubin's SHA-256, so a damaged entry reads as a miss. */
#include "compile.h"

#include "util.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <nvrtc.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define ENTRY_MAGIC "evo-nvrtc-entry"
#define ENTRY_FORMAT 1
/* Bounds how long the batch loop sleeps, so the interrupt flag and a child whose pipe never reports EOF (its
 * write end inherited by a sibling process) are noticed promptly. */
#define POLL_CAP_MS 100
/* Every arch evo targets caps static (non-dynamic) shared memory per block at 48 KB. */
#define STATIC_SMEM_MAX (48 * 1024)
/* What a child writes to its pipe after publishing the cache entry; or, when a limit ended it, "limit:" and why. */
#define CHILD_DONE "done"
#define CHILD_LIMIT "limit:"
/* ... or, when a signal asked it to stop, "signal:" and the signal's number (see child_signals). */
#define CHILD_SIGNAL "signal:"

#ifndef EVO_CUDA_INCLUDE_DIR
#define EVO_CUDA_INCLUDE_DIR ""
#endif

/* ---- NVRTC identity ---- */

static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;
static char g_nvrtc_version[32];
static char g_nvrtc_build[512];

static void nvrtc_identify(void)
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) major = minor = 0;
    snprintf(g_nvrtc_version, sizeof g_nvrtc_version, "%d.%d", major, minor);
    /* major.minor alone misses patch releases, which change code generation: add the library file's size and
     * modification time. */
    snprintf(g_nvrtc_build, sizeof g_nvrtc_build, "%s", g_nvrtc_version);
    Dl_info info;
    struct stat st;
    if (dladdr((void *)nvrtcVersion, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0) {
        const char *base = strrchr(info.dli_fname, '/');
        snprintf(g_nvrtc_build, sizeof g_nvrtc_build, "%s %s %lld %lld", g_nvrtc_version,
                 base ? base + 1 : info.dli_fname, (long long)st.st_size, (long long)st.st_mtime);
    }
}

const char *evo_nvrtc_version(void)
{
    pthread_once(&g_nvrtc_once, nvrtc_identify);
    return g_nvrtc_version;
}

static const char *nvrtc_build(void)
{
    pthread_once(&g_nvrtc_once, nvrtc_identify);
    return g_nvrtc_build;
}

/* ---- requests: validation, options, key ---- */

typedef struct {
    char **v;
    int n;
} strlist;

static void strlist_add(strlist *l, char *owned)
{
    l->v = evo_xrealloc(l->v, sizeof *l->v * (size_t)(l->n + 1));
    l->v[l->n++] = owned;
}

static void strlist_free(strlist *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool has_cuda_headers(const char *dir)
{
    evo_str path = {0};
    evo_str_appendf(&path, "%s/cuda_fp16.h", dir);
    bool ok = *dir && evo_file_exists(path.p);
    evo_str_free(&path);
    return ok;
}

/* The toolkit's include directory (build-time one first: its headers match the NVRTC evo links), then
 * $CUDA_HOME/include, then /usr/local/cuda/include; plus its cccl/ where <cuda/std/...> lives since CUDA 13.
 * Returns how many of dirs[0..1] it filled. */
static int toolkit_include_dirs(char dirs[2][4096])
{
    char *dir = dirs[0];
    dir[0] = '\0';
    const char *built = EVO_CUDA_INCLUDE_DIR; /* a CMake list: "a;b" */
    for (const char *p = built; *p && !dir[0];) {
        const char *semi = strchr(p, ';');
        size_t n = semi ? (size_t)(semi - p) : strlen(p);
        if (n < 4096) {
            memcpy(dir, p, n);
            dir[n] = '\0';
            if (!has_cuda_headers(dir)) dir[0] = '\0';
        }
        p += n + (semi ? 1 : 0);
    }
    const char *home = getenv("CUDA_HOME");
    if (!dir[0] && home && *home) {
        snprintf(dir, 4096, "%.4000s/include", home);
        if (!has_cuda_headers(dir)) dir[0] = '\0';
    }
    if (!dir[0] && has_cuda_headers("/usr/local/cuda/include")) snprintf(dir, 4096, "/usr/local/cuda/include");
    if (!dir[0]) return 0; /* the program may need no toolkit header; if it does, the log says which */
    snprintf(dirs[1], 4096, "%.4000s/cccl", dir);
    struct stat st;
    return stat(dirs[1], &st) == 0 && S_ISDIR(st.st_mode) ? 2 : 1;
}

static void add_include_options(strlist *opts)
{
    char dirs[2][4096];
    const int n = toolkit_include_dirs(dirs);
    for (int i = 0; i < n; i++) {
        evo_str s = {0};
        evo_str_appendf(&s, "-I%s", dirs[i]);
        strlist_add(opts, evo_str_take(&s));
    }
}

static const char *req_name(const evo_compile_req *r) { return r->program_name ? r->program_name : "program.cu"; }

static bool arch_valid(const char *a)
{
    if (!a || strncmp(a, "sm_", 3) != 0) return false;
    const char *p = a + 3;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == 'a' || *p == 'f') p++;
    return (digits == 2 || digits == 3) && *p == '\0';
}

static evo_status req_check(const evo_compile_req *r, evo_err *err)
{
    const char *name = req_name(r);
    if (!r->source) return evo_fail(err, EVO_E_CONFIG, "compile %s: no source", name);
    if (!arch_valid(r->arch))
        return evo_fail(err, EVO_E_CONFIG, "compile %s: arch \"%s\" is not of the form sm_NN (sm_80, sm_90a)", name,
                        r->arch ? r->arch : "(none)");
    if (r->n_name_exprs < 0 || (r->n_name_exprs > 0 && !r->name_exprs) || r->n_headers < 0 ||
        (r->n_headers > 0 && !r->headers) || r->n_options < 0 || (r->n_options > 0 && !r->options))
        return evo_fail(err, EVO_E_CONFIG, "compile %s: a count is negative or its array is missing", name);
    for (int i = 0; i < r->n_name_exprs; i++)
        if (!r->name_exprs[i] || !*r->name_exprs[i])
            return evo_fail(err, EVO_E_CONFIG, "compile %s: name expression %d is empty", name, i);
    for (int i = 0; i < r->n_headers; i++)
        if (!r->headers[i].name || !*r->headers[i].name || !r->headers[i].text)
            return evo_fail(err, EVO_E_CONFIG, "compile %s: header %d has no name or no text", name, i);
    for (int i = 0; i < r->n_options; i++)
        if (!r->options[i]) return evo_fail(err, EVO_E_CONFIG, "compile %s: option %d is missing", name, i);
    if (isnan(r->timeout_s)) return evo_fail(err, EVO_E_CONFIG, "compile %s: timeout is not a number", name);
    const evo_compile_limits *l = &r->limits;
    if (!(l->memory_mb >= 0) || !(l->cpu_s >= 0) || !(l->output_mb >= 0) || l->open_files < 0 ||
        (unsigned)l->sandbox > EVO_SANDBOX_OFF)
        return evo_fail(err, EVO_E_CONFIG, "compile %s: a limit is negative or not a number", name);
    if (r->n_read_dirs < 0 || (r->n_read_dirs > 0 && !r->read_dirs))
        return evo_fail(err, EVO_E_CONFIG, "compile %s: read_dirs is missing", name);
    for (int i = 0; i < r->n_read_dirs; i++)
        if (!r->read_dirs[i] || r->read_dirs[i][0] != '/')
            return evo_fail(err, EVO_E_CONFIG, "compile %s: read_dirs[%d] is not an absolute path", name, i);
    return EVO_OK;
}

/* Everything NVRTC is told, in order. */
static void req_options(const evo_compile_req *r, strlist *opts)
{
    evo_str s = {0};
    evo_str_appendf(&s, "-arch=%s", r->arch);
    strlist_add(opts, evo_str_take(&s));
    strlist_add(opts, evo_strdup("-std=c++17"));
    strlist_add(opts, evo_strdup("--ptxas-options=-v"));
    add_include_options(opts);
    for (int i = 0; i < r->n_options; i++) strlist_add(opts, evo_strdup(r->options[i]));
}

/* A cache key as every path and lookup takes it: 64 lowercase hex digits (so it names a file and a shard). */
bool evo_compile_key_valid(const char *key)
{
    for (int i = 0; i < 64; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return false;
    return key[64] == '\0';
}

/* Tag, length, bytes: no two different requests hash the same byte stream. */
static void key_field(evo_sha256 *c, const char *tag, const char *data)
{
    size_t len = strlen(data);
    uint8_t n[8];
    for (int i = 0; i < 8; i++) n[i] = (uint8_t)((uint64_t)len >> (8 * i));
    evo_sha256_update(c, tag, strlen(tag) + 1);
    evo_sha256_update(c, n, sizeof n);
    evo_sha256_update(c, data, len);
}

static void req_key(const evo_compile_req *r, const strlist *opts, char key[65])
{
    evo_sha256 c;
    evo_sha256_init(&c);
    key_field(&c, "format", ENTRY_MAGIC " 1");
    key_field(&c, "nvrtc", nvrtc_build());
    key_field(&c, "arch", r->arch);
    key_field(&c, "name", req_name(r));
    key_field(&c, "source", r->source);
    for (int i = 0; i < r->n_headers; i++) {
        key_field(&c, "header-name", r->headers[i].name);
        key_field(&c, "header-text", r->headers[i].text);
    }
    for (int i = 0; i < r->n_name_exprs; i++) key_field(&c, "name-expr", r->name_exprs[i]);
    for (int i = 0; i < opts->n; i++) key_field(&c, "option", opts->v[i]);
    uint8_t d[32];
    evo_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) snprintf(key + 2 * i, 3, "%02x", d[i]);
    EVO_ASSERT(evo_compile_key_valid(key));
}

evo_status evo_compile_key(const evo_compile_req *req, char key[65], evo_err *err)
{
    evo_status s = req_check(req, err);
    if (s != EVO_OK) return s;
    strlist opts = {0};
    req_options(req, &opts);
    req_key(req, &opts, key);
    strlist_free(&opts);
    return EVO_OK;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder above path ("." for a bare name), malloc'd. */
static char *parent_of(const char *path)
{
    evo_str s = {0};
    evo_str_append(&s, path);
    char *p = s.p;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    char *slash = strrchr(p, '/');
    if (!slash) {
        evo_str_free(&s);
        return evo_strdup(".");
    }
    if (slash == p)
        slash[1] = '\0';
    else
        *slash = '\0';
    return evo_str_take(&s);
}

evo_status evo_compile_cache_dir(char **dir, evo_err *err)
{
    /* evo creates the cache folder and, under HOME, .cache; never a folder above what the variable names, so a
     * HOME or EVO_CACHE that points nowhere is said, not built (HOME=/nonexistent made /nonexistent/.cache/evo). */
    const char *v, *var;
    char *must = NULL; /* a folder that must exist already */
    evo_str s = {0};
    if ((v = getenv(var = "EVO_CACHE")) && *v)
        evo_str_append(&s, v), must = parent_of(v);
    else if ((v = getenv(var = "XDG_CACHE_HOME")) && *v)
        evo_str_appendf(&s, "%s/evo", v), must = parent_of(v);
    else if ((v = getenv(var = "HOME")) && *v)
        evo_str_appendf(&s, "%s/.cache/evo", v), must = evo_strdup(v);
    else
        return evo_fail(err, EVO_E_CONFIG, "no compile cache directory: set EVO_CACHE (or HOME)");
    const bool ok = is_dir(must);
    if (!ok)
        evo_fail(err, EVO_E_CONFIG,
                 "compile cache %s: %s=%s, but %s is not a folder; evo does not create it (set "
                 "EVO_CACHE to a folder whose parent exists)",
                 evo_str_cstr(&s), var, v, must);
    free(must);
    if (!ok) {
        evo_str_free(&s);
        return EVO_E_CONFIG;
    }
    *dir = evo_str_take(&s);
    return EVO_OK;
}

/* ---- results ---- */

const char *evo_compile_outcome_name(evo_compile_outcome o)
{
    switch (o) {
        case EVO_COMPILE_OK: return "ok";
        case EVO_COMPILE_ERROR: return "compile_error";
        case EVO_COMPILE_TIMEOUT: return "timeout";
        case EVO_COMPILE_LIMIT: return "limit";
    }
    return "?";
}

const char *evo_compile_result_why(const evo_compile_result *r)
{
    return r->why[0] ? r->why : evo_compile_outcome_name(r->outcome);
}

void evo_compile_result_free(evo_compile_result *r)
{
    if (!r) return;
    free(r->log);
    free(r->cubin);
    for (int i = 0; i < r->n_kernels; i++) {
        free(r->kernels[i].name_expr);
        free(r->kernels[i].lowered);
    }
    free(r->kernels);
    memset(r, 0, sizeof *r);
}

void evo_compile_results_free(evo_compile_result *r, int n)
{
    for (int i = 0; r && i < n; i++) evo_compile_result_free(&r[i]);
}

const evo_compiled_kernel *evo_compile_result_kernel(const evo_compile_result *r, const char *name_expr)
{
    for (int i = 0; i < r->n_kernels; i++)
        if (strcmp(r->kernels[i].name_expr, name_expr) == 0) return &r->kernels[i];
    return NULL;
}

static void result_copy(evo_compile_result *dst, const evo_compile_result *src)
{
    *dst = *src;
    dst->log = evo_strdup(src->log ? src->log : "");
    if (src->cubin) {
        dst->cubin = evo_xmalloc(src->cubin_len);
        memcpy(dst->cubin, src->cubin, src->cubin_len);
    }
    if (src->n_kernels) {
        dst->kernels = evo_xcalloc((size_t)src->n_kernels, sizeof *dst->kernels);
        for (int i = 0; i < src->n_kernels; i++) {
            dst->kernels[i] = src->kernels[i];
            dst->kernels[i].name_expr = evo_strdup(src->kernels[i].name_expr);
            dst->kernels[i].lowered = evo_strdup(src->kernels[i].lowered);
        }
    }
}

static const struct {
    const char *name;
    size_t off;
} res_fields[] = {
    {"registers", offsetof(evo_kernel_res, registers)},
    {"smem_bytes", offsetof(evo_kernel_res, smem_bytes)},
    {"spill_store_bytes", offsetof(evo_kernel_res, spill_store_bytes)},
    {"spill_load_bytes", offsetof(evo_kernel_res, spill_load_bytes)},
    {"stack_frame_bytes", offsetof(evo_kernel_res, stack_frame_bytes)},
    {"cmem_bytes", offsetof(evo_kernel_res, cmem_bytes)},
    {"barriers", offsetof(evo_kernel_res, barriers)},
};

static int *res_field(evo_kernel_res *r, size_t i) { return (int *)((char *)r + res_fields[i].off); }

struct cJSON *evo_compile_result_json(const evo_compile_result *r, bool with_log)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "outcome", evo_compile_outcome_name(r->outcome));
    cJSON_AddBoolToObject(o, "cache_hit", r->cache_hit);
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    cJSON_AddNumberToObject(o, "cubin_bytes", (double)r->cubin_len);
    cJSON_AddNumberToObject(o, "program_spill_bytes", r->program_spill_bytes);
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; ks && i < r->n_kernels; i++) {
        const evo_compiled_kernel *k = &r->kernels[i];
        cJSON *kj = cJSON_CreateObject();
        if (!kj) break;
        cJSON_AddItemToArray(ks, kj);
        cJSON_AddStringToObject(kj, "name_expr", k->name_expr);
        cJSON_AddStringToObject(kj, "lowered", k->lowered);
        cJSON_AddBoolToObject(kj, "found", k->found);
        evo_kernel_res res = k->res;
        for (size_t f = 0; f < EVO_ARRAY_LEN(res_fields); f++)
            cJSON_AddNumberToObject(kj, res_fields[f].name, *res_field(&res, f));
    }
    if (with_log) cJSON_AddStringToObject(o, "log", r->log ? r->log : "");
    if (r->why[0]) cJSON_AddStringToObject(o, "why", r->why);
    return o;
}

static bool json_int(const cJSON *o, const char *name, int *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int)x->valuedouble) return false;
    *v = (int)x->valuedouble;
    return true;
}

static const char *json_str(const cJSON *o, const char *name)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* The parts of a result an entry stores; false when anything is missing or malformed. */
static bool result_from_json(const cJSON *o, evo_compile_result *r)
{
    const char *outcome = json_str(o, "outcome"), *log = json_str(o, "log");
    if (!outcome || !log || !json_int(o, "program_spill_bytes", &r->program_spill_bytes)) return false;
    if (strcmp(outcome, "ok") == 0)
        r->outcome = EVO_COMPILE_OK;
    else if (strcmp(outcome, "compile_error") == 0)
        r->outcome = EVO_COMPILE_ERROR;
    else
        return false;
    r->log = evo_strdup(log);
    const char *why = json_str(o, "why");
    if (why) snprintf(r->why, sizeof r->why, "%s", why);
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(o, "kernels");
    if (!cJSON_IsArray(ks)) return false;
    int n = cJSON_GetArraySize(ks);
    if (n > 0) r->kernels = evo_xcalloc((size_t)n, sizeof *r->kernels);
    const cJSON *kj;
    cJSON_ArrayForEach(kj, ks)
    {
        evo_compiled_kernel *k = &r->kernels[r->n_kernels];
        const char *ne = json_str(kj, "name_expr"), *lo = json_str(kj, "lowered");
        const cJSON *found = cJSON_GetObjectItemCaseSensitive(kj, "found");
        if (!ne || !lo || !cJSON_IsBool(found)) return false;
        k->name_expr = evo_strdup(ne);
        k->lowered = evo_strdup(lo);
        r->n_kernels++;
        k->found = cJSON_IsTrue(found);
        for (size_t f = 0; f < EVO_ARRAY_LEN(res_fields); f++)
            if (!json_int(kj, res_fields[f].name, res_field(&k->res, f))) return false;
    }
    return true;
}

/* ---- cache entries ---- */

typedef struct {
    char key[65];
    char *shard; /* <cache>/nvrtc/<key[0..1]> */
    char *entry; /* <shard>/<key>.entry      */
    strlist opts;
    int dup_of; /* an identical earlier request of the batch, or -1 */
} prep;

static char *tmp_path(const prep *p, pid_t pid)
{
    evo_str s = {0};
    evo_str_appendf(&s, "%s/%s.tmp.%ld", p->shard, p->key, (long)pid);
    return evo_str_take(&s);
}

/* Reads the entry at p->entry into *r. transient entries (a compiler failure that may not repeat) are only taken
 * right after the child that wrote them. Returns false for a missing or damaged entry. */
static bool entry_load(const prep *p, bool accept_transient, evo_compile_result *r)
{
    char *data;
    size_t len;
    if (evo_read_file(p->entry, &data, &len, NULL) != EVO_OK) return false;
    bool ok = false;
    cJSON *o = NULL;
    memset(r, 0, sizeof *r);
    char magic[32];
    int format, hdr = 0;
    size_t jlen, clen;
    if (sscanf(data, "%31s %d %zu %zu%n", magic, &format, &jlen, &clen, &hdr) != 4 || strcmp(magic, ENTRY_MAGIC) ||
        format != ENTRY_FORMAT || (size_t)hdr >= len || data[hdr] != '\n')
        goto done;
    const char *json = data + hdr + 1;
    const unsigned char *cubin = (const unsigned char *)json + jlen;
    if ((size_t)hdr + 1 + jlen + clen != len) goto done;
    o = cJSON_ParseWithLength(json, jlen);
    const char *key = o ? json_str(o, "key") : NULL;
    const cJSON *transient = o ? cJSON_GetObjectItemCaseSensitive(o, "transient") : NULL;
    if (!key || strcmp(key, p->key) != 0 || !cJSON_IsBool(transient)) goto done;
    if (cJSON_IsTrue(transient) && !accept_transient) goto done;
    if (!result_from_json(o, r)) goto done;
    if (r->outcome == EVO_COMPILE_OK) {
        const char *want = json_str(o, "cubin_sha256");
        char got[65];
        evo_sha256_hex(cubin, clen, got);
        if (clen < 4 || memcmp(cubin, "\177ELF", 4) != 0 || !want || strcmp(want, got) != 0) goto done;
        r->cubin = evo_xmalloc(clen);
        memcpy(r->cubin, cubin, clen);
        r->cubin_len = clen;
    } else if (clen != 0) {
        goto done;
    }
    memcpy(r->key, p->key, sizeof r->key);
    ok = true;
done:
    if (!ok) evo_compile_result_free(r);
    cJSON_Delete(o);
    free(data);
    return ok;
}

/* Set in a compile child when a write failed past its output limit (RLIMIT_FSIZE: EFBIG). */
static bool g_output_limit_hit;

static evo_status entry_write(const prep *p, const evo_compile_result *r, bool transient, evo_err *err)
{
    cJSON *o = evo_compile_result_json(r, true);
    if (!o) return evo_fail(err, EVO_E_NOMEM, "cache entry %s: out of memory", p->entry);
    char sha[65] = "";
    if (r->cubin) evo_sha256_hex(r->cubin, r->cubin_len, sha);
    cJSON_AddNumberToObject(o, "format", ENTRY_FORMAT);
    cJSON_AddStringToObject(o, "nvrtc", nvrtc_build());
    cJSON_AddStringToObject(o, "cubin_sha256", sha);
    cJSON_AddBoolToObject(o, "transient", transient);
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!json) return evo_fail(err, EVO_E_NOMEM, "cache entry %s: out of memory", p->entry);
    char head[128];
    int hn = snprintf(head, sizeof head, "%s %d %zu %zu\n", ENTRY_MAGIC, ENTRY_FORMAT, strlen(json), r->cubin_len);
    char *tmp = tmp_path(p, getpid());
    evo_status s = EVO_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        s = evo_fail(err, EVO_E_IO, "cannot write cache entry %s: %s", tmp, strerror(errno));
    } else {
        if (evo_write_all(fd, head, (size_t)hn) || evo_write_all(fd, json, strlen(json)) ||
            (r->cubin_len && evo_write_all(fd, r->cubin, r->cubin_len))) {
            g_output_limit_hit = errno == EFBIG;
            s = evo_fail(err, EVO_E_IO, "cannot write cache entry %s: %s", tmp, strerror(errno));
        }
        if (close(fd) != 0 && s == EVO_OK) s = evo_fail(err, EVO_E_IO, "cannot write %s: %s", tmp, strerror(errno));
        if (s == EVO_OK && rename(tmp, p->entry) != 0)
            s = evo_fail(err, EVO_E_IO, "cannot publish cache entry %s: %s", p->entry, strerror(errno));
        if (s != EVO_OK) unlink(tmp);
    }
    free(tmp);
    free(json);
    return s;
}

/* ---- the child: one NVRTC compile ---- */

/* A log without an error message, or one that says memory ran out, does not show a fault of the program. */
static bool compile_failure_is_transient(const char *log)
{
    return !strstr(log, "error") || strstr(log, "allocation failure") || strstr(log, "out of memory");
}

#define NVRTC_TRY(call) \
    do { \
        nvrtcResult rc_ = (call); \
        if (rc_ != NVRTC_SUCCESS) { \
            s = evo_fail(err, EVO_E_NVRTC, "%s: %s failed: %s", req_name(req), #call, nvrtcGetErrorString(rc_)); \
            goto done; \
        } \
    } while (0)

/* Appends what the compiler printed on the child's stdout/stderr (captured in out_fd) to *log. */
static void append_captured(char **log, int out_fd)
{
    if (out_fd < 0) return;
    off_t n = lseek(out_fd, 0, SEEK_END);
    if (n <= 0 || lseek(out_fd, 0, SEEK_SET) != 0) return;
    evo_str s = {0};
    evo_str_append(&s, *log);
    char buf[4096];
    ssize_t got;
    while ((got = read(out_fd, buf, sizeof buf)) > 0) evo_str_appendn(&s, buf, (size_t)got);
    if (s.len && s.p[s.len - 1] != '\n') evo_str_append(&s, "\n");
    free(*log);
    *log = evo_str_take(&s);
}

/* Whether path lies in (or is) one of the folders the child may read. */
static bool under_allowed(const char *path, const evo_compile_req *req)
{
    char real[PATH_MAX], dirs[2][4096];
    if (!realpath(path, real)) return false;
    const int n_tk = toolkit_include_dirs(dirs);
    for (int i = 0; i < n_tk + req->n_read_dirs; i++) {
        char d[PATH_MAX];
        if (!realpath(i < n_tk ? dirs[i] : req->read_dirs[i - n_tk], d)) continue;
        const size_t n = strlen(d);
        if (strncmp(real, d, n) == 0 && (real[n] == '/' || real[n] == '\0' || (n == 1 && d[0] == '/'))) return true;
    }
    return false;
}

/* After a failed compile, in the child (still confined): why could the compiler not open each file its log names
 * ("cannot open source file \"X\"")? A file that exists but that the sandbox hides is "access denied"; one that
 * opens now (the compiler had closed its nested includes since) was beyond the open-files limit. Appends an "evo:"
 * line per file to *log, sets why from the first; returns whether it found anything. */
static bool explain_unopened(const evo_compile_req *req, const prep *p, char **log, char *why, size_t why_len)
{
    static const char needle[] = "cannot open source file \"";
    evo_str add = {0};
    int found = 0;
    for (const char *at = strstr(*log, needle); at && found < 4; at = strstr(at + 1, needle)) {
        const char *name = at + strlen(needle), *end = strchr(name, '"');
        if (!end || end == name || end - name >= 1024) continue;
        char nm[1024], cand[4200];
        snprintf(nm, sizeof nm, "%.*s", (int)(end - name), name);
        /* where the compiler looks: the name itself when absolute, else the working directory, then each -I */
        for (int k = 0;; k++) {
            if (nm[0] == '/') {
                if (k > 0) break;
                snprintf(cand, sizeof cand, "%s", nm);
            } else if (k == 0) {
                snprintf(cand, sizeof cand, "%s", nm);
            } else {
                int seen = 0;
                const char *dir = NULL;
                for (int i = 0; i < p->opts.n && !dir; i++)
                    if (strncmp(p->opts.v[i], "-I", 2) == 0 && ++seen == k) dir = p->opts.v[i] + 2;
                if (!dir) break;
                snprintf(cand, sizeof cand, "%s/%s", dir, nm);
            }
            struct stat st;
            if (stat(cand, &st) != 0) continue;
            const int fd = open(cand, O_RDONLY | O_CLOEXEC);
            const int e = errno;
            char line[900];
            if (fd >= 0) close(fd);
            if (fd >= 0 || e == EMFILE) {
                const int files = req->limits.open_files > 0 ? req->limits.open_files : EVO_COMPILE_DEFAULT_OPEN_FILES;
                snprintf(line, sizeof line,
                         "open files limit: \"%.300s\" could not be opened within the compile "
                         "process's limit of %d open files (compile.max_open_files)",
                         nm, files);
            } else if (e == EACCES && !under_allowed(cand, req)) {
                snprintf(line, sizeof line,
                         "access denied: \"%.300s\" is outside what the compiler may read: the "
                         "kernel's folder, evo's headers, the CUDA Toolkit's headers (a link counts where it points)",
                         nm);
            } else {
                snprintf(line, sizeof line, "\"%.300s\": %s", nm, strerror(e));
            }
            evo_str_appendf(&add, "evo: %s\n", line);
            if (!found++ && why_len) snprintf(why, why_len, "%.*s", (int)(why_len - 1), line);
            break;
        }
    }
    if (found) {
        evo_str l = {0};
        evo_str_append(&l, *log);
        evo_str_append(&l, evo_str_cstr(&add));
        free(*log);
        *log = evo_str_take(&l);
    }
    evo_str_free(&add);
    return found > 0;
}

static evo_status child_compile(const evo_compile_req *req, const prep *p, int out_fd, evo_err *err)
{
    evo_status s = EVO_OK;
    nvrtcProgram prog = NULL;
    evo_compile_result r = {0};
    evo_ptxas_report rep = {0};
    bool transient = false;
    const char **hnames = evo_xcalloc((size_t)req->n_headers + 1, sizeof *hnames);
    const char **htexts = evo_xcalloc((size_t)req->n_headers + 1, sizeof *htexts);
    for (int i = 0; i < req->n_headers; i++) {
        hnames[i] = req->headers[i].name;
        htexts[i] = req->headers[i].text;
    }
    memcpy(r.key, p->key, sizeof r.key);
    r.program_spill_bytes = -1;

    NVRTC_TRY(nvrtcCreateProgram(&prog, req->source, req_name(req), req->n_headers, htexts, hnames));
    for (int i = 0; i < req->n_name_exprs; i++) NVRTC_TRY(nvrtcAddNameExpression(prog, req->name_exprs[i]));
    nvrtcResult rc = nvrtcCompileProgram(prog, p->opts.n, (const char *const *)p->opts.v);
    size_t log_len = 0;
    NVRTC_TRY(nvrtcGetProgramLogSize(prog, &log_len));
    r.log = evo_xcalloc(log_len + 1, 1);
    NVRTC_TRY(nvrtcGetProgramLog(prog, r.log));
    append_captured(&r.log, out_fd);

    if (rc == NVRTC_ERROR_INVALID_OPTION) {
        size_t n = strlen(r.log);
        while (n > 0 && (r.log[n - 1] == '\n' || r.log[n - 1] == ' ')) r.log[--n] = '\0';
        s = evo_fail(err, EVO_E_CONFIG, "%s: NVRTC rejected the compile options: %s", req_name(req), r.log);
        goto done;
    }
    if (rc != NVRTC_SUCCESS) {
        r.outcome = EVO_COMPILE_ERROR;
        /* a file the sandbox or a limit kept from the compiler: not the program's text alone, so not cached */
        if (rc == NVRTC_ERROR_COMPILATION && explain_unopened(req, p, &r.log, r.why, sizeof r.why)) {
            transient = true;
        } else if (rc == NVRTC_ERROR_COMPILATION && compile_failure_is_transient(r.log)) {
            /* Memory exhaustion makes NVRTC fail with an empty log or a ptxas "fatal" line: not the program's
             * fault, so not cached. ptxas also refuses static shared memory over 48 KB without a word, so say
             * what it reported. */
            transient = true;
            evo_str l = {0};
            evo_str_append(&l, r.log);
            evo_str_append(&l, "evo: NVRTC failed without naming an error in the program; not cached, as it may be "
                               "transient (memory exhaustion)\n");
            evo_ptxas_parse(r.log, &rep);
            for (int i = 0; i < rep.n; i++) {
                if (!rep.funcs[i].is_entry) continue;
                char line[256];
                evo_kernel_res_format(&rep.funcs[i].res, line, sizeof line);
                evo_str_appendf(
                    &l, "evo: ptxas reported %s: %s%s\n", rep.funcs[i].name, line,
                    rep.funcs[i].res.smem_bytes > STATIC_SMEM_MAX ? " (static shared memory is limited to 48 KB)" : "");
            }
            free(r.log);
            r.log = evo_str_take(&l);
        } else if (rc != NVRTC_ERROR_COMPILATION) {
            /* Not the program's fault as far as we can tell (out of memory, an internal NVRTC failure): keep it
             * out of the cache so a later run tries again. */
            transient = true;
            evo_str l = {0};
            evo_str_append(&l, r.log);
            evo_str_appendf(&l, "evo: NVRTC failed: %s\n", nvrtcGetErrorString(rc));
            free(r.log);
            r.log = evo_str_take(&l);
        }
    } else {
        r.outcome = EVO_COMPILE_OK;
        NVRTC_TRY(nvrtcGetCUBINSize(prog, &r.cubin_len));
        r.cubin = evo_xmalloc(r.cubin_len ? r.cubin_len : 1);
        NVRTC_TRY(nvrtcGetCUBIN(prog, (char *)r.cubin));
        evo_ptxas_parse(r.log, &rep);
        r.program_spill_bytes = 0;
        for (int i = 0; i < rep.n; i++) {
            if (rep.funcs[i].res.spill_store_bytes > 0) r.program_spill_bytes += rep.funcs[i].res.spill_store_bytes;
            if (rep.funcs[i].res.spill_load_bytes > 0) r.program_spill_bytes += rep.funcs[i].res.spill_load_bytes;
        }
        if (req->n_name_exprs > 0) {
            r.kernels = evo_xcalloc((size_t)req->n_name_exprs, sizeof *r.kernels);
            for (int i = 0; i < req->n_name_exprs; i++) {
                const char *lowered;
                NVRTC_TRY(nvrtcGetLoweredName(prog, req->name_exprs[i], &lowered));
                evo_compiled_kernel *k = &r.kernels[r.n_kernels++];
                k->name_expr = evo_strdup(req->name_exprs[i]);
                k->lowered = evo_strdup(lowered);
                const evo_ptxas_func *f = evo_ptxas_find(&rep, lowered);
                k->found = f && f->is_entry;
                k->res = f && f->is_entry ? f->res : (evo_kernel_res){-1, -1, -1, -1, -1, -1, -1};
            }
        } else {
            r.kernels = evo_xcalloc((size_t)rep.n + 1, sizeof *r.kernels);
            for (int i = 0; i < rep.n; i++) {
                if (!rep.funcs[i].is_entry) continue;
                evo_compiled_kernel *k = &r.kernels[r.n_kernels++];
                k->name_expr = evo_strdup(rep.funcs[i].name);
                k->lowered = evo_strdup(rep.funcs[i].name);
                k->found = true;
                k->res = rep.funcs[i].res;
            }
        }
    }
    s = entry_write(p, &r, transient, err);
done:
    if (prog) nvrtcDestroyProgram(&prog);
    evo_ptxas_report_free(&rep);
    evo_compile_result_free(&r);
    free(hnames);
    free(htexts);
    return s;
}

/* The child's limits and file access (sandbox.h): it may read the toolkit's include folders and the request's
 * folders, write in its cache shard only, and works in the first request folder. Non-zero on failure (why set). */
static int child_confine(const evo_compile_req *req, const prep *p, char *why, size_t n)
{
    char dirs[2][4096];
    const int n_tk = toolkit_include_dirs(dirs);
    const char *read[2 + 16];
    int n_read = 0;
    for (int i = 0; i < n_tk; i++) read[n_read++] = dirs[i];
    for (int i = 0; i < req->n_read_dirs && n_read < (int)EVO_ARRAY_LEN(read); i++) read[n_read++] = req->read_dirs[i];
    if (req->n_read_dirs > 0 && chdir(req->read_dirs[0]) != 0) {
        snprintf(why, n, "compile: cannot enter %s: %s", req->read_dirs[0], strerror(errno));
        return -1;
    }
    const evo_sandbox_paths paths = {.read = read, .n_read = n_read, .write_dir = p->shard};
    if (evo_sandbox_enter(&paths, &req->limits, why, n) != EVO_OK) return -1;
    return 0;
}

/* The signals that ask a compile process to stop. NVRTC installs handlers of its own for them while it parses
 * (and exits with a status of its own from there), so a child lets none of them reach a handler: they stay
 * blocked in every thread from the fork on, and one thread takes them with sigwait and reports which, whatever
 * NVRTC has installed at the time. */
static const int g_stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void stop_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < EVO_ARRAY_LEN(g_stop_signals); i++) sigaddset(set, g_stop_signals[i]);
}

/* The child's one report: the first of the compile's end and a stop signal to claim it writes the message. */
static atomic_flag g_child_reported = ATOMIC_FLAG_INIT;

static void *child_signals(void *arg)
{
    const int fd = *(const int *)arg;
    sigset_t set;
    stop_signal_set(&set);
    int sig = 0;
    if (sigwait(&set, &sig) != 0 || atomic_flag_test_and_set(&g_child_reported)) return NULL;
    char msg[32];
    const int n = snprintf(msg, sizeof msg, "%s%d", CHILD_SIGNAL, sig);
    (void)evo_write_all(fd, msg, (size_t)n);
    _exit(EVO_E_INTERRUPTED);
}

/* The signal a child reported it stopped for (its message), or 0. */
static int child_reported_signal(const char *msg)
{
    if (strncmp(msg, CHILD_SIGNAL, strlen(CHILD_SIGNAL)) != 0) return 0;
    const int sig = atoi(msg + strlen(CHILD_SIGNAL));
    return sig > 0 && sig < NSIG ? sig : 0;
}

/* Runs in the forked child; never returns. */
static void child_main(const evo_compile_req *req, const prep *p, int fd, pid_t parent) __attribute__((noreturn));
static void child_main(const evo_compile_req *req, const prep *p, int fd, pid_t parent)
{
    /* A child must not outlive a parent that died without killing it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(EVO_E_INTERRUPTED);
    /* ptxas prints some failures ("ptxas fatal : Memory allocation failure") on stderr instead of the log:
     * capture both streams so they land in the log, not on the user's terminal. */
    /* Only what it needs stays open: the message pipe as 3, the captured output as 1, 2 and 4; not the database,
     * the workers' pipes or anything else the parent holds, so its open-files limit counts its own files. */
    const int msg_fd = fcntl(fd, F_DUPFD_CLOEXEC, 16);
    const int mem_fd = memfd_create("evo-compile-output", MFD_CLOEXEC);
    const int cap_fd = mem_fd >= 0 ? fcntl(mem_fd, F_DUPFD_CLOEXEC, 17) : -1;
    if (msg_fd < 0 || dup2(msg_fd, 3) != 3) _exit(EVO_E_IO);
    fd = 3;
    int out_fd = -1;
    if (cap_fd >= 0 && dup2(cap_fd, 4) == 4) {
        out_fd = 4;
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
    }
    if (syscall(SYS_close_range, 5U, ~0U, 0U) != 0)
        for (int k = 5; k < 4096; k++) close(k);
    /* The stop signals came blocked from the fork (spawn); the thread that takes them starts before the sandbox's
     * limits, which would count its stack. */
    static int signal_fd = 3;
    pthread_attr_t attr;
    pthread_t watcher;
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 64 * 1024) != 0 ||
        pthread_create(&watcher, &attr, child_signals, &signal_fd) != 0) {
        const char *msg = "compile: cannot start the compile process's signal thread";
        (void)evo_write_all(fd, msg, strlen(msg));
        _exit(EVO_E_INTERNAL);
    }
    pthread_attr_destroy(&attr);
    evo_err e = {0};
    evo_status s = child_confine(req, p, e.msg, sizeof e.msg) ? EVO_E_IO : EVO_OK;
    if (s == EVO_OK) s = child_compile(req, p, out_fd, &e);
    /* Always a message, so the parent can tell this end from an exit() deep inside the compiler. */
    char limit[sizeof e.msg + 64];
    const double out_mb = req->limits.output_mb > 0 ? req->limits.output_mb : EVO_COMPILE_DEFAULT_OUTPUT_MB;
    if (s != EVO_OK && g_output_limit_hit) { /* past RLIMIT_FSIZE: the candidate's output, not a broken cache */
        snprintf(limit, sizeof limit,
                 "%soutput limit: the compile process wrote more than %.0f MiB to one file "
                 "(compile.max_output_mb)",
                 CHILD_LIMIT, out_mb);
        s = EVO_OK;
    }
    const char *msg = g_output_limit_hit ? limit
                      : s == EVO_OK      ? CHILD_DONE
                      : e.msg[0]         ? e.msg
                                         : "compile process failed";
    /* A stop signal that claimed the report first ends the process from its thread. */
    if (atomic_flag_test_and_set(&g_child_reported))
        for (;;) pause();
    (void)evo_write_all(fd, msg, strlen(msg));
    /* _exit, not exit: atexit handlers and unflushed stdio belong to the parent. */
    _exit((int)s);
}

/* ---- the batch ---- */

typedef struct {
    pid_t pid;
    int fd;    /* read end of the child's message pipe; -1 after EOF */
    int index; /* request */
    double start, deadline;
    double memory_mb; /* its resident-memory limit (the parent kills it past that) */
    int64_t peak_rss; /* the largest resident set seen, bytes */
    char msg[sizeof(((evo_err *)0)->msg)];
    size_t msg_len;
} child_slot;

static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static evo_status spawn(const evo_compile_req *req, const prep *p, int index, double memory_mb, child_slot *c,
                        evo_err *err)
{
    evo_status s = evo_mkdir_p(p->shard, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "compile cache");
    if (access(p->shard, W_OK) != 0)
        return evo_fail(err, EVO_E_IO, "compile cache %s is not writable: %s", p->shard, strerror(errno));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return evo_fail(err, EVO_E_IO, "compile: pipe: %s", strerror(errno));
    pid_t parent = getpid();
    /* Output still buffered in the parent's streams would otherwise be copied into the child. */
    fflush(stdout);
    fflush(stderr);
    double start = evo_now();
    /* The child starts with the stop signals blocked (child_signals says why); this thread gets its mask back. */
    sigset_t stop, old_mask;
    stop_signal_set(&stop);
    pthread_sigmask(SIG_BLOCK, &stop, &old_mask);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_main(req, p, fds[1], parent);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return evo_fail(err, EVO_E_IO, "compile: cannot fork a compile process: %s", strerror(e));
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->fd = fds[0];
    c->index = index;
    c->start = start;
    c->deadline = req->timeout_s > 0 ? start + req->timeout_s : INFINITY;
    c->memory_mb = memory_mb;
    return EVO_OK;
}

static void drain(child_slot *c)
{
    while (c->fd >= 0) {
        char buf[512];
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n > 0) {
            size_t take = (size_t)n;
            if (take > sizeof c->msg - 1 - c->msg_len) take = sizeof c->msg - 1 - c->msg_len;
            memcpy(c->msg + c->msg_len, buf, take);
            c->msg_len += take;
            c->msg[c->msg_len] = '\0';
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(c->fd);
            c->fd = -1;
        } else if (errno == EAGAIN) {
            break;
        }
    }
}

static void kill_reap(child_slot *c, const prep *p)
{
    kill(c->pid, SIGKILL);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
    }
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    char *tmp = tmp_path(p, c->pid);
    unlink(tmp);
    free(tmp);
}

static void log_line(evo_compile_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(evo_compile_result *r, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    evo_str s = {0};
    evo_str_append(&s, r->log ? r->log : "");
    evo_str_append(&s, line);
    free(r->log);
    r->log = evo_str_take(&s);
}

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGBUS, "SIGBUS"},
                 {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
                 {SIGXFSZ, "SIGXFSZ"}, {SIGINT, "SIGINT"},   {SIGHUP, "SIGHUP"},   {SIGPIPE, "SIGPIPE"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(names); i++)
        if (names[i].sig == sig) return names[i].name;
    return "signal";
}

/* A child has exited with wait status ws (ru: its resource use): fill its result, or say why the service failed. */
static evo_status child_finish(const evo_compile_req *req, const prep *p, child_slot *c, int ws,
                               const struct rusage *ru, evo_compile_result *r, evo_err *err)
{
    drain(c);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    bool done = c->msg_len == strlen(CHILD_DONE) && strcmp(c->msg, CHILD_DONE) == 0;
    const int stop_sig = WIFSIGNALED(ws) ? 0 : child_reported_signal(c->msg);
    const double cpu_used = (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec * 1e-6 + (double)ru->ru_stime.tv_sec +
                            ru->ru_stime.tv_usec * 1e-6;
    const double cpu_limit = req->limits.cpu_s > 0 ? req->limits.cpu_s : EVO_COMPILE_DEFAULT_CPU_S;
    if ((int64_t)ru->ru_maxrss * 1024 > c->peak_rss) c->peak_rss = (int64_t)ru->ru_maxrss * 1024;
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && strncmp(c->msg, CHILD_LIMIT, strlen(CHILD_LIMIT)) == 0) {
        memset(r, 0, sizeof *r);
        r->outcome = EVO_COMPILE_LIMIT;
        r->program_spill_bytes = -1;
        snprintf(r->why, sizeof r->why, "%s", c->msg + strlen(CHILD_LIMIT));
        log_line(r, "evo: %s\n", r->why);
        memcpy(r->key, p->key, sizeof r->key);
    } else if (WIFSIGNALED(ws) && (WTERMSIG(ws) == SIGXCPU || (WTERMSIG(ws) == SIGKILL && cpu_used >= cpu_limit))) {
        memset(r, 0, sizeof *r);
        r->outcome = EVO_COMPILE_LIMIT;
        r->program_spill_bytes = -1;
        snprintf(r->why, sizeof r->why,
                 "CPU time limit: the compile process used %.1f s of CPU, its limit is %.0f s "
                 "(compile.max_cpu_s)",
                 cpu_used, cpu_limit);
        log_line(r, "evo: %s\n", r->why);
        memcpy(r->key, p->key, sizeof r->key);
    } else if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && done) {
        if (!entry_load(p, true, r))
            return evo_fail(err, EVO_E_IO, "compile %s: the compile process left no readable cache entry at %s",
                            req_name(req), p->entry);
    } else if (WIFEXITED(ws) && WEXITSTATUS(ws) != 0 && c->msg_len > 0 && !done && !stop_sig) {
        int code = WEXITSTATUS(ws);
        evo_status s = code > 0 && code <= EVO_E_INTERNAL ? (evo_status)code : EVO_E_INTERNAL;
        return evo_fail(err, s, "%s", c->msg);
    } else {
        /* The compiler crashed or exited on this program (or something killed the child): the candidate's
         * failure, not cached, since it may not repeat. */
        r->outcome = EVO_COMPILE_ERROR;
        r->program_spill_bytes = -1;
        const int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : stop_sig;
        if (sig)
            snprintf(r->why, sizeof r->why, "the compile process was killed by %s (%s)", signal_name(sig),
                     strsignal(sig));
        else
            snprintf(r->why, sizeof r->why, "the compile process exited with status %d before finishing",
                     WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
        log_line(r, "evo: %s\n", r->why);
        memcpy(r->key, p->key, sizeof r->key);
    }
    r->seconds = evo_now() - c->start;
    r->peak_rss = c->peak_rss;
    return EVO_OK;
}

/* A child grew past its memory limit and was killed. */
static void memory_result(const prep *p, const child_slot *c, evo_compile_result *r)
{
    memset(r, 0, sizeof *r);
    r->outcome = EVO_COMPILE_LIMIT;
    r->program_spill_bytes = -1;
    r->seconds = evo_now() - c->start;
    r->peak_rss = c->peak_rss;
    memcpy(r->key, p->key, sizeof r->key);
    snprintf(r->why, sizeof r->why,
             "memory limit: the compile process grew to %.0f MiB, past its limit of %.0f MiB "
             "(compile.max_memory_mb)",
             ceil((double)c->peak_rss / (1024.0 * 1024.0)), c->memory_mb); /* up: never "8192, past 8192" */
    log_line(r, "evo: %s\n", r->why);
}

static void timeout_result(const evo_compile_req *req, const prep *p, const child_slot *c, evo_compile_result *r)
{
    memset(r, 0, sizeof *r);
    r->outcome = EVO_COMPILE_TIMEOUT;
    r->program_spill_bytes = -1;
    r->seconds = evo_now() - c->start;
    memcpy(r->key, p->key, sizeof r->key);
    snprintf(r->why, sizeof r->why,
             "timeout: the compile process was killed at its time limit of %.3g s "
             "(compile.timeout_s)",
             req->timeout_s);
    log_line(r, "evo: %s\n", r->why);
}

/* Said once per process (on stderr: the one thing here that talks) when a request that should be confined is
 * compiled without Landlock. */
static char g_unconfined_why[256];
static void warn_once(void)
{
    fprintf(stderr,
            "evo: warning: kernels are compiled without file confinement: %s; the compiler can read any file "
            "evo can (compile.sandbox: required refuses to compile instead)\n",
            g_unconfined_why);
}

static void warn_unconfined(const evo_compile_req *reqs, int n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    bool want = false;
    for (int i = 0; i < n; i++) want |= reqs[i].limits.sandbox == EVO_SANDBOX_AUTO;
    char why[256];
    if (!want || evo_sandbox_available(why, sizeof why)) return;
    snprintf(g_unconfined_why, sizeof g_unconfined_why, "%s", why);
    pthread_once(&once, warn_once);
}

evo_status evo_compile_batch(const evo_compile_opts *opts, const evo_compile_req *reqs, int n, evo_compile_result *out,
                             evo_err *err)
{
    static const evo_compile_opts defaults = {0};
    if (!opts) opts = &defaults;
    if (n < 0 || (n > 0 && (!reqs || !out))) return evo_fail(err, EVO_E_INTERNAL, "compile: bad batch arguments");
    if (n == 0) return EVO_OK;
    memset(out, 0, sizeof *out * (size_t)n);
    for (int i = 0; i < n; i++) {
        evo_status s = req_check(&reqs[i], err);
        if (s != EVO_OK) return s;
    }
    for (int i = 0; i < n; i++)
        if (reqs[i].limits.sandbox == EVO_SANDBOX_REQUIRED) {
            char why[256];
            if (!evo_sandbox_available(why, sizeof why))
                return evo_fail(err, EVO_E_CONFIG, "compile.sandbox is required, but %s", why);
            break;
        }
    warn_unconfined(reqs, n);
    evo_sandbox_prepare();
    char *cache = NULL;
    if (opts->cache_dir)
        cache = evo_strdup(opts->cache_dir);
    else {
        evo_status s = evo_compile_cache_dir(&cache, err);
        if (s != EVO_OK) return s;
    }
    if (cache[0] != '/') { /* a child works in the kernel's folder: the cache's path must not depend on the cwd */
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            free(cache);
            return evo_fail(err, EVO_E_IO, "compile cache: cannot tell the working directory: %s", strerror(errno));
        }
        evo_str a = {0};
        evo_str_appendf(&a, "%s/%s", cwd, cache);
        free(cache);
        cache = evo_str_take(&a);
    }

    prep *pr = evo_xcalloc((size_t)n, sizeof *pr);
    int *queue = evo_xcalloc((size_t)n, sizeof *queue);
    int nqueue = 0, next = 0;
    int jobs = opts->jobs > 0 ? opts->jobs : evo_usable_cpus(NULL);
    const double default_mb = evo_compile_default_memory_mb(jobs < n ? jobs : n);
    child_slot *run = evo_xcalloc((size_t)jobs, sizeof *run);
    struct pollfd *pfd = evo_xcalloc((size_t)jobs, sizeof *pfd);
    int nrun = 0;
    bool read_cache = !opts->no_cache_read && !env_true("EVO_NO_CACHE");
    evo_status s = EVO_OK;

    for (int i = 0; i < n; i++) {
        prep *p = &pr[i];
        req_options(&reqs[i], &p->opts);
        req_key(&reqs[i], &p->opts, p->key);
        EVO_ASSERT(evo_compile_key_valid(p->key)); /* the entry's path is built from it */
        evo_str t = {0};
        evo_str_appendf(&t, "%s/nvrtc/%.2s", cache, p->key);
        p->shard = evo_str_take(&t);
        evo_str_appendf(&t, "%s/%s.entry", p->shard, p->key);
        p->entry = evo_str_take(&t);
        p->dup_of = -1;
        for (int j = 0; j < i && p->dup_of < 0; j++)
            if (pr[j].dup_of < 0 && strcmp(pr[j].key, p->key) == 0) p->dup_of = j;
        if (p->dup_of >= 0) continue;
        double t0 = evo_now();
        if (read_cache && entry_load(p, false, &out[i])) {
            out[i].cache_hit = true;
            out[i].seconds = evo_now() - t0;
            if (opts->on_result) opts->on_result(opts->ctx, i, &out[i]);
        } else {
            queue[nqueue++] = i;
        }
    }

    while (next < nqueue || nrun > 0) {
        while (nrun < jobs && next < nqueue) {
            int i = queue[next];
            s = spawn(&reqs[i], &pr[i], i, reqs[i].limits.memory_mb > 0 ? reqs[i].limits.memory_mb : default_mb,
                      &run[nrun], err);
            if (s != EVO_OK) goto fail;
            nrun++;
            next++;
        }
        if (opts->interrupt && *opts->interrupt) {
            s = evo_fail(err, EVO_E_INTERRUPTED, "compile interrupted");
            goto fail;
        }
        int npfd = 0, wait_ms = POLL_CAP_MS;
        double now = evo_now();
        for (int k = 0; k < nrun; k++) {
            if (run[k].fd >= 0)
                pfd[npfd++] = (struct pollfd){.fd = run[k].fd, .events = POLLIN};
            else
                wait_ms = 1; /* EOF seen: the child is exiting, its wait status is moments away */
            double left_ms = (run[k].deadline - now) * 1e3;
            if (left_ms < wait_ms) wait_ms = left_ms <= 0 ? 0 : (int)ceil(left_ms);
        }
        if (poll(pfd, (nfds_t)npfd, wait_ms) < 0 && errno != EINTR) {
            s = evo_fail(err, EVO_E_IO, "compile: poll: %s", strerror(errno));
            goto fail;
        }
        for (int k = nrun - 1; k >= 0; k--) {
            child_slot *c = &run[k];
            int i = c->index;
            int ws;
            struct rusage ru;
            const int64_t rss = evo_proc_rss(c->pid);
            if (rss > c->peak_rss) c->peak_rss = rss;
            pid_t w = wait4(c->pid, &ws, WNOHANG, &ru);
            if (w == c->pid) {
                evo_status cs = child_finish(&reqs[i], &pr[i], c, ws, &ru, &out[i], err);
                run[k] = run[--nrun];
                if (cs != EVO_OK) {
                    s = cs;
                    goto fail;
                }
            } else if (w < 0 && errno != EINTR) {
                s = evo_fail(err, EVO_E_INTERNAL, "compile: waitpid(%ld): %s (is SIGCHLD ignored?)", (long)c->pid,
                             strerror(errno));
                goto fail;
            } else if ((double)rss > c->memory_mb * 1024 * 1024) {
                kill_reap(c, &pr[i]);
                memory_result(&pr[i], c, &out[i]);
                run[k] = run[--nrun];
            } else if (evo_now() >= c->deadline) {
                kill_reap(c, &pr[i]);
                timeout_result(&reqs[i], &pr[i], c, &out[i]);
                run[k] = run[--nrun];
            } else {
                drain(c);
                continue;
            }
            if (opts->on_result) opts->on_result(opts->ctx, i, &out[i]);
        }
    }

    for (int i = 0; i < n; i++) {
        if (pr[i].dup_of < 0) continue;
        result_copy(&out[i], &out[pr[i].dup_of]);
        out[i].cache_hit = true;
        out[i].seconds = 0;
        if (opts->on_result) opts->on_result(opts->ctx, i, &out[i]);
    }
    goto cleanup;

fail:
    for (int k = 0; k < nrun; k++) kill_reap(&run[k], &pr[run[k].index]);
    evo_compile_results_free(out, n);
cleanup:
    for (int i = 0; i < n; i++) {
        strlist_free(&pr[i].opts);
        free(pr[i].shard);
        free(pr[i].entry);
    }
    free(pr);
    free(pfd);
    free(queue);
    free(run);
    free(cache);
    return s;
}

evo_status evo_compile(const evo_compile_opts *opts, const evo_compile_req *req, evo_compile_result *out, evo_err *err)
{
    return evo_compile_batch(opts, req, 1, out, err);
}

/* ---- options alone ---- */

/* The child of evo_compile_check_options: the trivial program under the options; NVRTC's log (and whatever the
 * compiler printed) on fd; exit 0 accepted, 1 refused, 2 NVRTC itself failed. */
static void probe_main(const strlist *opts, int fd) __attribute__((noreturn));
static void probe_main(const strlist *opts, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (fd <= STDERR_FILENO) fd = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    /* confined as a candidate is: an option like -include names a file the compiler would quote */
    char dirs[2][4096], why[512];
    const char *read[2] = {dirs[0], dirs[1]};
    const evo_sandbox_paths paths = {.read = read, .n_read = toolkit_include_dirs(dirs)};
    const evo_compile_limits lim = {.sandbox = EVO_SANDBOX_AUTO};
    if (evo_sandbox_enter(&paths, &lim, why, sizeof why) != EVO_OK) {
        (void)evo_write_all(fd, why, strlen(why));
        _exit(2);
    }
    static const char src[] = "extern \"C\" __global__ void evo_options_probe(int *x) { if (x) *x = 1; }\n";
    nvrtcProgram prog = NULL;
    nvrtcResult rc = nvrtcCreateProgram(&prog, src, "options.cu", 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) _exit(2);
    rc = nvrtcCompileProgram(prog, opts->n, (const char *const *)opts->v);
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
        char *log = evo_xcalloc(n + 1, 1);
        if (nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) (void)evo_write_all(fd, log, strlen(log));
    }
    _exit(rc == NVRTC_SUCCESS ? 0 : rc == NVRTC_ERROR_INVALID_OPTION || rc == NVRTC_ERROR_COMPILATION ? 1 : 2);
}

evo_status evo_compile_check_options(const char *arch, const char *const *options, int n, double timeout_s, char *why,
                                     size_t why_len)
{
    if (why_len) why[0] = '\0';
    if (!arch_valid(arch)) return EVO_E_CONFIG;
    const evo_compile_req req = {.source = "", .arch = arch, .options = options, .n_options = n};
    strlist opts = {0};
    req_options(&req, &opts);
    evo_sandbox_prepare();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        strlist_free(&opts);
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return EVO_E_IO;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        probe_main(&opts, fds[1]);
    }
    close(fds[1]);
    strlist_free(&opts);
    if (pid < 0) {
        close(fds[0]);
        snprintf(why, why_len, "cannot fork: %s", strerror(errno));
        return EVO_E_IO;
    }
    evo_str log = {0};
    const bool timed_out = evo_read_until(fds[0], evo_now() + (timeout_s > 0 ? timeout_s : 60), 65536, &log);
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    /* The first line that says what is wrong: NVRTC's logs lead with "nvrtc: error: ..." or "options.cu(1): ..." */
    const char *text = evo_str_cstr(&log), *line = text;
    for (const char *p = text; *p;) {
        const size_t len = strcspn(p, "\n");
        if (memmem(p, len, "error", 5)) {
            line = p;
            break;
        }
        p += len + (p[len] == '\n');
    }
    const size_t line_len = strcspn(line, "\n");
    evo_status s = EVO_OK;
    if (timed_out) {
        snprintf(why, why_len, "NVRTC did not finish within %.0f s", timeout_s > 0 ? timeout_s : 60);
        s = EVO_E_CONFIG;
    } else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        if (line_len)
            snprintf(why, why_len, "%.*s", (int)line_len, line);
        else
            snprintf(why, why_len, "NVRTC failed (%s %d)", WIFEXITED(ws) ? "exit" : "signal",
                     WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
        s = WIFEXITED(ws) && WEXITSTATUS(ws) == 1 ? EVO_E_CONFIG : EVO_E_NVRTC;
    }
    evo_str_free(&log);
    return s;
}
