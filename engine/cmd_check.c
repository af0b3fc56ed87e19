/* cmd_check.c — `evo check`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(check)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "check: not built yet");
}
