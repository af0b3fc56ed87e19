/* config.c — loads and validates the YAML configuration (see config.h) with libyaml's document API, which keeps
 * the line and column of every node, so every error can say "file:line:col: key.path: what is wrong".
 * Each mapping's keys are checked against a fixed list before its values are read; docs/usage.md lists them. */
#include "config.h"

#include "paths.h"
#include "task.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

/* Registered by the layers above (evo_config_set_checks); zero: nothing beyond this layer's own rules. */
static evo_config_checks checks;

void evo_config_set_checks(const evo_config_checks *c) { checks = c ? *c : (evo_config_checks){0}; }

/* ---- names ---- */

static const char *const dist_names[EVO_DIST_COUNT] = {"normal", "uniform", "outliers", "zero_head", "large"};

const char *evo_dist_name(evo_dist d) { return (unsigned)d < EVO_DIST_COUNT ? dist_names[d] : "?"; }

int evo_dist_parse(const char *name, evo_dist *d)
{
    for (int i = 0; i < EVO_DIST_COUNT; i++)
        if (strcmp(name, dist_names[i]) == 0) return *d = (evo_dist)i, 0;
    return -1;
}

double evo_config_option(const evo_config *c, const char *name, double def)
{
    const evo_task *t = c->task_ops;
    for (int i = 0; t && i < t->n_options; i++)
        if (strcmp(t->options[i].name, name) == 0) return c->options[i];
    return def;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

const char *evo_fitness_describe(evo_fitness f)
{
    return f == EVO_FITNESS_WORST ? "smallest over the shapes" : "geometric mean over the shapes";
}

/* One line per timed shape, its field values in the task's order ("2,8,2048,64,1"), sorted. Names are left out
 * on purpose: renaming a shape must not orphan the elites measured on it. */
static void shapes_key(const evo_config *c, bool with_fitness, char hex[65])
{
    char lines[EVO_MAX_SHAPES][EVO_FIELDS_MAX * 21 + 2];
    char *sorted[EVO_MAX_SHAPES];
    for (int i = 0; i < c->n_shapes; i++) {
        const evo_shape *s = &c->shapes[i];
        size_t used = 0;
        lines[i][0] = '\0';
        for (int f = 0; f < c->task_ops->n_shape_fields; f++) {
            const evo_field *fd = &c->task_ops->shape_fields[f];
            if (fd->type != EVO_FIELD_REAL)
                used += (size_t)snprintf(lines[i] + used, sizeof lines[i] - used, "%s%lld", f ? "," : "", s->v[f]);
            else if (evo_field_load(fd, s->v[f]) != fd->dflt) /* a real field counts only when set */
                used += (size_t)snprintf(lines[i] + used, sizeof lines[i] - used, ",%s=%.17g", fd->name,
                                         evo_field_load(fd, s->v[f]));
        }
        snprintf(lines[i] + used, sizeof lines[i] - used, "\n");
        sorted[i] = lines[i];
    }
    qsort(sorted, (size_t)c->n_shapes, sizeof sorted[0], cmp_str);
    evo_str t = {0};
    for (int i = 0; i < c->n_shapes; i++) evo_str_append(&t, sorted[i]);
    if (with_fitness && c->fitness == EVO_FITNESS_WORST) evo_str_append(&t, "fitness=worst\n");
    evo_sha256_hex(evo_str_cstr(&t), t.len, hex);
    evo_str_free(&t);
}

void evo_config_accuracy_names(const evo_config *c, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < evo_task_accuracy_count(c->task_ops) && used < n; i++)
        if (c->accuracy & (1u << i))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
                                     evo_task_accuracy_name(c->task_ops, i));
}

void evo_config_shape_set_key(const evo_config *c, char hex[65]) { shapes_key(c, true, hex); }
void evo_config_measured_key(const evo_config *c, char hex[65]) { shapes_key(c, false, hex); }

void evo_config_free(evo_config *c)
{
    if (!c) return;
    free(c->path);
    free(c->text);
    evo_space_free(c->space);
    free(c->seeds);
    free(c->compile.extra_options);
    free(c);
}

/* ---- the walk over the document ---- */

typedef struct {
    size_t index; /* the node's start_mark.index */
    char tag[24]; /* as written, shortened: "!!str" */
} tagged_scalar;

typedef struct {
    const char *file;
    const char *text; /* for positions libyaml reports as byte offsets */
    size_t len;
    yaml_document_t doc;
    evo_err *err;
    evo_config *c;
    const evo_task *task;
    tagged_scalar *tagged; /* scalars written with an explicit tag, by position (the document forgets the tag) */
    int n_tagged;
} loader;

#define PATH_MAX_LEN 256

static evo_status fail_at(loader *L, yaml_mark_t m, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static evo_status fail_at(loader *L, yaml_mark_t m, const char *path, const char *fmt, ...)
{
    if (L->err) {
        char what[768];
        va_list ap;
        va_start(ap, fmt);
        evo_format_clipped(what, sizeof what, fmt, ap);
        va_end(ap);
        evo_fail(L->err, EVO_E_CONFIG, "%s:%zu:%zu: %s: %s", L->file, m.line + 1, m.column + 1,
                 path[0] ? path : "top level", what);
    }
    return EVO_E_CONFIG;
}

#define FAIL(L, node, path, ...) fail_at((L), (node)->start_mark, (path), __VA_ARGS__)
#define TRY(x) \
    do { \
        evo_status s_ = (x); \
        if (s_ != EVO_OK) return s_; \
    } while (0)

static yaml_node_t *node_at(loader *L, int id) { return yaml_document_get_node(&L->doc, id); }

/* Key paths for messages ("evolution.population", "shapes[2].seq"); a pathological key is cut short. */
static const char *sub(char *buf, const char *parent, const char *key)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s%s%s", parent, parent[0] ? "." : "", key) >= PATH_MAX_LEN)
        strcpy(buf + PATH_MAX_LEN - 4, "...");
    return buf;
}

static const char *item(char *buf, const char *parent, int i)
{
    if (snprintf(buf, PATH_MAX_LEN, "%s[%d]", parent, i) >= PATH_MAX_LEN) strcpy(buf + PATH_MAX_LEN - 4, "...");
    return buf;
}

static bool is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    const char *v = (const char *)n->data.scalar.value;
    return !v[0] || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* What a node is, for "expected X, found Y". */
static const char *found(const yaml_node_t *n, char *buf, size_t len)
{
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    if (is_null(n)) return "no value";
    const char *v = (const char *)n->data.scalar.value;
    bool quoted = n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    snprintf(buf, len, "%s'%.40s%s'", quoted ? "the quoted string " : "", v, strlen(v) > 40 ? "..." : "");
    return buf;
}

static evo_status expected(loader *L, const yaml_node_t *n, const char *path, const char *what)
{
    char buf[96];
    if (is_null(n)) return FAIL(L, n, path, "no value given (expected %s; leave the key out to get its default)", what);
    return FAIL(L, n, path, "expected %s, found %s", what, found(n, buf, sizeof buf));
}

static evo_status need_scalar(loader *L, const yaml_node_t *n, const char *path, const char *what, const char **out)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n)) return expected(L, n, path, what);
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
        return FAIL(L, n, path, "contains a NUL character");
    *out = (const char *)n->data.scalar.value;
    return EVO_OK;
}

static evo_status need_kind(loader *L, const yaml_node_t *n, const char *path, yaml_node_type_t t)
{
    if (n->type == t) return EVO_OK;
    return expected(L, n, path, t == YAML_MAPPING_NODE ? "a mapping of keys" : "a list");
}

