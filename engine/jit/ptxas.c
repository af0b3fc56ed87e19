/* ptxas.c — reads the resource report that `--ptxas-options=-v` leaves in an NVRTC log (see compile.h).
 * The lines it knows, as ptxas 12/13 prints them:
 *   ptxas info    : Compiling entry function '_Z4attnILi64EEvv' for 'sm_90'
 *   ptxas info    : Function properties for _Z4attnILi64EEvv
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 96 registers, used 1 barriers, 12288 bytes smem, 368 bytes cmem[0] */
#include "compile.h"

#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const evo_kernel_res unknown_res = {-1, -1, -1, -1, -1, -1, -1};

static evo_ptxas_func *func_get(evo_ptxas_report *r, const char *name, size_t len)
{
    for (int i = 0; i < r->n; i++)
        if (strlen(r->funcs[i].name) == len && memcmp(r->funcs[i].name, name, len) == 0) return &r->funcs[i];
    r->funcs = evo_xrealloc(r->funcs, sizeof *r->funcs * (size_t)(r->n + 1));
    evo_ptxas_func *f = &r->funcs[r->n++];
    f->name = evo_xmalloc(len + 1);
    memcpy(f->name, name, len);
    f->name[len] = '\0';
    f->is_entry = false;
    f->res = unknown_res;
    return f;
}

/* Reads "N word word..." items separated by commas, e.g. "96 registers" or "used 1 barriers"; calls back with
 * the number and the words after it. */
static void each_item(const char *p, const char *end, void (*fn)(evo_kernel_res *res, long v, const char *w, size_t wn),
                      evo_kernel_res *res)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *q = p;
        while (q < stop && !isdigit((unsigned char)*q)) q++;
        if (q < stop) {
            char *after;
            long v = strtol(q, &after, 10);
            while (after < stop && *after == ' ') after++;
            const char *wend = stop;
            while (wend > after && isspace((unsigned char)wend[-1])) wend--;
            fn(res, v, after, (size_t)(wend - after));
        }
        p = comma ? comma + 1 : end;
    }
}

static bool word_is(const char *w, size_t wn, const char *lit) { return wn == strlen(lit) && !memcmp(w, lit, wn); }
static bool word_starts(const char *w, size_t wn, const char *lit)
{
    return wn >= strlen(lit) && !memcmp(w, lit, strlen(lit));
}

static void used_item(evo_kernel_res *res, long v, const char *w, size_t wn)
{
    if (word_is(w, wn, "registers"))
        res->registers = (int)v;
    else if (word_is(w, wn, "barriers"))
        res->barriers = (int)v;
    else if (word_is(w, wn, "bytes smem"))
        res->smem_bytes = (int)v;
    else if (word_starts(w, wn, "bytes cmem["))
        res->cmem_bytes += (int)v;
    /* "bytes cumulative stack size", "bytes lmem", textures, samplers, surfaces: not gated on */
}

static void props_item(evo_kernel_res *res, long v, const char *w, size_t wn)
{
    if (word_is(w, wn, "bytes stack frame"))
        res->stack_frame_bytes = (int)v;
    else if (word_is(w, wn, "bytes spill stores"))
        res->spill_store_bytes = (int)v;
    else if (word_is(w, wn, "bytes spill loads"))
        res->spill_load_bytes = (int)v;
}

static const char *find_in(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    for (; p + n <= end; p++)
        if (memcmp(p, lit, n) == 0) return p;
    return NULL;
}

void evo_ptxas_parse(const char *log, evo_ptxas_report *out)
{
    out->funcs = NULL;
    out->n = 0;
    if (!log) return;
    /* Indices, not pointers: func_get reallocates. "Used" belongs to the entry being compiled, the stack line to
     * the function whose properties were announced last. */
    int entry = -1, props = -1;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *p = line;
        while (p < end && isspace((unsigned char)*p)) p++;
        if (end - p >= 5 && memcmp(p, "ptxas", 5) == 0) {
            const char *m;
            if ((m = find_in(p, end, "Compiling entry function '"))) {
                const char *name = m + strlen("Compiling entry function '");
                const char *q = memchr(name, '\'', (size_t)(end - name));
                if (q) {
                    evo_ptxas_func *f = func_get(out, name, (size_t)(q - name));
                    f->is_entry = true;
                    entry = (int)(f - out->funcs);
                }
            } else if ((m = find_in(p, end, "Function properties for "))) {
                const char *name = m + strlen("Function properties for ");
                const char *q = end;
                while (q > name && isspace((unsigned char)q[-1])) q--;
                if (q > name) props = (int)(func_get(out, name, (size_t)(q - name)) - out->funcs);
            } else if (find_in(p, end, "bytes stack frame")) {
                if (props >= 0) each_item(p, end, props_item, &out->funcs[props].res);
            } else if ((m = find_in(p, end, "Used ")) && find_in(m, end, "registers")) {
                if (entry >= 0) {
                    evo_kernel_res *res = &out->funcs[entry].res;
                    /* Absent items mean zero once ptxas reports the function at all. */
                    res->barriers = res->smem_bytes = res->cmem_bytes = 0;
                    each_item(m + strlen("Used "), end, used_item, res);
                }
            }
        }
        line = *end ? end + 1 : end;
    }
}

const evo_ptxas_func *evo_ptxas_find(const evo_ptxas_report *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->funcs[i].name, name) == 0) return &r->funcs[i];
    return NULL;
}

void evo_ptxas_report_free(evo_ptxas_report *r)
{
    for (int i = 0; i < r->n; i++) free(r->funcs[i].name);
    free(r->funcs);
    r->funcs = NULL;
    r->n = 0;
}

static void fmt_bytes(char *buf, size_t n, int v)
{
    if (v < 0)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%d", v);
}

int evo_kernel_res_format(const evo_kernel_res *r, char *buf, size_t n)
{
    char regs[16], smem[16], st[16], ld[16], stack[16], cmem[16], bar[16];
    fmt_bytes(regs, sizeof regs, r->registers);
    fmt_bytes(smem, sizeof smem, r->smem_bytes);
    fmt_bytes(st, sizeof st, r->spill_store_bytes);
    fmt_bytes(ld, sizeof ld, r->spill_load_bytes);
    fmt_bytes(stack, sizeof stack, r->stack_frame_bytes);
    fmt_bytes(cmem, sizeof cmem, r->cmem_bytes);
    fmt_bytes(bar, sizeof bar, r->barriers);
    return snprintf(buf, n, "regs %s, smem %s B, spills %s/%s B, stack %s B, cmem %s B, barriers %s", regs, smem, st,
                    ld, stack, cmem, bar);
}
