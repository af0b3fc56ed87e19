/* space.c — knobs, domains, conditions, constraints and genomes (see space.h). Counting and enumeration walk the
 * knobs in the walk order (declaration order, each conditional knob moved after the knobs its condition reads),
 * decide each knob's activity when its turn comes (an inactive knob has one branch: its first value), and check
 * each constraint as soon as the last knob it reads is assigned, so invalid subtrees are cut early and the
 * unconditional knobs after the last constrained or conditional one are counted by multiplication. */
#include "space.h"

#include "expr.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 63

typedef struct {
    char *name;
    bool is_enum;
    int n;
    int values[EVO_MAX_DOMAIN]; /* integer value (enum: the index) */
    char *text[EVO_MAX_DOMAIN]; /* as written in genomes */
    char *when;                 /* the condition's text; NULL: always active */
    evo_expr *cond;
    uint32_t reads; /* knobs the condition reads */
} knob;

typedef struct {
    char *text;
    evo_expr *expr;
    uint32_t reads; /* knobs the constraint reads */
    int last;       /* the walk position after which they are all assigned; -1: reads none */
} constraint;

struct evo_space {
    knob knobs[EVO_MAX_KNOBS];
    int n_knobs;
    constraint *cons;
    int n_cons;
    int order[EVO_MAX_KNOBS]; /* the walk order: each knob after every knob its condition reads, else as declared */
    int n_conditional;
    evo_space_filter_fn filter; /* evo_space_set_filter: borrowed, NULL when none */
    void *filter_ctx;
    const char *filter_label;
};

evo_status evo_space_new(evo_space **out)
{
    *out = evo_xcalloc(1, sizeof **out);
    return EVO_OK;
}

void evo_space_free(evo_space *s)
{
    if (!s) return;
    for (int k = 0; k < s->n_knobs; k++) {
        free(s->knobs[k].name);
        for (int i = 0; i < s->knobs[k].n; i++) free(s->knobs[k].text[i]);
        free(s->knobs[k].when);
        evo_expr_free(s->knobs[k].cond);
    }
    for (int i = 0; i < s->n_cons; i++) {
        free(s->cons[i].text);
        evo_expr_free(s->cons[i].expr);
    }
    free(s->cons);
    free(s);
}

static bool is_identifier(const char *name)
{
    if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_')) return false;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_')) return false;
    return strlen(name) <= NAME_MAX_LEN && strcmp(name, "in") != 0;
}

static evo_status check_new_knob(evo_space *s, const char *name, int n, evo_err *err)
{
    if (!is_identifier(name))
        return evo_fail(err, EVO_E_CONFIG,
                        "knob name '%s' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                        "characters, not 'in')",
                        name ? name : "", NAME_MAX_LEN);
    if (evo_space_find_knob(s, name) >= 0) return evo_fail(err, EVO_E_CONFIG, "knob '%s' declared twice", name);
    if (s->n_knobs == EVO_MAX_KNOBS)
        return evo_fail(err, EVO_E_CONFIG, "knob '%s': more than %d knobs", name, EVO_MAX_KNOBS);
    if (n < 1) return evo_fail(err, EVO_E_CONFIG, "knob '%s': empty domain", name);
    if (n > EVO_MAX_DOMAIN)
        return evo_fail(err, EVO_E_CONFIG, "knob '%s': %d values, at most %d allowed", name, n, EVO_MAX_DOMAIN);
    return EVO_OK;
}

evo_status evo_space_add_int_knob(evo_space *s, const char *name, const int *values, int n, evo_err *err)
{
    evo_status st = check_new_knob(s, name, n, err);
    if (st != EVO_OK) return st;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (values[i] == values[j])
                return evo_fail(err, EVO_E_CONFIG, "knob '%s': value %d appears twice in its domain", name, values[i]);
    s->order[s->n_knobs] = s->n_knobs;
    knob *k = &s->knobs[s->n_knobs++];
    k->name = evo_strdup(name);
    k->n = n;
    for (int i = 0; i < n; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", values[i]);
        k->values[i] = values[i];
        k->text[i] = evo_strdup(buf);
    }
    return EVO_OK;
}

