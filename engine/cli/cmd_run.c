/* cmd_run.c — `evo run`: options, the driver check, then the evolution loop (evolve.h). */
#include "cli.h"
#include "cudrv.h"
#include "evaluate.h"
#include "evolve.h"
#include "islands.h"
#include "sanitize.h"
#include "strategy.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* `--islands`: this process is one rank of an MPI job (islands.h). Its store is <db>.rank<R>, its GPUs its share of
 * the host's unless --gpus names them; at the end every island's store is merged into <db> on rank 0. */
static evo_status run_islands(evo_run_opts *o, int every, int migrants, evo_err *err)
{
    if (!o->resume_run) {
        if (every < 0) every = 5;
        if (migrants < 0) migrants = 2;
    }
    evo_island *is = NULL;
    evo_status s = evo_island_open(every, migrants, &is, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "run --islands");
    const int rank = evo_island_rank(is);
    const char *db = o->db_path ? o->db_path : EVO_DEFAULT_DB;
    char *island_db = evo_island_store_path(db, rank);
    o->db_path = island_db;
    o->island = is;
    if (rank > 0) o->quiet = true;
    /* ranks that share a host share its cores for compiles (two ranks on a host of 32 cores, each compiling on all
     * of them: 34.6 s of compiling in a 3-generation job; with 16 each: 11.0 s; docs/results.md). A rank the
     * launcher bound to some CPUs compiles on those. */
    const int local = evo_island_local_size(is);
    int online = 1;
    const int usable = evo_usable_cpus(&online);
    if (o->jobs <= 0 && usable < online)
        o->jobs = usable;
    else if (o->jobs <= 0 && local > 1)
        o->jobs = online > local ? online / local : 1;
    if (usable == 1 && online > 1 && rank == 0)
        fprintf(stderr,
                "run --islands: rank 0 may run on 1 of its host's %d CPUs (the launcher bound it: Open MPI binds "
                "each rank to one core when it starts 2 or fewer); its compiles and its GPU workers' host work "
                "share that CPU. Start the job with `mpirun --bind-to none`, or give each rank its CPUs "
                "(`--map-by ppr:N:node:PE=K`, Slurm `--cpus-per-task`)\n",
                online);
    int gpus[64];
    if (!o->gpus && !o->replay_db) {
        o->n_gpus = evo_island_gpu_share(evo_island_local_rank(is), local, evo_gpu_count(), gpus,
                                         (int)(sizeof gpus / sizeof gpus[0]));
        o->gpus = gpus;
    }
    const evo_cudrv *cu;
    evo_err why = {0};
    if (!o->replay_db && !getenv("EVO_FAKE_WORKER") && evo_cudrv_load(&cu, &why) != EVO_OK) {
        /* this island cannot start: it tells the others, and every rank stops before any work */
        s = evo_fail(err, EVO_E_NODRIVER, "run: %s. evo run needs an NVIDIA GPU and its driver; %s", why.msg,
                     EVO_NO_DRIVER_HINT);
        int64_t job = 0;
        bool all_done = false;
        evo_island_ready(is, s, err ? err->msg : why.msg, "", 0, false, &job, &all_done, NULL);
    } else {
        s = evo_run(o, err);
    }
    /* what went wrong is said before the hand-over, by rank 0 (the job's message) and by an island that failed
     * itself: mpirun ends every rank as soon as one exits non-zero, and no rank can leave the hand-over before every
     * store has reached rank 0, so both messages are out by then */
    if (s != EVO_OK && err && (rank == 0 || !evo_island_peer_stop(is))) evo_cli_say_error("run", s, err);
    if (evo_island_started(is) && !evo_island_broken(is)) {
        evo_err gerr = {0};
        const evo_status gs = evo_island_gather(is, island_db, db, o->out ? o->out : stdout, o->quiet, &gerr);
        if (gs != EVO_OK && (s == EVO_OK || evo_island_peer_stop(is))) {
            s = evo_fail(err, gs, "%s", gerr.msg);
            err->shown = false;
        } else if (gs == EVO_OK && rank == 0 && !o->quiet) {
            printf("see: evo elite --show --db %s (every island; each GPU model ranked on its own), evo history --db "
                   "%s.rank<R>\n",
                   db, db);
        }
    }
    /* a stop the job decided because of another island is reported by rank 0 (and by the island at fault) */
    if (s != EVO_OK && rank > 0 && evo_island_peer_stop(is)) s = EVO_OK;
    evo_island_close(is);
    free(island_db);
    return s;
}

