/* expr.c — constraint expressions (see expr.h): a tokenizer, a recursive-descent parser that emits a stack
 * program with jumps for the lazy operators, and the evaluator loop that runs it. */
#include "expr.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- program ---- */

typedef enum {
    OP_CONST, /* push val                                           */
    OP_VAR,   /* push vars[arg]                                     */
    OP_NEG,
    OP_NOT,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_ADD,
    OP_SUB,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_EQ,
    OP_NE,
    OP_IN,   /* top = top is one of sets[arg .. arg+val)           */
    OP_BOOL, /* top = top != 0                                     */
    OP_AND,  /* top == 0: jump to arg keeping 0; else pop          */
    OP_OR,   /* top != 0: jump to arg with 1 on top; else pop      */
    OP_JZ,   /* pop; jump to arg when it was 0                     */
    OP_JMP,  /* jump to arg                                        */
} op_code;

typedef struct {
    uint8_t op;
    int32_t arg;
    int64_t val;
} op;

/* Deep enough for any expression within EVO_EXPR_MAX_DEPTH; the parser checks its own count against it. */
#define EXPR_MAX_STACK 512

struct evo_expr {
    op *code;
    int n_code;
    int64_t *sets; /* constants of every `in [...]`, concatenated */
    int n_sets;
    int max_var;
};

/* ---- tokens ---- */

typedef enum {
    T_END,
    T_INT,
    T_IDENT,
    T_IN,
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_COMMA,
    T_QUESTION,
    T_COLON,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
    T_BANG,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_EQ,
    T_NE,
    T_AND,
    T_OR,
} tok_kind;

typedef struct {
    tok_kind kind;
    size_t start, len; /* byte offsets in the text */
    int column;        /* 1-based, in characters */
    int64_t value;     /* T_INT */
} token;

typedef struct {
    const char *text;
    size_t pos;
    int column; /* of text[pos] */
    token tok;  /* current token */
    evo_expr_resolve_fn resolve;
    void *ctx;
    int depth;
    int stack, max_stack;
    op *code;
    int n_code, cap_code;
    int64_t *sets;
    int n_sets, cap_sets;
    int max_var;
    /* first error wins */
    bool failed;
    int err_column;
    char err_msg[512];
} parser;

static void fail_at(parser *p, int column, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(parser *p, int column, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = true;
    p->err_column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err_msg, sizeof p->err_msg, fmt, ap);
    va_end(ap);
}

/* The current token as it appears in the text, for messages; "end of expression" at the end. */
static const char *tok_text(const parser *p, char *buf, size_t n)
{
    if (p->tok.kind == T_END) return "end of expression";
    size_t len = p->tok.len < 40 ? p->tok.len : 40;
    snprintf(buf, n, "'%.*s%s'", (int)len, p->text + p->tok.start, p->tok.len > len ? "..." : "");
    return buf;
}

static void fail_here(parser *p, const char *what)
{
    char buf[64];
    fail_at(p, p->tok.column, "%s, found %s", what, tok_text(p, buf, sizeof buf));
}

static bool is_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool is_ident_char(int c) { return isalnum(c) || c == '_'; }

static void advance_bytes(parser *p, size_t n)
{
    for (size_t i = 0; i < n; i++, p->pos++)
        if (((unsigned char)p->text[p->pos] & 0xC0) != 0x80) p->column++;
    /* a UTF-8 continuation byte belongs to the character already counted */
}