/* Levenshtein distance, to suggest the key a typo meant. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

static void list_names(const char *const *names, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* Every key of the mapping must be one of `known`, and appear once. */
static evo_status check_keys(loader *L, const yaml_node_t *map, const char *path, const char *const *known)
{
    char p[PATH_MAX_LEN];
    for (yaml_node_pair_t *a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
        const yaml_node_t *k = node_at(L, a->key);
        const char *name;
        if (k->type != YAML_SCALAR_NODE || is_null(k)) return expected(L, k, path, "a key name");
        TRY(need_scalar(L, k, path, "a key name", &name));
        int best = -1, best_d = 3;
        bool ok = false;
        for (int i = 0; known[i]; i++) {
            if (strcmp(name, known[i]) == 0) ok = true;
            int d = edit_distance(name, known[i]);
            if (d < best_d) best_d = d, best = i;
        }
        sub(p, path, name);
        if (!ok) {
            if (best >= 0) return FAIL(L, k, p, "unknown key (did you mean '%s'?)", known[best]);
            char all[512];
            list_names(known, all, sizeof all);
            return FAIL(L, k, p, "unknown key (known here: %s)", all);
        }
        for (yaml_node_pair_t *b = map->data.mapping.pairs.start; b < a; b++) {
            const yaml_node_t *k2 = node_at(L, b->key);
            if (strcmp((const char *)k2->data.scalar.value, name) == 0)
                return FAIL(L, k, p, "key given twice (first at line %zu)", k2->start_mark.line + 1);
        }
    }
    return EVO_OK;
}

static yaml_node_t *get(loader *L, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
        const yaml_node_t *k = node_at(L, a->key);
        if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return node_at(L, a->value);
    }
    return NULL;
}

static evo_status need(loader *L, const yaml_node_t *map, const char *path, const char *key, yaml_node_t **out)
{
    char p[PATH_MAX_LEN];
    *out = get(L, map, key);
    if (!*out) return FAIL(L, map, sub(p, path, key), "required key is missing");
    return EVO_OK;
}

/* ---- typed scalars: numbers and booleans must be written plain (a quoted "64" is a string in YAML) ---- */

/* A number or boolean is written plain: `!!str 216` is a string in YAML, whatever its text looks like. */
static evo_status refuse_tag(loader *L, const yaml_node_t *n, const char *path, const char *what, const char *allowed)
{
    if (n->type != YAML_SCALAR_NODE) return EVO_OK;
    for (int i = 0; i < L->n_tagged; i++)
        if (L->tagged[i].index == n->start_mark.index && strcmp(L->tagged[i].tag, allowed) != 0)
            return FAIL(L, n, path, "expected %s, found '%s %.40s' (a value tagged %s is not %s; write it plain)", what,
                        L->tagged[i].tag, (const char *)n->data.scalar.value, L->tagged[i].tag, what);
    return EVO_OK;
}

static evo_status as_int(loader *L, const yaml_node_t *n, const char *path, long long lo, long long hi, long long *out)
{
    const char *v = NULL;
    TRY(refuse_tag(L, n, path, "an integer", "!!int"));
    TRY(need_scalar(L, n, path, "an integer", &v));
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 0);
    bool octal_looking = (v[0] == '0' && isdigit((unsigned char)v[1])) ||
                         ((v[0] == '-' || v[0] == '+') && v[1] == '0' && isdigit((unsigned char)v[2]));
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || end == v || *end || octal_looking ||
        isspace((unsigned char)v[0]))
        return expected(L, n, path, "an integer");
    if (errno == ERANGE || x < lo || x > hi)
        return FAIL(L, n, path, "%s is out of range: must be %lld to %lld", v, lo, hi);
    *out = x;
    return EVO_OK;
}

static evo_status as_i32(loader *L, const yaml_node_t *n, const char *path, int lo, int hi, int *out)
{
    long long x;
    TRY(as_int(L, n, path, lo, hi, &x));
    *out = (int)x;
    return EVO_OK;
}

typedef enum { OPEN, CLOSED } bound;

static evo_status as_double(loader *L, const yaml_node_t *n, const char *path, double lo, bound lob, double hi,
                            bound hib, double *out)
{
    const char *v = NULL;
    TRY(refuse_tag(L, n, path, "a number", "!!float"));
    TRY(need_scalar(L, n, path, "a number", &v));
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || end == v || *end || isspace((unsigned char)v[0]))
        return expected(L, n, path, "a number");
    if (!isfinite(x)) return FAIL(L, n, path, "%s is not a finite number", v);
    if ((lob == OPEN ? x <= lo : x < lo) || (hib == OPEN ? x >= hi : x > hi))
        return FAIL(L, n, path, "%s is out of range: must be %s %g and %s %g", v,
                    lob == OPEN ? "greater than" : "at least", lo, hib == OPEN ? "below" : "at most", hi);
    *out = x;
    return EVO_OK;
}

static evo_status as_bool(loader *L, const yaml_node_t *n, const char *path, bool *out)
{
    const char *v = NULL;
    TRY(refuse_tag(L, n, path, "true or false", "!!bool"));
    TRY(need_scalar(L, n, path, "true or false", &v));
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) return *out = true, EVO_OK;
        if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) return *out = false, EVO_OK;
    }
    return expected(L, n, path, "true or false");
}

/* A string of at most max-1 bytes (max includes the NUL). */
static evo_status as_str(loader *L, const yaml_node_t *n, const char *path, size_t max, const char **out)
{
    TRY(need_scalar(L, n, path, "a string", out));
    if (strlen(*out) >= max) return FAIL(L, n, path, "too long (at most %zu characters)", max - 1);
    return EVO_OK;
}

static evo_status as_name(loader *L, const yaml_node_t *n, const char *path, const char *const *names, const char *what,
                          int *out)
{
    const char *v;
    TRY(need_scalar(L, n, path, what, &v));
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) return *out = i, EVO_OK;
    char all[256];
    list_names(names, all, sizeof all);
    return FAIL(L, n, path, "unknown %s '%.40s' (known: %s)", what, v, all);
}

/* Optional keys: leave *out (the default) alone when the key is absent. */
static evo_status opt_i32(loader *L, const yaml_node_t *map, const char *path, const char *key, int lo, int hi,
                          int *out)
{
    char p[PATH_MAX_LEN];
    yaml_node_t *n = get(L, map, key);
    return n ? as_i32(L, n, sub(p, path, key), lo, hi, out) : EVO_OK;
}

static evo_status opt_double(loader *L, const yaml_node_t *map, const char *path, const char *key, double lo, bound lob,
                             double hi, bound hib, double *out)
{
    char p[PATH_MAX_LEN];
    yaml_node_t *n = get(L, map, key);
    return n ? as_double(L, n, sub(p, path, key), lo, lob, hi, hib, out) : EVO_OK;
}

static evo_status opt_bool(loader *L, const yaml_node_t *map, const char *path, const char *key, bool *out)
{
    char p[PATH_MAX_LEN];
    yaml_node_t *n = get(L, map, key);
    return n ? as_bool(L, n, sub(p, path, key), out) : EVO_OK;
}

static evo_status opt_map(loader *L, const yaml_node_t *parent, const char *key, const char *const *known,
                          yaml_node_t **out)
{
    *out = get(L, parent, key);
    if (!*out) return EVO_OK;
    TRY(need_kind(L, *out, key, YAML_MAPPING_NODE));
    return check_keys(L, *out, key, known);
}

#define N_ITEMS(n) ((int)((n)->data.sequence.items.top - (n)->data.sequence.items.start))
#define ITEM(L, n, i) node_at((L), (n)->data.sequence.items.start[i])

/* ---- space ---- */

static bool is_identifier(const char *v)
{
    if (!(isalpha((unsigned char)v[0]) || v[0] == '_')) return false;
    for (; *v; v++)
        if (!(isalnum((unsigned char)*v) || *v == '_')) return false;
    return true;
}

