"""JSON-lines files (one JSON object a line, as the run folder keeps its records): reading them.

A malformed line is named by path and line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar('T')


def read_lines(path: str | Path, parse: Callable[[str], T],
               errors: tuple[type[Exception], ...] = (ValueError,), what: str = '') -> list[T]:
    """Return ``parse(line)`` for every non-blank line of the UTF-8 text file ``path``, in order.

    Parameters
    ----------
    path
        The file.
    parse
        Turns one line into one item.
    errors
        The exceptions of ``parse`` that mean a malformed line.
    what
        What a line should be ('a team event'); named in the error.

    Raises
    ------
    ValueError
        If ``parse`` raises one of ``errors``: ``'<path>:<line>: not <what> (<error>)'``, or
        ``'<path>:<line>: <error>'`` without ``what``.
    OSError
        If the file cannot be read.
    """
    items = []
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    items.append(parse(line))
                except errors as exc:
                    raise ValueError(f'{path}:{number}: ' + (f'not {what} ({exc})' if what else str(exc))) from exc
    return items
