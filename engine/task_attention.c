/* task_attention.c — the FP8 attention forward task: knobs of templates/attention_fp8.cu, rendering, host-side
 * can_implement, FLOP count. */
#include "task.h"

#include "util.h"

#include <stdio.h>
#include <string.h>

/* In the order of the template's parameters after <HEAD_DIM, FORMAT>. */
static const char *const attention_knobs[] = {
    "TILE_M", "TILE_N", "WARPS_M", "WARPS_N", "STAGES", "SWIZZLE", "PV_MMA", "QK_8BIT", "V_F16_SMEM",
    "MIN_BLOCKS", "FAST_EXP", NULL,
};

static bool attention_can_implement(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                    char *why, size_t why_len)
{
    (void)cfg;
    (void)g;
    (void)lim;
    snprintf(why, why_len, "not built yet");
    return false;
}

static evo_status attention_render(const evo_config *cfg, const evo_genome *g, evo_program *out, evo_err *err)
{
    (void)cfg;
    (void)g;
    (void)out;
    return evo_fail(err, EVO_E_INTERNAL, "attention_fp8: render not built yet");
}

static double attention_flops(const evo_shape *s)
{
    double f = 4.0 * s->batch * s->heads * (double)s->seq * (double)s->seq * s->head_dim;
    if (s->causal) f = 4.0 * s->batch * s->heads * (double)s->seq * (s->seq + 1) / 2.0 * s->head_dim;
    return f;
}

const evo_task evo_task_attention_fp8 = {
    .name = "attention_fp8",
    .template_file = "attention_fp8.cu",
    .knobs = attention_knobs,
    .can_implement = attention_can_implement,
    .render = attention_render,
    .flops = attention_flops,
};
