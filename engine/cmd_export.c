/* cmd_export.c — `evo export`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(export)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "export: not built yet");
}