static int utf8_chars(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Adds one knob from its YAML domain: all integers, or all names (an enumerated knob). With legal (the task's
 * values for the knob), integers only, each one the template can take. */
static evo_status add_knob(loader *L, evo_space *s, const char *name, const evo_knob_legal *legal,
                           const yaml_node_t *dom, const char *path)
{
    char p[PATH_MAX_LEN];
    TRY(need_kind(L, dom, path, YAML_SEQUENCE_NODE));
    int n = N_ITEMS(dom);
    if (n == 0) return FAIL(L, dom, path, "empty domain: a knob needs at least one value");
    if (n > EVO_MAX_DOMAIN) return FAIL(L, dom, path, "%d values: a domain holds at most %d", n, EVO_MAX_DOMAIN);
    const yaml_node_t *first = ITEM(L, dom, 0);
    bool is_enum =
        first->type == YAML_SCALAR_NODE && !is_null(first) && is_identifier((const char *)first->data.scalar.value);
    char legal_text[128] = "";
    if (legal) evo_knob_legal_format(legal, legal_text, sizeof legal_text);
    if (legal && is_enum) return FAIL(L, first, item(p, path, 0), "expected an integer (legal: %s)", legal_text);
    int values[EVO_MAX_DOMAIN];
    const char *names[EVO_MAX_DOMAIN];
    for (int i = 0; i < n; i++) {
        const yaml_node_t *v = ITEM(L, dom, i);
        item(p, path, i);
        if (is_enum) {
            TRY(need_scalar(L, v, p, "a value name like the domain's first", &names[i]));
            if (!is_identifier(names[i]) || strcmp(names[i], "in") == 0 || strlen(names[i]) > 63)
                return FAIL(L, v, p,
                            "'%.40s' is not a value name (letters, digits, '_'; at most 63) and the "
                            "domain's first value makes this an enumerated knob",
                            names[i]);
        } else {
            TRY(as_i32(L, v, p, -2147483647 - 1, 2147483647, &values[i]));
            if (legal && !evo_knob_legal_has(legal, values[i]))
                return FAIL(L, v, p, "%d is not a legal value; legal: %s", values[i], legal_text);
        }
        for (int j = 0; j < i; j++)
            if (is_enum ? !strcmp(names[i], names[j]) : values[i] == values[j])
                return FAIL(L, v, p, "value %s appears twice in the domain of %s", (const char *)v->data.scalar.value,
                            name);
    }
    evo_err e = {0};
    evo_status st =
        is_enum ? evo_space_add_enum_knob(s, name, names, n, &e) : evo_space_add_int_knob(s, name, values, n, &e);
    if (st != EVO_OK) return FAIL(L, dom, path, "%s", e.msg);
    return EVO_OK;
}

/* The file position of column `col` of a constraint: exact when the scalar is on one line without escapes. */
static yaml_mark_t constraint_mark(const yaml_node_t *n, int col, bool *exact)
{
    yaml_mark_t m = n->start_mark;
    yaml_scalar_style_t st = n->data.scalar.style;
    int quotes = (st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE) ? 2 : 0;
    int chars = utf8_chars((const char *)n->data.scalar.value, n->data.scalar.length);
    *exact = (st == YAML_PLAIN_SCALAR_STYLE || quotes) && n->end_mark.line == m.line &&
             n->end_mark.index - m.index == (size_t)(chars + quotes);
    if (*exact) m.column += (size_t)(quotes / 2 + col - 1);
    return m;
}

/* A knob's entry in space.knobs: its domain (a list), or {values: [...], when: "CONDITION"}. *dom is the list,
 * *when the condition's node (NULL: always active). */
static evo_status knob_entry(loader *L, const yaml_node_t *n, const char *path, const yaml_node_t **dom,
                             const yaml_node_t **when)
{
    static const char *const keys[] = {"values", "when", NULL};
    *dom = n;
    *when = NULL;
    if (n->type != YAML_MAPPING_NODE) return EVO_OK;
    TRY(check_keys(L, n, path, keys));
    char p[PATH_MAX_LEN];
    yaml_node_t *v;
    TRY(need(L, n, path, "values", &v));
    *dom = v;
    *when = get(L, n, "when");
    if (*when) {
        const char *text;
        TRY(need_scalar(L, *when, sub(p, path, "when"), "a condition expression over other knobs", &text));
    }
    return EVO_OK;
}

/* Builds the space with the task's knobs in the task's order (so a genome's text and hash do not depend on the
 * order the YAML lists them in), their conditions, and the first n_cons constraints. */
static evo_status build_space(loader *L, yaml_node_t *const *domains, const yaml_node_t *cons, int n_cons,
                              evo_space **out)
{
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    evo_space *s;
    TRY(evo_space_new(&s));
    evo_status st = EVO_OK;
    const yaml_node_t *when[EVO_MAX_KNOBS] = {0};
    int space_knob[EVO_MAX_KNOBS]; /* the space's index of each task knob; -1 when not in the space */
    for (int k = 0; L->task->knobs[k] && st == EVO_OK; k++) {
        space_knob[k] = -1;
        if (!domains[k]) { /* left out: the task's default, the only value (or no knob at all, when optional) */
            if (!evo_str_in_list(L->task->knobs[k], L->task->optional_knobs)) {
                space_knob[k] = evo_space_n_knobs(s);
                st = evo_space_add_int_knob(s, L->task->knobs[k], &L->task->knob_defaults[k], 1, NULL);
            }
            continue;
        }
        const yaml_node_t *dom;
        sub(p, "space.knobs", L->task->knobs[k]);
        st = knob_entry(L, domains[k], p, &dom, &when[k]);
        if (st != EVO_OK) break;
        space_knob[k] = evo_space_n_knobs(s);
        st = add_knob(L, s, L->task->knobs[k], L->task->knob_legal ? &L->task->knob_legal[k] : NULL, dom,
                      domains[k] == dom ? p : sub(q, p, "values"));
    }
    /* Conditions after every knob: one may read a knob declared after its own. */
    for (int k = 0; L->task->knobs[k] && st == EVO_OK; k++) {
        if (!when[k]) continue;
        sub(p, "space.knobs", L->task->knobs[k]);
        sub(q, p, "when");
        int col = 0;
        evo_err e = {0};
        st = evo_space_set_condition(s, space_knob[k], (const char *)when[k]->data.scalar.value, &col, &e);
        if (st != EVO_OK) {
            bool exact = false;
            yaml_mark_t m = col > 0 ? constraint_mark(when[k], col, &exact) : when[k]->start_mark;
            if (exact || col <= 0)
                st = fail_at(L, m, q, "%s", e.msg);
            else
                st = fail_at(L, m, q, "%s (column %d of the expression)", e.msg, col);
        }
    }
    for (int i = 0; i < n_cons && st == EVO_OK; i++) {
        const yaml_node_t *n = ITEM(L, cons, i);
        const char *text = NULL;
        item(q, "space.constraints", i);
        st = need_scalar(L, n, q, "a constraint expression", &text);
        if (st != EVO_OK) break;
        int col = 0;
        evo_err e = {0};
        st = evo_space_add_constraint_ex(s, text, &col, &e);
        if (st != EVO_OK) {
            bool exact;
            yaml_mark_t m = constraint_mark(n, col, &exact);
            if (exact)
                st = fail_at(L, m, q, "%s", e.msg);
            else
                st = fail_at(L, m, q, "%s (column %d of the expression)", e.msg, col);
        }
    }
    if (st != EVO_OK) {
        evo_space_free(s);
        return st;
    }
    *out = s;
    return EVO_OK;
}

/* True when enumeration proves that the first n_cons constraints admit no genome. */
static bool proven_empty(loader *L, yaml_node_t *const *domains, const yaml_node_t *cons, int n_cons)
{
    evo_space *s;
    if (build_space(L, domains, cons, n_cons, &s) != EVO_OK) return false;
    uint64_t total, valid;
    bool exact;
    evo_status st = evo_space_count(s, 2000000, &total, &valid, &exact, NULL);
    evo_space_free(s);
    return st == EVO_OK && exact && valid == 0;
}

/* Which constraint empties the space: the smallest k for which constraints 1..k admit no genome (adding a
 * constraint never adds genomes, so a binary search finds it). -1 when the space is not provably empty. */
static int first_unsatisfiable(loader *L, yaml_node_t *const *domains, const yaml_node_t *cons)
{
    int n = N_ITEMS(cons);
    if (n == 0 || !proven_empty(L, domains, cons, n)) return -1;
    int lo = 1, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (proven_empty(L, domains, cons, mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo - 1;
}

static evo_status check_genome(loader *L, const yaml_node_t *n, const char *path, const yaml_node_t *cons,
                               yaml_node_t *const *domains, evo_genome *g)
{
    const char *text;
    TRY(need_scalar(L, n, path, "a genome (KNOB=VALUE,...)", &text));
    evo_err e = {0};
    if (evo_genome_parse(L->c->space, text, g, &e) != EVO_OK) return FAIL(L, n, path, "%s", e.msg);
    const char *violated;
    if (evo_space_valid(L->c->space, g, &violated)) return EVO_OK;
    int k = cons ? first_unsatisfiable(L, domains, cons) : -1;
    if (k >= 0) {
        char p[PATH_MAX_LEN];
        const yaml_node_t *cn = ITEM(L, cons, k);
        if (k == 0) return FAIL(L, cn, item(p, "space.constraints", k), "no genome satisfies this constraint");
        return FAIL(L, cn, item(p, "space.constraints", k),
                    "no genome satisfies this constraint together with the ones before it");
    }
    return FAIL(L, n, path, "genome violates the constraint '%s'", violated);
}

static evo_status load_space(loader *L, const yaml_node_t *root)
{
    static const char *const keys[] = {"knobs", "constraints", NULL};
    char p[PATH_MAX_LEN];
    yaml_node_t *space, *knobs;
    TRY(need(L, root, "", "space", &space));
    TRY(need_kind(L, space, "space", YAML_MAPPING_NODE));
    TRY(check_keys(L, space, "space", keys));
    TRY(need(L, space, "space", "knobs", &knobs));
    TRY(need_kind(L, knobs, "space.knobs", YAML_MAPPING_NODE));

    const char *const *tk = L->task->knobs;
    int n_task = 0;
    while (tk[n_task]) n_task++;
    char all[512];
    list_names(tk, all, sizeof all);
    yaml_node_t *domains[EVO_MAX_KNOBS] = {0};
    for (yaml_node_pair_t *a = knobs->data.mapping.pairs.start; a < knobs->data.mapping.pairs.top; a++) {
        const yaml_node_t *k = node_at(L, a->key);
        const char *name;
        TRY(need_scalar(L, k, "space.knobs", "a knob name", &name));
        int i = 0;
        while (i < n_task && strcmp(tk[i], name) != 0) i++;
        sub(p, "space.knobs", name);
        if (i == n_task) return FAIL(L, k, p, "unknown knob (task %s takes exactly: %s)", L->task->name, all);
        if (domains[i]) return FAIL(L, k, p, "knob given twice (first at line %zu)", domains[i]->start_mark.line + 1);
        domains[i] = node_at(L, a->value);
    }
    for (int i = 0; i < n_task; i++)
        if (!domains[i] && (!L->task->knob_defaults || L->task->knob_defaults[i] == EVO_KNOB_REQUIRED))
            return FAIL(L, knobs, "space.knobs", "knob '%s' is missing (task %s takes exactly: %s)", tk[i],
                        L->task->name, all);

    yaml_node_t *cons = get(L, space, "constraints");
    if (cons) TRY(need_kind(L, cons, "space.constraints", YAML_SEQUENCE_NODE));
    TRY(build_space(L, domains, cons, cons ? N_ITEMS(cons) : 0, &L->c->space));

    yaml_node_t *base;
    TRY(need(L, root, "", "baseline", &base));
    TRY(check_genome(L, base, "baseline", cons, domains, &L->c->baseline));

    yaml_node_t *seeds = get(L, root, "seeds");
    if (seeds) {
        TRY(need_kind(L, seeds, "seeds", YAML_SEQUENCE_NODE));
        int n = N_ITEMS(seeds);
        L->c->seeds = evo_xcalloc((size_t)(n ? n : 1), sizeof *L->c->seeds);
        for (int i = 0; i < n; i++) {
            const yaml_node_t *g = ITEM(L, seeds, i);
            item(p, "seeds", i);
            TRY(check_genome(L, g, p, cons, domains, &L->c->seeds[i]));
            for (int j = 0; j < i; j++)
                if (evo_genome_equal(L->c->space, &L->c->seeds[i], &L->c->seeds[j]))
                    return FAIL(L, g, p, "same genome as seeds[%d]", j);
            L->c->n_seeds++;
        }
    }
    return EVO_OK;
}

/* ---- shapes ---- */

/* One value of a typed field (task.h): written plain, in range, one of the legal values. */
static evo_status load_field(loader *L, const yaml_node_t *v, const char *path, const evo_field *f, double *out)
{
    char why[256];
    switch (f->type) {
        case EVO_FIELD_BOOL: {
            bool b = false;
            TRY(as_bool(L, v, path, &b));
            *out = b;
            return EVO_OK;
        }
        case EVO_FIELD_ENUM: {
            int i;
            TRY(as_name(L, v, path, f->names, f->name, &i));
            *out = i;
            return EVO_OK;
        }
        case EVO_FIELD_REAL: return as_double(L, v, path, f->rmin, CLOSED, f->rmax, CLOSED, out);
        case EVO_FIELD_INT: break;
    }
    long long x;
    TRY(as_int(L, v, path, f->n_allowed ? LLONG_MIN : f->min, f->n_allowed ? LLONG_MAX : f->max, &x));
    if (!evo_field_check(f, (double)x, why, sizeof why)) return FAIL(L, v, path, "%s", why);
    *out = (double)x;
    return EVO_OK;
}

/* A shape: its name and the task's fields. Correctness shapes leave the axis fields out: they are checked with every
 * value listed under correctness.<field>. */
static evo_status load_shape(loader *L, const yaml_node_t *n, const char *path, bool timed, evo_shape *out)
{
    const evo_task *t = L->task;
    const char *keys[EVO_FIELDS_MAX + 2];
    int nk = 0;
    char p[PATH_MAX_LEN];
    keys[nk++] = "name";
    for (int i = 0; i < t->n_shape_fields; i++)
        if (timed || !t->shape_fields[i].axis) keys[nk++] = t->shape_fields[i].name;
    keys[nk] = NULL;
    TRY(need_kind(L, n, path, YAML_MAPPING_NODE));
    for (int i = 0; !timed && i < t->n_shape_fields; i++)
        if (t->shape_fields[i].axis && get(L, n, t->shape_fields[i].name))
            return FAIL(L, n, sub(p, path, t->shape_fields[i].name),
                        "correctness shapes are checked with every setting of correctness.%s; say it there",
                        t->shape_fields[i].name);
    TRY(check_keys(L, n, path, keys));
    memset(out, 0, sizeof *out);
    out->task = t;
    yaml_node_t *v;
    const char *name;
    TRY(need(L, n, path, "name", &v));
    TRY(as_str(L, v, sub(p, path, "name"), EVO_NAME_MAX, &name));
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.'))
            return FAIL(L, v, p, "'%s' is not a shape name (letters, digits, '_', '-', '.')", name);
    strcpy(out->name, name);
    for (int i = 0; i < t->n_shape_fields; i++) {
        const evo_field *f = &t->shape_fields[i];
        double x = f->dflt;
        v = NULL;
        if (!timed && f->axis)
            x = 0;
        else if (f->dflt == (double)EVO_FIELD_REQUIRED)
            TRY(need(L, n, path, f->name, &v));
        else
            v = get(L, n, f->name);
        if (v) TRY(load_field(L, v, sub(p, path, f->name), f, &x));
        out->v[i] = evo_field_store(f, x);
    }
    char why[256];
    if (t->shape_check && !t->shape_check(out, why, sizeof why)) return FAIL(L, n, path, "%s", why);
    return EVO_OK;
}

/* Shape names are unique over the timed and the correctness shapes, so reports can name them alone. */
static evo_status check_shape_name(loader *L, const yaml_node_t *n, const char *path, const char *name)
{
    char p[PATH_MAX_LEN];
    const evo_config *c = L->c;
    for (int i = 0; i < c->n_shapes; i++)
        if (!strcmp(c->shapes[i].name, name))
            return FAIL(L, n, sub(p, path, "name"), "shape name '%s' is already used by shapes[%d]", name, i);
    for (int i = 0; i < c->correctness.n_shapes; i++)
        if (!strcmp(c->correctness.shapes[i].name, name))
            return FAIL(L, n, sub(p, path, "name"), "shape name '%s' is already used by correctness.shapes[%d]", name,
                        i);
    return EVO_OK;
}

static evo_status load_shape_list(loader *L, const yaml_node_t *list, const char *path, bool timed)
{
    char p[PATH_MAX_LEN];
    TRY(need_kind(L, list, path, YAML_SEQUENCE_NODE));
    int n = N_ITEMS(list);
    if (timed && n == 0) return FAIL(L, list, path, "at least one shape is needed");
    if (n > EVO_MAX_SHAPES) return FAIL(L, list, path, "%d shapes: at most %d", n, EVO_MAX_SHAPES);
    for (int i = 0; i < n; i++) {
        const yaml_node_t *s = ITEM(L, list, i);
        evo_shape sh;
        item(p, path, i);
        TRY(load_shape(L, s, p, timed, &sh));
        TRY(check_shape_name(L, s, p, sh.name));
        if (timed)
            L->c->shapes[L->c->n_shapes++] = sh;
        else
            L->c->correctness.shapes[L->c->correctness.n_shapes++] = sh;
    }
    return EVO_OK;
}

/* ---- the other sections ---- */

/* A name or a list of distinct names, each one of names[] (NULL-terminated): bit i set for names[i]. */
static evo_status load_name_set(loader *L, const yaml_node_t *v, const char *path, const char *const *names,
                                const char *what, bool allow_empty, unsigned *mask)
{
    *mask = 0;
    if (v->type == YAML_SCALAR_NODE) {
        int i;
        TRY(as_name(L, v, path, names, what, &i));
        *mask = 1u << i;
        return EVO_OK;
    }
    TRY(need_kind(L, v, path, YAML_SEQUENCE_NODE));
    const int n = N_ITEMS(v);
    if (n == 0 && !allow_empty) return FAIL(L, v, path, "give at least one %s", what);
    for (int k = 0; k < n; k++) {
        char q[PATH_MAX_LEN];
        int i;
        TRY(as_name(L, ITEM(L, v, k), item(q, path, k), names, what, &i));
        if (*mask & (1u << i)) return FAIL(L, ITEM(L, v, k), q, "%s '%s' given twice", what, names[i]);
        *mask |= 1u << i;
    }
    return EVO_OK;
}

static evo_status load_correctness(loader *L, const yaml_node_t *root)
{
    const char *keys[8 + EVO_FIELDS_MAX] = {"seeds", "timed_seeds", "distributions", "shapes", "tolerance", "probes"};
    int nk = 6;
    for (int a = 0; a < L->c->correctness.n_axes; a++)
        keys[nk++] = L->task->shape_fields[L->c->correctness.axes[a].field].name;
    keys[nk] = NULL;
    static const char *const tol_keys[] = {"rel_l2", "atol", "rtol", "max_frac_over", NULL};
    char p[PATH_MAX_LEN];
    const char *path = "correctness";
    yaml_node_t *m, *v;
    TRY(opt_map(L, root, path, keys, &m));
    if (!m) return EVO_OK;

    if ((v = get(L, m, "seeds"))) {
        sub(p, path, "seeds");
        TRY(need_kind(L, v, p, YAML_SEQUENCE_NODE));
        int n = N_ITEMS(v);
        if (n < 1 || n > (int)EVO_ARRAY_LEN(L->c->correctness.seeds))
            return FAIL(L, v, p, "%d seeds: give 1 to %d", n, (int)EVO_ARRAY_LEN(L->c->correctness.seeds));
        for (int i = 0; i < n; i++) {
            char q[PATH_MAX_LEN];
            long long x;
            TRY(as_int(L, ITEM(L, v, i), item(q, p, i), 0, INT64_MAX, &x));
            for (int j = 0; j < i; j++)
                if (L->c->correctness.seeds[j] == (uint64_t)x)
                    return FAIL(L, ITEM(L, v, i), q, "seed %lld given twice", x);
            L->c->correctness.seeds[i] = (uint64_t)x;
        }
        L->c->correctness.n_seeds = n;
    }
    if ((v = get(L, m, "distributions"))) {
        sub(p, path, "distributions");
        TRY(need_kind(L, v, p, YAML_SEQUENCE_NODE));
        int n = N_ITEMS(v);
        if (n < 1 || n > EVO_DIST_COUNT) return FAIL(L, v, p, "%d distributions: give 1 to %d", n, EVO_DIST_COUNT);
        static const char *const names[] = {"normal", "uniform", "outliers", "zero_head", "large", NULL};
        for (int i = 0; i < n; i++) {
            char q[PATH_MAX_LEN];
            int d;
            TRY(as_name(L, ITEM(L, v, i), item(q, p, i), names, "distribution", &d));
            for (int j = 0; j < i; j++)
                if (L->c->correctness.dists[j] == (evo_dist)d)
                    return FAIL(L, ITEM(L, v, i), q, "distribution '%s' given twice", names[d]);
            L->c->correctness.dists[i] = (evo_dist)d;
        }
        L->c->correctness.n_dists = n;
    }
    if ((v = get(L, m, "probes"))) {
        const char *names[33] = {NULL};
        for (int i = 0; i < L->task->n_probes && i < 32; i++) names[i] = L->task->probes[i].name;
        if (!L->task->n_probes && (v->type != YAML_SEQUENCE_NODE || N_ITEMS(v) > 0))
            return FAIL(L, v, "correctness.probes", "task %s has no structural probes (give [] or leave it out)",
                        L->task->name);
        TRY(load_name_set(L, v, "correctness.probes", names, "probe", true, &L->c->correctness.probes));
    }
    for (int a = 0; a < L->c->correctness.n_axes; a++) {
        const evo_field *f = &L->task->shape_fields[L->c->correctness.axes[a].field];
        if (!(v = get(L, m, f->name))) continue;
        sub(p, path, f->name);
        TRY(need_kind(L, v, p, YAML_SEQUENCE_NODE));
        const int n = N_ITEMS(v), max = (int)EVO_ARRAY_LEN(L->c->correctness.axes[a].values);
        if (n < 1 || n > max) {
            if (f->type == EVO_FIELD_BOOL) return FAIL(L, v, p, "give [false], [true] or [false, true]");
            return FAIL(L, v, p, "%d values: give 1 to %d", n, max);
        }
        for (int i = 0; i < n; i++) {
            char q[PATH_MAX_LEN], text[64];
            double x;
            TRY(load_field(L, ITEM(L, v, i), item(q, p, i), f, &x));
            for (int j = 0; j < i; j++)
                if (L->c->correctness.axes[a].values[j] == evo_field_store(f, x)) {
                    evo_field_value_text(f, x, text, sizeof text);
                    return FAIL(L, ITEM(L, v, i), q, "%s given twice", text);
                }
            L->c->correctness.axes[a].values[i] = evo_field_store(f, x);
        }
        L->c->correctness.axes[a].n = n;
    }
    if ((v = get(L, m, "shapes"))) TRY(load_shape_list(L, v, sub(p, path, "shapes"), false));
    L->c->correctness.timed_seeds = L->c->correctness.n_seeds;
    if ((v = get(L, m, "timed_seeds")))
        TRY(as_i32(L, v, sub(p, path, "timed_seeds"), 1, L->c->correctness.n_seeds, &L->c->correctness.timed_seeds));
    if ((v = get(L, m, "tolerance"))) {
        const char *tp = "correctness.tolerance";
        evo_tolerance *t = &L->c->correctness.tol;
        TRY(need_kind(L, v, tp, YAML_MAPPING_NODE));
        TRY(check_keys(L, v, tp, tol_keys));
        TRY(opt_double(L, v, tp, "rel_l2", 0, OPEN, 1, CLOSED, &t->rel_l2));
        TRY(opt_double(L, v, tp, "atol", 0, OPEN, 100, CLOSED, &t->atol));
        TRY(opt_double(L, v, tp, "rtol", 0, OPEN, 10, CLOSED, &t->rtol));
        TRY(opt_double(L, v, tp, "max_frac_over", 0, CLOSED, 1, OPEN, &t->max_frac_over));
    }
    return EVO_OK;
}

static const char *const timing_methods[EVO_TIMING_COUNT + 1] = {"auto", "events", "graph", "cupti", NULL};

const char *evo_timing_method_name(evo_timing_method m)
{
    return m >= 0 && m < EVO_TIMING_COUNT ? timing_methods[m] : "?";
}

static evo_status load_timing(loader *L, const yaml_node_t *root)
{
    static const char *const keys[] = {"warmup",     "repetitions",     "flush_l2",  "abort_factor", "kernel_timeout_s",
                                       "method",     "max_repetitions", "target_us", "fresh_inputs", "check_samples",
                                       "interleave", "target_ci",       NULL};
    const char *path = "timing";
    yaml_node_t *m, *v;
    TRY(opt_map(L, root, path, keys, &m));
    if (!m) return EVO_OK;
    if ((v = get(L, m, "method"))) {
        int k;
        TRY(as_name(L, v, "timing.method", timing_methods, "timing method", &k));
        L->c->timing.method = (evo_timing_method)k;
    }
    TRY(opt_i32(L, m, path, "max_repetitions", 1, 10000, &L->c->timing.max_repetitions));
    TRY(opt_double(L, m, path, "target_us", 0, CLOSED, 1e7, CLOSED, &L->c->timing.target_us));
    TRY(opt_double(L, m, path, "target_ci", 0, CLOSED, 1, CLOSED, &L->c->timing.target_ci));
    TRY(opt_bool(L, m, path, "fresh_inputs", &L->c->timing.fresh_inputs));
    TRY(opt_i32(L, m, path, "check_samples", 0, 8, &L->c->timing.check_samples));
    TRY(opt_bool(L, m, path, "interleave", &L->c->timing.interleave));
    TRY(opt_i32(L, m, path, "warmup", 0, 1000, &L->c->timing.warmup));
    TRY(opt_i32(L, m, path, "repetitions", 1, 10000, &L->c->timing.repetitions));
    TRY(opt_bool(L, m, path, "flush_l2", &L->c->timing.flush_l2));
    TRY(opt_double(L, m, path, "abort_factor", 1, OPEN, 1000, CLOSED, &L->c->timing.abort_factor));
    TRY(opt_double(L, m, path, "kernel_timeout_s", 0, OPEN, 600, CLOSED, &L->c->timing.kernel_timeout_s));
    if (L->c->timing.max_repetitions < L->c->timing.repetitions) {
        if (get(L, m, "max_repetitions"))
            return FAIL(L, get(L, m, "max_repetitions"), "timing.max_repetitions",
                        "%d is below timing.repetitions (%d)", L->c->timing.max_repetitions, L->c->timing.repetitions);
        L->c->timing.max_repetitions = L->c->timing.repetitions;
    }
    return EVO_OK;
}

static evo_status load_evolution(loader *L, const yaml_node_t *root)
{
    static const char *const keys[] = {
        "strategy",          "population",    "generations",    "elites",     "tournament",
        "crossover_rate",    "mutation_rate", "immigrant_rate", "local_rate", "seed",
        "stall_generations", "time_budget_s", "insights",       NULL};
    char p[PATH_MAX_LEN];
    const char *path = "evolution";
    yaml_node_t *m, *v;
    TRY(opt_map(L, root, path, keys, &m));
    evo_config *c = L->c;
    if (m) {
        if ((v = get(L, m, "strategy"))) {
            if (checks.strategy_names) {
                int i;
                TRY(as_name(L, v, sub(p, path, "strategy"), checks.strategy_names, "strategy", &i));
                snprintf(c->evolution.strategy, sizeof c->evolution.strategy, "%s", checks.strategy_names[i]);
            } else {
                const char *s;
                TRY(as_str(L, v, sub(p, path, "strategy"), sizeof c->evolution.strategy, &s));
                snprintf(c->evolution.strategy, sizeof c->evolution.strategy, "%s", s);
            }
        }
        TRY(opt_i32(L, m, path, "population", 2, 100000, &c->evolution.population));
        TRY(opt_i32(L, m, path, "generations", 1, 1000000, &c->evolution.generations));
        TRY(opt_double(L, m, path, "crossover_rate", 0, CLOSED, 1, CLOSED, &c->evolution.crossover_rate));
        TRY(opt_double(L, m, path, "mutation_rate", 0, CLOSED, 1, CLOSED, &c->evolution.mutation_rate));
        TRY(opt_double(L, m, path, "immigrant_rate", 0, CLOSED, 1, OPEN, &c->evolution.immigrant_rate));
        TRY(opt_double(L, m, path, "local_rate", 0, CLOSED, 1, CLOSED, &c->evolution.local_rate));
        if ((v = get(L, m, "seed"))) {
            long long x;
            TRY(as_int(L, v, sub(p, path, "seed"), 0, INT64_MAX, &x));
            c->evolution.seed = (uint64_t)x;
        }
        TRY(opt_i32(L, m, path, "stall_generations", 0, 1000000, &c->evolution.stall_generations));
        TRY(opt_double(L, m, path, "time_budget_s", 0, CLOSED, 1e7, CLOSED, &c->evolution.time_budget_s));
        TRY(opt_bool(L, m, path, "insights", &c->evolution.insights));
    }
    /* elites and tournament default to 3 but never beyond what the population allows */
    c->evolution.elites = c->evolution.population - 1 < 3 ? c->evolution.population - 1 : 3;
    c->evolution.tournament = c->evolution.population < 3 ? c->evolution.population : 3;
    if (m && (v = get(L, m, "elites"))) {
        sub(p, path, "elites");
        TRY(as_i32(L, v, p, 1, 100000, &c->evolution.elites));
        if (c->evolution.elites >= c->evolution.population)
            return FAIL(L, v, p, "%d elites leave no room for new genomes: must be less than evolution.population (%d)",
                        c->evolution.elites, c->evolution.population);
    }
    if (m && (v = get(L, m, "tournament"))) {
        sub(p, path, "tournament");
        TRY(as_i32(L, v, p, 1, 100000, &c->evolution.tournament));
        if (c->evolution.tournament > c->evolution.population)
            return FAIL(L, v, p, "tournament of %d is larger than evolution.population (%d)", c->evolution.tournament,
                        c->evolution.population);
    }
    return EVO_OK;
}

static evo_status load_regression(loader *L, const yaml_node_t *root)
{
    static const char *const keys[] = {"slowdown", "min_shapes", NULL};
    char p[PATH_MAX_LEN];
    const char *path = "regression";
    yaml_node_t *m, *v;
    L->c->regression.min_shapes = L->c->n_shapes < 2 ? L->c->n_shapes : 2;
    TRY(opt_map(L, root, path, keys, &m));
    if (!m) return EVO_OK;
    TRY(opt_double(L, m, path, "slowdown", 1, CLOSED, 100, CLOSED, &L->c->regression.slowdown));
    if ((v = get(L, m, "min_shapes"))) {
        sub(p, path, "min_shapes");
        TRY(as_i32(L, v, p, 1, EVO_MAX_SHAPES, &L->c->regression.min_shapes));
        if (L->c->regression.min_shapes > L->c->n_shapes)
            return FAIL(L, v, p, "%d is more than the %d timed shapes: the rule could never apply",
                        L->c->regression.min_shapes, L->c->n_shapes);
    }
    return EVO_OK;
}

/* compile.extra_options as NVRTC sees them (split at blanks, as every compile splits them): options it refuses would
 * fail every candidate alike, so NVRTC is asked now, on a trivial program for the config's arch. */
static evo_status check_options(loader *L, const yaml_node_t *v, const char *path, const char *text)
{
    char *buf = evo_strdup(text);
    const char *opts[256];
    int n = 0;
    for (char *q = strtok(buf, " \t"); q && n < (int)EVO_ARRAY_LEN(opts); q = strtok(NULL, " \t")) opts[n++] = q;
    char why[512];
    evo_status st = EVO_OK;
    if (n == (int)EVO_ARRAY_LEN(opts)) {
        st = FAIL(L, v, path, "more than %d options", (int)EVO_ARRAY_LEN(opts) - 1);
    } else if (n > 0 && checks.compile_options) {
        const char *arch = strcmp(L->c->arch, "auto") == 0 ? "sm_90" : L->c->arch;
        evo_status s = checks.compile_options(arch, opts, n, L->c->compile.timeout_s, why, sizeof why);
        if (s == EVO_E_CONFIG)
            st = FAIL(L, v, path, "NVRTC refuses these options: %s", why);
        else if (s != EVO_OK)
            st = evo_fail(L->err, s, "%s: %s: cannot ask NVRTC about these options: %s", L->file, path, why);
    }
    free(buf);
    return st;
}

static evo_status load_compile(loader *L, const yaml_node_t *root)
{
    static const char *const keys[] = {"timeout_s", "max_registers", "allow_spills",   "extra_options", "max_memory_mb",
                                       "max_cpu_s", "max_output_mb", "max_open_files", "sandbox",       NULL};
    static const char *const sandbox_modes[] = {"auto", "required", "off", NULL}; /* evo_sandbox_mode's order */
    char p[PATH_MAX_LEN];
    const char *path = "compile";
    yaml_node_t *m, *v;
    TRY(opt_map(L, root, path, keys, &m));
    if (!m) return EVO_OK;
    TRY(opt_double(L, m, path, "timeout_s", 0, OPEN, 3600, CLOSED, &L->c->compile.timeout_s));
    if ((v = get(L, m, "max_registers"))) {
        sub(p, path, "max_registers");
        TRY(as_i32(L, v, p, 0, 255, &L->c->compile.max_registers));
        if (L->c->compile.max_registers > 0 && L->c->compile.max_registers < 16)
            return FAIL(L, v, p, "%d registers cannot hold a kernel: give 0 (no cap) or 16 to 255",
                        L->c->compile.max_registers);
    }
    TRY(opt_bool(L, m, path, "allow_spills", &L->c->compile.allow_spills));
    int mb = 0;
    TRY(opt_i32(L, m, path, "max_memory_mb", 64, 1048576, &mb));
    L->c->compile.max_memory_mb = mb;
    TRY(opt_double(L, m, path, "max_cpu_s", 0, OPEN, 86400, CLOSED, &L->c->compile.max_cpu_s));
    mb = (int)L->c->compile.max_output_mb;
    TRY(opt_i32(L, m, path, "max_output_mb", 1, 65536, &mb));
    L->c->compile.max_output_mb = mb;
    TRY(opt_i32(L, m, path, "max_open_files", 32, 65536, &L->c->compile.max_open_files));
    if ((v = get(L, m, "sandbox")))
        TRY(as_name(L, v, "compile.sandbox", sandbox_modes, "sandbox mode", &L->c->compile.sandbox));
    if ((v = get(L, m, "extra_options"))) {
        const char *s;
        sub(p, path, "extra_options");
        if (v->type == YAML_SCALAR_NODE && v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE && !v->data.scalar.length)
            return EVO_OK; /* "" means none */
        TRY(as_str(L, v, p, 4096, &s));
        L->c->compile.extra_options = evo_strdup(s);
        TRY(check_options(L, v, p, s));
    }
    return EVO_OK;
}

static void set_defaults(evo_config *c)
{
    snprintf(c->arch, sizeof c->arch, "auto");
    static const uint64_t seeds[] = {0, 1, 2};
    memcpy(c->correctness.seeds, seeds, sizeof seeds);
    c->correctness.n_seeds = 3;
    c->correctness.timed_seeds = 3;
    for (int d = 0; d < EVO_DIST_COUNT; d++) c->correctness.dists[d] = (evo_dist)d;
    c->correctness.n_dists = EVO_DIST_COUNT;
    c->correctness.tol = (evo_tolerance){.rel_l2 = 2e-3, .atol = 2e-2, .rtol = 2e-2, .max_frac_over = 0};
    c->timing.warmup = 3;
    c->timing.repetitions = 20;
    c->timing.flush_l2 = true;
    c->timing.abort_factor = 3.0;
    c->timing.kernel_timeout_s = 5;
    c->timing.method = EVO_TIMING_AUTO;
    c->timing.max_repetitions = 200;
    c->timing.target_us = 1000;
    c->timing.target_ci = 0.005;
    c->timing.fresh_inputs = true;
    c->timing.check_samples = 2;
    c->timing.interleave = false;
    snprintf(c->evolution.strategy, sizeof c->evolution.strategy, "ga");
    c->evolution.population = 32;
    c->evolution.generations = 20;
    c->evolution.crossover_rate = 0.7;
    c->evolution.mutation_rate = 0.2;
    c->evolution.immigrant_rate = 0.1;
    c->evolution.local_rate = 0.5;
    c->evolution.seed = 1;
    c->evolution.stall_generations = 8;
    c->evolution.time_budget_s = 0;
    c->evolution.insights = true;
    c->regression.slowdown = 1.10;
    c->compile.timeout_s = 120;
    c->compile.max_registers = 255;
    c->compile.allow_spills = false;
    c->compile.max_cpu_s = 300;
    c->compile.max_output_mb = 256;
    c->compile.max_open_files = 256;
}

/* The task's defaults: its options and the values every correctness case is checked with along each axis field. */
static void set_task_defaults(evo_config *c, const evo_task *t)
{
    c->task_ops = t;
    snprintf(c->task, sizeof c->task, "%s", t->name);
    for (int i = 0; i < t->n_options; i++) c->options[i] = t->options[i].dflt;
    c->correctness.n_axes = 0;
    for (int i = 0; i < t->n_shape_fields; i++) {
        const evo_field *f = &t->shape_fields[i];
        if (!f->axis) continue;
        EVO_ASSERT(f->n_axis_default >= 1 && f->n_axis_default <= (int)EVO_ARRAY_LEN(c->correctness.axes[0].values));
        c->correctness.axes[c->correctness.n_axes].field = i;
        memcpy(c->correctness.axes[c->correctness.n_axes].values, f->axis_default,
               (size_t)f->n_axis_default * sizeof f->axis_default[0]);
        c->correctness.axes[c->correctness.n_axes++].n = f->n_axis_default;
    }
    c->accuracy = 1u; /* the exact class alone, unless the config says `accuracy` */
    c->correctness.probes = t->n_probes >= 32 ? ~0u : (1u << t->n_probes) - 1u; /* every probe */
}

static evo_status load_root(loader *L, const yaml_node_t *root)
{
    static const char *const base_keys[] = {"task",    "arch",        "space",   "baseline",  "seeds",
                                            "shapes",  "correctness", "timing",  "evolution", "regression",
                                            "compile", "fitness",     "accuracy"};
    static const char *const fitness_kinds[] = {"geomean", "worst", NULL};
    evo_config *c = L->c;
    yaml_node_t *v;
    const char *s;
    TRY(need_kind(L, root, "", YAML_MAPPING_NODE));

    /* The task first: the keys it owns join the known ones. */
    const char *keys[EVO_ARRAY_LEN(base_keys) + 4 * EVO_FIELDS_MAX + 1];
    int nk = 0;
    for (size_t i = 0; i < EVO_ARRAY_LEN(base_keys); i++) keys[nk++] = base_keys[i];
    if (!(v = get(L, root, "task"))) { /* unknown keys first, knowing every task's */
        for (int t = 0; evo_tasks[t] && t < 4; t++)
            for (int i = 0; i < evo_tasks[t]->n_options; i++) keys[nk++] = evo_tasks[t]->options[i].name;
        keys[nk] = NULL;
        TRY(check_keys(L, root, "", keys));
        TRY(need(L, root, "", "task", &v));
    }
    TRY(as_str(L, v, "task", EVO_NAME_MAX, &s));
    L->task = evo_task_find(s);
    if (!L->task) {
        char all[256];
        evo_task_names(all, sizeof all);
        return FAIL(L, v, "task", "unknown task '%s' (known: %s)", s, all);
    }
    set_task_defaults(c, L->task);
    nk = (int)EVO_ARRAY_LEN(base_keys);
    for (int i = 0; i < L->task->n_options; i++) keys[nk++] = L->task->options[i].name;
    keys[nk] = NULL;
    TRY(check_keys(L, root, "", keys));
    for (int i = 0; i < L->task->n_options; i++)
        if ((v = get(L, root, L->task->options[i].name)))
            TRY(load_field(L, v, L->task->options[i].name, &L->task->options[i], &c->options[i]));
    if ((v = get(L, root, "arch"))) {
        TRY(as_str(L, v, "arch", sizeof c->arch, &s));
        evo_device_limits lim;
        if (strcmp(s, "auto") != 0 && evo_device_limits_for_arch(s, &lim, NULL) != EVO_OK)
            return FAIL(L, v, "arch", "unknown architecture '%s' (known: auto, sm_80, sm_86, sm_89, sm_90)", s);
        strcpy(c->arch, s);
    }
    if ((v = get(L, root, "fitness"))) {
        int f;
        TRY(as_name(L, v, "fitness", fitness_kinds, "fitness", &f));
        c->fitness = (evo_fitness)f;
    }
    if ((v = get(L, root, "accuracy"))) {
        const char *names[EVO_ACCURACY_MAX + 1] = {NULL};
        for (int i = 0; i < evo_task_accuracy_count(L->task) && i < EVO_ACCURACY_MAX; i++)
            names[i] = evo_task_accuracy_name(L->task, i);
        TRY(load_name_set(L, v, "accuracy", names, "accuracy class", false, &c->accuracy));
    }

    TRY(load_space(L, root));
    TRY(need(L, root, "", "shapes", &v));
    TRY(load_shape_list(L, v, "shapes", true));
    TRY(load_correctness(L, root));
    TRY(load_timing(L, root));
    TRY(load_evolution(L, root));
    TRY(load_regression(L, root));
    TRY(load_compile(L, root));
    return EVO_OK;
}

/* libyaml's reader reports a byte offset, the others a mark; turn either into line and column. */
static yaml_mark_t mark_of_offset(const char *text, size_t len, size_t off)
{
    yaml_mark_t m = {0, 0, 0};
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n')
            m.line++, m.column = 0;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            m.column++;
    }
    m.index = off;
    return m;
}

static evo_status yaml_error(loader *L, yaml_parser_t *yp)
{
    if (yp->error == YAML_MEMORY_ERROR) return evo_fail(L->err, EVO_E_NOMEM, "%s: out of memory parsing YAML", L->file);
    yaml_mark_t m =
        yp->error == YAML_READER_ERROR ? mark_of_offset(L->text, L->len, yp->problem_offset) : yp->problem_mark;
    char ctx[160] = "";
    if (yp->context)
        snprintf(ctx, sizeof ctx, " (%s at line %zu, column %zu)", yp->context, yp->context_mark.line + 1,
                 yp->context_mark.column + 1);
    return evo_fail(L->err, EVO_E_CONFIG, "%s:%zu:%zu: malformed YAML: %s%s", L->file, m.line + 1, m.column + 1,
                    yp->problem ? yp->problem : "parse error", ctx);
}

/* Before libyaml builds the document (which would take memory in proportion to the nodes, and time growing faster
 * than the nesting): refuse more than EVO_CONFIG_MAX_NODES nodes or EVO_CONFIG_MAX_DEPTH levels of nesting, and note
 * the scalars written with an explicit tag. */
static evo_status prescan(loader *L)
{
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) return evo_fail(L->err, EVO_E_NOMEM, "%s: cannot start the YAML parser", L->file);
    yaml_parser_set_input_string(&yp, (const unsigned char *)L->text, L->len);
    evo_status st = EVO_OK;
    long nodes = 0;
    int cap = 0, depth = 0;
    for (bool done = false; !done && st == EVO_OK;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&yp, &ev)) break; /* the document load reports the error with its position */
        done = ev.type == YAML_STREAM_END_EVENT;
        if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT) {
            if (++nodes > EVO_CONFIG_MAX_NODES)
                st = fail_at(L, ev.start_mark, "top level",
                             "more than %d YAML nodes (values, lists, mappings); a configuration has a few hundred",
                             EVO_CONFIG_MAX_NODES);
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > EVO_CONFIG_MAX_DEPTH && st == EVO_OK)
                st = fail_at(L, ev.start_mark, "top level",
                             "lists and mappings nested more than %d deep; a configuration nests 4",
                             EVO_CONFIG_MAX_DEPTH);
        }
        if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) depth--;
        if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.tag) {
            if (L->n_tagged == cap) {
                cap = cap ? 2 * cap : 8;
                L->tagged = evo_xrealloc(L->tagged, (size_t)cap * sizeof *L->tagged);
            }
            tagged_scalar *t = &L->tagged[L->n_tagged++];
            const char *tag = (const char *)ev.data.scalar.tag, *core = "tag:yaml.org,2002:";
            t->index = ev.start_mark.index;
            if (strncmp(tag, core, strlen(core)) == 0)
                snprintf(t->tag, sizeof t->tag, "!!%s", tag + strlen(core));
            else
                snprintf(t->tag, sizeof t->tag, "%s", tag);
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&yp);
    return st;
}

