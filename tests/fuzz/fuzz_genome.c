/* fuzz_genome.c — libFuzzer harness: evo_genome_parse of arbitrary text in a fixed space (the default config's
 * knobs, an integer knob with negative values, an enumerated knob). What parses must format back to text that
 * parses to the same genome; what does not must fail with EVO_E_CONFIG and a message.
 * Build and run: tools/fuzz.sh [SECONDS] genome   (CMake -DEVO_FUZZ=ON with clang) */
#include "space.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static evo_space *space;

static void build_space(void)
{
    static const struct {
        const char *name;
        int values[8];
        int n;
    } knobs[] = {
        {"TILE_M", {16, 32, 64, 128, 256}, 5},
        {"TILE_N", {32, 64, 128, 256}, 4},
        {"WARPS_M", {1, 2, 4, 8}, 4},
        {"WARPS_N", {1, 2, 4}, 3},
        {"STAGES", {1, 2, 3}, 3},
        {"SWIZZLE", {0, 1}, 2},
        {"PV_MMA", {0, 1}, 2},
        {"QK_8BIT", {0, 1}, 2},
        {"F16_SMEM", {0, 1, 2}, 3},
        {"MIN_BLOCKS", {1, 2, 3, 4}, 4},
        {"FAST_EXP", {0, 1}, 2},
        {"OFFSET", {-2147483647 - 1, -7, 0, 2147483647}, 4},
    };
    static const char *const modes[] = {"fma", "mma", "wgmma"};
    if (evo_space_new(&space) != EVO_OK) abort();
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (evo_space_add_int_knob(space, knobs[i].name, knobs[i].values, knobs[i].n, NULL) != EVO_OK) abort();
    if (evo_space_add_enum_knob(space, "MODE", modes, 3, NULL) != EVO_OK) abort();
    if (evo_space_add_constraint(space, "TILE_M % WARPS_M == 0 && MODE != wgmma || STAGES > 1", NULL) != EVO_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!space) build_space();
    char *text = malloc(size + 1); /* the parser takes a C string */
    memcpy(text, data, size);
    text[size] = '\0';
    evo_genome g, again;
    evo_err err = {0};
    evo_status s = evo_genome_parse(space, text, &g, &err);
    if (s == EVO_OK) {
        char canon[EVO_GENOME_TEXT_MAX];
        int n = evo_genome_format(space, &g, canon, sizeof canon);
        if (n <= 0 || (size_t)n >= sizeof canon) abort();
        if (evo_genome_parse(space, canon, &again, NULL) != EVO_OK || !evo_genome_equal(space, &g, &again)) abort();
        char hex[65];
        evo_genome_hash(space, &g, hex);
        (void)evo_space_valid(space, &g, NULL);
    } else if (s != EVO_E_CONFIG || err.msg[0] == '\0') {
        fprintf(stderr, "unexpected failure %d: '%s'\n", (int)s, err.msg);
        abort();
    }
    free(text);
    return 0;
}