static void next(parser *p)
{
    const char *t = p->text;
    while (t[p->pos] == ' ' || t[p->pos] == '\t' || t[p->pos] == '\n' || t[p->pos] == '\r') advance_bytes(p, 1);
    token k = {.kind = T_END, .start = p->pos, .len = 0, .column = p->column, .value = 0};
    unsigned char c = (unsigned char)t[p->pos];
    size_t n = 1;
    if (c == '\0') {
        n = 0;
    } else if (isdigit(c)) {
        while (is_ident_char((unsigned char)t[p->pos + n])) n++;
        char buf[64];
        if (n >= sizeof buf) {
            k.len = n;
            p->tok = k;
            fail_at(p, k.column, "number '%.20s...' is too long", t + p->pos);
            return;
        }
        memcpy(buf, t + p->pos, n);
        buf[n] = '\0';
        bool hex = n > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, hex ? 16 : 10);
        if (*end != '\0' || (!hex && buf[0] == '0' && n > 1 && buf[1] != 'x' && buf[1] != 'X')) {
            fail_at(p, k.column, "bad number '%s'", buf);
        } else if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
            fail_at(p, k.column, "number '%s' is too large", buf);
        }
        k.kind = T_INT;
        k.value = (int64_t)v;
    } else if (is_ident_start(c)) {
        while (is_ident_char((unsigned char)t[p->pos + n])) n++;
        k.kind = (n == 2 && t[p->pos] == 'i' && t[p->pos + 1] == 'n') ? T_IN : T_IDENT;
    } else {
        char c2 = t[p->pos + 1];
        switch (c) {
            case '(': k.kind = T_LPAREN; break;
            case ')': k.kind = T_RPAREN; break;
            case '[': k.kind = T_LBRACK; break;
            case ']': k.kind = T_RBRACK; break;
            case ',': k.kind = T_COMMA; break;
            case '?': k.kind = T_QUESTION; break;
            case ':': k.kind = T_COLON; break;
            case '+': k.kind = T_PLUS; break;
            case '-': k.kind = T_MINUS; break;
            case '*': k.kind = T_STAR; break;
            case '/': k.kind = T_SLASH; break;
            case '%': k.kind = T_PERCENT; break;
            case '!':
                if (c2 == '=')
                    k.kind = T_NE, n = 2;
                else
                    k.kind = T_BANG;
                break;
            case '<':
                if (c2 == '=')
                    k.kind = T_LE, n = 2;
                else
                    k.kind = T_LT;
                break;
            case '>':
                if (c2 == '=')
                    k.kind = T_GE, n = 2;
                else
                    k.kind = T_GT;
                break;
            case '=':
                if (c2 == '=')
                    k.kind = T_EQ, n = 2;
                else
                    fail_at(p, k.column, "unexpected '=' (comparison is '==')");
                break;
            case '&':
                if (c2 == '&')
                    k.kind = T_AND, n = 2;
                else
                    fail_at(p, k.column, "unexpected '&' (logical and is '&&')");
                break;
            case '|':
                if (c2 == '|')
                    k.kind = T_OR, n = 2;
                else
                    fail_at(p, k.column, "unexpected '|' (logical or is '||')");
                break;
            default:
                /* quote the whole UTF-8 character, not one byte of it */
                while ((c & 0x80) && (((unsigned char)t[p->pos + n]) & 0xC0) == 0x80) n++;
                fail_at(p, k.column, "unexpected character '%.*s'", (int)n, t + p->pos);
        }
    }
    k.len = n;
    p->tok = k;
    advance_bytes(p, n);
}

/* ---- code emission ---- */

static int emit(parser *p, op_code code, int32_t arg, int64_t val, int stack_delta)
{
    if (p->n_code == p->cap_code) {
        p->cap_code = p->cap_code ? 2 * p->cap_code : 32;
        p->code = evo_xrealloc(p->code, (size_t)p->cap_code * sizeof *p->code);
    }
    p->code[p->n_code] = (op){.op = (uint8_t)code, .arg = arg, .val = val};
    p->stack += stack_delta;
    if (p->stack > p->max_stack) p->max_stack = p->stack;
    return p->n_code++;
}

static void patch_jump(parser *p, int at) { p->code[at].arg = p->n_code; }

/* ---- grammar ---- */

static void parse_ternary(parser *p);

static bool enter(parser *p)
{
    if (++p->depth > EVO_EXPR_MAX_DEPTH) {
        fail_at(p, p->tok.column, "expression nested deeper than %d levels", EVO_EXPR_MAX_DEPTH);
        return false;
    }
    return true;
}

