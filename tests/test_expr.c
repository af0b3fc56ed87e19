/* test_expr.c — constraint expressions: every operator, precedence, laziness, sets, division by zero, and parse
 * errors with their column and token. Run: ctest -R test_expr (or build/tests/test_expr). */
#include "check.h"
#include "expr.h"

#include <stdint.h>
#include <string.h>

/* Variables A=0 (value 12), B=1 (value 5), Z=2 (value 0), N=3 (value -7); constants fma=0, mma=1; "dup" ambiguous. */
static const int vars[] = {12, 5, 0, -7};

static evo_sym_kind resolve(void *ctx, const char *name, int64_t *value)
{
    (void)ctx;
    static const char *const names[] = {"A", "B", "Z", "N"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) {
            *value = i;
            return EVO_SYM_VAR;
        }
    if (strcmp(name, "fma") == 0) return *value = 0, EVO_SYM_CONST;
    if (strcmp(name, "mma") == 0) return *value = 1, EVO_SYM_CONST;
    if (strcmp(name, "dup") == 0) return EVO_SYM_AMBIGUOUS;
    return EVO_SYM_UNKNOWN;
}

/* Evaluates text; returns the value, or INT64_MIN+1 on a parse failure and INT64_MIN+2 on division by zero. */
static int64_t ev(const char *text)
{
    evo_expr *e;
    evo_err err = {0};
    int col = 0;
    if (evo_expr_parse(text, resolve, NULL, &e, &col, &err) != EVO_OK) {
        fprintf(stderr, "parse of '%s' failed at column %d: %s\n", text, col, err.msg);
        return INT64_MIN + 1;
    }
    int64_t v;
    bool ok = evo_expr_eval(e, vars, &v);
    evo_expr_free(e);
    return ok ? v : INT64_MIN + 2;
}

#define DIV0 (INT64_MIN + 2)

/* Expects a parse error at column col whose message contains msg. */
static void check_error(const char *text, int col, const char *msg)
{
    evo_expr *e = NULL;
    evo_err err = {0};
    int got = -1;
    evo_status s = evo_expr_parse(text, resolve, NULL, &e, &got, &err);
    CHECK_EQ_INT(s, EVO_E_CONFIG);
    CHECK(e == NULL);
    if (got != col) fprintf(stderr, "  for '%s'\n", text);
    CHECK_EQ_INT(got, col);
    CHECK_CONTAINS(err.msg, msg);
}

static void test_operators(void)
{
    CHECK_EQ_INT(ev("42"), 42);
    CHECK_EQ_INT(ev("0x1F"), 31);
    CHECK_EQ_INT(ev("A"), 12);
    CHECK_EQ_INT(ev("N"), -7);
    CHECK_EQ_INT(ev("-A"), -12);
    CHECK_EQ_INT(ev("+A"), 12);
    CHECK_EQ_INT(ev("- -A"), 12);
    CHECK_EQ_INT(ev("!A"), 0);
    CHECK_EQ_INT(ev("!Z"), 1);
    CHECK_EQ_INT(ev("!!A"), 1);
    CHECK_EQ_INT(ev("A * B"), 60);
    CHECK_EQ_INT(ev("A / B"), 2);
    CHECK_EQ_INT(ev("A % B"), 2);
    CHECK_EQ_INT(ev("N / 2"), -3); /* truncation toward zero, as in C */
    CHECK_EQ_INT(ev("N % 2"), -1);
    CHECK_EQ_INT(ev("A + B"), 17);
    CHECK_EQ_INT(ev("A - B"), 7);
    CHECK_EQ_INT(ev("B < A"), 1);
    CHECK_EQ_INT(ev("A < B"), 0);
    CHECK_EQ_INT(ev("A <= 12"), 1);
    CHECK_EQ_INT(ev("A <= 11"), 0);
    CHECK_EQ_INT(ev("A > B"), 1);
    CHECK_EQ_INT(ev("A >= 13"), 0);
    CHECK_EQ_INT(ev("A >= 12"), 1);
    CHECK_EQ_INT(ev("A == 12"), 1);
    CHECK_EQ_INT(ev("A == 13"), 0);
    CHECK_EQ_INT(ev("A != 13"), 1);
    CHECK_EQ_INT(ev("A != 12"), 0);
    CHECK_EQ_INT(ev("A && B"), 1);
    CHECK_EQ_INT(ev("A && Z"), 0);
    CHECK_EQ_INT(ev("Z || B"), 1);
    CHECK_EQ_INT(ev("Z || Z"), 0);
    CHECK_EQ_INT(ev("7 && 9"), 1); /* logic operators give 0 or 1, not an operand */
    CHECK_EQ_INT(ev("0 || 9"), 1);
    CHECK_EQ_INT(ev("A ? B : 3"), 5);
    CHECK_EQ_INT(ev("Z ? B : 3"), 3);
    CHECK_EQ_INT(ev("mma"), 1);
    CHECK_EQ_INT(ev("fma + mma + mma"), 2);
    CHECK_EQ_INT(ev("  A\t*\nB  "), 60);
}

