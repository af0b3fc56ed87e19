/* plot.c — SVG charts (see plot.h): axes with round ticks, a legend that wraps, lines, markers, grouped bars.
 * Every size comes from an estimate of text widths so that labels neither overlap nor leave the canvas;
 * coordinates are written with one decimal to keep the files small.
 */
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ten colours told apart also by most colour-blind readers; `evo plot --top` stops at ten. */
static const char *const palette[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7",
                                      "#56b4e9", "#8c6d31", "#555555", "#999933", "#882255"};

enum { FONT_TITLE = 16, FONT_SUB = 12, FONT_TICK = 11, FONT_AXIS = 13, FONT_LEGEND = 12, FONT_VALUE = 10 };

#define TICK_LEN 5.0
/* A white outline under a value label keeps it readable where it crosses a grid or reference line. */
#define HALO "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\""
#define LEGEND_ROW 20.0

/* ---- text ---- */

double evo_plot_text_width(const char *text, double size)
{
    /* Widths of DejaVu Sans, the widest common fallback for "sans-serif": Helvetica and Arial come out narrower,
     * which only leaves a little more room. */
    double w = 0;
    for (const unsigned char *p = (const unsigned char *)text; p && *p; p++) {
        unsigned char c = *p;
        if ((c & 0xc0) == 0x80) continue; /* UTF-8 continuation byte: counted with its lead byte */
        if (strchr("ijlI.,:;|!'()[] ft", c))
            w += 0.36;
        else if (strchr("mwMW@%", c))
            w += 0.96;
        else if (c >= 'A' && c <= 'Z')
            w += 0.72;
        else
            w += 0.64;
    }
    return w * size;
}

static void xml_text(evo_str *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
            case '&': evo_str_append(o, "&amp;"); break;
            case '<': evo_str_append(o, "&lt;"); break;
            case '>': evo_str_append(o, "&gt;"); break;
            case '"': evo_str_append(o, "&quot;"); break;
            default:
                /* Control characters are not allowed in XML 1.0; a label never needs them. */
                if ((unsigned char)*s >= 0x20 || *s == '\t') evo_str_appendn(o, s, 1);
        }
    }
}