static evo_sym_kind resolve_ident(parser *p, int64_t *value)
{
    char name[128];
    if (p->tok.len >= sizeof name) {
        fail_at(p, p->tok.column, "name '%.20s...' is too long", p->text + p->tok.start);
        return EVO_SYM_UNKNOWN;
    }
    memcpy(name, p->text + p->tok.start, p->tok.len);
    name[p->tok.len] = '\0';
    evo_sym_kind k = p->resolve ? p->resolve(p->ctx, name, value) : EVO_SYM_UNKNOWN;
    if (k == EVO_SYM_UNKNOWN)
        fail_at(p, p->tok.column, "unknown knob '%s'", name);
    else if (k == EVO_SYM_AMBIGUOUS)
        fail_at(p, p->tok.column, "'%s' is a value of more than one enumerated knob, with different indices", name);
    else if (k == EVO_SYM_VAR && (*value < 0 || *value > INT32_MAX))
        fail_at(p, p->tok.column, "internal: variable index %lld of '%s'", (long long)*value, name);
    return k;
}

static void parse_primary(parser *p)
{
    if (p->failed) return;
    switch (p->tok.kind) {
        case T_INT:
            emit(p, OP_CONST, 0, p->tok.value, +1);
            next(p);
            return;
        case T_IDENT: {
            int64_t v = 0;
            evo_sym_kind k = resolve_ident(p, &v);
            if (k == EVO_SYM_VAR) {
                emit(p, OP_VAR, (int32_t)v, 0, +1);
                if ((int)v > p->max_var) p->max_var = (int)v;
            } else if (k == EVO_SYM_CONST) {
                emit(p, OP_CONST, 0, v, +1);
            }
            next(p);
            return;
        }
        case T_LPAREN: {
            int col = p->tok.column;
            if (!enter(p)) return;
            next(p);
            parse_ternary(p);
            p->depth--;
            if (p->failed) return;
            if (p->tok.kind != T_RPAREN) {
                char what[96];
                snprintf(what, sizeof what, "expected ')' to close the '(' at column %d", col);
                fail_here(p, what);
                return;
            }
            next(p);
            return;
        }
        default: fail_here(p, "expected a number, a knob or '('");
    }
}

static void parse_unary(parser *p)
{
    if (p->failed) return;
    tok_kind k = p->tok.kind;
    if (k == T_MINUS || k == T_PLUS || k == T_BANG) {
        if (!enter(p)) return;
        next(p);
        parse_unary(p);
        p->depth--;
        if (k == T_MINUS)
            emit(p, OP_NEG, 0, 0, 0);
        else if (k == T_BANG)
            emit(p, OP_NOT, 0, 0, 0);
        return;
    }
    parse_primary(p);
}

static void parse_mul(parser *p)
{
    parse_unary(p);
    while (!p->failed && (p->tok.kind == T_STAR || p->tok.kind == T_SLASH || p->tok.kind == T_PERCENT)) {
        tok_kind k = p->tok.kind;
        next(p);
        parse_unary(p);
        emit(p, k == T_STAR ? OP_MUL : k == T_SLASH ? OP_DIV : OP_MOD, 0, 0, -1);
    }
}

static void parse_add(parser *p)
{
    parse_mul(p);
    while (!p->failed && (p->tok.kind == T_PLUS || p->tok.kind == T_MINUS)) {
        tok_kind k = p->tok.kind;
        next(p);
        parse_mul(p);
        emit(p, k == T_PLUS ? OP_ADD : OP_SUB, 0, 0, -1);
    }
}

/* One set element: an integer with an optional sign, or an identifier that resolves to a constant. */
static void parse_set_element(parser *p)
{
    int64_t sign = 1;
    int col = p->tok.column;
    while (p->tok.kind == T_MINUS || p->tok.kind == T_PLUS) {
        if (p->tok.kind == T_MINUS) sign = -sign;
        next(p);
    }
    int64_t v = 0;
    if (p->tok.kind == T_INT) {
        v = p->tok.value;
    } else if (p->tok.kind == T_IDENT) {
        evo_sym_kind k = resolve_ident(p, &v);
        if (p->failed) return;
        if (k != EVO_SYM_CONST) {
            fail_at(p, col, "set elements must be constants, found the knob '%.*s'", (int)p->tok.len,
                    p->text + p->tok.start);
            return;
        }
    } else {
        fail_here(p, "expected a constant in the set");
        return;
    }
    if (p->n_sets == p->cap_sets) {
        p->cap_sets = p->cap_sets ? 2 * p->cap_sets : 16;
        p->sets = evo_xrealloc(p->sets, (size_t)p->cap_sets * sizeof *p->sets);
    }
    p->sets[p->n_sets++] = (int64_t)((uint64_t)v * (uint64_t)sign);
    next(p);
}

