/* eval_gpu.c — STAND-IN until the GPU side of the worker lands: the real file (same name) replaces this one and
 * implements evo_gpu_serve (worker.h) with the resource, correctness and timing gates. Until then `evo worker`
 * without --fake answers every request with an error, so a run fails with a clear message instead of a link error.
 */
#include "protocol.h"
#include "worker.h"

#include <stdio.h>

static evo_status not_built(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    (void)ctx;
    (void)line;
    (void)reply;
    (void)exit_after;
    return evo_fail(err, EVO_E_INTERNAL, "this evo was built without the GPU evaluation (engine/eval_gpu.c)");
}

evo_status evo_gpu_serve(int gpu, const char *config_path, int in_fd, int out_fd, evo_err *err)
{
    (void)gpu;
    (void)config_path;
    static const evo_worker_handler handlers[] = {{"hello", not_built}, {"eval", not_built}};
    return evo_worker_serve(in_fd, out_fd, handlers, 2, NULL, err);
}