/* <text x y [anchor] [size] [extra attributes]>escaped</text> */
static void text_at(evo_str *o, double x, double y, const char *anchor, int size, const char *attrs, const char *s)
{
    evo_str_appendf(o, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (anchor) evo_str_appendf(o, " text-anchor=\"%s\"", anchor);
    if (size) evo_str_appendf(o, " font-size=\"%d\"", size);
    if (attrs) evo_str_appendf(o, " %s", attrs);
    evo_str_append(o, ">");
    xml_text(o, s);
    evo_str_append(o, "</text>\n");
}

/* ---- ticks ---- */

int evo_plot_ticks(double lo, double hi, int target, int integer, double *ticks, int max, double *lo_out,
                   double *hi_out, int *decimals)
{
    if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
    if (lo > hi) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    if (target < 1) target = 1;
    if (integer && hi - lo < 1) {
        double v = round(lo);
        if (max > 0) ticks[0] = v;
        *lo_out = v - 0.5;
        *hi_out = v + 0.5;
        *decimals = 0;
        return max > 0 ? 1 : 0;
    }
    if (hi == lo) {
        double d = lo == 0 ? 1 : fabs(lo) * 0.1;
        lo -= d;
        hi += d;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    if (integer && mag == 1 && nice == 2.5) nice = 5;
    double step = nice * mag;
    if (integer && step < 1) step = 1, nice = 1, mag = 1;
    double i0 = floor(lo / step + 1e-9), i1 = ceil(hi / step - 1e-9);
    int n = 0;
    for (double i = i0; i <= i1 + 0.5 && n < max; i++) {
        double v = i * step;
        ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    }
    *lo_out = i0 * step;
    *hi_out = i1 * step;
    int d = (int)-floor(log10(step) + 1e-9);
    if (nice == 2.5) d++;
    *decimals = d > 0 ? d : 0;
    return n;
}

/* ---- one canvas: title, legend, axes ---- */

typedef struct {
    double w, h;
    double x0, x1, y0, y1;     /* the plot area in px */
    double xlo, xhi, ylo, yhi; /* its domain */
} frame;

static double fx(const frame *f, double x) { return f->x0 + (x - f->xlo) / (f->xhi - f->xlo) * (f->x1 - f->x0); }
static double fy(const frame *f, double y) { return f->y1 - (y - f->ylo) / (f->yhi - f->ylo) * (f->y1 - f->y0); }

static void svg_open(evo_str *o, double w, double h)
{
    evo_str_appendf(o,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\""
                    " font-family=\"Helvetica, Arial, sans-serif\" font-size=\"%d\">\n"
                    "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
                    w, h, w, h, FONT_TICK, w, h);
}

/* Title and subtitle; returns the y below them. */
static double titles(evo_str *o, double w, const char *title, const char *sub)
{
    double y = 26;
    if (title) text_at(o, w / 2, y, "middle", FONT_TITLE, "font-weight=\"bold\"", title);
    if (sub) {
        y += 18;
        text_at(o, w / 2, y, "middle", FONT_SUB, "fill=\"#444444\"", sub);
    }
    return y + 10;
}

/* The canvas is at least as wide as its titles. */
static double fit_width(double w, const char *title, const char *sub)
{
    double t = title ? evo_plot_text_width(title, FONT_TITLE) * 1.08 + 40 : 0; /* bold is wider */
    double s = sub ? evo_plot_text_width(sub, FONT_SUB) + 40 : 0;
    if (t > w) w = t;
    if (s > w) w = s;
    return ceil(w);
}

typedef struct {
    const char *text;
    const char *color;
    int marker; /* for x/y series */
    int line;
    int box; /* for bars: a filled square */
} legend_entry;

#define LEGEND_SWATCH 26.0
#define LEGEND_GAP 18.0

static double legend_entry_width(const legend_entry *e)
{
    return LEGEND_SWATCH + evo_plot_text_width(e->text, FONT_LEGEND) + LEGEND_GAP;
}

/* Rows the legend needs between x0 and x1. */
static int legend_rows(const legend_entry *e, int n, double x0, double x1)
{
    if (n == 0) return 0;
    int rows = 1;
    double x = x0;
    for (int i = 0; i < n; i++) {
        double ew = legend_entry_width(&e[i]);
        if (x > x0 && x + ew - LEGEND_GAP > x1) rows++, x = x0;
        x += ew;
    }
    return rows;
}

static void marker_at(evo_str *o, int marker, double x, double y, double r)
{
    switch (marker) {
        case EVO_PLOT_CIRCLE: evo_str_appendf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", x, y, r); break;
        case EVO_PLOT_SQUARE:
            evo_str_appendf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x - r * 0.9, y - r * 0.9,
                            r * 1.8, r * 1.8);
            break;
        case EVO_PLOT_DIAMOND:
            evo_str_appendf(o, "<path d=\"M%.1f %.1fl%.1f %.1fl%.1f %.1fl%.1f %.1fz\"", x, y - r * 1.25, r * 1.25,
                            r * 1.25, -r * 1.25, r * 1.25, -r * 1.25, -r * 1.25);
            break;
        default: break;
    }
}

static void legend_draw(evo_str *o, const legend_entry *e, int n, double x0, double x1, double y)
{
    double x = x0;
    for (int i = 0; i < n; i++) {
        double ew = legend_entry_width(&e[i]);
        if (x > x0 && x + ew - LEGEND_GAP > x1) x = x0, y += LEGEND_ROW;
        double cy = y + LEGEND_ROW / 2;
        if (e[i].box) {
            evo_str_appendf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x + 4, cy - 7,
                            e[i].color);
        } else {
            if (e[i].line)
                evo_str_appendf(o,
                                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                                "stroke-width=\"2\"/>\n",
                                x, cy, x + 22, cy, e[i].color);
            if (e[i].marker) {
                marker_at(o, e[i].marker, x + 11, cy, 4);
                evo_str_appendf(o, " fill=\"%s\"/>\n", e[i].color);
            }
        }
        text_at(o, x + LEGEND_SWATCH, cy + 4, NULL, FONT_LEGEND, NULL, e[i].text);
        x += ew;
    }
}

static void fmt_tick(char *buf, size_t n, double v, int decimals)
{
    snprintf(buf, n, "%.*f", decimals, v);
    if (strcmp(buf, "-0") == 0 || (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)))
        memmove(buf, buf + 1, strlen(buf));
}

