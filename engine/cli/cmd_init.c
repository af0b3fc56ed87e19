/* cmd_init.c — `evo init [PATH]`: writes the default configuration built into evo (configs/default.yaml of the
 * source it was built from) to PATH, default configs/default.yaml (where `evo run` looks), for editing. It never
 * replaces a file: an existing PATH, whatever it is, is refused.
 */
#include "cli.h"
#include "config.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* `evo init`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_init[] = {
    {0},
};

EVO_CMD(init)
{
    const evo_cmd *self = evo_cli_find("init");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_init, longopts, EVO_ARRAY_LEN(longopts));
    optind = 0;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, "", longopts, NULL)) != -1;)
        return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
    if (argc - optind > 1) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind + 1]);
    const char *path = optind < argc ? argv[optind] : EVO_DEFAULT_CONFIG_PATH;
    if (!*path) return evo_cli_usage_error(self, err, "PATH is empty");
    size_t len;
    const char *text = evo_config_builtin(&len);
    if (evo_path_is_stdio(path)) { /* evo init - : the configuration on standard output */
        fwrite(text, 1, len, stdout);
        fflush(stdout);
        return ferror(stdout) ? evo_fail(err, EVO_E_IO, "init -: standard output: %s", strerror(errno)) : EVO_OK;
    }
    struct stat sb;
    if (lstat(path, &sb) == 0)
        return evo_fail(err, EVO_E_USAGE, "init: %s exists; evo init does not replace it", evo_show(path).s);
    evo_status s = EVO_OK;
    /* The default path's folder is made; a path the user gives needs its folder to exist, like any output. */
    if (optind == argc && stat("configs", &sb) != 0) s = evo_mkdir_p("configs", err);
    if (s == EVO_OK) s = evo_path_check_output("init", path, false, err);
    if (s == EVO_OK) s = evo_write_file_new(path, text, len, err);
    if (s == EVO_OK)
        printf("wrote %s: the default search (%zu bytes); edit it, then evo run%s%s\n", evo_show(path).s, len,
               optind == argc ? "" : " --config ", optind == argc ? "" : evo_show(path).s);
    return s;
}
