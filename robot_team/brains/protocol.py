"""The protocol brain: a deterministic reference policy that follows the ED workflow exactly.

It is the offline default, the evaluation baseline and the LLM fallback. Each robot brain uses
only its robot's tools; the manager brain only delegates, judges, handles issues (proposes an
alternative HCW or escalates) and writes the reflection.

Workflow (Bai, Ding, Taylor, ED onboarding case): navigation (locate, page and escort the HCW
to the room) -> info collection (badge scan -> ID, name, specialty) -> display (care team
layout on the room screen) -> reflection.
"""

from __future__ import annotations

import math

from robot_team.brains.base import (
    BrainReport,
    Delegate,
    Escalate,
    Finish,
    ManagerAction,
    ManagerBrain,
    ManagerObservation,
    ProgressFn,
    Reflect,
    RobotBrain,
    TaskRecord,
    TaskSpec,
)
from robot_team.catalog import TASK_OWNER, Tool, negative_finding
from robot_team.escalation_model import closing_abort
from robot_team.names import Robot, role_robots
from robot_team.reports import OPERATIONAL_TASKS, IssueCode, Reflection, TaskOutcome, TaskStatus, TaskType
from robot_team.tools.base import Toolbox

PAGE_TIMEOUT_S = 30.0
"""How long the navigation robot waits for a page acknowledgement, sim s."""


def _failure(issue: str, summary: str = '', **data) -> BrainReport:
    """Return a failure report.

    ``data`` holds ``failed_tool`` (the catalog name of the call that failed), which the protocol
    manager's rules read (never the issue's text).
    """
    return BrainReport(status=TaskStatus.FAILURE, issue=issue, summary=summary or issue, data=data)


def _steps(step: ManagerAction | None) -> list[ManagerAction]:
    """Return ``step`` as the actions of a decision (none: the case waits)."""
    return [] if step is None else [step]


def _unavailable(task: TaskRecord) -> bool:
    """Return whether ``task`` failed because its HCW could not come and others of their specialty can.

    A failed navigation whose report names ``alternatives`` (available HCWs of the same specialty,
    from the RTLS), unless it says the page was never delivered (``page_delivered`` false: the
    pager is down, so paging another HCW would fail too). Reports of any brain carry these fields
    or not; the issue's words are never read.
    """
    return task.state == 'failure' and task.task_type is TaskType.NAVIGATION \
        and bool(task.data.get('alternatives')) and task.data.get('page_delivered') is not False