evo_status evo_space_add_enum_knob(evo_space *s, const char *name, const char *const *names, int n, evo_err *err)
{
    evo_status st = check_new_knob(s, name, n, err);
    if (st != EVO_OK) return st;
    for (int i = 0; i < n; i++) {
        if (!is_identifier(names[i]))
            return evo_fail(err, EVO_E_CONFIG, "knob '%s': value '%s' is not an identifier", name,
                            names[i] ? names[i] : "");
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return evo_fail(err, EVO_E_CONFIG, "knob '%s': value '%s' appears twice in its domain", name, names[i]);
    }
    s->order[s->n_knobs] = s->n_knobs;
    knob *k = &s->knobs[s->n_knobs++];
    k->name = evo_strdup(name);
    k->is_enum = true;
    k->n = n;
    for (int i = 0; i < n; i++) {
        k->values[i] = i;
        k->text[i] = evo_strdup(names[i]);
    }
    return EVO_OK;
}

/* The walk position after which every knob a mask names is assigned: -1 for an empty mask. */
static int last_position(const evo_space *s, uint32_t mask)
{
    int last = -1;
    for (int i = 0; i < s->n_knobs; i++)
        if (mask >> s->order[i] & 1u) last = i;
    return last;
}

/* A knob name is a variable; otherwise the value name of an enumerated knob is that value's index. */
static evo_sym_kind resolve_name(void *ctx, const char *name, int64_t *value)
{
    const evo_space *s = ctx;
    int k = evo_space_find_knob(s, name);
    if (k >= 0) {
        *value = k;
        return EVO_SYM_VAR;
    }
    bool found = false;
    for (k = 0; k < s->n_knobs; k++) {
        if (!s->knobs[k].is_enum) continue;
        for (int i = 0; i < s->knobs[k].n; i++) {
            if (strcmp(s->knobs[k].text[i], name) != 0) continue;
            if (found && *value != i) return EVO_SYM_AMBIGUOUS;
            found = true;
            *value = i;
        }
    }
    return found ? EVO_SYM_CONST : EVO_SYM_UNKNOWN;
}

evo_status evo_space_add_constraint_ex(evo_space *s, const char *expr, int *err_column, evo_err *err)
{
    evo_expr *e;
    evo_status st = evo_expr_parse(expr, resolve_name, s, &e, err_column, err);
    if (st != EVO_OK) return st;
    s->cons = evo_xrealloc(s->cons, (size_t)(s->n_cons + 1) * sizeof *s->cons);
    const uint32_t reads = (uint32_t)evo_expr_var_mask(e);
    s->cons[s->n_cons++] =
        (constraint){.text = evo_strdup(expr), .expr = e, .reads = reads, .last = last_position(s, reads)};
    return EVO_OK;
}

/* ---- conditions ---- */

/* The walk order: repeatedly the first declared knob not yet placed whose condition reads only placed knobs.
 * False when no such knob is left while some are (the conditions form a cycle). */
static bool sort_knobs(const evo_space *s, int order[EVO_MAX_KNOBS])
{
    uint32_t placed = 0;
    for (int i = 0; i < s->n_knobs; i++) {
        int k = 0;
        while (k < s->n_knobs && ((placed >> k & 1u) || (s->knobs[k].reads & ~placed))) k++;
        if (k == s->n_knobs) return false;
        order[i] = k;
        placed |= 1u << k;
    }
    return true;
}

/* A path of conditions from knob `from` to knob `to` (each knob's condition reads the next), written into path as
 * " -> NAME" steps; true when one exists. */
static bool condition_path(const evo_space *s, int from, int to, uint32_t *visited, evo_str *path)
{
    if (from == to) return true;
    if (*visited >> from & 1u) return false;
    *visited |= 1u << from;
    for (int r = 0; r < s->n_knobs; r++) {
        if (!(s->knobs[from].reads >> r & 1u)) continue;
        size_t len = path->len;
        evo_str_appendf(path, " -> %s", s->knobs[r].name);
        if (condition_path(s, r, to, visited, path)) return true;
        path->len = len;
        path->p[len] = '\0';
    }
    return false;
}