/* The widest y tick label of a domain. */
static double y_labels_width(const double *ticks, int n, int decimals)
{
    double w = 0;
    for (int i = 0; i < n; i++) {
        char b[48];
        fmt_tick(b, sizeof b, ticks[i], decimals);
        double tw = evo_plot_text_width(b, FONT_TICK);
        if (tw > w) w = tw;
    }
    return w;
}

/* Grid lines, the y axis with its ticks and labels, the x axis line, the y label. */
static void y_axis(evo_str *o, const frame *f, const double *ticks, int n, int decimals, const char *label)
{
    double label_x = f->x0 - TICK_LEN - 3 - y_labels_width(ticks, n, decimals) - 10 - FONT_AXIS / 2.0;
    evo_str_append(o, "<g stroke=\"#e4e4e4\">\n");
    for (int i = 0; i < n; i++)
        evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->x0, fy(f, ticks[i]), f->x1,
                        fy(f, ticks[i]));
    evo_str_append(o, "</g>\n<g stroke=\"#333333\">\n");
    for (int i = 0; i < n; i++)
        evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->x0 - TICK_LEN,
                        fy(f, ticks[i]), f->x0, fy(f, ticks[i]));
    evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->x0, f->y0, f->x0, f->y1);
    evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->x0, f->y1, f->x1, f->y1);
    evo_str_append(o, "</g>\n<g text-anchor=\"end\">\n");
    for (int i = 0; i < n; i++) {
        char b[48];
        fmt_tick(b, sizeof b, ticks[i], decimals);
        text_at(o, f->x0 - TICK_LEN - 3, fy(f, ticks[i]) + 4, NULL, 0, NULL, b);
    }
    evo_str_append(o, "</g>\n");
    if (label) {
        double cy = (f->y0 + f->y1) / 2;
        char tr[160];
        snprintf(tr, sizeof tr, "transform=\"rotate(-90 %.1f %.1f)\"", label_x, cy);
        text_at(o, label_x, cy, "middle", FONT_AXIS, tr, label);
    }
}

/* A dashed reference line with its label in the right margin. */
static void ref_line(evo_str *o, const frame *f, double y, const char *label)
{
    if (!isfinite(y) || y < f->ylo || y > f->yhi) return;
    double py = fy(f, y);
    evo_str_appendf(o,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" stroke-width=\"1.2\" "
                    "stroke-dasharray=\"6 4\"/>\n",
                    f->x0, py, f->x1, py);
    if (label) text_at(o, f->x1 + 4, py + 4, NULL, FONT_TICK, "fill=\"#222222\"", label);
}

static double ref_margin(const char *label)
{
    double m = label ? evo_plot_text_width(label, FONT_TICK) + 12 : 0;
    return m > 24 ? m : 24;
}

/* ---- x/y chart ---- */

static int finite_point(const evo_plot_series *s, int i) { return isfinite(s->x[i]) && isfinite(s->y[i]); }

/* x of every point after jitter: points of equal x spread evenly over [x - jitter, x + jitter] in their order. */
static double *jittered_x(const evo_plot_series *s)
{
    double *x = evo_xmalloc((size_t)(s->n ? s->n : 1) * sizeof *x);
    for (int i = 0; i < s->n; i++) x[i] = s->x[i];
    if (s->jitter <= 0) return x;
    char *done = evo_xcalloc((size_t)(s->n ? s->n : 1), 1);
    for (int i = 0; i < s->n; i++) {
        if (done[i] || !isfinite(s->x[i])) continue;
        int count = 0;
        for (int j = i; j < s->n; j++)
            if (s->x[j] == s->x[i] && isfinite(s->y[j])) count++;
        int k = 0;
        for (int j = i; j < s->n; j++) {
            if (s->x[j] != s->x[i]) continue;
            done[j] = 1;
            if (!isfinite(s->y[j])) continue;
            if (count > 1) x[j] = s->x[i] + s->jitter * (2.0 * (k + 0.5) / count - 1.0);
            k++;
        }
    }
    free(done);
    return x;
}

static evo_status check_series(const evo_plot_xy *p, evo_err *err)
{
    if (p->n_series < 0 || (p->n_series > 0 && !p->series))
        return evo_fail(err, EVO_E_INTERNAL, "plot: %d series and no array", p->n_series);
    for (int i = 0; i < p->n_series; i++)
        if (p->series[i].n < 0 || (p->series[i].n > 0 && (!p->series[i].x || !p->series[i].y)))
            return evo_fail(err, EVO_E_INTERNAL, "plot: series %d has %d points and no arrays", i, p->series[i].n);
    return EVO_OK;
}

