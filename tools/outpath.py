"""outpath.py — the output rule of evo's C side (engine/core/paths.h) for the tools/ scripts: a path they write is a
regular file (replaced atomically) or a new name in an existing directory; a symbolic link, directory, FIFO, device
or socket is refused and left alone, and so is a name whose directory does not exist."""
import os
import stat
import tempfile


class OutputError(Exception):
    pass


def check(path, what="output"):
    """Raises OutputError when `path` may not be written under the rule above."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path) or "."
        if not os.path.isdir(parent):
            raise OutputError(f"{what} {path}: its directory {parent} does not exist")
        return
    if stat.S_ISLNK(st.st_mode):
        raise OutputError(f"{what} {path}: is a symbolic link; give the file itself")
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise OutputError(f"{what} {path}: is {kind}")


def write(path, data, what="output"):
    """Checks path, then writes data (str or bytes) to a temporary file beside it and renames it into place."""
    check(path, what)
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
