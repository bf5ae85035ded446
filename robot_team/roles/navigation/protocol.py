"""The navigation role's protocol brain: locate and page the HCW, escort them to the room.

Deterministic (the offline default, the evaluation baseline and the LLM fallback), with the
navigation robot's tools only (:mod:`robot_team.roles.navigation.decl`);
:func:`robot_team.brains.protocol.protocol_robot_brain` returns it for the navigation robot.
"""

from __future__ import annotations

import math

from robot_team.brains.base import BrainReport, ProgressFn, RobotBrain, TaskSpec, failure_report, task_caller
from robot_team.catalog import Tool, negative_finding
from robot_team.contracts.reports import TaskStatus
from robot_team.tools.base import Toolbox

PAGE_TIMEOUT_S = 30.0
"""How long the navigation robot waits for a page acknowledgement, sim s."""


class NavigationProtocolBrain(RobotBrain):
    """Locate the HCW, plan, page; escort them to the room door through navigate_to_pose goals."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Find HCW ``task.hcw_id`` and escort them to ``task.room``; report failure on any issue."""
        call = task_caller(tools, task)
        hcw, room = task.hcw_id, task.room
        progress('locating', f'locating HCW #{hcw}', 0.05)
        found = call(Tool.LOCATE_STAFF.value, hcw_ids=[hcw])
        if not found.ok:
            return failure_report(f'cannot locate HCW #{hcw}: {found.error}', failed_tool=Tool.LOCATE_STAFF.value)
        unknown = negative_finding(Tool.LOCATE_STAFF.value, found.args, found.output, hcw)
        if unknown:
            return failure_report(unknown, failed_tool=Tool.LOCATE_STAFF.value)
        where = next(s for s in found.output['staff'] if s['hcw_id'] == hcw)
        location = {k: where[k] for k in ('area', 'x', 'y')}
        door = call(Tool.ROOM_DOOR_POSE.value, room=room)
        if not door.ok:
            return failure_report(f'cannot navigate to {room}: {door.error}', failed_tool=Tool.ROOM_DOOR_POSE.value,
                                  hcw_location=location)
        progress('planning', f'planning a path to #{hcw} in {where["area"]}', 0.1)
        to_hcw = call(Tool.PLAN_PATH.value, goal_x=where['x'], goal_y=where['y'])
        escort = call(Tool.PLAN_PATH.value, start_x=where['x'], start_y=where['y'],
                      goal_x=door.output['x'], goal_y=door.output['y'])
        path = {'to_hcw': to_hcw.output if to_hcw.ok else to_hcw.error,
                'escort': escort.output if escort.ok else escort.error}
        if not (to_hcw.ok and escort.ok):
            return failure_report(f'no path on the map: {to_hcw.error or escort.error}',
                                  failed_tool=Tool.PLAN_PATH.value, hcw_location=location, path=path)

        progress('paging', f'paging #{hcw} ({where["availability"]})', 0.2)
        page = call(Tool.PAGE_STAFF.value, hcw_id=hcw, timeout_s=PAGE_TIMEOUT_S,
                    message=f'Patient in {room} needs you; a robot will escort you.')
        if not page.ok:   # not acknowledged (or not delivered): the HCW cannot come
            detail = where['detail'] or where['availability']
            alternatives = self._alternatives(call, where, hcw)
            issue = (f'HCW #{hcw} unavailable: {detail}; paged, no response within {PAGE_TIMEOUT_S:.0f} s'
                     if page.output.get('delivered') else f'cannot page HCW #{hcw}: {page.error}')
            return failure_report(issue, summary=f'Located #{hcw} in {where["area"]} and planned a '
                                  f'{path["to_hcw"]["length_m"]} m path, but #{hcw} did not respond.',
                                  hcw_location=location, path=path, availability=where['availability'],
                                  alternatives=alternatives, failed_tool=Tool.PAGE_STAFF.value,
                                  page_delivered=bool(page.output.get('delivered')))

        progress('approaching', f'driving to #{hcw} in {where["area"]}', 0.35)
        reach = call(Tool.NAVIGATE_TO_POSE.value, x=where['x'], y=where['y'], yaw=0.0)
        if not reach.ok:
            return failure_report(f'could not reach HCW #{hcw}: {reach.error}', failed_tool=Tool.NAVIGATE_TO_POSE.value,
                                  hcw_location=location, path=path,
                                  nav_result=reach.output)
        progress('escorting', f'escorting #{hcw} to {room}', 0.6)
        arrive = call(Tool.NAVIGATE_TO_POSE.value, x=door.output['x'], y=door.output['y'], yaw=door.output['yaw'])
        if not arrive.ok:
            return failure_report(f'no path to {room}: {arrive.error}', failed_tool=Tool.NAVIGATE_TO_POSE.value,
                                  hcw_location=location, path=path,
                                  nav_result=arrive.output)
        progress('arrived', f'#{hcw} escorted to {room}', 1.0)
        return BrainReport(
            status=TaskStatus.SUCCESS,
            summary=(f'Escorted HCW #{hcw} from {where["area"]} to {room} '
                     f'({path["escort"]["length_m"]} m escort).'),
            data={'hcw_id': hcw, 'hcw_location': location, 'path': path, 'room': room,
                  'arrived_at': door.output, 'page_reply': page.output['reply']})

    @staticmethod
    def _alternatives(call, where: dict, exclude: str) -> list[dict]:
        """Return available HCWs of the same specialty, nearest first (local reasoning)."""
        same = call(Tool.LOCATE_STAFF.value, specialty=where['specialty'])
        if not same.ok:
            return []
        options = [s for s in same.output['staff'] if s['hcw_id'] != exclude and s['availability'] == 'available']
        options.sort(key=lambda s: math.hypot(s['x'] - where['x'], s['y'] - where['y']))
        return [{'hcw_id': s['hcw_id'], 'area': s['area'], 'specialty': s['specialty']} for s in options]