evo_status evo_plot_xy_svg(const evo_plot_xy *p, evo_str *out, evo_err *err)
{
    evo_status s = check_series(p, err);
    if (s != EVO_OK) return s;

    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int points = 0;
    for (int k = 0; k < p->n_series; k++) {
        const evo_plot_series *se = &p->series[k];
        for (int i = 0; i < se->n; i++) {
            /* x spans every point, y-less ones too: a generation with nothing correct still has its tick */
            if (isfinite(se->x[i])) xlo = fmin(xlo, se->x[i] - se->jitter), xhi = fmax(xhi, se->x[i] + se->jitter);
            if (!finite_point(se, i)) continue;
            points++;
            ylo = fmin(ylo, se->y[i]), yhi = fmax(yhi, se->y[i]);
        }
    }
    if (!(xlo <= xhi)) xlo = 0, xhi = 1;
    if (points) {
        if (isfinite(p->y_ref)) ylo = fmin(ylo, p->y_ref), yhi = fmax(yhi, p->y_ref);
        if (p->y_from_zero) ylo = fmin(ylo, 0);
        double span = yhi - ylo;
        if (span <= 0) span = fabs(yhi) > 0 ? fabs(yhi) * 0.2 : 1;
        if (!(p->y_from_zero && ylo == 0)) ylo -= 0.04 * span;
        yhi += 0.04 * span;
    } else {
        ylo = 0, yhi = isfinite(p->y_ref) && p->y_ref > 0 ? 2 * p->y_ref : 1;
    }

    double yt[64], xt[64];
    int ydec, xdec;
    frame f = {.w = p->width > 0 ? p->width : 880, .h = p->height > 0 ? p->height : 500};
    int nyt = evo_plot_ticks(ylo, yhi, 6, 0, yt, 64, &f.ylo, &f.yhi, &ydec);
    int nxt = evo_plot_ticks(p->integer_x ? round(xlo) : xlo, p->integer_x ? round(xhi) : xhi, 8, p->integer_x, xt, 64,
                             &f.xlo, &f.xhi, &xdec);
    double xpad = p->integer_x ? fmax(0.3, 0.02 * (f.xhi - f.xlo)) : 0.02 * (f.xhi - f.xlo);
    if (p->integer_x && nxt == 1) xpad = 0; /* the one tick already sits in a unit-wide domain */
    f.xlo -= xpad, f.xhi += xpad;

    f.w = fit_width(f.w, p->title, p->subtitle);
    f.x0 = 16 + (p->y_label ? FONT_AXIS + 10 : 0) + y_labels_width(yt, nyt, ydec) + TICK_LEN + 6;
    f.x1 = f.w - ref_margin(isfinite(p->y_ref) ? p->y_ref_label : NULL);

    legend_entry *le = evo_xcalloc((size_t)(p->n_series ? p->n_series : 1), sizeof *le);
    int nle = 0;
    for (int k = 0; k < p->n_series; k++) {
        const evo_plot_series *se = &p->series[k];
        if (!se->name) continue;
        le[nle++] = (legend_entry){se->name, se->color ? se->color : palette[k % EVO_ARRAY_LEN(palette)], se->marker,
                                   se->line, 0};
    }
    double top_text = 26 + (p->subtitle ? 18 : 0) + 10;
    int rows = legend_rows(le, nle, f.x0, f.x1);
    f.y0 = top_text + rows * LEGEND_ROW + 12;
    double bottom = TICK_LEN + 4 + FONT_TICK + 10 + (p->x_label ? FONT_AXIS + 10 : 0) + (p->footnote ? 20 : 0) + 8;
    f.y1 = f.h - bottom;
    if (f.y1 - f.y0 < 160) { /* many legend rows: grow the canvas rather than squash the plot */
        f.h += 160 - (f.y1 - f.y0);
        f.y1 = f.h - bottom;
    }

    evo_str *o = out;
    svg_open(o, f.w, f.h);
    titles(o, f.w, p->title, p->subtitle);
    legend_draw(o, le, nle, f.x0, f.x1, top_text);
    free(le);
    y_axis(o, &f, yt, nyt, ydec, p->y_label);

    /* x ticks and labels; a label that would overlap its left neighbour is skipped */
    evo_str_append(o, "<g stroke=\"#333333\">\n");
    for (int i = 0; i < nxt; i++)
        evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fx(&f, xt[i]), f.y1,
                        fx(&f, xt[i]), f.y1 + TICK_LEN);
    evo_str_append(o, "</g>\n<g text-anchor=\"middle\">\n");
    double last_right = -INFINITY;
    for (int i = 0; i < nxt; i++) {
        char b[48];
        fmt_tick(b, sizeof b, xt[i], xdec);
        double w = evo_plot_text_width(b, FONT_TICK), cx = fx(&f, xt[i]);
        if (cx - w / 2 < last_right + 6) continue;
        text_at(o, cx, f.y1 + TICK_LEN + 4 + FONT_TICK, NULL, 0, NULL, b);
        last_right = cx + w / 2;
    }
    evo_str_append(o, "</g>\n");
    double xl_y = f.y1 + TICK_LEN + 4 + FONT_TICK + 10 + FONT_AXIS;
    if (p->x_label) text_at(o, (f.x0 + f.x1) / 2, xl_y, "middle", FONT_AXIS, NULL, p->x_label);
    if (p->footnote)
        text_at(o, f.x0, (p->x_label ? xl_y : f.y1 + TICK_LEN + 4 + FONT_TICK) + 20, NULL, FONT_TICK,
                "fill=\"#555555\"", p->footnote);

    ref_line(o, &f, p->y_ref, p->y_ref_label);

    for (int k = 0; k < p->n_series; k++) {
        const evo_plot_series *se = &p->series[k];
        const char *color = se->color ? se->color : palette[k % EVO_ARRAY_LEN(palette)];
        double *x = jittered_x(se);
        if (se->line) {
            /* One polyline per run of two or more consecutive finite points; a lone point is its marker. */
            for (int i = 0; i < se->n;) {
                int j = i;
                while (j < se->n && finite_point(se, j)) j++;
                if (j - i >= 2) {
                    evo_str_appendf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
                    for (int k = i; k < j; k++)
                        evo_str_appendf(o, "%s%.1f,%.1f", k > i ? " " : "", fx(&f, x[k]), fy(&f, se->y[k]));
                    evo_str_append(o, "\"/>\n");
                }
                i = j > i ? j : i + 1;
            }
        }
        /* Markers on a line only while they stay apart; a scatter always has them. */
        int finite = 0;
        for (int i = 0; i < se->n; i++) finite += finite_point(se, i);
        int markers = se->marker && (!se->line || finite < 2 || (f.x1 - f.x0) / finite >= 7);
        if (markers && finite) {
            double r = se->marker_r > 0 ? se->marker_r : 3.5;
            evo_str_appendf(o, "<g fill=\"%s\"", color);
            if (se->opacity > 0 && se->opacity < 1) evo_str_appendf(o, " fill-opacity=\"%.2f\"", se->opacity);
            evo_str_append(o, ">\n");
            int tooltips = se->n <= 300; /* a title per point doubles a big scatter's size */
            for (int i = 0; i < se->n; i++) {
                if (!finite_point(se, i)) continue;
                marker_at(o, se->marker, fx(&f, x[i]), fy(&f, se->y[i]), r);
                if (tooltips) {
                    char tip[160], xs[48], ys[48];
                    fmt_tick(xs, sizeof xs, se->x[i], p->integer_x ? 0 : xdec + 1);
                    snprintf(ys, sizeof ys, "%.3f", se->y[i]);
                    snprintf(tip, sizeof tip, "%s%s%s %s: %s", se->name ? se->name : "", se->name ? ", " : "",
                             p->x_label ? p->x_label : "x", xs, ys);
                    evo_str_append(o, "><title>");
                    xml_text(o, tip);
                    evo_str_append(o, "</title></");
                    evo_str_append(o, se->marker == EVO_PLOT_CIRCLE   ? "circle"
                                      : se->marker == EVO_PLOT_SQUARE ? "rect"
                                                                      : "path");
                    evo_str_append(o, ">\n");
                } else {
                    evo_str_append(o, "/>\n");
                }
            }
            evo_str_append(o, "</g>\n");
        }
        free(x);
    }
    if (!points) /* above the middle, where the reference line is not */
        text_at(o, (f.x0 + f.x1) / 2, f.y0 + (f.y1 - f.y0) * 0.3, "middle", 14, "fill=\"#666666\" " HALO,
                p->note ? p->note : "no data");
    evo_str_append(o, "</svg>\n");
    return EVO_OK;
}