evo_status evo_space_set_condition(evo_space *s, int k, const char *expr, int *err_column, evo_err *err)
{
    EVO_ASSERT(k >= 0 && k < s->n_knobs);
    knob *kb = &s->knobs[k];
    if (kb->cond) return evo_fail(err, EVO_E_CONFIG, "knob '%s' has a condition already", kb->name);
    evo_expr *e;
    evo_status st = evo_expr_parse(expr, resolve_name, s, &e, err_column, err);
    if (st != EVO_OK) return st;
    const uint32_t reads = (uint32_t)evo_expr_var_mask(e);
    if (reads >> k & 1u) {
        evo_expr_free(e);
        if (err_column) *err_column = 0;
        return evo_fail(err, EVO_E_CONFIG, "the condition of knob '%s' reads '%s' itself", kb->name, kb->name);
    }
    kb->reads = reads;
    int order[EVO_MAX_KNOBS];
    if (!sort_knobs(s, order)) {
        evo_str path = {0};
        uint32_t visited = 0;
        for (int r = 0; r < s->n_knobs && !path.len; r++) {
            if (!(reads >> r & 1u)) continue;
            evo_str_appendf(&path, "%s -> %s", kb->name, s->knobs[r].name);
            if (!condition_path(s, r, k, &visited, &path)) evo_str_free(&path), path = (evo_str){0};
        }
        kb->reads = 0;
        evo_expr_free(e);
        if (err_column) *err_column = 0;
        st = evo_fail(err, EVO_E_CONFIG, "the conditions of knobs form a cycle (%s: each reads the next)",
                      path.len ? evo_str_cstr(&path) : kb->name);
        evo_str_free(&path);
        return st;
    }
    memcpy(s->order, order, sizeof order);
    for (int i = 0; i < s->n_cons; i++) s->cons[i].last = last_position(s, s->cons[i].reads);
    kb->cond = e;
    kb->when = evo_strdup(expr);
    s->n_conditional++;
    return EVO_OK;
}

const char *evo_space_knob_condition(const evo_space *s, int k) { return s->knobs[k].when; }
bool evo_space_has_conditions(const evo_space *s) { return s->n_conditional > 0; }
int evo_space_walk_knob(const evo_space *s, int i) { return s->order[i]; }

/* Whether knob k is active, given the values in vars of the knobs active so far (act): its condition reads only
 * active knobs and holds. */
static bool knob_on(const evo_space *s, int k, const int *vars, uint32_t act)
{
    const knob *kb = &s->knobs[k];
    return !kb->cond || ((kb->reads & ~act) == 0 && evo_expr_holds(kb->cond, vars));
}

static void genome_vars(const evo_space *s, const evo_genome *g, int *vars)
{
    for (int k = 0; k < s->n_knobs; k++) {
        EVO_ASSERT(g->idx[k] < s->knobs[k].n);
        vars[k] = s->knobs[k].values[g->idx[k]];
    }
}

static uint32_t active_of(const evo_space *s, const int *vars)
{
    uint32_t act = 0;
    for (int i = 0; i < s->n_knobs; i++) {
        const int k = s->order[i];
        if (knob_on(s, k, vars, act)) act |= 1u << k;
    }
    return act;
}

uint32_t evo_space_active(const evo_space *s, const evo_genome *g)
{
    int vars[EVO_MAX_KNOBS];
    genome_vars(s, g, vars);
    return active_of(s, vars);
}

void evo_genome_settle(const evo_space *s, evo_genome *g, uint32_t keep, evo_rng *rng)
{
    int vars[EVO_MAX_KNOBS];
    genome_vars(s, g, vars);
    uint32_t act = 0;
    for (int i = 0; i < s->n_knobs; i++) {
        const int k = s->order[i];
        const knob *kb = &s->knobs[k];
        if (knob_on(s, k, vars, act)) {
            act |= 1u << k;
            if (!(keep >> k & 1u)) g->idx[k] = (uint8_t)(rng && kb->n > 1 ? evo_rng_below(rng, (uint32_t)kb->n) : 0);
        } else {
            g->idx[k] = 0;
        }
        vars[k] = kb->values[g->idx[k]];
    }
    for (int k = s->n_knobs; k < EVO_MAX_KNOBS; k++) g->idx[k] = 0;
}

