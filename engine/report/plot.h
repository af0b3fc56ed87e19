/* plot.h — hand-written SVG charts for `evo plot`: an x/y chart (lines with markers, or a scatter) and a chart of
 * grouped bars. Pure functions of their inputs: no store, no files, no libraries.
 *
 * Contract: a chart description is borrowed for the call; the SVG text is appended to the caller's evo_str.
 * NaN values are gaps: a line breaks there, a bar is left out (the chart says "n/a"). A chart whose series hold no
 * finite point still draws its axes and prints its note (or "no data") in the plot area. Layout adapts to the
 * text it must hold (tick labels, legend, long or many group labels), so nothing is clipped or overlaps.
 * Thread-safe: nothing is shared.
 */
#ifndef EVO_PLOT_H
#define EVO_PLOT_H

#include "evo.h"
#include "util.h"

enum { EVO_PLOT_NONE = 0, EVO_PLOT_CIRCLE, EVO_PLOT_SQUARE, EVO_PLOT_DIAMOND };

typedef struct {
    const char *name;    /* legend text; NULL leaves the series out of the legend */
    const double *x, *y; /* n points; a non-finite x or y is a gap */
    int n;
    const char *color; /* any SVG colour; NULL picks the palette's colour for the series index */
    int line;          /* join consecutive finite points */
    int marker;        /* EVO_PLOT_NONE, _CIRCLE, _SQUARE, _DIAMOND */
    double marker_r;   /* marker radius in px; 0 = 3.5 */
    double opacity;    /* of the markers; 0 = 1 */
    double jitter;     /* scatter: spread points of equal x over +-jitter x units, in order; 0 = none */
} evo_plot_series;

typedef struct {
    const char *title, *subtitle;
    const char *x_label, *y_label;
    const evo_plot_series *series;
    int n_series;
    int integer_x;   /* x ticks at whole numbers only (generations) */
    int y_from_zero; /* the y axis starts at 0 */
    double y_ref;    /* a dashed horizontal line here; NaN = none */
    const char *y_ref_label;
    const char *note;     /* printed in the plot area when no series has a finite point; NULL = "no data" */
    const char *footnote; /* a line under the chart (e.g. what was left out); NULL = none */
    int width, height;    /* 0 = 880 x 500 */
} evo_plot_xy;

typedef struct {
    const char *title, *subtitle;
    const char *y_label;
    const char *const *groups; /* one group of bars per entry (a shape); labels may hold "name(dims) flags" */
    int n_groups;
    const char *const *bars; /* legend text of each bar of a group (an elite) */
    int n_bars;
    const double *values; /* [group * n_bars + bar]; NaN = no bar */
    double y_ref;         /* a dashed horizontal line here; NaN = none */
    const char *y_ref_label;
    const char *note;  /* printed in the plot area when there is no bar at all; NULL = "no data" */
    int width, height; /* 0 = chosen from the counts */
} evo_plot_bars;

/* Append the chart as a complete SVG document. EVO_E_INTERNAL for a malformed description (n < 0, NULL arrays). */
evo_status evo_plot_xy_svg(const evo_plot_xy *p, evo_str *out, evo_err *err);
evo_status evo_plot_bars_svg(const evo_plot_bars *p, evo_str *out, evo_err *err);

/* Axis ticks: round values (1, 2, 2.5 or 5 times a power of ten; whole numbers >= 1 when integer) covering
 * [lo, hi] with about `target` intervals. Widens [lo, hi] to the outer ticks (*lo_out, *hi_out), writes at most
 * max ticks and returns how many; *decimals is how many digits after the point the labels need. */
int evo_plot_ticks(double lo, double hi, int target, int integer, double *ticks, int max, double *lo_out,
                   double *hi_out, int *decimals);

/* Estimated width in px of text in a sans-serif font of size px (the layout's measure; no font is consulted). */
double evo_plot_text_width(const char *text, double size);

#endif
