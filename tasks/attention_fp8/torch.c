/* torch.c — `evo export --torch` for attention_fp8: the PyTorch module (torch_op.py rendered) for an
 * exported attention kernel and an exported quantizer (task quantize_fp8). The facts come from the two files'
 * text alone (so `evo export --torch --kernel FILE` writes the same module as from the store): the genomes and
 * archs from their EVO_EXPORT_* defines, the attention kernel's 8-bit format and head dims, the quantizer's variants
 * (head dim:dtype:rotate, in table order); the C++ operators (torch_ops.cpp) go into the module as its OPS_CPP. */
#include "attention.h"

#include "export.h"
#include "templates.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The line after the start of line `at` (or the end). */
static const char *next_line(const char *at)
{
    const char *nl = strchr(at, '\n');
    return nl ? nl + 1 : at + strlen(at);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

typedef struct {
    char genome[16384], arch[32], quant_genome[1024], quant_arch[32], format[8], head_dims[64], variants[512];
} torch_facts;

static evo_status attention_facts(const evo_torch_files *f, torch_facts *t, evo_err *err)
{
    const char *text = f->kernel_text;
    t->format[0] = '\0';
    for (const char *l = text; *l; l = next_line(l)) {
        static const char key[] = "#define EVO_EXPORT_FORMAT EVO_FORMAT_";
        if (strncmp(l, key, sizeof key - 1) != 0) continue;
        const char *v = l + sizeof key - 1, *e = v;
        while (isalnum((unsigned char)*e) || *e == '_') e++;
        const char *rest = e;
        while (*rest == ' ' || *rest == '\t' || *rest == '\r') rest++;
        if (*rest != '\n' && *rest != '\0') continue;
        if (e - v == 4 && strncmp(v, "E4M3", 4) == 0)
            snprintf(t->format, sizeof t->format, "e4m3");
        else if (e - v == 5 && strncmp(v, "U8SIM", 5) == 0)
            snprintf(t->format, sizeof t->format, "u8sim");
        if (t->format[0]) break;
    }
    int dims[16], n = 0;
    for (const char *l = text; *l; l = next_line(l)) {
        /* the instantiations of either family (a dispatching file holds both) */
        static const char key0[] = "template __global__ void evo_attn_fwd<";
        static const char key1[] = "template __global__ void evo_attn_sm90<";
        const char *num = strncmp(l, key0, sizeof key0 - 1) == 0   ? l + sizeof key0 - 1
                          : strncmp(l, key1, sizeof key1 - 1) == 0 ? l + sizeof key1 - 1
                                                                   : NULL;
        if (!num) continue;
        char *end;
        const long d = strtol(num, &end, 10);
        if (end == num || *end != ',') continue;
        bool seen = false;
        for (int i = 0; i < n; i++) seen = seen || dims[i] == (int)d;
        if (!seen && n < 16) dims[n++] = (int)d;
    }
    if (!t->format[0] || n == 0 || !strstr(text, "evo_attention_forward("))
        return evo_fail(err, EVO_E_CONFIG,
                        "%s: not an attention kernel written by evo export (no EVO_EXPORT_FORMAT or variants)",
                        f->kernel_path);
    qsort(dims, (size_t)n, sizeof dims[0], cmp_int);
    size_t used = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(t->head_dims + used, sizeof t->head_dims - used, "%s%d", i ? "," : "", dims[i]);
    if (!evo_export_define(text, "EVO_EXPORT_GENOME", t->genome, sizeof t->genome) ||
        !evo_export_define(text, "EVO_EXPORT_ARCH", t->arch, sizeof t->arch))
        return evo_fail(err, EVO_E_CONFIG,
                        "%s: no #define EVO_EXPORT_GENOME or EVO_EXPORT_ARCH: not a file written "
                        "by evo export",
                        f->kernel_path);
    return EVO_OK;
}

/* Rows "  {D, BF16, ROT, evo_quant<" of the quantizer's variant table, in order, each class once. */
static evo_status quantize_facts(const evo_torch_files *f, torch_facts *t, evo_err *err)
{
    const char *text = f->companion_text;
    size_t used = 0;
    int rows = 0;
    t->variants[0] = '\0';
    for (const char *l = text; *l; l = next_line(l)) {
        const char *p = l;
        while (*p == ' ' || *p == '\t') p++;
        if (*p++ != '{' || !isdigit((unsigned char)*p)) continue;
        char *end;
        const long d = strtol(p, &end, 10);
        if (strncmp(end, ", ", 2) != 0 || (end[2] != '0' && end[2] != '1') || strncmp(end + 3, ", ", 2) != 0 ||
            (end[5] != '0' && end[5] != '1') || strncmp(end + 6, ", evo_quant<", 12) != 0)
            continue;
        char tok[48], seen[sizeof t->variants + 2];
        snprintf(tok, sizeof tok, ",%ld:%s:%c,", d, end[2] == '1' ? "bf16" : "fp16", end[5]);
        snprintf(seen, sizeof seen, ",%s,", t->variants);
        if (strstr(seen, tok)) continue; /* a dispatching quantizer has a row per genome and class */
        used += (size_t)snprintf(t->variants + used, used < sizeof t->variants ? sizeof t->variants - used : 0,
                                 "%s%ld:%s:%c", rows ? "," : "", d, end[2] == '1' ? "bf16" : "fp16", end[5]);
        rows++;
    }
    if (rows == 0 || used >= sizeof t->variants || !strstr(text, "evo_quantize_forward("))
        return evo_fail(err, EVO_E_CONFIG, "%s: not a quantizer written by evo export (no qvariant rows)",
                        f->companion_path);
    if (!evo_export_define(text, "EVO_EXPORT_GENOME", t->quant_genome, sizeof t->quant_genome) ||
        !evo_export_define(text, "EVO_EXPORT_ARCH", t->quant_arch, sizeof t->quant_arch))
        return evo_fail(err, EVO_E_CONFIG,
                        "%s: no #define EVO_EXPORT_GENOME or EVO_EXPORT_ARCH: not a file written "
                        "by evo export",
                        f->companion_path);
    return EVO_OK;
}

evo_status evo_attn_torch_module(const evo_torch_files *f, const char *module, char **py, evo_err *err)
{
    torch_facts t;
    evo_status s = attention_facts(f, &t, err);
    if (s == EVO_OK) s = quantize_facts(f, &t, err);
    if (s != EVO_OK) return s;
    /* sm_90a (the wgmma family) and sm_90 (the quantizer) run on one GPU: the module builds each file for its own
     * arch, and the GPU must have their compute capability */
    const size_t base = strcspn(t.arch, "af"); /* "sm_90" of "sm_90a" */
    if (base != strcspn(t.quant_arch, "af") || strncmp(t.arch, t.quant_arch, base) != 0)
        return evo_fail(err, EVO_E_CONFIG, "%s is for %s, %s for %s: export both for one GPU", f->kernel_path, t.arch,
                        f->companion_path, t.quant_arch);
    const char *tmpl, *ops_cpp;
    if ((s = evo_template_get("torch_op.py", &tmpl, NULL, err)) != EVO_OK) return s;
    if ((s = evo_template_get("torch_ops.cpp", &ops_cpp, NULL, err)) != EVO_OK) return s;
    if (strstr(ops_cpp, "'''"))
        return evo_fail(err, EVO_E_INTERNAL, "torch_ops.cpp holds ''': it cannot go into the module's raw string");
    const struct {
        const char *name, *value;
    } values[] = {{"GENOME", t.genome},
                  {"ARCH", t.arch},
                  {"ATTN_FORMAT", t.format},
                  {"ATTN_HEAD_DIMS", t.head_dims},
                  {"QUANT_GENOME", t.quant_genome},
                  {"QUANT_ARCH", t.quant_arch},
                  {"QUANT_VARIANTS", t.variants},
                  {"MODULE", module},
                  {"ATTENTION_CU", f->kernel_name},
                  {"QUANTIZE_CU", f->companion_name},
                  {"OPS_CPP", ops_cpp}};
    evo_str out = {0};
    for (const char *p = tmpl; *p;) {
        const char *at = strchr(p, '@');
        if (!at) {
            evo_str_append(&out, p);
            break;
        }
        const char *e = at + 1;
        while (isupper((unsigned char)*e) || *e == '_') e++;
        if (*e != '@' || e == at + 1) { /* not a placeholder: the '@' stays */
            evo_str_appendn(&out, p, (size_t)(at - p) + 1);
            p = at + 1;
            continue;
        }
        evo_str_appendn(&out, p, (size_t)(at - p));
        const char *v = NULL;
        for (size_t i = 0; i < EVO_ARRAY_LEN(values) && !v; i++)
            if (strlen(values[i].name) == (size_t)(e - at - 1) &&
                strncmp(values[i].name, at + 1, (size_t)(e - at - 1)) == 0)
                v = values[i].value;
        if (!v) {
            evo_str_free(&out);
            return evo_fail(err, EVO_E_INTERNAL, "torch_op.py: no value for @%.*s@", (int)(e - at - 1), at + 1);
        }
        evo_str_append(&out, v);
        p = e + 1;
    }
    *py = evo_str_take(&out);
    return EVO_OK;
}