class NavigationProtocolBrain(RobotBrain):
    """Locate the HCW, plan, page; escort them to the room door through navigate_to_pose goals."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Find HCW ``task.hcw_id`` and escort them to ``task.room``; report failure on any issue."""
        call = lambda name, **kw: tools.call(name, task_id=task.task_id, **kw)  # noqa: E731
        hcw, room = task.hcw_id, task.room
        progress('locating', f'locating HCW #{hcw}', 0.05)
        found = call(Tool.LOCATE_STAFF.value, hcw_ids=[hcw])
        if not found.ok:
            return _failure(f'cannot locate HCW #{hcw}: {found.error}', failed_tool=Tool.LOCATE_STAFF.value)
        unknown = negative_finding(Tool.LOCATE_STAFF.value, found.args, found.output, hcw)
        if unknown:
            return _failure(unknown, failed_tool=Tool.LOCATE_STAFF.value)
        where = next(s for s in found.output['staff'] if s['hcw_id'] == hcw)
        location = {k: where[k] for k in ('area', 'x', 'y')}
        door = call(Tool.ROOM_DOOR_POSE.value, room=room)
        if not door.ok:
            return _failure(f'cannot navigate to {room}: {door.error}', failed_tool=Tool.ROOM_DOOR_POSE.value,
                            hcw_location=location)
        progress('planning', f'planning a path to #{hcw} in {where["area"]}', 0.1)
        to_hcw = call(Tool.PLAN_PATH.value, goal_x=where['x'], goal_y=where['y'])
        escort = call(Tool.PLAN_PATH.value, start_x=where['x'], start_y=where['y'],
                      goal_x=door.output['x'], goal_y=door.output['y'])
        path = {'to_hcw': to_hcw.output if to_hcw.ok else to_hcw.error,
                'escort': escort.output if escort.ok else escort.error}
        if not (to_hcw.ok and escort.ok):
            return _failure(f'no path on the map: {to_hcw.error or escort.error}', failed_tool=Tool.PLAN_PATH.value,
                            hcw_location=location, path=path)

        progress('paging', f'paging #{hcw} ({where["availability"]})', 0.2)
        page = call(Tool.PAGE_STAFF.value, hcw_id=hcw, timeout_s=PAGE_TIMEOUT_S,
                    message=f'Patient in {room} needs you; a robot will escort you.')
        if not page.ok:   # not acknowledged (or not delivered): the HCW cannot come
            detail = where['detail'] or where['availability']
            alternatives = self._alternatives(call, where, hcw)
            issue = (f'HCW #{hcw} unavailable: {detail}; paged, no response within {PAGE_TIMEOUT_S:.0f} s'
                     if page.output.get('delivered') else f'cannot page HCW #{hcw}: {page.error}')
            return _failure(issue, summary=f'Located #{hcw} in {where["area"]} and planned a '
                            f'{path["to_hcw"]["length_m"]} m path, but #{hcw} did not respond.',
                            hcw_location=location, path=path, availability=where['availability'],
                            alternatives=alternatives, failed_tool=Tool.PAGE_STAFF.value,
                            page_delivered=bool(page.output.get('delivered')))

        progress('approaching', f'driving to #{hcw} in {where["area"]}', 0.35)
        reach = call(Tool.NAVIGATE_TO_POSE.value, x=where['x'], y=where['y'], yaw=0.0)
        if not reach.ok:
            return _failure(f'could not reach HCW #{hcw}: {reach.error}', failed_tool=Tool.NAVIGATE_TO_POSE.value,
                            hcw_location=location, path=path,
                            nav_result=reach.output)
        progress('escorting', f'escorting #{hcw} to {room}', 0.6)
        arrive = call(Tool.NAVIGATE_TO_POSE.value, x=door.output['x'], y=door.output['y'], yaw=door.output['yaw'])
        if not arrive.ok:
            return _failure(f'no path to {room}: {arrive.error}', failed_tool=Tool.NAVIGATE_TO_POSE.value,
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


class InfoCollectionProtocolBrain(RobotBrain):
    """Read the badge scan at the room door and fetch the HCW's ID, name and specialty."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Identify who scanned at ``task.room``; a badge unknown to the directory is a failure."""
        call = lambda name, **kw: tools.call(name, task_id=task.task_id, **kw)  # noqa: E731
        progress('reading', f'reading the badge scan at {task.room}', 0.1)
        scan = call(Tool.READ_BADGE_SCAN.value, room=task.room)
        if not scan.ok:
            return _failure(scan.error, failed_tool=Tool.READ_BADGE_SCAN.value)
        badge = scan.output['badge_id']
        progress('looking up', f'looking up badge {badge}', 0.5)
        record = call(Tool.LOOKUP_STAFF_BY_BADGE.value, badge_id=badge)
        if not record.ok:
            return _failure(record.error, failed_tool=Tool.LOOKUP_STAFF_BY_BADGE.value, badge_scan=scan.output)
        info = record.output
        another = negative_finding(Tool.LOOKUP_STAFF_BY_BADGE.value, record.args, info, task.hcw_id)
        if another:
            return _failure(another, badge_scan=scan.output, hcw=info)
        check_in = call(Tool.RECORD_CHECK_IN.value, room=task.room, hcw_id=info['hcw_id'], badge_id=badge)
        if not check_in.ok:
            return _failure(f'could not record the check-in: {check_in.error}', failed_tool=Tool.RECORD_CHECK_IN.value,
                            badge_scan=scan.output, hcw=info)
        progress('done', f"#{info['hcw_id']} {info['name']} identified", 1.0)
        return BrainReport(
            status=TaskStatus.SUCCESS,
            summary=f"Badge {badge} at {task.room}: HCW #{info['hcw_id']} {info['name']}, {info['specialty']}.",
            data={'hcw_id': info['hcw_id'], 'name': info['name'], 'specialty': info['specialty'],
                  'role': info.get('role', ''), 'badge_id': badge, 'room': task.room})


ROLE_ORDER = ('physician', 'nurse', 'technician', 'therapist')


class DisplayProtocolBrain(RobotBrain):
    """Fetch the room's care team, plan a layout, show it through the display service."""

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Show ``task.room``'s care team; an empty team or a refused display is a failure."""
        call = lambda name, **kw: tools.call(name, task_id=task.task_id, **kw)  # noqa: E731
        progress('fetching', f'fetching the care team of {task.room}', 0.2)
        team = call(Tool.FETCH_CARE_TEAM.value, room=task.room)
        if not team.ok:
            return _failure(team.error, failed_tool=Tool.FETCH_CARE_TEAM.value)
        members = team.output['members']
        empty = negative_finding(Tool.FETCH_CARE_TEAM.value, team.args, team.output, task.hcw_id)
        if empty:
            return _failure(empty, failed_tool=Tool.FETCH_CARE_TEAM.value)

        def rank(member):
            text = f"{member['role']} {member['specialty']}".lower()
            return next((i for i, key in enumerate(ROLE_ORDER) if key in text), len(ROLE_ORDER))
        ordered = sorted(members, key=rank)
        layout = 'one row per member, by role: ' + ', '.join(f"{m['role']} ({m['name']})" for m in ordered)
        title = f'{task.room} care team'
        if task.context.get('patient_id'):
            title += f" - patient {task.context['patient_id']}"
        progress('showing', f'showing {len(ordered)} members on the {task.room} screen', 0.6)
        shown = call(Tool.SHOW_DISPLAY.value, room=task.room, title=title, layout=layout,
                     entries=[{k: m[k] for k in ('role', 'hcw_id', 'name', 'specialty')} for m in ordered])
        if not shown.ok:
            return _failure(shown.error, failed_tool=Tool.SHOW_DISPLAY.value, members=ordered, layout=layout)
        progress('done', 'care team displayed', 1.0)
        return BrainReport(
            status=TaskStatus.SUCCESS,
            summary=f'Displayed {len(ordered)} care-team members on the {task.room} screen.',
            data={'room': task.room, 'members': ordered, 'layout': layout, 'title': title})


class ManagerProtocolBrain(ManagerBrain):
    """Delegate the workflow in order, handle failures, write the reflection.

    Parameters
    ----------
    issue_handling
        ``'propose_alternative'`` (default): after a navigation failure with an available
        alternative HCW, delegate again with that HCW, else escalate; ``'escalate'``: always
        escalate; ``'ignore'``: do nothing (lets tests show the supervisor's deadline).
    """

    def __init__(self, issue_handling: str = 'propose_alternative'):
        self.issue_handling = issue_handling

    def decide(self, obs: ManagerObservation) -> list[ManagerAction]:
        """Return the next workflow step for ``obs`` (none while a task runs or its robot is lost).

        A delegation to a robot the supervisor noticed lost (every robot of its role, with a
        fleet) waits until it is back (the manager's deadlines bound the wait: the supervisor
        escalates a robot that does not come back). An HCW another open case has
        (``obs.engaged_hcws``) is replaced by an available HCW of the specialty from the staff
        board, or waited for; an alternative proposed after a failure is never one of them.
        """
        actions = self._next(obs)
        if any(isinstance(a, Delegate) and set(role_robots(a.robot, obs.robots)) <= set(obs.lost_robots)
               for a in actions):
            return []
        return actions

    def _next(self, obs: ManagerObservation) -> list[ManagerAction]:
        if obs.patient is None:
            return []
        if obs.reflection_done:
            return [Finish(outcome=self._outcome(obs), reason='reflection written')]
        if any(t.state == 'running' for t in obs.tasks):
            return []
        if closing_abort(obs.escalations):
            return [Reflect(reflection=self.reflection(obs))]
        for task_type in OPERATIONAL_TASKS:
            latest = obs.latest(task_type)
            if latest is None:
                return _steps(self._delegate(obs, task_type))
            if latest.state == 'failure':
                return self._handle_failure(obs, latest)
        return [Reflect(reflection=self.reflection(obs))]

    # -- steps --

    def _delegate(self, obs: ManagerObservation, task_type: TaskType, hcw_id: str = '',
                  reason: str = '', handles: str = '') -> Delegate | None:
        patient = obs.patient
        nav = obs.latest(TaskType.NAVIGATION)
        if not hcw_id:
            hcw_id = nav.hcw_id if (nav and task_type is not TaskType.NAVIGATION) else patient.assigned_hcw_id
        if task_type is TaskType.NAVIGATION and hcw_id in obs.engaged_hcws:   # with another case's patient
            stand_in = next((s.hcw_id for s in obs.staff if s.hcw_id not in obs.engaged_hcws
                             and s.availability == 'available'
                             and s.specialty.casefold() == patient.required_specialty.casefold()), '')
            if not stand_in:
                return None   # no one else of the specialty: wait until that case lets them go
            reason = (f'HCW #{hcw_id} is with case {obs.engaged_hcws[hcw_id]}; #{stand_in}, an available '
                      f'{patient.required_specialty or "HCW"}, instead')
            hcw_id = stand_in
        instructions = {
            TaskType.NAVIGATION: f'Find HCW #{hcw_id} and escort them to {patient.room}.',
            TaskType.INFO_COLLECTION: f'Read the badge scan at {patient.room} and report ID, name, specialty.',
            TaskType.DISPLAY: f'Show the care team of {patient.room} on its screen.',
        }[task_type]
        return Delegate(task_type=task_type, robot=TASK_OWNER[task_type], room=patient.room, hcw_id=hcw_id,
                        instructions=instructions, handles_task_id=handles,
                        reason=reason or f'next step of the onboarding workflow for patient {patient.patient_id}',
                        context={'patient_id': patient.patient_id, 'presentation': patient.presentation,
                                 'required_specialty': patient.required_specialty})

    def _handle_failure(self, obs: ManagerObservation, failed: TaskRecord) -> list[ManagerAction]:
        escalation = next((e for e in reversed(obs.escalations) if e.task_id == failed.task_id), None)
        if escalation is not None:
            if not escalation.resolved:
                return []
            if escalation.decision == 'reassign' and escalation.hcw_id:
                return _steps(self._delegate(obs, failed.task_type, escalation.hcw_id, handles=failed.task_id,
                                             reason=f'human decision on {escalation.escalation_id}: assign '
                                                    f'#{escalation.hcw_id} ({escalation.note or "no note"})'))
            if escalation.decision == 'retry':
                return _steps(self._delegate(obs, failed.task_type, failed.hcw_id, handles=failed.task_id,
                                             reason=f'human decision on {escalation.escalation_id}: retry'))
            return []   # abort: handled by closing_abort above
        if self.issue_handling == 'ignore':
            return []
        if failed.issue_code is IssueCode.ROBOT_LOST:   # nothing wrong with the HCW or the floor: the robot went
            return _steps(self._delegate(obs, failed.task_type, failed.hcw_id, handles=failed.task_id,
                                         reason=f'{failed.task_id} ended because {failed.robot} was lost; '
                                                f'{failed.robot} is back: the same task again'))
        # the available HCWs the robot found, but those another open case has
        alternatives = [a for a in failed.data.get('alternatives') or [] if a['hcw_id'] not in obs.engaged_hcws]
        if self.issue_handling == 'propose_alternative' and _unavailable(failed) and alternatives:
            alt = alternatives[0]
            return _steps(self._delegate(
                obs, TaskType.NAVIGATION, alt['hcw_id'], handles=failed.task_id,
                reason=(f"{failed.task_id} failed ({failed.issue}); proposing alternative "
                        f"{alt['specialty'].lower()} #{alt['hcw_id']}, available in {alt['area']}")))
        return [Escalate(task_id=failed.task_id, reason=f'{failed.task_type.value} failed: {failed.issue}',
                         options=self._options(failed))]

    @staticmethod
    def _options(failed: TaskRecord) -> list[str]:
        options = [f"reassign:{a['hcw_id']}" for a in failed.data.get('alternatives') or []]
        return options + ['retry', 'abort']

    def _outcome(self, obs: ManagerObservation) -> str:
        if closing_abort(obs.escalations):
            return 'escalated'
        finals = [obs.latest(t) for t in OPERATIONAL_TASKS]
        return 'success' if all(f is not None and f.state == 'success' for f in finals) else 'failure'

    def reflection(self, obs: ManagerObservation) -> Reflection:
        """Write the reflection from the record: outcomes, recovery attempts, lessons learned."""
        outcomes, recovery, lessons = [], [], []
        for task_type in OPERATIONAL_TASKS:
            attempts = [t for t in obs.tasks if t.task_type is task_type]
            if not attempts:
                outcomes.append(TaskOutcome(task_type=task_type, status=TaskStatus.FAILURE,
                                            robot=TASK_OWNER[task_type],
                                            summary='not attempted: the onboarding was stopped earlier'))
                continue
            final = attempts[-1]
            status = TaskStatus.SUCCESS if final.state == 'success' else TaskStatus.FAILURE
            text = final.summary or final.issue or f'{final.task_id} reported {final.state} without a summary'
            if len(attempts) > 1:
                text += f' (after {len(attempts) - 1} failed attempt(s))'
            outcomes.append(TaskOutcome(task_type=task_type, status=status, robot=final.robot, summary=text))
            for failed, nxt in zip(attempts, attempts[1:] + [None]):
                if failed.state != 'failure':
                    continue
                if nxt is not None:
                    recovery.append(f'{failed.task_id} failed ({failed.issue}); recovered with {nxt.task_id} '
                                    f'(HCW #{nxt.hcw_id}), which ended in {nxt.state}.')
                else:
                    recovery.append(f'{failed.task_id} failed ({failed.issue}); no further attempt.')
        for esc in obs.escalations:
            recovery.append(f'{esc.escalation_id} raised by {esc.raised_by} ({esc.reason}); human decision: '
                            f'{esc.decision or "none yet"}{" #" + esc.hcw_id if esc.hcw_id else ""}.')
        failed_tools = {t.data.get('failed_tool') for t in obs.tasks if t.state == 'failure'}
        if any(_unavailable(t) for t in obs.tasks):
            lessons.append('Check the assigned HCW\'s availability and page early; keep an available '
                           'alternative of the same specialty ready before escorting.')
        if failed_tools & {Tool.PLAN_PATH.value, Tool.NAVIGATE_TO_POSE.value}:
            lessons.append('Verify the route to the room on the live floor; a closed door blocks escorts.')
        if Tool.LOOKUP_STAFF_BY_BADGE.value in failed_tools:
            lessons.append('Unregistered badges stop identification; escalate to the badge office early.')
        if not recovery:
            recovery.append('No recovery was needed: every task succeeded on its first attempt.')
        lessons.append('Delegating each task to the robot that owns it, in workflow order, with explicit '
                       'status and issue in every report, kept the team accountable.')
        return Reflection(task_outcomes=outcomes, recovery_attempts=recovery, lessons_learned=lessons)


def protocol_robot_brain(role: str) -> RobotBrain:
    """Return the protocol brain of robot ``role`` (namespace).

    Raises
    ------
    ValueError
        If ``role`` is not an operational robot.
    """
    brains = {Robot.NAVIGATION.value: NavigationProtocolBrain,
              Robot.INFO_COLLECTION.value: InfoCollectionProtocolBrain, Robot.DISPLAY.value: DisplayProtocolBrain}
    if role not in brains:
        raise ValueError(f"no protocol brain for robot '{role}': expected one of {', '.join(brains)}")
    return brains[role]()
