/* result.h — what one candidate measured: its result (evo_result: verdict, evidence, per-shape results, the time
 * the gates took, the GPU, and the fitness the evaluator gives it) and each shape's part (evo_shape_result). One
 * type crosses the worker's wire (protocol.h's reply carries it), the search (the evaluator hands it over, eval/
 * evaluate.h) and the store (evo_eval_rec_set_result, store.h, writes it); it sits in the bottom layer so that every
 * layer above can hold it without reaching into another's header.
 */
#ifndef EVO_RESULT_H
#define EVO_RESULT_H

#include "evo.h"
#include "task.h"

#define EVO_MAX_SHAPES 64 /* timed shapes of a config, and per-shape results of one evaluation */

#define EVO_SHAPE_FIELDS_MAX 256

typedef struct {
    char shape[64];                    /* evo_shape_format text: "long(2,8,2048,64) causal" */
    char fields[EVO_SHAPE_FIELDS_MAX]; /* the shape's fields as a JSON object (evo_shape_fields_json) */
    double median_us, p10_us, p90_us;  /* 0 when not timed */
    double baseline_us;                /* baseline re-timed in the same worker; 0 when unknown */
    double speedup;
    double rate;                 /* work / median time in the task's unit (TFLOP/s, GB/s); 0 when not timed */
    double max_abs, rel_l2;      /* worst over the correctness cases of this shape, vs the gate's reference */
    double e2e_rel_l2, e2e_rmse; /* the task's second error (attention: vs the unquantized fp16 inputs) */
    double ci_lo_us, ci_hi_us;   /* 95 % interval of median_us (noise.h); 0 when unknown (schema < 3) */
    double baseline_ci_lo_us, baseline_ci_hi_us; /* ... of baseline_us */
} evo_shape_result;

/* One candidate's result on a config's shape set. */
typedef struct {
    evo_verdict verdict;
    double fitness;                /* NAN unless OK or REGRESSED; set by the evaluator (a worker's reply has none) */
    double fitness_lo, fitness_hi; /* its 95 % interval from the per-shape intervals (noise.h); NAN when unknown */
    char *detail;                  /* JSON object text: the evidence (failing case, metrics, log excerpt ...);
                                      malloc'd, owned by the result; NULL encodes as {} */
    evo_shape_result shapes[EVO_MAX_SHAPES];
    int n_shapes;
    double check_s, time_s; /* seconds in the correctness and timing gates */
    char gpu[128];          /* the device that measured it */
} evo_result;

/* Frees detail; the record may be reused. */
void evo_result_free(evo_result *r);

/* Fills a per-shape result's shape text and fields from a shape. */
void evo_shape_result_set_shape(evo_shape_result *r, const evo_shape *s);

#endif
