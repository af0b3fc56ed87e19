/* fuzz_config.c — libFuzzer harness: evo_config_parse on arbitrary bytes (YAML, schema checks, the space with its
 * constraints, baseline and seed genomes). A parse either succeeds or fails with a message that names a place;
 * anything else (a crash, a sanitizer report, an empty message) is a finding.
 * Build and run: tools/fuzz.sh [SECONDS] config   (CMake -DEVO_FUZZ=ON with clang) */
#include "config.h"
#include "space.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    evo_config *c = NULL;
    evo_err err = {0};
    evo_status s = evo_config_parse("fuzz.yaml", (const char *)data, size, &c, &err);
    if (s == EVO_OK) {
        /* What every command does next with a loaded config: the baseline reads back, the shape set has a key. */
        char text[EVO_GENOME_TEXT_MAX], key[65];
        evo_genome g;
        evo_genome_format(c->space, &c->baseline, text, sizeof text);
        if (evo_genome_parse(c->space, text, &g, NULL) != EVO_OK || !evo_genome_equal(c->space, &g, &c->baseline))
            abort();
        evo_config_shape_set_key(c, key);
        evo_config_free(c);
    } else if (s != EVO_E_CONFIG || strncmp(err.msg, "fuzz.yaml:", 10) != 0 || !memchr(err.msg, '\0', sizeof err.msg)) {
        fprintf(stderr, "unexpected failure %d: %s\n", (int)s, err.msg);
        abort();
    }
    return 0;
}
