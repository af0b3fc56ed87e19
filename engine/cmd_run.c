/* cmd_run.c — `evo run`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(run)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "run: not built yet");
}
