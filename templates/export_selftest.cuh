/* export_selftest.cuh — what the self-test of every exported file shares (evo export inlines it into each task's
 * harness, under -DEVO_SELFTEST): its arguments, the device it runs on, and how it ends. Not a kernel template: evo
 * never compiles it alone. Usage: selftest [--check-only] [--shape NAME] [--reps N]; exit 0 when every check passed,
 * 1 when one failed, 2 when it could not run (no GPU, bad arguments).
 */
/* Number formats and error checks both self-tests use (their CPU references are built on them). */
namespace evo_selftest_fmt {

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return bits_float(sign);
        uint32_t sh = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            sh++;
        }
        return bits_float(sign | ((113u - sh) << 23) | ((m & 0x3ffu) << 13));
    }
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/* Round to nearest even, once, with integers only. */
static uint16_t double_to_half(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    const uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    const uint64_t a = b & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return sign | 0x7e00u;
    const int be = (int)(a >> 52);
    if (be == 0) return sign;
    const int e = be - 1023;
    const uint64_t mant = (a & 0xfffffffffffffull) | (1ull << 52);
    if (e >= 16) return sign | 0x7c00u;
    if (e >= -14) {
        uint32_t q = ((uint32_t)(e + 15) << 10) | (uint32_t)((mant >> 42) & 0x3ffu);
        const uint64_t rem = mant & ((1ull << 42) - 1), half = 1ull << 41;
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    const int sh = 28 - e;
    if (sh > 53) return sign;
    uint64_t q = mant >> sh;
    const uint64_t rem = mant & ((1ull << sh) - 1), half = 1ull << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

/* OCP e4m3fn, round to nearest even, saturating at +-448; NaN -> 0x7f. */
static uint8_t e4m3_encode(float x)
{
    const uint32_t b = float_bits(x);
    const uint8_t sign = (uint8_t)((b >> 24) & 0x80u);
    const uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;
    const int be = (int)(a >> 23);
    if (be == 0) return sign;
    const int e = be - 127;
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t q;
    if (e > 8) {
        q = 0x7e;
    } else if (e >= -6) {
        q = ((uint32_t)(e + 7) << 3) | ((mant >> 20) & 7u);
        const uint32_t rem = mant & 0xfffffu, half = 0x80000u;
        if (rem > half || (rem == half && (q & 1u))) q++;
        if (q > 0x7e) q = 0x7e;
    } else {
        const int sh = 14 - e;
        if (sh > 24) return sign;
        q = mant >> sh;
        const uint32_t rem = mant & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
    }
    return (uint8_t)(sign | q);
}

static bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return true;
    fprintf(stderr, "selftest: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

/* The inputs' generator: splitmix64, uniform [0, 1), normal by Box-Muller. */
struct rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return (double)(next() >> 11) * 0x1p-53; } /* [0, 1) */
    double normal()
    {
        const double u1 = 1.0 - uniform(), u2 = uniform();
        return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    }
};

} // namespace evo_selftest_fmt

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

/* What every self-test does first: its arguments, then the device it runs on; false: exit 2. */
struct start_info {
    args a;
    cudaDeviceProp prop;
    int driver = 0, runtime = 0;
};
static bool start(int argc, char **argv, int default_reps, start_info &s)
{
    return parse(argc, argv, default_reps, s.a) && device(s.prop, s.driver, s.runtime);
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
