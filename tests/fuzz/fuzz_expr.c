/* fuzz_expr.c — libFuzzer harness: the constraint language (expr.h) on arbitrary text, with three variables and a
 * constant; what parses is evaluated on a few assignments (division by zero must be reported, never trap). A
 * failed parse must give EVO_E_CONFIG, a message, and a column inside the text (or just past it).
 * Build and run: tools/fuzz.sh [SECONDS] expr   (CMake -DEVO_FUZZ=ON with clang) */
#include "expr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static evo_sym_kind resolve(void *ctx, const char *name, int64_t *value)
{
    (void)ctx;
    static const char *const vars[] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, vars[i])) {
            *value = i;
            return EVO_SYM_VAR;
        }
    if (!strcmp(name, "mma")) {
        *value = 1;
        return EVO_SYM_CONST;
    }
    if (!strcmp(name, "twice")) return EVO_SYM_AMBIGUOUS;
    return EVO_SYM_UNKNOWN;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    evo_expr *e = NULL;
    int column = -1;
    evo_err err = {0};
    evo_status s = evo_expr_parse(text, resolve, NULL, &e, &column, &err);
    if (s == EVO_OK) {
        static const int assignments[][3] = {{0, 0, 0}, {1, -1, 7}, {2147483647, -2147483647 - 1, -1}, {64, 4, 2}};
        if (evo_expr_max_var(e) > 2) abort();
        for (size_t i = 0; i < sizeof assignments / sizeof assignments[0]; i++) {
            int64_t v;
            (void)evo_expr_eval(e, assignments[i], &v);
            (void)evo_expr_holds(e, assignments[i]);
        }
        evo_expr_free(e);
    } else if (s != EVO_E_CONFIG || err.msg[0] == '\0' || column < 1 || (size_t)column > strlen(text) + 1) {
        fprintf(stderr, "unexpected failure %d at column %d: '%s'\n", (int)s, column, err.msg);
        abort();
    }
    free(text);
    return 0;
}
