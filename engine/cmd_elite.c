/* cmd_elite.c — `evo elite`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(elite)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "elite: not built yet");
}