void evo_genome_canonicalize(const evo_space *s, evo_genome *g) { evo_genome_settle(s, g, UINT32_MAX, NULL); }

bool evo_genome_is_canonical(const evo_space *s, const evo_genome *g)
{
    const uint32_t act = evo_space_active(s, g);
    for (int k = 0; k < EVO_MAX_KNOBS; k++)
        if (g->idx[k] != 0 && (k >= s->n_knobs || !(act >> k & 1u))) return false;
    return true;
}

evo_status evo_space_add_constraint(evo_space *s, const char *expr, evo_err *err)
{
    int col = 0;
    evo_status st = evo_space_add_constraint_ex(s, expr, &col, err);
    if (st != EVO_OK) return evo_failv_prefix(err, st, "constraint %d, column %d", s->n_cons + 1, col);
    return EVO_OK;
}

int evo_space_n_knobs(const evo_space *s) { return s->n_knobs; }
const char *evo_space_knob_name(const evo_space *s, int k) { return s->knobs[k].name; }
bool evo_space_knob_is_enum(const evo_space *s, int k) { return s->knobs[k].is_enum; }
int evo_space_domain_size(const evo_space *s, int k) { return s->knobs[k].n; }
int evo_space_value(const evo_space *s, int k, int idx) { return s->knobs[k].values[idx]; }
const char *evo_space_value_text(const evo_space *s, int k, int idx) { return s->knobs[k].text[idx]; }
int evo_space_n_constraints(const evo_space *s) { return s->n_cons; }
const char *evo_space_constraint_text(const evo_space *s, int i) { return s->cons[i].text; }

int evo_space_find_knob(const evo_space *s, const char *name)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (strcmp(s->knobs[k].name, name) == 0) return k;
    return -1;
}

int evo_genome_get(const evo_space *s, const evo_genome *g, const char *name, int def)
{
    int k = evo_space_find_knob(s, name);
    return k < 0 ? def : s->knobs[k].values[g->idx[k]];
}

bool evo_space_constraints_hold(const evo_space *s, const evo_genome *g, const char **violated)
{
    int vars[EVO_MAX_KNOBS];
    genome_vars(s, g, vars);
    const uint32_t act = active_of(s, vars);
    for (int i = 0; i < s->n_cons; i++) {
        if (s->cons[i].reads & ~act) continue; /* reads an inactive knob: holds */
        if (!evo_expr_holds(s->cons[i].expr, vars)) {
            if (violated) *violated = s->cons[i].text;
            return false;
        }
    }
    return true;
}

bool evo_space_valid(const evo_space *s, const evo_genome *g, const char **violated)
{
    if (!evo_space_constraints_hold(s, g, violated)) return false;
    if (!s->filter || s->filter(g, s->filter_ctx)) return true;
    if (violated) *violated = s->filter_label;
    return false;
}

void evo_space_set_filter(evo_space *s, evo_space_filter_fn fn, void *ctx, const char *label)
{
    s->filter = fn;
    s->filter_ctx = fn ? ctx : NULL;
    s->filter_label = fn ? (label ? label : "the space's filter") : NULL;
}

bool evo_genome_equal(const evo_space *s, const evo_genome *a, const evo_genome *b)
{
    return memcmp(a->idx, b->idx, (size_t)s->n_knobs) == 0;
}

/* ---- text form ---- */

static void format_str(const evo_space *s, const evo_genome *g, evo_str *out)
{
    EVO_ASSERT(evo_genome_is_canonical(s, g)); /* inactive slots hold index 0: one text per genome */
    const uint32_t act = evo_space_active(s, g);
    bool first = true;
    for (int k = 0; k < s->n_knobs; k++) {
        if (!(act >> k & 1u)) continue;
        evo_str_appendf(out, "%s%s=%s", first ? "" : ",", s->knobs[k].name, s->knobs[k].text[g->idx[k]]);
        first = false;
    }
}

int evo_genome_format(const evo_space *s, const evo_genome *g, char *buf, size_t n)
{
    evo_str t = {0};
    format_str(s, g, &t);
    int len = (int)t.len;
    if (n > 0) snprintf(buf, n, "%s", evo_str_cstr(&t));
    evo_str_free(&t);
    return len;
}