/* `evo run`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_run[] = {
    {"config", 'c', required_argument, true, "F", "search configuration (YAML)"},
    {"generations", 'g', required_argument, true, "N", "generations to run (config: evolution.generations)"},
    {"population", 'p', required_argument, true, "N", "genomes per generation (config: evolution.population)"},
    {"seed", 's', required_argument, true, "N", "seed of the search, 0 to 2^63-1; the same seed gives the same search"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {"resume", 'R', required_argument, false, "RUN",
     "continue run RUN after an interruption; nothing finished is repeated"},
    {"gpus", 'G', required_argument, false, "LIST", "GPU ordinals to use, e.g. 0,1, each once (default: all)"},
    {"jobs", 'j', required_argument, true, "N",
     "parallel compiles (default: all cores; with --islands, the host's cores shared among its ranks)"},
    {"time-budget", 'T', required_argument, false, "S", "stop after S seconds of wall time"},
    {"strategy", 'S', required_argument, false, "NAME",
     "ga (default), random, or seeds (the baseline and seeds, then hill climbing)"},
    {"no-insights", 'N', no_argument, false, NULL, "mutate without per-knob statistics from the store"},
    {"seed-elites", 'E', no_argument, false, NULL,
     "generation 0 also measures the store's per-shape elites of earlier runs (the\n"
     "fastest of each class on every stored shape, then the next, evolution.elites deep)\n"
     "that this space holds: a search of new shapes starts from what won the known ones\n"
     "(strategies ga and seeds; random measures no given genome). Give it again with --resume"},
    {"replay", 'P', required_argument, false, "DB", "evaluate by looking up results recorded in DB (no GPU needed)"},
    {"sanitize", 'Z', optional_argument, false, "[=TOOLS]",
     "after the search, run the top elites under compute-sanitizer (TOOLS: a comma list\n"
     "of memcheck, racecheck, initcheck, synccheck; default memcheck,racecheck); an\n"
     "elite with errors is demoted (kept, but no longer an elite) and the next is checked"},
    {"sanitizer", 'Y', required_argument, false, "PATH",
     "the compute-sanitizer to use (default: on PATH, then $CUDA_HOME/bin)"},
    {"islands", 'I', no_argument, false, NULL,
     "one island of the search per MPI rank (under mpirun or srun), each on its share of\n"
     "its host's GPUs (or --gpus) with its own store F.rank<R>; every K generations each\n"
     "sends its best M genomes to the next rank, which measures them again; rank 0 prints\n"
     "the job's progress and at the end merges every island's store into F. Resume: the\n"
     "same command with --resume RUN. Needs evo built with MPI"},
    {"migrate-every", 'K', required_argument, false, "K", "generations between migrations (default 5)"},
    {"migrants", 'M', required_argument, false, "M", "genomes each island sends per migration, 0 to 256 (default 2)"},
    {"quiet", 'q', no_argument, false, NULL, NULL}, /* not listed in the usage */
    {0},
};

EVO_CMD(run)
{
    const evo_cmd *self = evo_cli_find("run");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_run, longopts, EVO_ARRAY_LEN(longopts));
    bool islands = false;
    int every = -1, migrants = -1;
    evo_run_opts o = {.time_budget_s = -1, .insights = -1, .out = stdout};
    int gpus[64], n_gpus = 0;
    long long v;
    optind = 0;
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
                        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                                 list[i]->name);
                    return evo_cli_usage_error(self, err, "--strategy takes one of %s, not '%s'", known, optarg);
                }
                o.strategy = optarg;
                break;
            case 'P': o.replay_db = optarg; break;
            case 'Z': o.sanitize = optarg ? optarg : EVO_SANITIZE_DEFAULT_TOOLS; break;
            case 'Y': o.sanitizer = optarg; break;
            case 'N': o.insights = 0; break;
            case 'E': o.seed_elites = true; break;
            case 'q': o.quiet = true; break;
            case 'I': islands = true; break;
            case 'K':
                if (parse_long(optarg, 1, 1000000, &v))
                    return evo_cli_usage_error(self, err, "--migrate-every takes 1 to 1000000 generations, not '%s'",
                                               optarg);
                every = (int)v;
                break;
            case 'M':
                if (parse_long(optarg, 0, EVO_ISLAND_MAX_MIGRANTS, &v))
                    return evo_cli_usage_error(self, err, "--migrants takes 0 to %d, not '%s'", EVO_ISLAND_MAX_MIGRANTS,
                                               optarg);
                migrants = (int)v;
                break;
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
                    return evo_cli_usage_error(self, err, "--resume takes a run id (see evo history), not '%s'",
                                               optarg);
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
        evo_err why = {0};
        if (evo_sanitize_parse_tools(o.sanitize, tools, &n, &why) != EVO_OK)
            return evo_cli_usage_error(self, err, "%s", why.msg);
        if (o.replay_db)
            return evo_cli_usage_error(self, err, "--sanitize runs kernels on a GPU; a --replay run has none");
    }
    if (o.sanitizer && !o.sanitize) return evo_cli_usage_error(self, err, "--sanitizer goes with --sanitize");
    if (!islands && (every >= 0 || migrants >= 0))
        return evo_cli_usage_error(self, err, "--migrate-every and --migrants go with --islands");
    /* an island job is resumed by the same command with --resume: what it gives again is checked against the run */
    if (!islands && o.resume_run && (o.config_path || o.population || o.seed_set || o.strategy))
        return evo_cli_usage_error(self, err,
                                   "--resume continues a run with its own config, population, seed and strategy");
    if (islands && o.seed_elites)
        return evo_cli_usage_error(self, err,
                                   "--seed-elites reads the run's own store; an island's is its own new file: seed "
                                   "an --islands job through the config's seeds");
    if (islands) return run_islands(&o, every, migrants, err);
    if (!o.replay_db && !getenv("EVO_FAKE_WORKER")) {
        /* Only a check that the library is there; CUDA itself is initialized by the workers alone. */
        const evo_cudrv *cu;
        evo_err why = {0};
        if (evo_cudrv_load(&cu, &why) != EVO_OK)
            return evo_fail(err, EVO_E_NODRIVER, "run: %s. evo run needs an NVIDIA GPU and its driver; %s", why.msg,
                            EVO_NO_DRIVER_HINT);
    }
    return evo_run(&o, err);
}