static void test_precedence(void)
{
    CHECK_EQ_INT(ev("2 + 3 * 4"), 14);
    CHECK_EQ_INT(ev("(2 + 3) * 4"), 20);
    CHECK_EQ_INT(ev("20 - 6 - 4"), 10); /* left associative */
    CHECK_EQ_INT(ev("64 / 4 / 2"), 8);
    CHECK_EQ_INT(ev("100 % 7 * 2"), 4);
    CHECK_EQ_INT(ev("-2 * 3"), -6);
    CHECK_EQ_INT(ev("-(2 + 3)"), -5);
    CHECK_EQ_INT(ev("!0 + 1"), 2); /* unary binds tighter than + */
    CHECK_EQ_INT(ev("1 + 2 < 4"), 1);
    CHECK_EQ_INT(ev("1 < 2 == 1"), 1); /* relational before equality */
    CHECK_EQ_INT(ev("1 == 1 && 0 == 1"), 0);
    CHECK_EQ_INT(ev("1 || 0 && 0"), 1); /* && before || */
    CHECK_EQ_INT(ev("(1 || 0) && 0"), 0);
    CHECK_EQ_INT(ev("0 ? 1 : 0 ? 2 : 3"), 3); /* ?: is right associative */
    CHECK_EQ_INT(ev("1 ? 0 ? 4 : 5 : 6"), 5);
    CHECK_EQ_INT(ev("Z || 1 ? 10 : 20"), 10); /* ?: is loosest */
    CHECK_EQ_INT(ev("A % B == 0 && (A / B == 16 || A / B == 2)"), 0);
    CHECK_EQ_INT(ev("A % 4 == 0 && (A / 4 == 16 || A / 4 == 3)"), 1);
}

static void test_sets(void)
{
    CHECK_EQ_INT(ev("A in [4, 12, 32]"), 1);
    CHECK_EQ_INT(ev("A in [4, 32]"), 0);
    CHECK_EQ_INT(ev("N in [-7]"), 1);
    CHECK_EQ_INT(ev("A + 20 in [32]"), 1); /* arithmetic binds tighter than in */
    CHECK_EQ_INT(ev("!(A in [12]) || B in [5]"), 1);
    CHECK_EQ_INT(ev("B - 4 in [fma, mma]"), 1); /* enum value names are constants */
    CHECK_EQ_INT(ev("A in [1] == 0"), 1);
}

