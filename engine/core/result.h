/* result.h — what one candidate measured on one shape: the per-shape result the worker sends over the wire
 * (protocol.h), the search ranks and the store keeps (store.h). One type, in the bottom layer, so that every layer
 * above can hold it without reaching into another's header.
 */
#ifndef EVO_RESULT_H
#define EVO_RESULT_H

#include "task.h"

#define EVO_SHAPE_FIELDS_MAX 256

typedef struct {
    char shape[64];    /* evo_shape_format text: "long(2,8,2048,64) causal" */
    char fields[EVO_SHAPE_FIELDS_MAX]; /* the shape's fields as a JSON object (evo_shape_fields_json) */
    double median_us, p10_us, p90_us; /* 0 when not timed */
    double baseline_us;               /* baseline re-timed in the same worker; 0 when unknown */
    double speedup;
    double rate;                      /* work / median time in the task's unit (TFLOP/s, GB/s); 0 when not timed */
    double max_abs, rel_l2;           /* worst over the correctness cases of this shape, vs the gate's reference */
    double e2e_rel_l2, e2e_rmse;      /* the task's second error (attention: vs the unquantized fp16 inputs) */
    double ci_lo_us, ci_hi_us;        /* 95 % interval of median_us (noise.h); 0 when unknown (schema < 3) */
    double baseline_ci_lo_us, baseline_ci_hi_us; /* ... of baseline_us */
} evo_shape_result;

/* Fills a per-shape result's shape text and fields from a shape. */
void evo_shape_result_set_shape(evo_shape_result *r, const evo_shape *s);

#endif
