/* util.c — growable strings, file I/O, SHA-256, RNG, clocks (see util.h). */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void *evo_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "evo: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

void *evo_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "evo: out of memory (%zu x %zu bytes)\n", n, size);
        abort();
    }
    return p;
}

void *evo_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "evo: out of memory (%zu bytes)\n", n);
        abort();
    }
    return q;
}

bool evo_str_in_list(const char *s, const char *const *list)
{
    for (int i = 0; list && list[i]; i++)
        if (strcmp(s, list[i]) == 0) return true;
    return false;
}

char *evo_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = evo_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* ---- evo_str ---- */
static void str_reserve(evo_str *s, size_t extra)
{
    if (s->len + extra + 1 <= s->cap) return;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < s->len + extra + 1) cap *= 2;
    s->p = evo_xrealloc(s->p, cap);
    s->cap = cap;
}

void evo_str_appendn(evo_str *s, const char *text, size_t n)
{
    str_reserve(s, n);
    memcpy(s->p + s->len, text, n);
    s->len += n;
    s->p[s->len] = '\0';
}

void evo_str_append(evo_str *s, const char *text) { evo_str_appendn(s, text, strlen(text)); }

void evo_str_appendf(evo_str *s, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    str_reserve(s, (size_t)n);
    vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    s->len += (size_t)n;
}

const char *evo_str_cstr(const evo_str *s) { return s->p ? s->p : ""; }

char *evo_str_take(evo_str *s)
{
    char *p = s->p ? s->p : evo_strdup("");
    s->p = NULL;
    s->len = s->cap = 0;
    return p;
}

void evo_str_free(evo_str *s)
{
    free(s->p);
    s->p = NULL;
    s->len = s->cap = 0;
}

/* ---- files ---- */
evo_status evo_read_file(const char *path, char **data, size_t *len, evo_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return evo_fail(err, errno == ENOENT ? EVO_E_NOTFOUND : EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
    evo_str s = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) evo_str_appendn(&s, buf, n);
    int bad = ferror(f) ? errno : 0; /* e.g. EISDIR: fopen opens a directory, reading it fails */
    fclose(f);
    if (bad) {
        evo_str_free(&s);
        return evo_fail(err, EVO_E_IO, "%s: read failed: %s", evo_show(path).s, strerror(bad));
    }
    if (len) *len = s.len;
    *data = evo_str_take(&s);
    return EVO_OK;
}

evo_status evo_write_file_atomic(const char *path, const void *data, size_t len, evo_err *err)
{
    size_t n = strlen(path) + 32;
    char *tmp = evo_xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp); /* a leftover of a killed process with this pid; O_EXCL then never writes through a link */
    /* a new file gets 0666 less the umask, as any program's; a file replaced keeps its mode and, where evo may set
     * it, its owner (cp's rule), so replacing a 0600 file never widens it */
    struct stat old;
    const bool replacing = stat(path, &old) == 0 && S_ISREG(old.st_mode);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, replacing ? 0600 : 0666);
    if (fd < 0) {
        evo_status s = evo_fail(err, EVO_E_IO, "%s: %s", evo_show(tmp).s, strerror(errno));
        free(tmp);
        return s;
    }
    if (replacing) {
        const int owner = fchown(fd, old.st_uid, old.st_gid); /* fails unless evo may give it: the mode holds */
        const int mode = fchmod(fd, old.st_mode & 07777);
        (void)owner, (void)mode;
    }
    if (evo_write_all(fd, data, len) != EVO_OK) {
        evo_status s = evo_fail(err, EVO_E_IO, "%s: write failed: %s", evo_show(tmp).s, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return s;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        evo_status s = evo_fail(err, EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
        unlink(tmp);
        free(tmp);
        return s;
    }
    free(tmp);
    return EVO_OK;
}

evo_status evo_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return EVO_E_IO;
        }
        p += w;
        len -= (size_t)w;
    }
    return EVO_OK;
}

bool evo_read_until(int fd, double deadline, size_t max, evo_str *out)
{
    for (;;) {
        const double left = deadline - evo_now();
        if (left <= 0) return true;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char buf[8192];
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false; /* every writer closed the pipe */
        if (!max || out->len < max) evo_str_appendn(out, buf, (size_t)got);
    }
}

evo_status evo_mkdir_p(const char *path, evo_err *err)
{
    char *p = evo_strdup(path);
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                evo_status s =
                    evo_fail(err, EVO_E_IO, "cannot create directory %s: %s", evo_show(p).s, strerror(errno));
                free(p);
                return s;
            }
            *q = c;
            if (c == '\0') break;
        }
    }
    free(p);
    return EVO_OK;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

evo_status evo_remove_tree(const char *path)
{
    if (!evo_file_exists(path)) return EVO_OK;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? EVO_OK : EVO_E_IO;
}

