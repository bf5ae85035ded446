"""Files other programs read while the team runs: written whole, or not at all.

A run folder is read while it is written: by a person's tools, by a deployment's watchers of
``cases/``, by a restarted node taking up its state. :func:`write_atomically` writes a file
under a temporary name beside it, then renames it over ``path`` (``os.replace``, atomic on POSIX
within one file system), so a reader finds the previous content or the new one, never a part.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomically(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (``str``: as UTF-8) to ``path``, replacing it whole; return ``path`` as a Path.

    The temporary file, ``.<name>.<pid>.<thread>.tmp`` in ``path``'s folder, is made with the
    usual permissions (as ``open`` makes them) and removed if the write fails; two threads or
    processes writing the same path never share one (one a killed writer left behind under the
    same process and thread IDs is written over).

    Raises
    ------
    OSError
        If the folder does not exist or the file cannot be written (nothing is left behind).
    """
    path = Path(path)
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.{threading.get_ident()}.tmp')
    payload = data.encode('utf-8') if isinstance(data, str) else data
    try:
        with open(tmp, 'wb') as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
