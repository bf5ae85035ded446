"""What a task report holds and what grounds it: its data's items (:data:`ALIASES`) and its tool journal.

Reading a report's free-form ``data`` (:func:`find_item`, :func:`normalized`) and the evidence the
robot's tools left in it (``evidence.tool_journal``): the scalar values the tools returned, the
last successful output of a tool, whether a value is grounded in them, and whether the tools show
the problem a failure report states. Used by local reasoning (published) and its strict rule.
"""

from __future__ import annotations

from typing import Any

from robot_team.brains.base import BrainReport
from robot_team.rules.grounding import contradictions
from robot_team.contracts.reports import TaskStatus, TaskType
from robot_team.tools.base import ToolResult


def normalized(value) -> Any:
    """Return ``value`` comparable: booleans and None as is, numbers rounded to 2 places, text stripped, lowered."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    return str(value).strip().lower()


def scalar_leaves(value) -> set:
    """Return the normalized scalar leaves of a JSON value."""
    out: set = set()
    if isinstance(value, dict):
        for item in value.values():
            out |= scalar_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            out |= scalar_leaves(item)
    elif value is not None and value != '':
        out.add(normalized(value))
    return out


def tool_journal(report: dict) -> list[dict]:
    """Return the tool journal of a report (``evidence.tool_journal``; empty if none)."""
    return list((report.get('evidence') or {}).get('tool_journal') or [])


def journal_leaves(journal: list[dict], tools: tuple[str, ...] | None = None) -> set:
    """Return the normalized scalar leaves of the outputs and errors in ``journal`` (of ``tools`` only, if given)."""
    out: set = set()
    for entry in journal:
        if tools is None or entry.get('tool') in tools:
            out |= scalar_leaves(entry.get('output'))
            if entry.get('error'):
                out.add(normalized(entry['error']))
    return out


def last_ok_output(journal: list[dict], tool: str) -> dict | None:
    """Return the output of the last successful call of ``tool`` in ``journal`` (None: no such call)."""
    for entry in reversed(journal):
        if entry.get('tool') == tool and entry.get('ok'):
            return entry.get('output') or {}
    return None


def grounded(value, tool_leaves: set) -> bool:
    """Return whether ``value`` has scalar leaves and every one is among ``tool_leaves`` (what the tools returned)."""
    leaves = scalar_leaves(value)
    return bool(leaves) and leaves <= tool_leaves


def failure_supported(task_type: TaskType, journal: list[dict], data: dict) -> bool:
    """Whether the tools' ground truth shows a problem (so a failure report is grounded)."""
    if any(not entry.get('ok') for entry in journal):
        return True
    try:
        results = [ToolResult(tool=e.get('tool', ''), args=e.get('args') or {}, ok=bool(e.get('ok')),
                              output=e.get('output') or {}, error=e.get('error', '')) for e in journal]
        return bool(contradictions(task_type, BrainReport(status=TaskStatus.SUCCESS, data=data), results))
    except (KeyError, TypeError, IndexError, ValueError):
        return False


ALIASES = {
    'location': ('hcw_location', 'location', 'hcw_position', 'position'),
    'path': ('path', 'route', 'planned_path'),
    'id': ('hcw_id', 'id', 'staff_id', 'hcw_number'),
    'name': ('name', 'hcw_name', 'full_name'),
    'specialty': ('specialty', 'role', 'speciality'),
    'members': ('members', 'care_team', 'team', 'entries'),
    'layout': ('layout', 'layout_plan', 'plan'),
}
"""Keys under which a report's free-form ``data`` may hold each item (nested dicts are searched too)."""


def find_item(data, item: str):
    """Return the first value under one of ``item``'s aliases in ``data`` (breadth-first), else None."""
    queue = [data]
    while queue:
        node = queue.pop(0)
        if not isinstance(node, dict):
            continue
        for key in ALIASES[item]:
            if node.get(key) not in (None, '', [], {}):
                return node[key]
        queue += [v for v in node.values() if isinstance(v, dict)]
    return None
