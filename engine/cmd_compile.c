/* cmd_compile.c — `evo compile`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(compile)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "compile: not built yet");
}
