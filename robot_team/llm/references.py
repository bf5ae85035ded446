"""References between the tool calls of one LLM reply: ``$N`` and ``$N.path``.

A robot may send a whole plan in one reply ("read the badge scan, look that badge up, record
the check-in, report"), where a later call needs an earlier call's output. As in LLMCompiler
(Kim et al., "An LLM Compiler for Parallel Function Calling", ICML 2024, which writes ``$1``
for the output of task 1), an argument may name such a value:

- ``"$2"``: the whole output of the reply's 2nd call;
- ``"$1.badge_id"``, ``"$1.staff.0.x"``: a field of it (dict keys and list indices, dot-separated).

An argument that is exactly a reference takes the value with its type (a number stays a
number); a reference inside longer text is replaced by the value as text. Calls are numbered
from 1 in the order the model sent them. Only calls that already ran and succeeded can be
referenced (calls run in order and a failure stops the reply); a reference to anything else is
an error that names the reference, so the call is not run and the model is told why.
Without any ``$`` reference an argument passes through unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

REFERENCE = re.compile(r'\$(\d+)((?:\.[A-Za-z0-9_]+)*)')
"""``$N`` then zero or more ``.key`` / ``.index`` parts."""


class CallReferenceError(ValueError):
    """A ``$N.path`` argument that names no value of an earlier successful call of the reply."""


def _lookup(outputs: dict[int, Any], names: dict[int, str], n: int, path: str, ref: str) -> Any:
    if n not in outputs:
        raise CallReferenceError(f"reference {ref}: call {n} has not run successfully before this one "
                                 f"(calls run in the order sent, numbered from 1)")
    value = outputs[n]
    walked = f'${n}'
    for part in [p for p in path.split('.') if p]:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            have = (f"keys {', '.join(map(str, value))}" if isinstance(value, dict)
                    else f'{len(value)} items' if isinstance(value, list) else type(value).__name__)
            raise CallReferenceError(f"reference {ref}: {walked} ({names.get(n, 'call')}) has no "
                                     f"'{part}' (it has {have})")
        walked += f'.{part}'
    return value


def resolve(value: Any, outputs: dict[int, Any], names: dict[int, str] | None = None) -> Any:
    """Return ``value`` (a call's parsed JSON arguments) with every ``$N.path`` replaced.

    Parameters
    ----------
    value
        Arguments as parsed from the model's JSON (dicts, lists, strings, numbers...).
    outputs
        Call number (1-based, order sent) -> output of that call, for the calls of this reply
        that already ran and succeeded.
    names
        Call number -> tool name, used in error messages.

    Raises
    ------
    CallReferenceError
        If a reference names a call that has not run successfully, or a field it lacks.
    """
    names = names or {}
    if isinstance(value, dict):
        return {k: resolve(v, outputs, names) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, outputs, names) for v in value]
    if not isinstance(value, str) or '$' not in value:
        return value
    whole = REFERENCE.fullmatch(value.strip())
    if whole:
        return _lookup(outputs, names, int(whole.group(1)), whole.group(2), value.strip())

    def as_text(match: re.Match) -> str:
        found = _lookup(outputs, names, int(match.group(1)), match.group(2), match.group(0))
        return found if isinstance(found, str) else json.dumps(found, separators=(',', ':'), ensure_ascii=False)
    return REFERENCE.sub(as_text, value)


def has_reference(value: Any) -> bool:
    """Return whether ``value`` (parsed arguments) holds any ``$N`` reference."""
    if isinstance(value, dict):
        return any(has_reference(v) for v in value.values())
    if isinstance(value, list):
        return any(has_reference(v) for v in value)
    return isinstance(value, str) and REFERENCE.search(value) is not None