/* ---- grouped bars ---- */

/* A group label as up to three lines: "mission(1,8,512,64) causal" -> "mission", "(1,8,512,64)", "causal". */
static int split_label(const char *label, char lines[3][64])
{
    int n = 0;
    const char *paren = strchr(label, '(');
    const char *close = paren ? strchr(paren, ')') : NULL;
    if (paren && paren > label && close) {
        snprintf(lines[n++], 64, "%.*s", (int)(paren - label), label);
        snprintf(lines[n++], 64, "%.*s", (int)(close - paren + 1), paren);
        const char *rest = close + 1;
        while (*rest == ' ') rest++;
        if (*rest) snprintf(lines[n++], 64, "%s", rest);
    } else {
        snprintf(lines[n++], 64, "%s", label);
    }
    return n;
}

evo_status evo_plot_bars_svg(const evo_plot_bars *p, evo_str *out, evo_err *err)
{
    if (p->n_groups < 0 || p->n_bars < 0 || (p->n_groups > 0 && !p->groups) || (p->n_bars > 0 && !p->bars) ||
        (p->n_groups > 0 && p->n_bars > 0 && !p->values))
        return evo_fail(err, EVO_E_INTERNAL, "plot: %d groups of %d bars and no arrays", p->n_groups, p->n_bars);
    int G = p->n_groups, B = p->n_bars;

    double vmax = 0;
    int any = 0;
    for (int i = 0; i < G * B; i++)
        if (isfinite(p->values[i])) vmax = fmax(vmax, p->values[i]), any = 1;
    if (isfinite(p->y_ref)) vmax = fmax(vmax, p->y_ref);
    if (vmax <= 0) vmax = 1;

    /* Group labels: stacked lines when they fit their group, else one rotated line. */
    double label_w = 0, label_full_w = 0;
    int label_lines = 1;
    for (int g = 0; g < G; g++) {
        char lines[3][64];
        int n = split_label(p->groups[g], lines);
        if (n > label_lines) label_lines = n;
        for (int i = 0; i < n; i++) label_w = fmax(label_w, evo_plot_text_width(lines[i], FONT_TICK));
        label_full_w = fmax(label_full_w, evo_plot_text_width(p->groups[g], FONT_TICK));
    }

    frame f = {.w = p->width, .h = p->height > 0 ? p->height : 520};
    double right = ref_margin(isfinite(p->y_ref) ? p->y_ref_label : NULL);
    /* Bars at least 9 px wide: the canvas grows to fit them. Labels that do not fit their group are rotated. */
    double want_plot = G * B * 9.0 / 0.8;
    double yt[64];
    int ydec;
    double headroom = 1.1;
    int nyt = evo_plot_ticks(0, vmax * headroom, 6, 0, yt, 64, &f.ylo, &f.yhi, &ydec);
    double left = 16 + (p->y_label ? FONT_AXIS + 10 : 0) + y_labels_width(yt, nyt, ydec) + TICK_LEN + 6;
    if (f.w <= 0) f.w = fmax(880, left + right + want_plot);
    f.w = fit_width(f.w, p->title, p->subtitle);
    f.x0 = left;
    f.x1 = f.w - right;
    double group_w = G ? (f.x1 - f.x0) / G : f.x1 - f.x0;
    int rotate = label_w + 6 > group_w;
    /* A rotated label reaches left of its group's centre by w cos 40°: keep the first one on the canvas. */
    const double ang = 40 * M_PI / 180;
    if (rotate) {
        double need = label_full_w * cos(ang) - group_w / 2 + 8;
        if (need > f.x0) {
            f.x0 = need;
            group_w = (f.x1 - f.x0) / G;
        }
    }
    double label_h = rotate ? label_full_w * sin(ang) + FONT_TICK : label_lines * (FONT_TICK + 3);

    legend_entry *le = evo_xcalloc((size_t)(B ? B : 1), sizeof *le);
    for (int b = 0; b < B; b++) le[b] = (legend_entry){p->bars[b], palette[b % EVO_ARRAY_LEN(palette)], 0, 0, 1};
    double top_text = 26 + (p->subtitle ? 18 : 0) + 10;
    int rows = legend_rows(le, B, f.x0, f.x1);
    f.y0 = top_text + rows * LEGEND_ROW + 12;
    double bottom = TICK_LEN + 6 + label_h + 12;
    f.y1 = f.h - bottom;
    if (f.y1 - f.y0 < 200) {
        f.h += 200 - (f.y1 - f.y0);
        f.y1 = f.h - bottom;
    }
    f.xlo = 0, f.xhi = 1; /* bars place themselves in px */

    double inner = group_w * 0.8;
    double bw = B ? fmin(inner / B, 56) : 0;
    char sample[32];
    snprintf(sample, sizeof sample, "%.2f", vmax);
    double vw = evo_plot_text_width(sample, FONT_VALUE);
    int value_labels = bw >= vw + 2 ? 1 : bw >= FONT_VALUE + 2 ? 2 : 0; /* 1 upright, 2 vertical, 0 none */
    if (value_labels == 2 && fy(&f, vmax) - (f.y0 + vw + 6) < 0) {
        /* vertical labels need room above the tallest bar: raise the top of the axis */
        nyt = evo_plot_ticks(0, vmax * 1.25, 6, 0, yt, 64, &f.ylo, &f.yhi, &ydec);
    }

    evo_str *o = out;
    svg_open(o, f.w, f.h);
    titles(o, f.w, p->title, p->subtitle);
    legend_draw(o, le, B, f.x0, f.x1, top_text);
    free(le);
    y_axis(o, &f, yt, nyt, ydec, p->y_label);

    for (int g = 0; g < G; g++) {
        double gx = f.x0 + g * group_w, cx = gx + group_w / 2;
        double bx0 = cx - bw * B / 2;
        for (int b = 0; b < B; b++) {
            double v = p->values[g * B + b];
            double x = bx0 + b * bw;
            if (!isfinite(v)) {
                char tr[160];
                snprintf(tr, sizeof tr, "fill=\"#888888\" transform=\"rotate(-90 %.1f %.1f)\"", x + bw / 2 + 3,
                         f.y1 - 4);
                text_at(o, x + bw / 2 + 3, f.y1 - 4, NULL, 9, tr, "n/a");
                continue;
            }
            double y = fy(&f, fmax(v, 0));
            evo_str_appendf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                            x + 0.5, y, fmax(bw - 1, 1), f.y1 - y, palette[b % EVO_ARRAY_LEN(palette)]);
            char tip[200];
            snprintf(tip, sizeof tip, "%s, %s: %.3f", p->bars[b], p->groups[g], v);
            xml_text(o, tip);
            evo_str_append(o, "</title></rect>\n");
            char val[32];
            snprintf(val, sizeof val, "%.2f", v);
            if (value_labels == 1) {
                text_at(o, x + bw / 2, y - 3, "middle", FONT_VALUE, HALO, val);
            } else if (value_labels == 2) {
                char tr[160];
                snprintf(tr, sizeof tr, HALO " transform=\"rotate(-90 %.1f %.1f)\"", x + bw / 2 + 3.5, y - 3);
                text_at(o, x + bw / 2 + 3.5, y - 3, NULL, FONT_VALUE, tr, val);
            }
        }
        double ly = f.y1 + TICK_LEN + 6 + FONT_TICK;
        if (rotate) {
            char tr[160];
            snprintf(tr, sizeof tr, "transform=\"rotate(-40 %.1f %.1f)\"", cx, ly - FONT_TICK / 2.0);
            text_at(o, cx, ly - FONT_TICK / 2.0 + 4, "end", 0, tr, p->groups[g]);
        } else {
            char lines[3][64];
            int n = split_label(p->groups[g], lines);
            for (int i = 0; i < n; i++) text_at(o, cx, ly + i * (FONT_TICK + 3), "middle", 0, NULL, lines[i]);
        }
        if (g > 0)
            evo_str_appendf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", gx, f.y1,
                            gx, f.y1 + TICK_LEN);
    }
    ref_line(o, &f, p->y_ref, p->y_ref_label);
    if (!any)
        text_at(o, (f.x0 + f.x1) / 2, f.y0 + (f.y1 - f.y0) * 0.3, "middle", 14, "fill=\"#666666\" " HALO,
                p->note ? p->note : "no data");
    evo_str_append(o, "</svg>\n");
    return EVO_OK;
}
