/* cmd_space.c — `evo space`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(space)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "space: not built yet");
}
