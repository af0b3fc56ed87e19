/* templates.c — lookup of the embedded templates (see templates.h). */
#include "templates.h"

#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *text;
    size_t len;
} evo_embedded_file;
extern const evo_embedded_file evo_embedded_files[];

/* Files read from EVO_TEMPLATE_DIR are kept for the life of the process. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct override {
    char *name, *text;
    size_t len;
    struct override *next;
} * g_overrides;

evo_status evo_template_get(const char *name, const char **text, size_t *len, evo_err *err)
{
    const char *dir = getenv("EVO_TEMPLATE_DIR");
    if (dir && *dir) {
        evo_status s = EVO_OK;
        pthread_mutex_lock(&g_lock);
        struct override *o = g_overrides;
        while (o && strcmp(o->name, name) != 0) o = o->next;
        if (!o) {
            char path[4096];
            char *data = NULL;
            size_t n = 0;
            s = EVO_E_NOTFOUND;
            for (const char *d = dir; *d && s == EVO_E_NOTFOUND;) {
                const char *end = strchr(d, ':');
                const int dl = end ? (int)(end - d) : (int)strlen(d);
                snprintf(path, sizeof path, "%.*s/%s", dl, d, name);
                if (evo_file_exists(path)) s = evo_read_file(path, &data, &n, err);
                d += dl + (end ? 1 : 0);
            }
            if (s == EVO_OK) {
                o = evo_xcalloc(1, sizeof *o);
                o->name = evo_strdup(name);
                o->text = data;
                o->len = n;
                o->next = g_overrides;
                g_overrides = o;
            }
        }
        pthread_mutex_unlock(&g_lock);
        if (s != EVO_OK && s != EVO_E_NOTFOUND) return s;
        if (s == EVO_OK) {
            *text = o->text;
            if (len) *len = o->len;
            return EVO_OK;
        }
    }
    for (const evo_embedded_file *f = evo_embedded_files; f->name; f++) {
        if (strcmp(f->name, name) == 0) {
            *text = f->text;
            if (len) *len = f->len;
            return EVO_OK;
        }
    }
    return evo_fail(err, EVO_E_NOTFOUND, "no template named '%s' is built into evo", name);
}

static const char *g_names[64];

static void fill_names(void)
{
    int n = 0;
    for (const evo_embedded_file *f = evo_embedded_files; f->name && n < 63; f++) g_names[n++] = f->name;
    g_names[n] = NULL;
}

const char *const *evo_template_names(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_names);
    return g_names;
}
