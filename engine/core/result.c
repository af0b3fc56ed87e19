/* result.c — filling a per-shape result's identity (the shape's text and its fields as JSON) from a shape. */
#include "result.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>

void evo_result_free(evo_result *r)
{
    free(r->detail);
    r->detail = NULL;
}

void evo_shape_result_set_shape(evo_shape_result *r, const evo_shape *s)
{
    evo_shape_format(s, r->shape, sizeof r->shape);
    evo_str t = {0};
    evo_shape_fields_json(s, &t);
    snprintf(r->fields, sizeof r->fields, "%s", evo_str_cstr(&t));
    evo_str_free(&t);
}
