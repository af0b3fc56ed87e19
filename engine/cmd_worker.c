/* cmd_worker.c — `evo worker`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(worker)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "worker: not built yet");
}
