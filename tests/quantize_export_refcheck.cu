/* quantize_export_refcheck.cu — the CPU reference inside the quantizer's export harness (its self-test) against the
 * task's reference (tasks/quantize_fp8/quantize_ref.c), bit for bit: head dims 32..256, fp16 and bf16, rotation off
 * and on, every input kind of the self-test (NaN and inf included). Built by tests/cli_quantize_export.sh with an
 * exported file included (-DEVO_QX_FILE) and quantize_ref.c linked; prints "N of M differ", exit 0 when N = 0.
 */
#define main evo_qselftest_main
#include EVO_QX_FILE
#undef main
extern "C" {
#include "quantize_ref.h"
}

int main()
{
    using namespace evo_qselftest;
    long bad = 0, total = 0;
    const int dims[] = {32, 64, 128, 256};
    for (int d : dims)
        for (int dt = 0; dt < 2; dt++)
            for (int rot = 0; rot < 2; rot++)
                for (int dist = 0; dist < N_DISTS; dist++) {
                    const int heads = 4, seq = 77;
                    const size_t he = (size_t)seq * d;
                    std::vector<uint16_t> x(heads * he);
                    make_input(x, he, dt, dist, 7 + (uint64_t)dist);
                    std::vector<uint8_t> a(x.size()), b(he);
                    std::vector<float> sa(heads);
                    evo_qref_quantize(x.data(), dt, rot, heads, seq, d, a.data(), sa.data());
                    for (int h = 0; h < heads; h++) {
                        float s = 0;
                        reference_head(&x[h * he], dt, rot, seq, d, b.data(), &s);
                        total++;
                        if (memcmp(&s, &sa[h], 4) != 0) {
                            bad++;
                            printf("scale differs: D=%d dtype %d rotate %d %s head %d: %a, want %a\n", d, dt, rot,
                                   dist_names[dist], h, s, sa[h]);
                        }
                        for (size_t i = 0; i < he; i++, total++) bad += b[i] != a[h * he + i];
                    }
                }
    printf("%ld of %ld differ\n", bad, total);
    return bad != 0;
}
