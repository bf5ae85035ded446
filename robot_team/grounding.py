"""Ground-truth checks of success claims (false completion guard).

A robot's claim of success is accepted only if its own tools' journal supports it: the Nav2
goal to the room succeeded, the badge scan resolved to the reported HCW, the display service
accepted the layout. Pure functions over :class:`~robot_team.tools.base.ToolResult` lists.
"""

from __future__ import annotations

from robot_team.brains.base import BrainReport
from robot_team.reports import TaskStatus, TaskType
from robot_team.tools.base import ToolResult


def _last_ok(journal: list[ToolResult], tool: str) -> ToolResult | None:
    for result in reversed(journal):
        if result.tool == tool and result.ok:
            return result
    return None


def contradictions(task_type: TaskType, claim: BrainReport, journal: list[ToolResult]) -> list[str]:
    """Return why ``claim`` is not supported by ``journal`` (empty: supported or not a success claim)."""
    if claim.status is not TaskStatus.SUCCESS:
        return []
    problems: list[str] = []
    if task_type is TaskType.NAVIGATION:
        nav = _last_ok(journal, 'navigate_to_pose')
        last_nav = next((r for r in reversed(journal) if r.tool == 'navigate_to_pose'), None)
        if nav is None:
            problems.append('no navigate_to_pose goal succeeded')
        elif last_nav is not nav:
            problems.append('the last navigate_to_pose goal did not succeed')
        door = _last_ok(journal, 'room_door_pose')
        if nav is not None and door is not None:
            goal = nav.output.get('goal', [None, None])
            if abs(goal[0] - door.output['x']) > 0.5 or abs(goal[1] - door.output['y']) > 0.5:
                problems.append(f"the last successful goal {goal[:2]} is not the door of {door.output['room']}")
        if _last_ok(journal, 'page_staff') is None or not _last_ok(journal, 'page_staff').output.get('acknowledged'):
            problems.append('the HCW never acknowledged a page')
    elif task_type is TaskType.INFO_COLLECTION:
        lookup = _last_ok(journal, 'lookup_staff_by_badge')
        if _last_ok(journal, 'read_badge_scan') is None:
            problems.append('no badge scan was read')
        if lookup is None:
            problems.append('no badge was found in the staff directory')
        else:
            for key in ('hcw_id', 'name', 'specialty'):
                if str(claim.data.get(key, '')) != str(lookup.output.get(key, '')):
                    problems.append(f"reported {key} {claim.data.get(key)!r} differs from the directory's "
                                    f'{lookup.output.get(key)!r}')
    elif task_type is TaskType.DISPLAY:
        shown = _last_ok(journal, 'show_display')
        if shown is None or not shown.output.get('success'):
            problems.append('the display service never accepted a layout')
    return problems