void evo_genome_hash(const evo_space *s, const evo_genome *g, char hex[65])
{
    evo_str t = {0};
    format_str(s, g, &t);
    evo_sha256_hex(evo_str_cstr(&t), t.len, hex);
    evo_str_free(&t);
}

static void domain_text(const knob *k, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", k->text[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* Copy [a, b) without surrounding blanks into buf (truncated to n-1). */
static void trimmed(const char *a, const char *b, char *buf, size_t n)
{
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    size_t len = (size_t)(b - a);
    if (len >= n) len = n - 1;
    memcpy(buf, a, len);
    buf[len] = '\0';
}

static int find_value(const knob *k, const char *v)
{
    if (k->is_enum) {
        for (int i = 0; i < k->n; i++)
            if (strcmp(k->text[i], v) == 0) return i;
        return -1;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || x < INT_MIN || x > INT_MAX) return -2;
    for (int i = 0; i < k->n; i++)
        if (k->values[i] == (int)x) return i;
    return -1;
}

evo_status evo_genome_parse(const evo_space *s, const char *text, evo_genome *g, evo_err *err)
{
    EVO_ASSERT(text);
    evo_genome out;
    memset(&out, 0, sizeof out);
    bool seen[EVO_MAX_KNOBS] = {false};
    uint32_t out_of_domain = 0;
    char bad_val[EVO_MAX_KNOBS][128];
    const char *p = text;
    int item = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        item++;
        char entry[256], key[128], val[128];
        trimmed(p, end, entry, sizeof entry);
        if (entry[0] == '\0') {
            if (item == 1 && *end == '\0') return evo_fail(err, EVO_E_CONFIG, "genome is empty");
            return evo_fail(err, EVO_E_CONFIG, "genome entry %d is empty (entries are KNOB=VALUE, separated by ',')",
                            item);
        }
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq) return evo_fail(err, EVO_E_CONFIG, "genome entry '%s' is not KNOB=VALUE", entry);
        trimmed(p, eq, key, sizeof key);
        trimmed(eq + 1, end, val, sizeof val);
        int k = evo_space_find_knob(s, key);
        if (k < 0) return evo_fail(err, EVO_E_CONFIG, "genome: unknown knob '%s'", key);
        if (seen[k]) return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s' given twice", key);
        seen[k] = true;
        const knob *kb = &s->knobs[k];
        int i = val[0] ? find_value(kb, val) : -3;
        if (i == -1 && kb->cond && s->n_conditional) {
            /* A conditional knob's value outside its domain matters only when the knob is active: an older text
             * may list a knob, inactive now, with a value its domain has since lost. Decided below. */
            out_of_domain |= 1u << k;
            snprintf(bad_val[k], sizeof bad_val[k], "%s", val);
            i = 0;
        }
        if (i < 0) {
            char dom[512];
            domain_text(kb, dom, sizeof dom);
            if (i == -3) return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s' has no value", key);
            if (i == -2)
                return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s': value '%s' is not an integer (domain: %s)", key,
                                val, dom);
            return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s': value '%s' is not in its domain (%s)", key, val,
                            dom);
        }
        out.idx[k] = (uint8_t)i;
        if (*end == '\0') break;
        p = end + 1;
    }
    /* Inactive knobs are dropped whether given or not (texts stored before the knob had its condition list it). A
     * knob with one value may be left out: it cannot be anything else. */
    evo_genome_canonicalize(s, &out);
    const uint32_t act = evo_space_active(s, &out);
    for (int k = 0; k < s->n_knobs; k++) {
        if (!((out_of_domain & act) >> k & 1u)) continue;
        char dom[512];
        domain_text(&s->knobs[k], dom, sizeof dom);
        return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s': value '%s' is not in its domain (%s)", s->knobs[k].name,
                        bad_val[k], dom);
    }
    for (int k = 0; k < s->n_knobs; k++)
        if (!seen[k] && s->knobs[k].n != 1 && (act >> k & 1u))
            return evo_fail(err, EVO_E_CONFIG, "genome: knob '%s' is missing", s->knobs[k].name);
    *g = out;
    return EVO_OK;
}

