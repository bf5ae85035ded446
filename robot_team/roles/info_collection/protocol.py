"""The info-collection role's protocol brain: read the badge scan, look the HCW up, check them in.

Deterministic (the offline default, the evaluation baseline and the LLM fallback), with the
info-collection robot's tools only (:mod:`robot_team.roles.info_collection.decl`);
:func:`robot_team.brains.protocol.protocol_robot_brain` returns it for the info-collection robot.
"""

from __future__ import annotations

from robot_team.brains.base import BrainReport, ProgressFn, RobotBrain, TaskSpec, failure_report, task_caller
from robot_team.catalog import Tool, negative_finding
from robot_team.contracts.reports import TaskStatus
from robot_team.tools.base import Toolbox


class InfoCollectionProtocolBrain(RobotBrain):
    """Read the badge scan at the room door and fetch the HCW's ID, name and specialty."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Identify who scanned at ``task.room``; a badge unknown to the directory is a failure."""
        call = task_caller(tools, task)
        progress('reading', f'reading the badge scan at {task.room}', 0.1)
        scan = call(Tool.READ_BADGE_SCAN.value, room=task.room)
        if not scan.ok:
            return failure_report(scan.error, failed_tool=Tool.READ_BADGE_SCAN.value)
        badge = scan.output['badge_id']
        progress('looking up', f'looking up badge {badge}', 0.5)
        record = call(Tool.LOOKUP_STAFF_BY_BADGE.value, badge_id=badge)
        if not record.ok:
            return failure_report(record.error, failed_tool=Tool.LOOKUP_STAFF_BY_BADGE.value, badge_scan=scan.output)
        info = record.output
        another = negative_finding(Tool.LOOKUP_STAFF_BY_BADGE.value, record.args, info, task.hcw_id)
        if another:
            return failure_report(another, badge_scan=scan.output, hcw=info)
        check_in = call(Tool.RECORD_CHECK_IN.value, room=task.room, hcw_id=info['hcw_id'], badge_id=badge)
        if not check_in.ok:
            return failure_report(f'could not record the check-in: {check_in.error}',
                                  failed_tool=Tool.RECORD_CHECK_IN.value, badge_scan=scan.output, hcw=info)
        progress('done', f"#{info['hcw_id']} {info['name']} identified", 1.0)
        return BrainReport(
            status=TaskStatus.SUCCESS,
            summary=f"Badge {badge} at {task.room}: HCW #{info['hcw_id']} {info['name']}, {info['specialty']}.",
            data={'hcw_id': info['hcw_id'], 'name': info['name'], 'specialty': info['specialty'],
                  'role': info.get('role', ''), 'badge_id': badge, 'room': task.room})
