"""The display role's protocol brain: fetch the room's care team, lay it out, show it on the screen.

Deterministic (the offline default, the evaluation baseline and the LLM fallback), with the
display robot's tools only (:mod:`robot_team.roles.display.decl`);
:func:`robot_team.brains.protocol.protocol_robot_brain` returns it for the display robot.
"""

from __future__ import annotations

from robot_team.brains.base import BrainReport, ProgressFn, RobotBrain, TaskSpec, failure_report, task_caller
from robot_team.catalog import Tool, negative_finding
from robot_team.contracts.reports import TaskStatus
from robot_team.tools.base import Toolbox

ROLE_ORDER = ('physician', 'nurse', 'technician', 'therapist')
"""The care team's roles in the order the layout shows them (a member of no such role last)."""


def care_team_order(members: list[dict]) -> list[dict]:
    """Return care-team ``members`` (dicts with ``role`` and ``specialty``) in :data:`ROLE_ORDER`.

    A member's rank is the first role of :data:`ROLE_ORDER` named in their role or specialty
    (any case); a member of no such role comes last. Stable: equal ranks keep their order.
    """
    def rank(member):
        text = f"{member['role']} {member['specialty']}".lower()
        return next((i for i, key in enumerate(ROLE_ORDER) if key in text), len(ROLE_ORDER))
    return sorted(members, key=rank)


class DisplayProtocolBrain(RobotBrain):
    """Fetch the room's care team, plan a layout, show it through the display service."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Show ``task.room``'s care team; an empty team or a refused display is a failure."""
        call = task_caller(tools, task)
        progress('fetching', f'fetching the care team of {task.room}', 0.2)
        team = call(Tool.FETCH_CARE_TEAM.value, room=task.room)
        if not team.ok:
            return failure_report(team.error, failed_tool=Tool.FETCH_CARE_TEAM.value)
        members = team.output['members']
        empty = negative_finding(Tool.FETCH_CARE_TEAM.value, team.args, team.output, task.hcw_id)
        if empty:
            return failure_report(empty, failed_tool=Tool.FETCH_CARE_TEAM.value)
        ordered = care_team_order(members)
        layout = 'one row per member, by role: ' + ', '.join(f"{m['role']} ({m['name']})" for m in ordered)
        title = f'{task.room} care team'
        if task.context.get('patient_id'):
            title += f" - patient {task.context['patient_id']}"
        progress('showing', f'showing {len(ordered)} members on the {task.room} screen', 0.6)
        shown = call(Tool.SHOW_DISPLAY.value, room=task.room, title=title, layout=layout,
                     entries=[{k: m[k] for k in ('role', 'hcw_id', 'name', 'specialty')} for m in ordered])
        if not shown.ok:
            return failure_report(shown.error, failed_tool=Tool.SHOW_DISPLAY.value, members=ordered, layout=layout)
        progress('done', 'care team displayed', 1.0)
        return BrainReport(
            status=TaskStatus.SUCCESS,
            summary=f'Displayed {len(ordered)} care-team members on the {task.room} screen.',
            data={'room': task.room, 'members': ordered, 'layout': layout, 'title': title})
