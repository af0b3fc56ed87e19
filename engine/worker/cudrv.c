/* cudrv.c — dlopen the CUDA driver and resolve the entry points evo uses (see cudrv.h). */
#include "cudrv.h"

#include "util.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

static evo_cudrv g_cu;
static evo_status g_status = EVO_E_NODRIVER;
static char g_msg[1024];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Versioned names: cuda.h maps the plain names to these with macros. `alt` is tried when `sym` is missing
 * (a driver older than the headers). */
static const struct {
    size_t off;
    const char *sym, *alt;
    int optional; /* left NULL when the driver lacks it */
} entries[] = {
#define E(field, sym) \
    { \
        offsetof(evo_cudrv, field), sym, NULL, 0 \
    }
#define E2(field, sym, alt) \
    { \
        offsetof(evo_cudrv, field), sym, alt, 0 \
    }
#define EOPT(field, sym) \
    { \
        offsetof(evo_cudrv, field), sym, NULL, 1 \
    }
    E(cuInit, "cuInit"),
    E(cuDriverGetVersion, "cuDriverGetVersion"),
    E(cuDeviceGetCount, "cuDeviceGetCount"),
    E(cuDeviceGet, "cuDeviceGet"),
    E(cuDeviceGetName, "cuDeviceGetName"),
    E(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    E(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    E(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    E(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    E(cuCtxSetCurrent, "cuCtxSetCurrent"),
    E(cuCtxSynchronize, "cuCtxSynchronize"),
    E(cuModuleLoadData, "cuModuleLoadData"),
    E(cuModuleUnload, "cuModuleUnload"),
    E(cuModuleGetFunction, "cuModuleGetFunction"),
    E(cuModuleGetGlobal, "cuModuleGetGlobal_v2"),
    E(cuFuncSetAttribute, "cuFuncSetAttribute"),
    E(cuFuncGetAttribute, "cuFuncGetAttribute"),
    E(cuLaunchKernel, "cuLaunchKernel"),
    E(cuMemAlloc, "cuMemAlloc_v2"),
    E(cuMemFree, "cuMemFree_v2"),
    E(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    E(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    E(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
    E(cuMemsetD8, "cuMemsetD8_v2"),
    E(cuMemsetD32, "cuMemsetD32_v2"),
    E(cuMemsetD8Async, "cuMemsetD8Async"),
    E(cuMemGetInfo, "cuMemGetInfo_v2"),
    E(cuStreamCreate, "cuStreamCreate"),
    E(cuStreamDestroy, "cuStreamDestroy_v2"),
    E(cuStreamSynchronize, "cuStreamSynchronize"),
    E(cuStreamQuery, "cuStreamQuery"),
    E(cuEventCreate, "cuEventCreate"),
    E(cuEventDestroy, "cuEventDestroy_v2"),
    E(cuEventRecord, "cuEventRecord"),
    E(cuEventSynchronize, "cuEventSynchronize"),
    E(cuEventQuery, "cuEventQuery"),
    E2(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    E(cuMemsetD32Async, "cuMemsetD32Async"),
    E(cuGetErrorString, "cuGetErrorString"),
    E(cuGetErrorName, "cuGetErrorName"),
    EOPT(cuLaunchKernelEx, "cuLaunchKernelEx"),
    EOPT(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
    EOPT(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
    EOPT(cuStreamEndCapture, "cuStreamEndCapture"),
    EOPT(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    EOPT(cuGraphLaunch, "cuGraphLaunch"),
    EOPT(cuGraphExecDestroy, "cuGraphExecDestroy"),
    EOPT(cuGraphDestroy, "cuGraphDestroy"),
    EOPT(cuEventRecordWithFlags, "cuEventRecordWithFlags"),
    EOPT(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
#undef E
#undef E2
#undef EOPT
};

static void load_once(void)
{
    const char *path = getenv("EVO_LIBCUDA") ? getenv("EVO_LIBCUDA") : "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        /* dlerror() names the file itself ("libcuda.so.1: cannot open shared object file: ..."): say it once */
        const char *why = dlerror(), *p = why ? why : "not found";
        const size_t n = strlen(path);
        if (strncmp(p, path, n) == 0 && strncmp(p + n, ": ", 2) == 0) p += n + 2;
        snprintf(g_msg, sizeof g_msg, "the NVIDIA CUDA driver was not found (%.300s: %.600s)", path, p);
        return;
    }
    for (size_t i = 0; i < EVO_ARRAY_LEN(entries); i++) {
        void *fn = dlsym(lib, entries[i].sym);
        if (!fn && entries[i].alt) fn = dlsym(lib, entries[i].alt);
        if (!fn && entries[i].optional) continue;
        if (!fn) {
            snprintf(g_msg, sizeof g_msg, "the CUDA driver %s lacks %s (driver too old?)", path, entries[i].sym);
            dlclose(lib);
            return;
        }
        *(void **)((char *)&g_cu + entries[i].off) = fn;
    }
    g_cu.lib = lib;
    g_status = EVO_OK;
}

evo_status evo_cudrv_load(const evo_cudrv **out, evo_err *err)
{
    pthread_once(&g_once, load_once);
    if (g_status != EVO_OK) return evo_fail(err, g_status, "%s", g_msg);
    *out = &g_cu;
    return EVO_OK;
}

evo_status evo_cu_check(const evo_cudrv *cu, CUresult r, const char *what, evo_err *err)
{
    if (r == CUDA_SUCCESS) return EVO_OK;
    const char *name = "CUDA_ERROR_UNKNOWN", *str = "unknown error";
    if (cu && cu->cuGetErrorName) cu->cuGetErrorName(r, &name);
    if (cu && cu->cuGetErrorString) cu->cuGetErrorString(r, &str);
    return evo_fail(err, EVO_E_CUDA, "%s: %s (%s)", what, name ? name : "?", str ? str : "?");
}

evo_cu_wait evo_cu_wait_event(const evo_cudrv *cu, CUevent e, double timeout_s, CUresult *fault)
{
    const double end = evo_now() + timeout_s;
    for (unsigned spins = 0;; spins++) {
        const CUresult r = cu->cuEventQuery(e);
        if (r == CUDA_SUCCESS) return EVO_CU_WAIT_OK;
        if (r != CUDA_ERROR_NOT_READY) {
            *fault = r;
            return EVO_CU_WAIT_FAULT;
        }
        if (evo_now() > end) return EVO_CU_WAIT_TIMEOUT;
        if (spins > 1000) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}
