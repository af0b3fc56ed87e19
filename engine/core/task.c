/* task.c — looking up the task list (tasks/tasks.c defines it), typed fields and shapes (text, JSON), and the per-architecture device limits used
 * when no GPU is present. */
#include "task.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const evo_task *evo_task_find(const char *name)
{
    for (int i = 0; evo_tasks[i]; i++)
        if (strcmp(evo_tasks[i]->name, name) == 0) return evo_tasks[i];
    return NULL;
}

void evo_task_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; evo_tasks[i] && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", evo_tasks[i]->name);
}

int evo_task_accuracy_count(const evo_task *t)
{
    int n = 0;
    while (t->accuracy_classes && t->accuracy_classes[n]) n++;
    return n ? n : 1;
}

const char *evo_task_accuracy_name(const evo_task *t, int i)
{
    if (i < 0 || i >= evo_task_accuracy_count(t)) return "?";
    return t->accuracy_classes ? t->accuracy_classes[i] : EVO_ACCURACY_EXACT;
}

int evo_task_accuracy_find(const evo_task *t, const char *name)
{
    for (int i = 0; i < evo_task_accuracy_count(t); i++)
        if (strcmp(evo_task_accuracy_name(t, i), name) == 0) return i;
    return -1;
}

void evo_task_accuracy_names(const evo_task *t, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < evo_task_accuracy_count(t) && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", evo_task_accuracy_name(t, i));
}

int evo_task_gate_version(const evo_task *t) { return t->gate_version > 1 ? t->gate_version : 1; }

bool evo_knob_legal_has(const evo_knob_legal *l, int v)
{
    if (l->set) {
        for (int i = 0; i < l->n_set; i++)
            if (l->set[i] == v) return true;
        return false;
    }
    return v >= l->lo && v <= l->hi && (long long)(v - l->lo) % (l->step > 0 ? l->step : 1) == 0;
}

void evo_knob_legal_format(const evo_knob_legal *l, char *buf, size_t n)
{
    if (!n) return;
    buf[0] = '\0';
    if (!l->set) {
        const int step = l->step > 0 ? l->step : 1;
        if ((l->hi - l->lo) / step < 3) { /* a few values read best as a list */
            size_t k = 0;
            for (int v = l->lo; v <= l->hi && k < n; v += step)
                k += (size_t)snprintf(buf + k, n - k, "%s%d", v == l->lo ? "" : ", ", v);
        } else if (step == 1) {
            snprintf(buf, n, "%d..%d", l->lo, l->hi);
        } else {
            snprintf(buf, n, "%d..%d in steps of %d", l->lo, l->hi, step);
        }
        return;
    }
    size_t k = 0;
    for (int i = 0; i < l->n_set && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? ", " : "", l->set[i]);
}

void evo_program_free(evo_program *p)
{
    free(p->source);
    memset(p, 0, sizeof *p);
}

/* ---- fields ---- */