evo_status evo_config_parse(const char *name, const char *text, size_t len, evo_config **out, evo_err *err)
{
    *out = NULL;
    const evo_shown shown = evo_show(name); /* the name as messages show it */
    if (len > EVO_CONFIG_MAX_BYTES)
        return evo_fail(err, EVO_E_CONFIG, "%s: %zu bytes; a configuration is at most %d bytes (1 MiB)", shown.s, len,
                        EVO_CONFIG_MAX_BYTES);
    loader L = {.file = shown.s, .text = text, .len = len, .err = err};
    evo_status pre = prescan(&L);
    if (pre != EVO_OK) {
        free(L.tagged);
        return pre;
    }
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) {
        free(L.tagged);
        return evo_fail(err, EVO_E_NOMEM, "%s: cannot start the YAML parser", shown.s);
    }
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    if (!yaml_parser_load(&yp, &L.doc)) {
        evo_status st = yaml_error(&L, &yp);
        yaml_parser_delete(&yp);
        free(L.tagged);
        return st;
    }
    evo_status st = EVO_OK;
    yaml_node_t *root = yaml_document_get_root_node(&L.doc);
    if (!root) {
        st = evo_fail(err, EVO_E_CONFIG, "%s:1:1: top level: the configuration is empty", name);
    } else {
        yaml_document_t next;
        if (!yaml_parser_load(&yp, &next)) {
            st = yaml_error(&L, &yp);
        } else {
            yaml_node_t *second = yaml_document_get_root_node(&next);
            if (second)
                st = fail_at(&L, second->start_mark, "top level",
                             "a second YAML document; a configuration is one document");
            yaml_document_delete(&next);
        }
    }
    if (st == EVO_OK) {
        L.c = evo_xcalloc(1, sizeof *L.c);
        set_defaults(L.c);
        st = load_root(&L, root);
        if (st == EVO_OK) {
            L.c->path = evo_strdup(name);
            L.c->text = evo_xmalloc(len + 1);
            memcpy(L.c->text, text, len);
            L.c->text[len] = '\0';
            *out = L.c;
        } else {
            evo_config_free(L.c);
        }
    }
    yaml_document_delete(&L.doc);
    yaml_parser_delete(&yp);
    free(L.tagged);
    return st;
}

