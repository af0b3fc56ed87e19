/* cmd_run.c — `evo run`: options, the driver check, then the evolution loop (evolve.h). */
#include "cli.h"
#include "cudrv.h"
#include "evolve.h"
#include "sanitize.h"
#include "strategy.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

EVO_CMD(run)
{
    const evo_cmd *self = evo_cli_find("run");
    static const struct option longopts[] = {
        {"config", required_argument, 0, 'c'},   {"generations", required_argument, 0, 'g'},
        {"population", required_argument, 0, 'p'}, {"seed", required_argument, 0, 's'},
        {"db", required_argument, 0, 'D'},       {"resume", required_argument, 0, 'R'},
        {"gpus", required_argument, 0, 'G'},     {"jobs", required_argument, 0, 'j'},
        {"time-budget", required_argument, 0, 'T'}, {"strategy", required_argument, 0, 'S'},
        {"no-insights", no_argument, 0, 'N'},    {"replay", required_argument, 0, 'P'},
        {"quiet", no_argument, 0, 'q'},          {"sanitize", optional_argument, 0, 'Z'},
        {"sanitizer", required_argument, 0, 'Y'}, {0, 0, 0, 0},
    };
    evo_run_opts o = {.time_budget_s = -1, .insights = -1, .out = stdout};
    int gpus[64], n_gpus = 0;
    long long v;
    optind = 1;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, ":c:g:p:s:j:q", longopts, NULL)) != -1;) {
        switch (ch) {
        case 'c': o.config_path = optarg; break;
        case 'D': o.db_path = optarg; break;
        case 'S':
            if (!evo_strategy_find(optarg)) {
                int n;
                const evo_strategy_ops *const *list = evo_strategy_list(&n);
                char known[256] = "";
                for (int i = 0; i < n; i++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", list[i]->name);
                return evo_cli_usage_error(self, err, "--strategy takes one of %s, not '%s'", known, optarg);
            }
            o.strategy = optarg;
            break;
        case 'P': o.replay_db = optarg; break;
        case 'Z': o.sanitize = optarg ? optarg : EVO_SANITIZE_DEFAULT_TOOLS; break;
        case 'Y': o.sanitizer = optarg; break;
        case 'N': o.insights = 0; break;
        case 'q': o.quiet = true; break;
        case 'g':
            if (parse_long(optarg, 1, 1000000, &v))
                return evo_cli_usage_error(self, err, "--generations takes 1 to 1000000, not '%s'", optarg);
            o.generations = (int)v;
            break;
        case 'p':
            if (parse_long(optarg, 2, 100000, &v))
                return evo_cli_usage_error(self, err, "--population takes 2 to 100000, not '%s'", optarg);
            o.population = (int)v;
            break;
        case 's':
            if (parse_long(optarg, 0, (long long)(~0ull >> 1), &v))
                return evo_cli_usage_error(self, err, "--seed takes 0 to %lld, not '%s'", (long long)(~0ull >> 1),
                                           optarg);
            o.seed = (uint64_t)v;
            o.seed_set = true;
            break;
        case 'R':
            if (parse_long(optarg, 1, (long long)(~0ull >> 1), &v))
                return evo_cli_usage_error(self, err, "--resume takes a run id (see evo history), not '%s'", optarg);
            o.resume_run = v;
            break;
        case 'j':
            if (parse_long(optarg, 1, 1024, &v))
                return evo_cli_usage_error(self, err, "--jobs takes 1 to 1024, not '%s'", optarg);
            o.jobs = (int)v;
            break;
        case 'T': {
            char *end;
            errno = 0;
            double t = strtod(optarg, &end);
            if (end == optarg || *end || errno || !(t > 0) || t > 1e9)
                return evo_cli_usage_error(self, err, "--time-budget takes seconds > 0, not '%s'", optarg);
            o.time_budget_s = t;
            break;
        }
        case 'G': {
            /* every entry an ordinal: no empty one (",0", "0,,1", "0,"), none twice, checked before anything opens */
            n_gpus = 0;
            for (const char *p = optarg;; p++) {
                const size_t len = strcspn(p, ",");
                char tok[32];
                snprintf(tok, sizeof tok, "%.*s", (int)(len < sizeof tok ? len : sizeof tok - 1), p);
                if (len == 0 || len >= sizeof tok || n_gpus == (int)(sizeof gpus / sizeof gpus[0]) ||
                    parse_long(tok, 0, 1023, &v))
                    return evo_cli_usage_error(self, err, "--gpus takes ordinals like 0,1,3, not '%s'%s", optarg,
                                               len == 0 ? " (an empty entry)" : "");
                for (int k = 0; k < n_gpus; k++)
                    if (gpus[k] == v)
                        return evo_cli_usage_error(self, err, "--gpus names GPU %lld twice in '%s'", v, optarg);
                gpus[n_gpus++] = (int)v;
                p += len;
                if (!*p) break;
            }
            o.gpus = gpus;
            o.n_gpus = n_gpus;
            break;
        }
        case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
        default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (o.sanitize) {
        const char *tools[EVO_SANITIZE_MAX_TOOLS];
        int n = 0;
        evo_err why = {{0}};
        if (evo_sanitize_parse_tools(o.sanitize, tools, &n, &why) != EVO_OK)
            return evo_cli_usage_error(self, err, "%s", why.msg);
        if (o.replay_db)
            return evo_cli_usage_error(self, err, "--sanitize runs kernels on a GPU; a --replay run has none");
    }
    if (o.sanitizer && !o.sanitize) return evo_cli_usage_error(self, err, "--sanitizer goes with --sanitize");
    if (o.resume_run && (o.config_path || o.population || o.seed_set || o.strategy))
        return evo_cli_usage_error(self, err,
                                   "--resume continues a run with its own config, population, seed and strategy");
    if (!o.replay_db && !getenv("EVO_FAKE_WORKER")) {
        /* Only a check that the library is there; CUDA itself is initialized by the workers alone. */
        const evo_cudrv *cu;
        evo_err why = {{0}};
        if (evo_cudrv_load(&cu, &why) != EVO_OK)
            return evo_fail(err, EVO_E_NODRIVER, "run: %s. evo run needs an NVIDIA GPU and its driver; %s", why.msg,
                            EVO_NO_DRIVER_HINT);
    }
    return evo_run(&o, err);
}
