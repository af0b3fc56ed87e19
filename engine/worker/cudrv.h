/* cudrv.h — the CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * evo links no CUDA driver library, so every command that needs no GPU runs on a machine without one. Only the
 * worker process calls evo_cudrv_load (the parent driver never initializes CUDA: a faulting kernel poisons the
 * context of the process that launched it). The table is filled once; afterwards it is read-only and may be
 * used from any thread. Wrap calls with EVO_CU(call, err) to turn a CUresult into EVO_E_CUDA with the driver's
 * own error string.
 */
#ifndef EVO_CUDRV_H
#define EVO_CUDRV_H

#include "evo.h"

#include <cuda.h> /* types and enums only; the symbols come from dlsym */

typedef struct {
    void *lib;
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void **, void **);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemsetD32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    CUresult (*cuStreamCreate)(CUstream *, unsigned int);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamQuery)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned int);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    /* Optional (NULL on a driver without them): launches with attributes (thread-block clusters) and TMA tensor
     * maps, both CUDA 12.0 and later. */
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
    /* Optional: stream capture into CUDA graphs and their launch, event records inside a capture (timing.method
     * graph), stream-ordered device copies (timing's sampled outputs). */
    CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    CUresult (*cuEventRecordWithFlags)(CUevent, CUstream, unsigned int);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
} evo_cudrv;

/* Loads libcuda.so.1 and resolves every entry; EVO_E_NODRIVER with a message naming what was missing. Idempotent.
 * Does not call cuInit. */
evo_status evo_cudrv_load(const evo_cudrv **out, evo_err *err);

/* Turns r into EVO_OK or EVO_E_CUDA with "what: CUDA_ERROR_X (driver's string)". */
evo_status evo_cu_check(const evo_cudrv *cu, CUresult r, const char *what, evo_err *err);
#define EVO_CU(cu, call, err) \
    do { \
        evo_status s_ = evo_cu_check((cu), (cu)->call, #call, (err)); \
        if (s_ != EVO_OK) return s_; \
    } while (0)

/* Waits for event e by polling (spinning, then sleeping 20 us between queries) until it completes, the driver
 * reports an error (*fault, a kernel's fault) or timeout_s passes: a kernel that never ends is noticed, not waited
 * for. */
typedef enum { EVO_CU_WAIT_OK, EVO_CU_WAIT_TIMEOUT, EVO_CU_WAIT_FAULT } evo_cu_wait;
evo_cu_wait evo_cu_wait_event(const evo_cudrv *cu, CUevent e, double timeout_s, CUresult *fault);

/* The sentence `evo run` prints when no driver is present. */
#define EVO_NO_DRIVER_HINT \
    "commands that need no GPU: evo space, evo compile, evo elite, evo history, evo export, " \
    "evo plot, evo insights, evo init, and evo run --replay DB"

#endif