static void parse_set(parser *p)
{
    if (p->tok.kind != T_LBRACK) {
        fail_here(p, "expected '[' after 'in'");
        return;
    }
    int col = p->tok.column;
    next(p);
    int first = p->n_sets;
    if (p->tok.kind == T_RBRACK) {
        fail_at(p, col, "empty set");
        return;
    }
    for (;;) {
        parse_set_element(p);
        if (p->failed) return;
        if (p->tok.kind == T_RBRACK) break;
        if (p->tok.kind != T_COMMA) {
            fail_here(p, "expected ',' or ']' in the set");
            return;
        }
        next(p);
    }
    next(p);
    emit(p, OP_IN, first, p->n_sets - first, 0);
}

static bool is_rel(tok_kind k) { return k == T_LT || k == T_LE || k == T_GT || k == T_GE || k == T_IN; }
static bool is_eq(tok_kind k) { return k == T_EQ || k == T_NE; }

static void parse_rel(parser *p)
{
    parse_add(p);
    if (p->failed || !is_rel(p->tok.kind)) return;
    tok_kind k = p->tok.kind;
    next(p);
    if (k == T_IN) {
        parse_set(p);
    } else {
        parse_add(p);
        emit(p, k == T_LT ? OP_LT : k == T_LE ? OP_LE : k == T_GT ? OP_GT : OP_GE, 0, 0, -1);
    }
    if (!p->failed && is_rel(p->tok.kind)) fail_here(p, "comparisons do not chain (write 'a < b && b < c')");
}

static void parse_eq(parser *p)
{
    parse_rel(p);
    if (p->failed || !is_eq(p->tok.kind)) return;
    tok_kind k = p->tok.kind;
    next(p);
    parse_rel(p);
    emit(p, k == T_EQ ? OP_EQ : OP_NE, 0, 0, -1);
    if (!p->failed && is_eq(p->tok.kind)) fail_here(p, "comparisons do not chain (write 'a == b && b == c')");
}

static void parse_and(parser *p)
{
    parse_eq(p);
    while (!p->failed && p->tok.kind == T_AND) {
        next(p);
        int j = emit(p, OP_AND, 0, 0, -1); /* on the path that continues, the left value is popped */
        parse_eq(p);
        emit(p, OP_BOOL, 0, 0, 0);
        patch_jump(p, j);
    }
}

static void parse_or(parser *p)
{
    parse_and(p);
    while (!p->failed && p->tok.kind == T_OR) {
        next(p);
        int j = emit(p, OP_OR, 0, 0, -1);
        parse_and(p);
        emit(p, OP_BOOL, 0, 0, 0);
        patch_jump(p, j);
    }
}

static void parse_ternary(parser *p)
{
    parse_or(p);
    if (p->failed || p->tok.kind != T_QUESTION) return;
    int qcol = p->tok.column;
    if (!enter(p)) return;
    next(p);
    int jz = emit(p, OP_JZ, 0, 0, -1);
    parse_ternary(p);
    if (p->failed) return;
    if (p->tok.kind != T_COLON) {
        char what[96];
        snprintf(what, sizeof what, "expected ':' of the '?' at column %d", qcol);
        fail_here(p, what);
        return;
    }
    next(p);
    int jmp = emit(p, OP_JMP, 0, 0, -1); /* only one branch's value is ever on the stack */
    patch_jump(p, jz);
    parse_ternary(p);
    patch_jump(p, jmp);
    p->depth--;
}

evo_status evo_expr_parse(const char *text, evo_expr_resolve_fn resolve, void *ctx, evo_expr **out, int *err_column,
                          evo_err *err)
{
    EVO_ASSERT(text && out);
    *out = NULL;
    parser p = {.text = text, .column = 1, .resolve = resolve, .ctx = ctx, .max_var = -1};
    next(&p);
    if (!p.failed && p.tok.kind == T_END) fail_at(&p, p.tok.column, "empty expression");
    parse_ternary(&p);
    if (!p.failed && p.tok.kind != T_END) fail_here(&p, "expected an operator or the end of the expression");
    if (!p.failed && p.max_stack > EXPR_MAX_STACK) fail_at(&p, 1, "expression too large");
    if (p.failed) {
        free(p.code);
        free(p.sets);
        if (err_column) *err_column = p.err_column;
        return evo_fail(err, EVO_E_CONFIG, "%s", p.err_msg);
    }
    EVO_ASSERT(p.stack == 1);
    evo_expr *e = evo_xcalloc(1, sizeof *e);
    e->code = p.code;
    e->n_code = p.n_code;
    e->sets = p.sets;
    e->n_sets = p.n_sets;
    e->max_var = p.max_var;
    *out = e;
    return EVO_OK;
}

