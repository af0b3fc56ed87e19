/* templates.h — the files of templates/, embedded into the binary at build time (tools/embed.cmake).
 * EVO_TEMPLATE_DIR in the environment overrides them with files read from disk (for editing a template without
 * rebuilding); the cache key always covers the text actually used. Returned text is static or owned by the
 * module (never freed by the caller). Thread-safe.
 */
#ifndef EVO_TEMPLATES_H
#define EVO_TEMPLATES_H

#include "evo.h"

#include <stddef.h>

/* The text of templates/<name>, NUL-terminated; EVO_E_NOTFOUND when there is no such file. */
evo_status evo_template_get(const char *name, const char **text, size_t *len, evo_err *err);
/* Names of all embedded files, NULL-terminated. */
const char *const *evo_template_names(void);

#endif
