/* export_selftest.cuh — what the self-test of every exported file shares (evo export inlines it into each task's
 * harness, under -DEVO_SELFTEST): its arguments, the device it runs on, and how it ends. Not a kernel template: evo
 * never compiles it alone. Usage: selftest [--check-only] [--shape NAME] [--reps N]; exit 0 when every check passed,
 * 1 when one failed, 2 when it could not run (no GPU, bad arguments).
 */
namespace evo_selftest_main {

struct args {
    bool check_only = false;
    const char *only = nullptr; /* --shape NAME: time this shape only */
    int reps = 1;
};

/* false: bad arguments, the usage said on stderr (exit 2). */
static bool parse(int argc, char **argv, int default_reps, args &a)
{
    a.reps = default_reps;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check-only")) {
            a.check_only = true;
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            a.only = argv[++i];
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            a.reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--check-only] [--shape NAME] [--reps N]\n", argv[0]);
            return false;
        }
    }
    if (a.reps < 1) a.reps = 1;
    return true;
}

/* Device 0's properties, the driver's and the runtime's versions; false: no CUDA device (said on stderr; exit 2). */
static bool device(cudaDeviceProp &prop, int &driver, int &runtime)
{
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        fprintf(stderr, "selftest: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return false;
    }
    cudaGetDeviceProperties(&prop, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    return true;
}

/* The last lines and the exit status: checks_are names what passed ("correctness checks", "bit-exact checks"). */
static int finish(const args &a, int n_cases, int n_timed, int failed, const char *checks_are)
{
    if (a.only && n_timed == 0 && !a.check_only) {
        fprintf(stderr, "selftest: no timed shape is called '%s'\n", a.only);
        return 2;
    }
    if (failed) {
        printf("\nself-test FAILED: %d of %d checks\n", failed, n_cases + n_timed);
        return 1;
    }
    printf("\nself-test passed: %d %s, %d shapes timed\n", n_cases, checks_are, n_timed);
    return 0;
}

} // namespace evo_selftest_main