/* ---- counting and enumeration ---- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return (b && a > UINT64_MAX / b) ? UINT64_MAX : a * b; }

/* Positions below are places in the walk order (s->order), not knob indices. */
typedef struct {
    const evo_space *s;
    int vars[EVO_MAX_KNOBS];
    uint32_t act; /* knobs active among those assigned */
    evo_genome g;
    bool constraints;                   /* false: count distinct genomes, constraints ignored */
    int last_needed;                    /* highest position a constraint or a condition needs, -1 when none */
    uint32_t parents;                   /* knobs some condition reads */
    uint64_t suffix[EVO_MAX_KNOBS + 1]; /* product of the domain sizes at positions i.. (saturating) */
    uint64_t visits, budget;            /* budget 0 = unlimited */
    bool over_budget;
    int (*fn)(const evo_genome *g, void *ctx);
    void *ctx;
    bool stopped;
} walk;

static void walk_init(walk *w, const evo_space *s, bool constraints)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->constraints = constraints;
    w->last_needed = -1;
    for (int i = 0; constraints && i < s->n_cons; i++) {
        if (s->cons[i].last > w->last_needed) w->last_needed = s->cons[i].last;
    }
    for (int i = 0; i < s->n_knobs; i++) {
        w->parents |= s->knobs[s->order[i]].reads;
        if (s->knobs[s->order[i]].cond && i > w->last_needed) w->last_needed = i;
    }
    w->suffix[s->n_knobs] = 1;
    for (int i = s->n_knobs - 1; i >= 0; i--)
        w->suffix[i] = sat_mul(w->suffix[i + 1], (uint64_t)s->knobs[s->order[i]].n);
}

/* The constraints whose last knob sits at walk position p (p = -1: those that read no knob) hold, or read a knob
 * that is inactive. */
static bool holds_at(const walk *w, int p)
{
    if (!w->constraints) return true;
    for (int i = 0; i < w->s->n_cons; i++) {
        const constraint *c = &w->s->cons[i];
        if (c->last != p || (c->reads & ~w->act)) continue;
        if (!evo_expr_holds(c->expr, w->vars)) return false;
    }
    return true;
}

/* Assigns value index i to the knob at position p (inactive: i is 0). */
static void assign(walk *w, int p, int i, bool on)
{
    const int k = w->s->order[p];
    w->vars[k] = w->s->knobs[k].values[i];
    w->g.idx[k] = (uint8_t)i;
    if (on)
        w->act |= 1u << k;
    else
        w->act &= ~(1u << k);
}

/* Valid completions of the positions 0..p-1 already assigned in w. */
static uint64_t count_from(walk *w, int p)
{
    if (p > w->last_needed) return w->suffix[p];
    const int k = w->s->order[p];
    const knob *kb = &w->s->knobs[k];
    const bool on = knob_on(w->s, k, w->vars, w->act);
    /* Without constraints, a knob no condition reads multiplies its subtree by its domain size. */
    const bool free_knob = !w->constraints && !(w->parents >> k & 1u);
    const int n = on && !free_knob ? kb->n : 1;
    const uint32_t act = w->act;
    uint64_t sum = 0;
    for (int i = 0; i < n && !w->over_budget; i++) {
        if (w->budget && ++w->visits > w->budget) {
            w->over_budget = true;
            break;
        }
        assign(w, p, i, on);
        if (holds_at(w, p)) sum = sat_add(sum, count_from(w, p + 1));
        w->act = act;
    }
    return free_knob && on ? sat_mul(sum, (uint64_t)kb->n) : sum;
}

static void visit_from(walk *w, int p)
{
    if (p == w->s->n_knobs) {
        if (w->s->filter && !w->s->filter(&w->g, w->s->filter_ctx)) return;
        if (w->fn(&w->g, w->ctx)) w->stopped = true;
        return;
    }
    const int k = w->s->order[p];
    const bool on = knob_on(w->s, k, w->vars, w->act);
    const int n = on ? w->s->knobs[k].n : 1;
    const uint32_t act = w->act;
    for (int i = 0; i < n && !w->stopped; i++) {
        assign(w, p, i, on);
        if (holds_at(w, p)) visit_from(w, p + 1);
        w->act = act;
    }
}

