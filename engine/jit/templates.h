/* templates.h — the files of templates/ and the tasks' CUDA files (tasks/<name>/: *.cu, *.cuh, *_abi.h, *.py),
 * embedded into the binary at build time by file name (tools/embed.cmake). EVO_TEMPLATE_DIR in the environment (a directory, or
 * several separated by ':') overrides them with files of the same name read from disk (for editing a template
 * without rebuilding); a name not found there is the embedded one. The cache key always covers the text used. Returned text is static or owned by the
 * module (never freed by the caller). Thread-safe.
 */
#ifndef EVO_TEMPLATES_H
#define EVO_TEMPLATES_H

#include "evo.h"

#include <stddef.h>

/* The text of the embedded file <name>, NUL-terminated; EVO_E_NOTFOUND when there is no such file. */
evo_status evo_template_get(const char *name, const char **text, size_t *len, evo_err *err);
/* Names of all embedded files, NULL-terminated. */
const char *const *evo_template_names(void);

#endif
