/* cmd_profile.c — placeholder while the command is written. */
#include "cli.h"

EVO_CMD(profile)
{
    (void)argc;
    (void)argv;
    return evo_fail(err, EVO_E_INTERNAL, "profile: not built yet");
}
