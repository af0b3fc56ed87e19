/* task_gpu.h — the worker side of a task, and what the engine's GPU evaluator (eval_gpu.c) gives it. Only worker
 * processes (`evo worker`) call these; the parent never initializes CUDA.
 *
 * The engine owns the gates: it enumerates the correctness cases (shapes x axis values x seeds x distributions,
 * then one timing case per timed shape), poisons every output with 0xff bytes between canary guard bands, launches
 * through the task, waits with a deadline, checks the canaries, times, and turns failures into verdicts. The task
 * owns the problem: the bytes of output a case needs, its inputs and references (made once per case, kept for the
 * worker's life), the kernel's launch (grid and parameters), and the comparison of an output with the reference.
 *
 * Call order inside a worker: open once; then per case prepare once (before the first evaluation, so a candidate's
 * watchdog covers the candidate alone); per variant of a hand-written program, geometry once; per run, launch (on
 * evo_gpu_stream, asynchronous) and, after the engine waited for it, check. Everything runs on the worker's one
 * thread. A task keeps device memory for the worker's life; the driver frees it with the context when the worker
 * ends.
 */
#ifndef EVO_TASK_GPU_H
#define EVO_TASK_GPU_H

#include "numerics.h" /* evo_metrics */
#include "config.h"
#include "cudrv.h"
#include "evo.h"
#include "task.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct evo_gpu evo_gpu; /* the worker's device: driver, context, stream, support kernels */

const evo_cudrv *evo_gpu_cu(const evo_gpu *g);
CUstream evo_gpu_stream(const evo_gpu *g);
const evo_config *evo_gpu_config(const evo_gpu *g);
int evo_gpu_sm_count(const evo_gpu *g);
int evo_gpu_arch(const evo_gpu *g); /* compute capability as major * 10 + minor: 90 for an H100 */
/* A kernel of the engine's support module (templates/support.cu: input generator, fp16 to float, comparison,
 * canaries); NULL when it has none of that name. A task's own kernels come from its own modules
 * (evo_gpu_load_module). */
CUfunction evo_gpu_support(const evo_gpu *g, const char *name);
/* Compiles an embedded template file with NVRTC for this device and loads it (a task's own support kernels). It
 * may include evo_numerics.cuh (device number formats) and the embedded headers named in `headers`
 * (NULL-terminated, may be NULL). */
evo_status evo_gpu_load_module(evo_gpu *g, const char *template_file, const char *const *headers, CUmodule *out,
                               evo_err *err);
/* Asynchronous launch on the worker's stream; EVO_E_CUDA naming `what` when the driver refuses it. */
evo_status evo_gpu_launch(evo_gpu *g, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args,
                          const char *what, evo_err *err);
/* Asynchronous launch on the worker's stream with launch attributes (cluster dimensions, cooperative, programmatic
 * stream serialization): cuLaunchKernel when n_attrs is 0, else cuLaunchKernelEx (CUDA_ERROR_NOT_SUPPORTED from a
 * driver without it). The driver's result, for the task to report. */
CUresult evo_gpu_launch_attrs(const evo_gpu *g, CUfunction f, const unsigned grid[3], unsigned block, unsigned smem,
                              CUlaunchAttribute *attrs, unsigned n_attrs, void **args);
evo_status evo_gpu_alloc(evo_gpu *g, size_t bytes, CUdeviceptr *out, evo_err *err);
/* n fp16 values at out against n floats at ref with templates/support.cu's evo_compare (|out - ref| <= atol +
 * rtol x |ref|); synchronizes the stream. */
evo_status evo_gpu_compare_f16(evo_gpu *g, CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol,
                               evo_metrics *m, evo_err *err);
/* Sets the two 64-bit words at res to {0, ~0} (a count and a smallest index, as evo_canary_check and the tasks'
 * comparison kernels keep them), in order on the worker's stream: a synchronous copy from host memory would not be
 * ordered before kernels on that (non-blocking) stream. */
evo_status evo_gpu_reset_count(evo_gpu *g, CUdeviceptr res, evo_err *err);
/* Grid-stride kernels of the support module take this grid for n elements. */
unsigned evo_gpu_grid_for(size_t n);