static void test_laziness_and_div_zero(void)
{
    CHECK_EQ_INT(ev("A / Z"), DIV0);
    CHECK_EQ_INT(ev("A % Z"), DIV0);
    CHECK_EQ_INT(ev("1 || A / Z"), 1); /* the right side is never evaluated */
    CHECK_EQ_INT(ev("0 && A % Z"), 0);
    CHECK_EQ_INT(ev("Z != 0 && A % Z == 0"), 0);
    CHECK_EQ_INT(ev("Z ? A / Z : 99"), 99);
    CHECK_EQ_INT(ev("1 ? 99 : A / Z"), 99);
    CHECK_EQ_INT(ev("1 && A / Z"), DIV0);
    CHECK_EQ_INT(ev("(A / (B - 5)) == 0 || 1"), DIV0);
    CHECK_EQ_INT(ev("-9223372036854775807 - 1 == -9223372036854775807 - 1"), 1);
    CHECK_EQ_INT(ev("(-9223372036854775807 - 1) / -1 < 0"), 1); /* wraps instead of trapping */
    CHECK_EQ_INT(ev("(-9223372036854775807 - 1) % -1"), 0);

    /* holds(): false on a division by zero, whatever the rest */
    evo_expr *e;
    CHECK_EQ_INT(evo_expr_parse("A / Z == 0", resolve, NULL, &e, NULL, NULL), EVO_OK);
    CHECK(!evo_expr_holds(e, vars));
    evo_expr_free(e);
    CHECK_EQ_INT(evo_expr_parse("A / B == 2", resolve, NULL, &e, NULL, NULL), EVO_OK);
    CHECK(evo_expr_holds(e, vars));
    evo_expr_free(e);
}

static void test_max_var(void)
{
    evo_expr *e;
    CHECK_EQ_INT(evo_expr_parse("1 + 2", resolve, NULL, &e, NULL, NULL), EVO_OK);
    CHECK_EQ_INT(evo_expr_max_var(e), -1);
    evo_expr_free(e);
    CHECK_EQ_INT(evo_expr_parse("Z > A || B", resolve, NULL, &e, NULL, NULL), EVO_OK);
    CHECK_EQ_INT(evo_expr_max_var(e), 2);
    evo_expr_free(e);
}

static void test_errors(void)
{
    check_error("", 1, "empty expression");
    check_error("   ", 4, "empty expression");
    check_error("TILE_Q > 1", 1, "unknown knob 'TILE_Q'");
    check_error("A + TILE_Q", 5, "unknown knob 'TILE_Q'");
    check_error("A +", 4, "found end of expression");
    check_error("(A + B", 7, "expected ')' to close the '(' at column 1");
    check_error("(A + B ]", 8, "found ']'");
    check_error("A B", 3, "found 'B'");
    check_error("A = 1", 3, "unexpected '=' (comparison is '==')");
    check_error("A & B", 3, "'&&'");
    check_error("A | B", 3, "'||'");
    check_error("A $ B", 3, "unexpected character '$'");
    check_error("A·B", 2, "unexpected character '·'");
    check_error("x·y + Q", 1, "unknown knob 'x'");
    check_error("A == B·", 7, "unexpected character '·'"); /* columns count characters, not bytes */
    check_error("12ab", 1, "bad number '12ab'");
    check_error("007", 1, "bad number '007'");
    check_error("99999999999999999999", 1, "too large");
    check_error("1 < A < 20", 7, "comparisons do not chain");
    check_error("1 == A == 1", 8, "comparisons do not chain");
    check_error("A ? 1", 6, "expected ':' of the '?' at column 3");
    check_error("A in 4", 6, "expected '[' after 'in'");
    check_error("A in []", 6, "empty set");
    check_error("A in [1, B]", 10, "set elements must be constants");
    check_error("A in [1 2]", 9, "expected ',' or ']'");
    check_error("dup == 1", 1, "more than one enumerated knob");
    check_error("*A", 1, "expected a number, a knob or '('");
    check_error(")", 1, "found ')'");

    char deep[200];
    memset(deep, '(', 70);
    strcpy(deep + 70, "1");
    check_error(deep, 65, "nested deeper than 64");
    memset(deep, '-', 100);
    strcpy(deep + 100, "1");
    check_error(deep, 65, "nested deeper than 64");

    /* Nesting within the limit parses and evaluates. */
    char ok[200];
    memset(ok, '(', 60);
    strcpy(ok + 60, "A");
    memset(ok + 61, ')', 60);
    ok[121] = '\0';
    CHECK_EQ_INT(ev(ok), 12);
}

int main(void)
{
    test_operators();
    test_precedence();
    test_sets();
    test_laziness_and_div_zero();
    test_max_var();
    test_errors();
    return check_result();
}