void evo_expr_free(evo_expr *e)
{
    if (!e) return;
    free(e->code);
    free(e->sets);
    free(e);
}

int evo_expr_max_var(const evo_expr *e) { return e->max_var; }

uint64_t evo_expr_var_mask(const evo_expr *e)
{
    uint64_t mask = 0;
    for (int pc = 0; pc < e->n_code; pc++)
        if (e->code[pc].op == OP_VAR && e->code[pc].arg >= 0 && e->code[pc].arg < 64)
            mask |= (uint64_t)1 << e->code[pc].arg;
    return mask;
}

/* Wrapping arithmetic: overflow in a constraint is the user's nonsense, not undefined behaviour of evo. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

bool evo_expr_eval(const evo_expr *e, const int *vars, int64_t *value)
{
    int64_t st[EXPR_MAX_STACK];
    int sp = 0; /* st[sp-1] is the top */
    const op *code = e->code;
    for (int pc = 0; pc < e->n_code; pc++) {
        const op *o = &code[pc];
        int64_t a, b;
        switch ((op_code)o->op) {
            case OP_CONST: st[sp++] = o->val; break;
            case OP_VAR: st[sp++] = vars[o->arg]; break;
            case OP_NEG: st[sp - 1] = wrap_sub(0, st[sp - 1]); break;
            case OP_NOT: st[sp - 1] = !st[sp - 1]; break;
            case OP_BOOL: st[sp - 1] = st[sp - 1] != 0; break;
            case OP_MUL:
                b = st[--sp];
                st[sp - 1] = wrap_mul(st[sp - 1], b);
                break;
            case OP_DIV:
            case OP_MOD:
                b = st[--sp];
                a = st[sp - 1];
                if (b == 0) {
                    *value = 0;
                    return false;
                }
                if (b == -1)
                    st[sp - 1] = o->op == OP_DIV ? wrap_sub(0, a) : 0; /* INT64_MIN / -1 traps in C */
                else
                    st[sp - 1] = o->op == OP_DIV ? a / b : a % b;
                break;
            case OP_ADD:
                b = st[--sp];
                st[sp - 1] = wrap_add(st[sp - 1], b);
                break;
            case OP_SUB:
                b = st[--sp];
                st[sp - 1] = wrap_sub(st[sp - 1], b);
                break;
            case OP_LT:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] < b;
                break;
            case OP_LE:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] <= b;
                break;
            case OP_GT:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] > b;
                break;
            case OP_GE:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] >= b;
                break;
            case OP_EQ:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] == b;
                break;
            case OP_NE:
                b = st[--sp];
                st[sp - 1] = st[sp - 1] != b;
                break;
            case OP_IN: {
                a = st[sp - 1];
                int64_t hit = 0;
                for (int64_t i = 0; i < o->val; i++)
                    if (e->sets[o->arg + i] == a) hit = 1;
                st[sp - 1] = hit;
                break;
            }
            case OP_AND:
                if (st[sp - 1] == 0)
                    pc = o->arg - 1;
                else
                    sp--;
                break;
            case OP_OR:
                if (st[sp - 1] != 0) {
                    st[sp - 1] = 1;
                    pc = o->arg - 1;
                } else {
                    sp--;
                }
                break;
            case OP_JZ:
                if (st[--sp] == 0) pc = o->arg - 1;
                break;
            case OP_JMP: pc = o->arg - 1; break;
        }
    }
    *value = st[sp - 1];
    return true;
}

bool evo_expr_holds(const evo_expr *e, const int *vars)
{
    int64_t v;
    return evo_expr_eval(e, vars, &v) && v != 0;
}
