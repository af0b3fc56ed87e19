/* expr.h — integer expressions over named variables: the language of the search space's constraints.
 *
 * Grammar, loosest binding first (C precedence; comparisons of one level do not chain):
 *   cond ? a : b     ||     &&     == !=     < <= > >= and `x in [c1, c2, ...]`     + -     * / %     unary - + !
 * Operands: decimal or 0x integers, identifiers, parentheses. Values are 64-bit signed; / and % truncate toward
 * zero like C; comparisons, ! and the logic operators give 0 or 1; && || ?: evaluate lazily. Set elements must be
 * constants (integers or identifiers that resolve to constants). What an identifier means is decided once, at parse
 * time, by the caller's resolver: a variable (an index into the array passed to evo_expr_eval) or a constant.
 * Division or modulo by zero does not crash: evo_expr_eval reports it and a constraint holding it is false.
 *
 * Contract: evo_expr_parse compiles the text once into a small stack program; on failure it returns EVO_E_CONFIG,
 * sets *err_column to the 1-based column (in characters) of the offending token and fills err with what is wrong,
 * quoting the token ("unknown knob 'TILE_Q'", "expected ')' but found '&&'"). The returned evo_expr is owned by the
 * caller (evo_expr_free) and read-only afterwards: evaluating it is thread-safe and allocates nothing.
 */
#ifndef EVO_EXPR_H
#define EVO_EXPR_H

#include "evo.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct evo_expr evo_expr;

typedef enum {
    EVO_SYM_UNKNOWN = 0, /* not a name the caller knows: a parse error                      */
    EVO_SYM_VAR,         /* *value is the index of the variable in evo_expr_eval's array   */
    EVO_SYM_CONST,       /* *value is the constant                                         */
    EVO_SYM_AMBIGUOUS,   /* the name means different constants; the parse fails, naming it */
} evo_sym_kind;

/* Called once per identifier during parsing. name is NUL-terminated and valid only during the call. */
typedef evo_sym_kind (*evo_expr_resolve_fn)(void *ctx, const char *name, int64_t *value);

/* Nesting deeper than this (parentheses, unary operators, ?:) is a parse error, so hostile input cannot exhaust
 * the C stack. */
#define EVO_EXPR_MAX_DEPTH 64

evo_status evo_expr_parse(const char *text, evo_expr_resolve_fn resolve, void *ctx, evo_expr **out, int *err_column,
                          evo_err *err);
void evo_expr_free(evo_expr *e);

/* Evaluates with vars[i] as the value of variable i. Returns false when a division or modulo by zero was
 * evaluated (*value is then 0). */
bool evo_expr_eval(const evo_expr *e, const int *vars, int64_t *value);
/* A constraint holds when it evaluates without a division by zero to a non-zero value. */
bool evo_expr_holds(const evo_expr *e, const int *vars);
/* The highest variable index the expression reads, -1 when it reads none. Lets callers check a constraint as soon
 * as the variables it needs are known. */
int evo_expr_max_var(const evo_expr *e);
/* Bit i set when the expression reads variable i (variables 0..63; higher ones are not reported). */
uint64_t evo_expr_var_mask(const evo_expr *e);

#endif