void evo_space_foreach_valid(const evo_space *s, int (*fn)(const evo_genome *g, void *ctx), void *ctx)
{
    walk w;
    walk_init(&w, s, true);
    w.fn = fn;
    w.ctx = ctx;
    if (s->n_knobs == 0 || !holds_at(&w, -1)) return;
    visit_from(&w, 0);
}

static int count_one(const evo_genome *g, void *ctx)
{
    (void)g;
    ++*(uint64_t *)ctx;
    return 0;
}

uint64_t evo_space_count_filtered(const evo_space *s)
{
    uint64_t n = 0;
    evo_space_foreach_valid(s, count_one, &n);
    return n;
}

static uint64_t below64(evo_rng *r, uint64_t n)
{
    uint64_t threshold = (0 - n) % n; /* rejecting below this removes the modulo bias */
    for (;;) {
        uint64_t x = evo_rng_next(r);
        if (x >= threshold) return x % n;
    }
}

/* Each active knob's value drawn uniformly in the walk order (declaration order when nothing is conditional);
 * inactive knobs canonical. */
static void random_genome(const evo_space *s, evo_rng *rng, evo_genome *g)
{
    memset(g, 0, sizeof *g);
    int vars[EVO_MAX_KNOBS] = {0};
    uint32_t act = 0;
    for (int i = 0; i < s->n_knobs; i++) {
        const int k = s->order[i];
        if (knob_on(s, k, vars, act)) {
            act |= 1u << k;
            g->idx[k] = (uint8_t)evo_rng_below(rng, (uint32_t)s->knobs[k].n);
        }
        vars[k] = s->knobs[k].values[g->idx[k]];
    }
}

evo_status evo_space_count(const evo_space *s, uint64_t limit, uint64_t *total, uint64_t *valid, bool *exact,
                           evo_err *err)
{
    if (s->n_knobs == 0) return evo_fail(err, EVO_E_CONFIG, "the search space has no knobs");
    walk w;
    walk_init(&w, s, false); /* distinct genomes: a product of the domains, or a sum over the conditions' cases */
    *total = s->n_conditional ? count_from(&w, 0) : w.suffix[0];
    walk_init(&w, s, true);
    /* A walk visits at most (knobs + 1) nodes per genome; that much work is what `limit` genomes cost. */
    w.budget = sat_mul(limit ? limit : 1, (uint64_t)s->n_knobs + 1);
    uint64_t n = holds_at(&w, -1) ? count_from(&w, 0) : 0;
    if (!w.over_budget) {
        *valid = n;
        *exact = true;
        return EVO_OK;
    }
    uint64_t samples = limit < 1000000 ? (limit < 1000 ? 1000 : limit) : 1000000;
    evo_rng rng;
    evo_rng_seed(&rng, 0x5eed5eedULL); /* a fixed seed: the same space always gets the same estimate */
    uint64_t hits = 0;
    for (uint64_t i = 0; i < samples; i++) {
        evo_genome g;
        random_genome(s, &rng, &g);
        if (evo_space_constraints_hold(s, &g, NULL)) hits++;
    }
    *valid = (uint64_t)((double)*total * ((double)hits / (double)samples));
    *exact = false;
    return EVO_OK;
}

typedef struct {
    evo_rng *rng;
    evo_genome *out;
    uint64_t seen;
} pick_ctx;

static int pick_one(const evo_genome *g, void *ctx)
{
    pick_ctx *pc = ctx;
    if (below64(pc->rng, ++pc->seen) == 0) *pc->out = *g;
    return 0;
}

evo_status evo_space_random(const evo_space *s, evo_rng *rng, evo_genome *out, evo_err *err)
{
    if (s->n_knobs == 0) return evo_fail(err, EVO_E_CONFIG, "the search space has no knobs");
    for (int t = 0; t < 10000; t++) {
        random_genome(s, rng, out);
        if (evo_space_valid(s, out, NULL)) return EVO_OK;
    }
    /* Few genomes are valid: one pass over them, keeping the i-th with probability 1/i (uniform overall). */
    pick_ctx pc = {.rng = rng, .out = out};
    evo_space_foreach_valid(s, pick_one, &pc);
    if (pc.seen == 0) return evo_fail(err, EVO_E_CONFIG, "no genome satisfies the constraints");
    return EVO_OK;
}
