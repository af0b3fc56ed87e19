/* task.c — the table of tasks and the per-architecture device limits used when no GPU is present. */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const evo_task evo_task_attention_fp8;

const evo_task *const evo_tasks[] = {&evo_task_attention_fp8, NULL};

const evo_task *evo_task_find(const char *name)
{
    for (int i = 0; evo_tasks[i]; i++)
        if (strcmp(evo_tasks[i]->name, name) == 0) return evo_tasks[i];
    return NULL;
}

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

int evo_variant_pick(const evo_variant *v, int n, int head_dim, int batch, int heads, int seq, int causal,
                     int sm_count)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (v[i].head_dim != head_dim || v[i].rows_per_block <= 0) continue;
        long long blocks = (long long)((seq + v[i].rows_per_block - 1) / v[i].rows_per_block) * heads * batch;
        if (causal) blocks /= 2;
        if (blocks < (long long)v[i].min_waves * sm_count) continue;
        if (best < 0 || v[i].min_waves > v[best].min_waves) best = i;
    }
    return best;
}