/* Length of the UTF-8 sequence at p (n bytes left), 0 when it is not one; *cp gets its code point. */
static size_t utf8_seq(const unsigned char *p, size_t n, unsigned *cp)
{
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xE0) == 0xC0 ? 2
                 : (p[0] & 0xF0) == 0xE0 ? 3
                 : (p[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (len == 0 || len > n) return 0;
    unsigned c = len == 1 ? p[0] : p[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (p[i] & 0x3F);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0; /* overlong, surrogate */
    *cp = c;
    return len;
}

void evo_escape_append(evo_str *out, const char *s, size_t n, bool keep_lines)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = 0;
        const size_t len = utf8_seq(p + i, n - i, &c);
        if (len == 0) {
            evo_str_appendf(out, "\\x%02x", p[i]);
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F)) {
            if (keep_lines && (c == '\n' || c == '\t'))
                evo_str_appendn(out, (const char *)p + i, 1);
            else if (c == '\n')
                evo_str_append(out, "\\n");
            else if (c == '\t')
                evo_str_append(out, "\\t");
            else if (c == '\r')
                evo_str_append(out, "\\r");
            else
                evo_str_appendf(out, "\\u%04x", c);
        } else {
            evo_str_appendn(out, (const char *)p + i, len);
        }
        i += len;
    }
}

evo_shown evo_show(const char *name)
{
    evo_shown r;
    evo_str e = {0};
    if (name) evo_escape_append(&e, name, strlen(name), false);
    const char *t = evo_str_cstr(&e);
    if (e.len < sizeof r.s) {
        memcpy(r.s, t, e.len + 1);
    } else { /* its head and tail, as evo_fail cuts any long run (evo.c), at character boundaries */
        size_t head = 120, tail = e.len - 60;
        while (head > 0 && ((unsigned char)t[head] & 0xC0) == 0x80) head--;
        while (tail < e.len && ((unsigned char)t[tail] & 0xC0) == 0x80) tail++;
        snprintf(r.s, sizeof r.s, "%.*s...[%zu bytes]...%s", (int)head, t, e.len, t + tail);
    }
    evo_str_free(&e);
    return r;
}

void evo_fputs_text(const char *text, FILE *file)
{
    evo_str e = {0};
    if (text) evo_escape_append(&e, text, strlen(text), true);
    fputs(evo_str_cstr(&e), file);
    evo_str_free(&e);
}

bool evo_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- SHA-256 (FIPS 180-4) ---- */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(evo_sha256 *c, const uint8_t *b)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], bb = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & bb) ^ (a & cc) ^ (bb & cc));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = cc;
        cc = bb;
        bb = a;
        a = t1 + t2;
    }
    c->h[0] += a;
    c->h[1] += bb;
    c->h[2] += cc;
    c->h[3] += d;
    c->h[4] += e;
    c->h[5] += f;
    c->h[6] += g;
    c->h[7] += h;
}

void evo_sha256_init(evo_sha256 *c)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->bytes = 0;
    c->nbuf = 0;
}

void evo_sha256_update(evo_sha256 *c, const void *data, size_t n)
{
    const uint8_t *p = data;
    c->bytes += n;
    while (n > 0) {
        size_t take = 64 - c->nbuf;
        if (take > n) take = n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf == 64) {
            sha256_block(c, c->buf);
            c->nbuf = 0;
        }
    }
}

void evo_sha256_final(evo_sha256 *c, uint8_t out[32])
{
    uint64_t bits = c->bytes * 8;
    uint8_t pad = 0x80;
    evo_sha256_update(c, &pad, 1);
    uint8_t zero = 0;
    while (c->nbuf != 56) evo_sha256_update(c, &zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    evo_sha256_update(c, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void evo_sha256_hex(const void *data, size_t n, char out[65])
{
    evo_sha256 c;
    uint8_t d[32];
    evo_sha256_init(&c);
    evo_sha256_update(&c, data, n);
    evo_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

uint64_t evo_fnv1a64(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- RNG ---- */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void evo_rng_seed(evo_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t evo_rng_next(evo_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double evo_rng_uniform(evo_rng *r) { return (double)(evo_rng_next(r) >> 11) * 0x1.0p-53; }

uint32_t evo_rng_below(evo_rng *r, uint32_t n)
{
    EVO_ASSERT(n > 0);
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = evo_rng_next(r);
    while (x >= limit);
    return (uint32_t)(x % n);
}

double evo_rng_normal(evo_rng *r)
{
    double u1 = evo_rng_uniform(r), u2 = evo_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- processors ---- */
int evo_usable_cpus(int *online)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    const int on = n > 0 ? (int)n : 1;
    if (online) *online = on;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return on;
    const int mine = CPU_COUNT(&set);
    return mine > 0 ? mine : 1;
}

/* ---- time ---- */
double evo_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void evo_utc_iso8601(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