long long evo_field_store(const evo_field *f, double v)
{
    if (f->type != EVO_FIELD_REAL) return (long long)v;
    long long bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

double evo_field_load(const evo_field *f, long long stored)
{
    if (f->type != EVO_FIELD_REAL) return (double)stored;
    double v;
    memcpy(&v, &stored, sizeof v);
    return v;
}

int evo_field_value_text(const evo_field *f, double v, char *buf, size_t n)
{
    switch (f->type) {
        case EVO_FIELD_BOOL: return snprintf(buf, n, "%s", v != 0 ? "true" : "false");
        case EVO_FIELD_ENUM: {
            int count = 0;
            while (f->names[count]) count++;
            const int i = (int)v;
            return snprintf(buf, n, "%s", i >= 0 && i < count ? f->names[i] : "?");
        }
        case EVO_FIELD_REAL: return snprintf(buf, n, "%g", v);
        case EVO_FIELD_INT: break;
    }
    return snprintf(buf, n, "%lld", (long long)v);
}

static void list_allowed(const evo_field *f, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    if (f->type == EVO_FIELD_ENUM) {
        for (int i = 0; f->names[i] && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", f->names[i]);
        return;
    }
    for (int i = 0; i < f->n_allowed && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld",
                                 i == 0                  ? ""
                                 : i + 1 == f->n_allowed ? " or "
                                                         : ", ",
                                 f->allowed[i]);
}

bool evo_field_check(const evo_field *f, double v, char *why, size_t why_len)
{
    char legal[160];
    switch (f->type) {
        case EVO_FIELD_BOOL:
            if (v == 0 || v == 1) return true;
            snprintf(why, why_len, "%s must be true or false", f->name);
            return false;
        case EVO_FIELD_ENUM: {
            int count = 0;
            while (f->names[count]) count++;
            if (v == floor(v) && v >= 0 && v < count) return true;
            list_allowed(f, legal, sizeof legal);
            snprintf(why, why_len, "%s must be one of %s", f->name, legal);
            return false;
        }
        case EVO_FIELD_REAL:
            if (isfinite(v) && v >= f->rmin && v <= f->rmax) return true;
            snprintf(why, why_len, "%s %g is out of range: must be %g to %g", f->name, v, f->rmin, f->rmax);
            return false;
        case EVO_FIELD_INT: break;
    }
    if (v != floor(v) || v < (double)f->min || v > (double)f->max) {
        snprintf(why, why_len, "%s %.17g is out of range: must be %lld to %lld", f->name, v, f->min, f->max);
        return false;
    }
    if (f->n_allowed == 0) return true;
    for (int i = 0; i < f->n_allowed; i++)
        if ((long long)v == f->allowed[i]) return true;
    list_allowed(f, legal, sizeof legal);
    snprintf(why, why_len, "%s %lld is not supported (%s)", f->name, (long long)v, legal);
    return false;
}

/* ---- shapes ---- */

int evo_shape_format(const evo_shape *s, char *buf, size_t n)
{
    evo_str t = {0};
    const evo_task *task = s->task;
    evo_str_appendf(&t, "%s(", s->name);
    int ints = 0;
    for (int i = 0; task && i < task->n_shape_fields; i++)
        if (task->shape_fields[i].type == EVO_FIELD_INT) evo_str_appendf(&t, "%s%lld", ints++ ? "," : "", s->v[i]);
    evo_str_append(&t, ")");
    for (int i = 0; task && i < task->n_shape_fields; i++) {
        const evo_field *f = &task->shape_fields[i];
        if (f->type == EVO_FIELD_BOOL && s->v[i]) evo_str_appendf(&t, " %s", f->name);
        if (f->type == EVO_FIELD_ENUM && s->v[i] > 0) {
            char v[64];
            evo_field_value_text(f, (double)s->v[i], v, sizeof v);
            evo_str_appendf(&t, " %s", v);
        }
        if (f->type == EVO_FIELD_REAL && evo_field_load(f, s->v[i]) != f->dflt)
            evo_str_appendf(&t, " %s=%g", f->name, evo_field_load(f, s->v[i]));
    }
    const int w = snprintf(buf, n, "%s", t.p ? t.p : "");
    evo_str_free(&t);
    return w;
}

void evo_shape_fields_json(const evo_shape *s, evo_str *out)
{
    evo_str_append(out, "{");
    for (int i = 0; s->task && i < s->task->n_shape_fields; i++) {
        const evo_field *f = &s->task->shape_fields[i];
        evo_str_appendf(out, "%s\"%s\":", i ? "," : "", f->name);
        if (f->type == EVO_FIELD_INT) {
            evo_str_appendf(out, "%lld", s->v[i]);
        } else if (f->type == EVO_FIELD_REAL) {
            evo_str_appendf(out, "%.17g", evo_field_load(f, s->v[i]));
        } else {
            char v[64];
            evo_field_value_text(f, (double)s->v[i], v, sizeof v);
            evo_str_appendf(out, f->type == EVO_FIELD_ENUM ? "\"%s\"" : "%s", v);
        }
    }
    evo_str_append(out, "}");
}

evo_status evo_shape_from_fields_json(const evo_task *t, const char *shape_text, const char *fields, evo_shape *out,
                                      evo_err *err)
{
    memset(out, 0, sizeof *out);
    out->task = t;
    const char *text = shape_text ? shape_text : "";
    snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(text, "( "), text);
    cJSON *o = fields ? cJSON_Parse(fields) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return evo_fail(err, EVO_E_DB, "shape %s: its fields are not a JSON object", evo_show(text).s);
    }
    for (int i = 0; i < t->n_shape_fields; i++) {
        const evo_field *f = &t->shape_fields[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, f->name);
        double x = f->dflt == (double)EVO_FIELD_REQUIRED ? 0 : f->dflt;
        if (cJSON_IsNumber(v)) {
            x = v->valuedouble;
        } else if (cJSON_IsBool(v)) {
            x = cJSON_IsTrue(v);
        } else if (cJSON_IsString(v) && f->names) {
            for (int k = 0; f->names[k]; k++)
                if (strcmp(f->names[k], v->valuestring) == 0) x = k;
        }
        out->v[i] = f->type == EVO_FIELD_REAL ? evo_field_store(f, x) : (long long)x;
    }
    cJSON_Delete(o);
    return EVO_OK;
}

int evo_task_shape_field(const evo_task *t, const char *name)
{
    for (int i = 0; t && i < t->n_shape_fields; i++)
        if (strcmp(t->shape_fields[i].name, name) == 0) return i;
    return -1;
}

long long evo_shape_get(const evo_shape *s, const char *field, long long def)
{
    const int i = evo_task_shape_field(s->task, field);
    return i < 0 ? def : s->v[i];
}

/* ---- device limits ---- */

/* Figures from the CUDA programming guide's table of compute capabilities. */
static const evo_device_limits known[] = {
    {"sm_80", 8, 0, 1024, 163 * 1024, 255, 65536, 108, 40 * 1024 * 1024},
    {"sm_86", 8, 6, 1024, 99 * 1024, 255, 65536, 84, 6 * 1024 * 1024},
    {"sm_89", 8, 9, 1024, 99 * 1024, 255, 65536, 58, 48 * 1024 * 1024},
    {"sm_90", 9, 0, 1024, 227 * 1024, 255, 65536, 132, 50 * 1024 * 1024},
};

evo_status evo_device_limits_for_arch(const char *arch, evo_device_limits *out, evo_err *err)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(known); i++) {
        if (strcmp(known[i].arch, arch) == 0) {
            *out = known[i];
            return EVO_OK;
        }
    }
    return evo_fail(err, EVO_E_USAGE, "unknown architecture '%s' (known: sm_80, sm_86, sm_89, sm_90)", arch);
}
