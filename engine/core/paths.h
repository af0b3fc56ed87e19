/* paths.h — the rules for files evo names on the command line: what an output path may be, writing a new file
 * without ever replacing one, whether two names are one file, reading a file of bounded size.
 *
 * Output rule (every file evo writes where the user names it: export -o, plot -o, init, a new --db): the path is
 * a regular file, replaced atomically (evo_write_file_atomic: it keeps the replaced file's mode; hard links to the
 * old file keep the old text), or a name that does not exist yet in an existing directory; never a file the same
 * command reads (evo_path_check_not_input), never "-" (which names standard output where a command says so). A
 * symbolic link, directory, FIFO, device or socket is refused with EVO_E_USAGE and left alone; so is a name whose
 * directory does not exist. A directory evo may not write is EVO_E_IO, naming the directory and the
 * reason. Checks are made before anything is created, so a refused command leaves nothing behind.
 *
 * Nothing here keeps state; everything is thread-safe.
 */
#ifndef EVO_PATHS_H
#define EVO_PATHS_H

#include "evo.h"

#include <stdbool.h>
#include <stddef.h>

/* May evo write `path` (the output rule above)? what (may be NULL) names the file in messages ("export -o"). With
 * follow_link, a symbolic link to a regular file counts as that file (a database: SQLite writes through it). */
evo_status evo_path_check_output(const char *what, const char *path, bool follow_link, evo_err *err);

/* Writes a file that must not exist yet, atomically (a temporary file linked into place): never replaces
 * anything, not even a file created meanwhile (EVO_E_USAGE "PATH exists"). */
evo_status evo_write_file_new(const char *path, const void *data, size_t len, evo_err *err);

/* True when both names exist and are one file (same device and inode, whatever links or spellings lead there). */
bool evo_path_same_file(const char *a, const char *b);

/* Inputs are never outputs: EVO_E_USAGE when out names the same file as in (evo_path_same_file), or, when in is a
 * database (is_db), as its -wal, -shm or -journal companion. what and in_what name them in the message
 * ("export -o", "--db"). Call it for every input of a command that writes, before anything is written. */
evo_status evo_path_check_not_input(const char *what, const char *out, const char *in_what, const char *in, bool is_db,
                                    evo_err *err);

/* A file a command reads (or writes beside a database) is never named as that database's -wal, -shm or -journal
 * companion: SQLite would take it for the database's journal and use or delete it. EVO_E_USAGE when path is db's
 * companion now or by name (what and db_what name them in the message: "--config", "--db"). */
evo_status evo_path_check_not_companion(const char *what, const char *path, const char *db_what, const char *db,
                                        evo_err *err);

/* "-" as a path: commands that can write to standard output say so (export -o -, init -); everywhere else it is
 * refused (EVO_E_USAGE), never taken as a file named "-". */
bool evo_path_is_stdio(const char *path);

/* evo_read_file that reads at most max bytes: a larger regular file is refused (EVO_E_USAGE) before it is read, a
 * pipe or device (/dev/zero) once more than max bytes came. */
evo_status evo_read_file_max(const char *path, size_t max, char **data, size_t *len, evo_err *err);

/* True when directory dir holds a non-empty file whose name ends in suffix (".log"): worker logs worth keeping. */
bool evo_dir_has_nonempty(const char *dir, const char *suffix);

/* Path of an executable: `given` when not NULL (it must be executable: EVO_E_NOTFOUND otherwise), else name
 * searched on PATH, else $CUDA_HOME/bin/name (CUDA_HOME default /usr/local/cuda). EVO_E_NOTFOUND when none; the
 * message says what to install and which option names the program ("ncu not found: install Nsight Compute or
 * pass --ncu PATH"). */
evo_status evo_path_find_tool(const char *name, const char *given, char **path, evo_err *err);

#endif