/* One correctness or timing case. */
typedef struct {
    evo_shape shape; /* the case's shape, with the values of the axis fields applied (e.g. causal) */
    uint64_t seed;
    evo_dist dist;
    int probe;        /* -1: inputs of distribution dist; else the task's structural probe (task.h)  */
    bool timing;      /* the timing inputs of a timed shape                                          */
    bool timed_shape; /* the shape is timed: the task may add errors it reports per shape (e2e)      */
    void *data;       /* the task's: inputs and references, filled by prepare                        */
} evo_gpu_case;

/* A loaded kernel of the candidate's program: its variant (geometry read from the module for hand-written ones). */
typedef struct {
    CUfunction fn;
    evo_variant v;
} evo_gpu_kernel;

typedef struct {
    evo_metrics m;   /* against the reference the gate uses                                          */
    evo_metrics e2e; /* a second error the task reports per timed shape (n = 0: none)                */
    char why[256];   /* "" when the output passes; else what failed ("rel-L2 0.01 > 0.002")          */
} evo_gpu_check;

typedef struct evo_task_gpu {
    /* Once per worker, after the engine's own set-up. *state belongs to the task. */
    evo_status (*open)(evo_gpu *g, void **state, evo_err *err);
    /* Bytes of output a case of shape s writes (the engine poisons them and guards both ends). */
    size_t (*output_bytes)(void *state, const evo_shape *s);
    /* Inputs and references of case c (c->data); called once per case. */
    evo_status (*prepare)(void *state, evo_gpu_case *c, evo_err *err);
    /* A hand-written kernel (variant threads 0) declares its launch geometry next to itself: read it from the
     * module into v. A kernel that declares none or an impossible one: *why set, EVO_OK (the verdict is INVALID). */
    evo_status (*geometry)(void *state, CUmodule mod, evo_variant *v, char *why, size_t why_len, evo_err *err);
    /* Once per evaluation, after the program's kernels are loaded and before the first launch (may be NULL): e.g.
     * clear the scratch memory a kernel relies on. */
    evo_status (*begin)(void *state, const evo_gpu_kernel *k, int n, evo_err *err);
    /* Launch variant k[pick] on case c with its output at out, asynchronously on evo_gpu_stream; a variant whose
     * work takes several kernels finds its helpers among k[0..n). fresh: on the inputs the last perturb made
     * (timed repetitions) instead of the case's own. */
    CUresult (*launch)(void *state, const evo_gpu_case *c, const evo_gpu_kernel *k, int n, int pick, CUdeviceptr out,
                       bool fresh);
    /* The grid and block of each kernel a launch of k[pick] on c makes, in order (CUPTI tells their records apart by
     * them; a launch's time runs from the first one's start to the last one's end); returns how many (1..max). */
    int (*geometry_of)(void *state, const evo_gpu_case *c, const evo_gpu_kernel *k, int n, int pick, unsigned grid[][3],
                       unsigned *block, int max);
    /* Compare the output at out of variant v (every byte written: the engine checked the canaries) with c's
     * reference (the task may keep several, one per arithmetic its variants declare). */
    evo_status (*check)(void *state, const evo_gpu_case *c, const evo_variant *v, CUdeviceptr out, evo_gpu_check *r,
                        evo_err *err);

    /* Fresh inputs for a timed repetition of timing case c: its inputs perturbed by seed, cheaply on the GPU, into
     * buffers the task keeps (sized in prepare for timing cases); asynchronous. A kernel that keeps results keyed on
     * the content of its inputs then never sees the same inputs twice. */
    evo_status (*perturb)(void *state, const evo_gpu_case *c, uint64_t seed, evo_err *err);
    /* An output at out of a launch on the inputs perturb(seed) made: against a reference for those inputs, all of it
     * or a part the task draws from seed (attention: two heads); r->why names the part when it fails. */
    evo_status (*check_fresh)(void *state, const evo_gpu_case *c, const evo_variant *v, uint64_t seed, CUdeviceptr out,
                              evo_gpu_check *r, evo_err *err);
} evo_task_gpu;

#endif
