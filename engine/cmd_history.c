/* cmd_history.c — `evo history`: not built yet (see the issue that owns it). */
#include "cli.h"

EVO_CMD(history)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "history: not built yet");
}
