/* quantize.h — what the quantize_fp8 task's files share (task.c: host side; gpu.c: worker side; export.c: the
 * standalone file): the indices of its shape fields and variant attributes, and a genome's knobs as the ABI's
 * evo_quant_knobs. Not an engine header: only this task's files include it.
 */
#ifndef EVO_TASK_QUANTIZE_H
#define EVO_TASK_QUANTIZE_H

#include "config.h"
#include "evo_quantize_abi.h"
#include "task.h"

/* Shape fields, in the order of evo_shape.v (part of the shape-set key: never reorder). */
enum { QZ_BATCH, QZ_HEADS, QZ_SEQ, QZ_DIM, QZ_DTYPE, QZ_ROTATE, QZ_N_FIELDS };
/* Variant attributes: which kernel of the plan, which problem class it serves, then the genome's knobs (the launch
 * plan is rebuilt from them in the worker and in the exported launcher). */
enum {
    QZ_V_ROLE, /* EVO_QUANT_K_MAIN (the variant a shape runs), EVO_QUANT_K_ABSMAX or EVO_QUANT_K_ROTATE (helpers) */
    QZ_V_DIM,
    QZ_V_DTYPE,
    QZ_V_ROTATE,
    QZ_V_KNOBS, /* 11 knobs from here, in evo_quant_knobs order */
    QZ_N_VATTRS = QZ_V_KNOBS + 11
};

/* The knobs a variant carries. */
evo_quant_knobs evo_qz_knobs_of(const evo_variant *v);
/* Whether variant v is the main kernel for shape s (task.c). */
bool evo_qz_serves(const evo_variant *v, const evo_shape *s);

#endif
