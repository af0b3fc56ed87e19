/* candidate.c — genome → checked, rendered, compiled and resource-gated candidate (see candidate.h). */
#include "candidate.h"

#include "templates.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int evo_candidate_options(const evo_config *cfg, char *buf, size_t buf_len, const char **opts, int max)
{
    static const char *const base[] = {"-std=c++17", "-DNDEBUG"};
    int n = 0;
    for (size_t i = 0; i < EVO_ARRAY_LEN(base) && n < max; i++) opts[n++] = base[i];
    snprintf(buf, buf_len, "%s", cfg->compile.extra_options ? cfg->compile.extra_options : "");
    for (char *p = buf; *p && n < max;) {
        while (*p == ' ' || *p == '\t') *p++ = '\0';
        if (!*p) break;
        opts[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    return n;
}

static void set_verdict(evo_candidate *c, evo_verdict v, const char *fmt, const char *a)
{
    /* fmt has exactly one %s */
    c->verdict = v;
    snprintf(c->why, sizeof c->why, fmt, a);
}

int evo_task_headers(const evo_task *t, evo_compile_header *out, int max)
{
    int n = 0;
    for (int i = 0; t->headers && t->headers[i] && n < max; i++) {
        const char *text = "";
        evo_template_get(t->headers[i], &text, NULL, NULL);
        out[n++] = (evo_compile_header){t->headers[i], text};
    }
    return n;
}

evo_compile_limits evo_config_compile_limits(const evo_config *cfg)
{
    return (evo_compile_limits){.memory_mb = cfg->compile.max_memory_mb,
                                .cpu_s = cfg->compile.max_cpu_s,
                                .output_mb = cfg->compile.max_output_mb,
                                .open_files = cfg->compile.max_open_files,
                                .sandbox = (evo_sandbox_mode)cfg->compile.sandbox};
}

/* The compile request of a prepared candidate; exprs and opts must outlive it. */
static evo_compile_req request_of(const evo_build_opts *o, const evo_candidate *c, const evo_compile_header *hdr,
                                  int n_hdr, const char **exprs, const char **opts, int n_opts)
{
    for (int v = 0; v < c->prog.n_variants; v++) exprs[v] = c->prog.variants[v].name_expr;
    return (evo_compile_req){
        .source = c->prog.source,
        .program_name = c->prog.program_name,
        .name_exprs = exprs,
        .n_name_exprs = c->prog.n_variants,
        .headers = hdr,
        .n_headers = n_hdr,
        .arch = c->prog.arch[0] ? c->prog.arch : o->arch,
        .options = opts,
        .n_options = n_opts,
        .timeout_s = o->cfg->compile.timeout_s,
        .limits = evo_config_compile_limits(o->cfg),
    };
}

void evo_candidate_key(const evo_task *task, const evo_space *space, const evo_genome *g, const char compile_key[65],
                       char key[65])
{
    EVO_ASSERT(evo_compile_key_valid(compile_key)); /* a candidate key extends a compile key */
    if (!task->launch_knobs || !task->launch_knobs[0]) {
        memcpy(key, compile_key, 65);
        return;
    }
    evo_str s = {0};
    evo_str_appendf(&s, "%s launch", compile_key);
    for (int i = 0; task->launch_knobs[i]; i++) {
        int def = 0;
        for (int k = 0; task->knobs[k]; k++)
            if (strcmp(task->knobs[k], task->launch_knobs[i]) == 0) def = task->knob_defaults[k];
        evo_str_appendf(&s, " %s=%d", task->launch_knobs[i], evo_genome_get(space, g, task->launch_knobs[i], def));
    }
    evo_sha256_hex(evo_str_cstr(&s), s.len, key);
    evo_str_free(&s);
    EVO_ASSERT(evo_compile_key_valid(key));
}

evo_status evo_candidates_prepare(const evo_build_opts *o, evo_candidate *c, int n, evo_err *err)
{
    evo_compile_header hdr[8];
    const int n_hdr = evo_task_headers(o->task, hdr, (int)EVO_ARRAY_LEN(hdr));
    const char *opts[32], *exprs[EVO_MAX_VARIANTS];
    char opt_buf[1024];
    const int n_opts = evo_candidate_options(o->cfg, opt_buf, sizeof opt_buf, opts, (int)EVO_ARRAY_LEN(opts));
    for (int i = 0; i < n; i++) {
        evo_candidate *ci = &c[i];
        evo_genome g = ci->genome;
        memset(ci, 0, sizeof *ci);
        ci->genome = g;
        ci->registers = ci->smem_bytes = ci->spill_bytes = ci->stack_bytes = -1;
        evo_genome_format(o->cfg->space, &g, ci->genome_text, sizeof ci->genome_text);
        evo_status s = o->task->render(o->cfg, &g, o->lim, &ci->prog, err);
        if (s != EVO_OK) return s;
        ci->accuracy = o->task->genome_accuracy ? o->task->genome_accuracy(o->cfg, &g) : 0;
        EVO_ASSERT(ci->accuracy >= 0 && ci->accuracy < evo_task_accuracy_count(o->task));
        for (int v = 0; v < ci->prog.n_variants; v++) ci->prog.variants[v].accuracy = ci->accuracy;
        evo_sha256_hex(ci->prog.source, strlen(ci->prog.source), ci->template_hash);
        const evo_compile_req req = request_of(o, ci, hdr, n_hdr, exprs, opts, n_opts);
        char compile_key[65];
        s = evo_compile_key(&req, compile_key, err);
        if (s != EVO_OK) return s;
        evo_candidate_key(o->task, o->cfg->space, &g, compile_key, ci->key);
        const char *violated = NULL;
        /* the constraints alone: a search loop's space also filters by evo_candidate_admit, whose reason comes below */
        if (!evo_space_constraints_hold(o->cfg->space, &g, &violated)) {
            set_verdict(ci, EVO_V_INVALID, "violates constraint: %s", violated ? violated : "?");
            continue;
        }
        ci->verdict = evo_candidate_admit(o, &g, ci->why, sizeof ci->why);
    }
    return EVO_OK;
}

evo_verdict evo_candidate_admit(const evo_build_opts *o, const evo_genome *g, char *why, size_t why_len)
{
    const int accuracy = o->task->genome_accuracy ? o->task->genome_accuracy(o->cfg, g) : 0;
    if (!(o->cfg->accuracy & (1u << accuracy))) {
        char admitted[128];
        evo_config_accuracy_names(o->cfg, admitted, sizeof admitted);
        snprintf(why, why_len,
                 "its arithmetic is of accuracy class %s, which the config does not admit (accuracy: [%s])",
                 evo_task_accuracy_name(o->task, accuracy), admitted);
        return EVO_V_INVALID;
    }
    if (why_len) why[0] = '\0';
    return o->task->can_implement(o->cfg, g, o->lim, why, why_len);
}

bool evo_candidate_admits(const evo_genome *g, void *opts)
{
    char why[512];
    return evo_candidate_admit(opts, g, why, sizeof why) == EVO_V_OK;
}

/* Verdict of a compiled candidate from its compile result: the resource gate on what ptxas reported. */
static void judge_compiled(const evo_build_opts *o, evo_candidate *ci)
{
    const evo_compile_result *r = &ci->cr;
    if (r->outcome == EVO_COMPILE_TIMEOUT || r->outcome == EVO_COMPILE_LIMIT ||
        (r->outcome != EVO_COMPILE_OK && r->why[0])) {
        snprintf(ci->why, sizeof ci->why, "does not compile: %.400s", r->why);
        ci->verdict = EVO_V_COMPILE_FAIL;
        return;
    }
    if (r->outcome != EVO_COMPILE_OK) {
        /* A static_assert is the template refusing the genome: INVALID, with the assertion's text. */
        const char *sa = strstr(r->log, "static assertion failed");
        const char *e = sa ? sa : strstr(r->log, "error");
        const char *eol = e ? strchr(e, '\n') : NULL;
        char line[400];
        snprintf(line, sizeof line, "%.*s", e ? (int)(eol ? eol - e : (long)strlen(e)) : 0, e ? e : "");
        set_verdict(ci, sa ? EVO_V_INVALID : EVO_V_COMPILE_FAIL,
                    sa ? "template rejects it: %s" : "does not compile: %s", line);
        return;
    }
    int regs = 0, smem = 0, spill = 0, stack = 0;
    for (int k = 0; k < r->n_kernels; k++) {
        const evo_kernel_res *kr = &r->kernels[k].res;
        if (kr->registers > regs) regs = kr->registers;
        const int dyn = ci->prog.variants[k].smem_bytes + (kr->smem_bytes > 0 ? kr->smem_bytes : 0);
        if (dyn > smem) smem = dyn;
        const int sp = (kr->spill_store_bytes > 0 ? kr->spill_store_bytes : 0) +
                       (kr->spill_load_bytes > 0 ? kr->spill_load_bytes : 0);
        if (sp > spill) spill = sp;
        if (kr->stack_frame_bytes > stack) stack = kr->stack_frame_bytes;
    }
    if (r->program_spill_bytes > spill) spill = r->program_spill_bytes;
    ci->registers = regs, ci->smem_bytes = smem, ci->spill_bytes = spill, ci->stack_bytes = stack;
    ci->verdict = EVO_V_OK;
    if ((spill > 0 || stack > 0) && !o->cfg->compile.allow_spills) {
        /* a stack frame is local memory too (an array indexed at run time); the worker would refuse it as well */
        snprintf(ci->why, sizeof ci->why, "%s %d bytes to local memory (compile.allow_spills is false)",
                 spill > 0 ? "spills" : "keeps a stack frame of", spill > 0 ? spill : stack);
        ci->verdict = EVO_V_RESOURCE_FAIL;
    } else if (o->cfg->compile.max_registers > 0 && regs > o->cfg->compile.max_registers) {
        snprintf(ci->why, sizeof ci->why, "%d registers > compile.max_registers %d", regs,
                 o->cfg->compile.max_registers);
        ci->verdict = EVO_V_RESOURCE_FAIL;
    } else if (o->lim->max_regs_per_block > 0) {
        for (int k = 0; k < ci->prog.n_variants && k < r->n_kernels; k++) {
            const int need = r->kernels[k].res.registers * ci->prog.variants[k].threads;
            if (need > o->lim->max_regs_per_block) {
                snprintf(ci->why, sizeof ci->why, "%d registers x %d threads > %d per block on %s",
                         r->kernels[k].res.registers, ci->prog.variants[k].threads, o->lim->max_regs_per_block,
                         o->lim->arch);
                ci->verdict = EVO_V_RESOURCE_FAIL;
                break;
            }
        }
    }
}

evo_status evo_candidates_compile(const evo_build_opts *o, evo_candidate *c, int n, const bool *skip, evo_err *err)
{
    evo_compile_header hdr[8];
    const int n_hdr = evo_task_headers(o->task, hdr, (int)EVO_ARRAY_LEN(hdr));
    const char *opts[32];
    char opt_buf[1024];
    const int n_opts = evo_candidate_options(o->cfg, opt_buf, sizeof opt_buf, opts, (int)EVO_ARRAY_LEN(opts));
    evo_compile_req *reqs = evo_xcalloc((size_t)(n ? n : 1), sizeof *reqs);
    const char *(*exprs)[EVO_MAX_VARIANTS] = evo_xcalloc((size_t)(n ? n : 1), sizeof *exprs);
    int *slot = evo_xcalloc((size_t)(n ? n : 1), sizeof *slot);
    int n_req = 0;
    for (int i = 0; i < n; i++) {
        slot[i] = -1;
        if (c[i].verdict != EVO_V_OK || (skip && skip[i])) continue;
        reqs[n_req] = request_of(o, &c[i], hdr, n_hdr, exprs[i], opts, n_opts);
        slot[i] = n_req++;
    }
    evo_compile_result *res = evo_xcalloc((size_t)(n_req ? n_req : 1), sizeof *res);
    evo_compile_opts co = {.jobs = o->jobs, .interrupt = o->interrupt};
    evo_status s = n_req ? evo_compile_batch(&co, reqs, n_req, res, err) : EVO_OK;
    if (s == EVO_OK) {
        for (int i = 0; i < n; i++) {
            if (slot[i] < 0) continue;
            c[i].cr = res[slot[i]]; /* moved */
            judge_compiled(o, &c[i]);
        }
    }
    free(res);
    free(reqs);
    free(exprs);
    free(slot);
    return s;
}

evo_status evo_candidates_build(const evo_build_opts *o, evo_candidate *c, int n, evo_err *err)
{
    evo_status s = evo_candidates_prepare(o, c, n, err);
    return s == EVO_OK ? evo_candidates_compile(o, c, n, NULL, err) : s;
}

void evo_candidate_free(evo_candidate *c)
{
    evo_program_free(&c->prog);
    evo_compile_result_free(&c->cr);
}

/* ---- sampling ---- */

/* The valid genome nearest to base (fewest knobs changed) with knob k at value index v: base itself with that
 * value, else with one other knob changed too, else two; false when none of those is valid. The search is over
 * the genomes within that distance only (a few thousand), so it stays cheap in spaces far too large to walk. */
static bool nearest_with(const evo_space *s, const evo_genome *base, int k, int v, evo_genome *out)
{
    const int nk = evo_space_n_knobs(s);
    const uint32_t act = evo_space_active(s, base); /* a knob a change turns on takes its first value */
    evo_genome g = *base;
    g.idx[k] = (uint8_t)v;
    evo_genome_settle(s, &g, act, NULL);
    if (evo_space_valid(s, &g, NULL)) return *out = g, true;
    for (int a = 0; a < nk; a++) {
        if (a == k) continue;
        for (int x = 0; x < evo_space_domain_size(s, a); x++) {
            if (x == base->idx[a]) continue;
            evo_genome h = g;
            h.idx[a] = (uint8_t)x;
            evo_genome_settle(s, &h, act, NULL);
            if (evo_space_valid(s, &h, NULL)) return *out = h, true;
        }
    }
    for (int a = 0; a < nk; a++)
        for (int b = a + 1; b < nk; b++) {
            if (a == k || b == k) continue;
            for (int x = 0; x < evo_space_domain_size(s, a); x++)
                for (int y = 0; y < evo_space_domain_size(s, b); y++) {
                    if (x == base->idx[a] || y == base->idx[b]) continue;
                    evo_genome h = g;
                    h.idx[a] = (uint8_t)x, h.idx[b] = (uint8_t)y;
                    evo_genome_settle(s, &h, act, NULL);
                    if (evo_space_valid(s, &h, NULL)) return *out = h, true;
                }
        }
    return false;
}

static bool already(const evo_space *s, const evo_genome *list, int n, const evo_genome *g)
{
    for (int i = 0; i < n; i++)
        if (evo_genome_equal(s, &list[i], g)) return true;
    return false;
}

evo_status evo_sample_genomes(const evo_config *cfg, int n, uint64_t seed, evo_genome **out, int *n_out, evo_err *err)
{
    const evo_space *s = cfg->space;
    evo_genome *list = evo_xcalloc((size_t)(n > 0 ? n : 1), sizeof *list);
    int m = 0;
    if (n > 0) list[m++] = cfg->baseline;
    for (int k = 0; k < evo_space_n_knobs(s) && m < n; k++) {
        const int ends[2] = {0, evo_space_domain_size(s, k) - 1};
        for (int e = 0; e < 2 && m < n; e++) {
            evo_genome g;
            if (nearest_with(s, &cfg->baseline, k, ends[e], &g) && !already(s, list, m, &g)) list[m++] = g;
        }
    }
    evo_rng rng;
    evo_rng_seed(&rng, seed);
    for (int tries = 0; m < n && tries < 100 * n; tries++) {
        evo_genome g;
        evo_status st = evo_space_random(s, &rng, &g, err);
        if (st != EVO_OK) {
            free(list);
            return st;
        }
        if (!already(s, list, m, &g)) list[m++] = g;
    }
    *out = list;
    *n_out = m;
    return EVO_OK;
}