evo_status evo_config_load(const char *path, evo_config **out, evo_err *err)
{
    char *text;
    size_t len;
    *out = NULL;
    evo_err e = {0};
    if (strcmp(path, "-") == 0)
        return evo_fail(err, EVO_E_USAGE, "-: evo reads a configuration from a file, not from standard input");
    if (evo_read_file_max(path, EVO_CONFIG_MAX_BYTES, &text, &len, &e) != EVO_OK)
        return evo_fail(err, EVO_E_CONFIG, "%s (cannot read the configuration)", e.msg);
    evo_status st = evo_config_parse(path, text, len, out, err);
    free(text);
    return st;
}

/* ---- the default configuration ---- */

typedef struct {
    const char *name, *text;
    size_t len;
} embedded_config;
extern const embedded_config evo_embedded_configs[]; /* configs/default.yaml, built in by tools/embed.cmake */

const char *evo_config_builtin(size_t *len)
{
    if (len) *len = evo_embedded_configs[0].len;
    return evo_embedded_configs[0].text;
}

evo_status evo_config_keep_to_arch(evo_config *c, const char *arch, const char **rule, char *why, size_t why_len,
                                   evo_err *err)
{
    *rule = NULL;
    const char *r = c->task_ops && c->task_ops->arch_rule ? c->task_ops->arch_rule(c, arch, why, why_len) : NULL;
    if (!r) return EVO_OK;
    for (int i = 0; i < evo_space_n_constraints(c->space); i++)
        if (!strcmp(evo_space_constraint_text(c->space, i), r)) return EVO_OK; /* there already */
    evo_status s = evo_space_add_constraint(c->space, r, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "the rule of %s (%s)", arch, r);
    *rule = r;
    return EVO_OK;
}

evo_status evo_config_load_default(const char *path, evo_config **out, bool *builtin, evo_err *err)
{
    if (builtin) *builtin = false;
    struct stat sb;
    if (path || lstat(EVO_DEFAULT_CONFIG_PATH, &sb) == 0)
        return evo_config_load(path ? path : EVO_DEFAULT_CONFIG_PATH, out, err);
    if (builtin) *builtin = true;
    size_t len;
    const char *text = evo_config_builtin(&len);
    return evo_config_parse(EVO_BUILTIN_CONFIG_NAME, text, len, out, err);
}
