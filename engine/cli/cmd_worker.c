/* cmd_worker.c — `evo worker --gpu N`: the hidden subcommand the parent starts once per GPU (see worker.h).
 * Requests arrive on stdin and replies leave on a private copy of stdout; the real stdout is pointed at stderr
 * so that nothing printed by accident (a library, a debug line) can corrupt the protocol.
 */
#include "cli.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `evo worker`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_worker[] = {
    {"gpu", 'g', required_argument, false, "N", "GPU ordinal to serve"},
    {"config", 'c', required_argument, true, "F", "search configuration (YAML)"},
    {"log", 'l', required_argument, false, "FILE", "append stderr to FILE"},
    {"fake", 'f', required_argument, false, "MODE",
     "a test double that needs no GPU: ok, die, exit:N, stall, garbage, slow:SECONDS,\n"
     "error, exit-after (what every eval request does; a request's fault_injection\n"
     "overrides it)"},
    {"sanitize", 's', no_argument, false, NULL, NULL}, /* not listed in the usage */
    {0},
};

EVO_CMD(worker)
{
    const evo_cmd *self = evo_cli_find("worker");
    struct option opts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_worker, opts, EVO_ARRAY_LEN(opts));
    int gpu = -1;
    const char *config = NULL, *log = NULL, *fake = NULL;
    bool sanitize = false;
    optind = 0; /* glibc: full re-initialisation, in case getopt ran before in this process */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":g:c:l:f:", opts, NULL)) != -1) {
        switch (c) {
            case 'g': {
                char *end;
                errno = 0;
                long v = strtol(optarg, &end, 10);
                if (end == optarg || *end || errno || v < 0 || v > 65535)
                    return evo_cli_usage_error(self, err, "--gpu: '%s' is not a GPU ordinal", optarg);
                gpu = (int)v;
                break;
            }
            case 'c': config = optarg; break;
            case 'l': log = optarg; break;
            case 'f': fake = optarg; break;
            case 's': sanitize = true; break;
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (gpu < 0) return evo_cli_usage_error(self, err, "--gpu N is required");
    if (fake) {
        evo_status s = evo_worker_fake_check_mode(fake, err);
        if (s != EVO_OK) return evo_failv_prefix(err, s, "worker: --fake");
    }

    if (log) {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return evo_fail(err, EVO_E_IO, "worker: --log %s: %s", log, strerror(errno));
        if (fd != STDERR_FILENO) {
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
    }
    int out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (out_fd < 0) return evo_fail(err, EVO_E_IO, "worker: duplicating stdout: %s", strerror(errno));
    dup2(STDERR_FILENO, STDOUT_FILENO);
    /* A parent that goes away must show up as a write error, not kill us before we log it. */
    signal(SIGPIPE, SIG_IGN);

    evo_status s = fake ? evo_worker_fake_serve(fake, gpu, config, STDIN_FILENO, out_fd, err)
                        : evo_gpu_serve(gpu, config, sanitize, STDIN_FILENO, out_fd, err);
    close(out_fd);
    return s;
}
