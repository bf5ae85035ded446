"""An offline team for LLM brains: the real brains, toolboxes, gate and guards, without ROS.

Used by the benchmark (:mod:`robot_team.llm.bench`) and by tests. It plays the parts of the
manager node, the robot nodes and the supervisor with the same code they use: the
:class:`~robot_team.workflow.WorkflowPolicy` gate and deadlines, the toolboxes' ownership
guard, :func:`~robot_team.grounding.contradictions` on every success claim and the manager-side
guards of :mod:`robot_team.guards`. Tools are stubs with the real tools' names, descriptions
and input models, answering from the onboarding scenario's staff table (no physical action).
Time is a counter (s) advanced by the issue-handling deadline when the manager stays idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from robot_team.brains.base import (
    BrainReport, Delegate, Escalate, EscalationRecord, Finish, ManagerBrain, ManagerObservation, PatientInfo,
    Reflect, RobotBrain, TaskRecord, TaskSpec)
from robot_team.config import Deadlines
from robot_team.events import EventKind
from robot_team.grounding import contradictions
from robot_team.guards import prefetched_results, reflection_contradictions, strip_prefetched
from robot_team.reports import TaskReportModel, TaskStatus, TaskType
from robot_team.tools.base import ToolError, Toolbox
from robot_team.workflow import WorkflowPolicy

STAFF = {
    '80': {'hcw_id': '80', 'badge_id': 'ED-0080', 'name': 'Dr. Amara Okafor', 'specialty': 'Physician',
           'role': 'Attending physician', 'area': 'ER-3', 'x': 6.0, 'y': 4.0, 'availability': 'busy',
           'detail': 'on an urgent call; paged, no response'},
    '90': {'hcw_id': '90', 'badge_id': 'ED-0090', 'name': 'Dr. Lucas Brennan', 'specialty': 'Physician',
           'role': 'Attending physician', 'area': 'Staff lounge', 'x': 22.0, 'y': 3.0, 'availability': 'available',
           'detail': ''},
    '41': {'hcw_id': '41', 'badge_id': 'ED-0041', 'name': 'Sofia Alvarez', 'specialty': 'Nurse',
           'role': 'Primary nurse', 'area': 'Nurses station', 'x': 14.0, 'y': 8.0, 'availability': 'available',
           'detail': ''},
    '55': {'hcw_id': '55', 'badge_id': 'ED-0055', 'name': 'Priya Raman', 'specialty': 'Technician',
           'role': 'ED technician', 'area': 'Triage', 'x': 3.0, 'y': 12.0, 'availability': 'available',
           'detail': ''},
}
"""The onboarding scenario's staff as the stub tools see it (poses in 'map', m)."""

DOOR = {'room': 'ER-12', 'x': 30.0, 'y': 9.5, 'yaw': 1.5708}


class Recorder:
    """Collect events like an EventEmitter would publish them: ``(actor, kind, summary, reason, data)``."""

    def __init__(self):
        self.events: list[dict] = []

    def emitter(self, actor: str):
        """Return an ``emit(kind, summary, *, target, reason, **data)`` function for ``actor``."""
        def emit(kind, summary: str, /, *, target: str = '', reason: str = '', **data) -> None:
            value = kind.value if isinstance(kind, EventKind) else str(kind)
            self.events.append({'actor': actor, 'kind': value, 'summary': summary, 'target': target,
                                'reason': reason, 'data': data})
        return emit

    def of(self, kind: EventKind | str, actor: str | None = None) -> list[dict]:
        """Return the events of ``kind`` (by ``actor`` if given)."""
        value = kind.value if isinstance(kind, EventKind) else kind
        return [e for e in self.events if e['kind'] == value and (actor is None or e['actor'] == actor)]


class _Stub:
    """Holds stub tool functions so the real ``register`` methods can bind them."""


@dataclass
class World:
    """The stub floor's state (editable by tests: who answers pages, what the badge reader reads)."""

    staff: dict[str, dict] = field(default_factory=lambda: {k: dict(v) for k, v in STAFF.items()})
    scan_badge: str = 'ED-0090'
    care_team: list[str] = field(default_factory=lambda: ['41', '55'])
    display_ok: bool = True
    nav_error: str = ''
    checked_in: list[str] = field(default_factory=list)
    shown: list[dict] = field(default_factory=list)


def build_toolbox(role: str, world: World, emit=None) -> Toolbox:
    """Return ``role``'s toolbox: real names, descriptions and input models; stub outputs from ``world``."""
    box = Toolbox(role, _EmitAdapter(emit) if emit else None)
    stub = _Stub()
    if role == 'navigation_robot':
        from robot_team.tools.navigation import NavigationTools, page_result

        def locate(a):   # as the RTLS: the requested IDs first, then the others of the specialty
            ids = [h for h in a.hcw_ids if h in world.staff]
            if a.specialty or not a.hcw_ids:
                ids += [h for h, s in world.staff.items() if h not in ids
                        and (not a.specialty or s['specialty'].lower() == a.specialty.lower())]
            return {'staff': [_pub(world.staff[h]) for h in ids],
                    'unknown_ids': [h for h in a.hcw_ids if h not in world.staff]}

        def page(a):
            ok = world.staff.get(a.hcw_id, {}).get('availability') == 'available'
            return page_result({'hcw_id': a.hcw_id, 'delivered': a.hcw_id in world.staff, 'acknowledged': ok,
                                'reply': 'on my way' if ok else '', 'response_time_s': 12.0 if ok else a.timeout_s})

        def door(a):
            if a.room != DOOR['room']:
                raise ToolError(f"unknown room '{a.room}'")
            return dict(DOOR)

        def plan(a):
            return {'length_m': round(math.hypot(a.goal_x - (a.start_x or 0), a.goal_y - (a.start_y or 0)), 2)}

        def navigate(a):
            if world.nav_error:
                raise ToolError(f'navigate_to_pose aborted: {world.nav_error}', output={
                    'outcome': 'aborted', 'error_name': world.nav_error, 'goal': [a.x, a.y, a.yaw]})
            return {'action': 'navigate_to_pose', 'outcome': 'succeeded', 'error_code': 0, 'error_name': 'NONE',
                    'goal': [a.x, a.y, a.yaw], 'final_pose': [a.x, a.y, a.yaw], 'duration_s': 30.0}
        stub.locate_staff, stub.page_staff, stub.room_door_pose = locate, page, door
        stub.plan_path, stub.navigate_to_pose = plan, navigate
        NavigationTools.register(stub, box)
    elif role == 'info_collection_robot':
        from robot_team.tools.info import InfoCollectionTools

        def read(a):
            return {'badge_id': world.scan_badge, 'reader_id': f'{a.room}-door', 'room': a.room, 'stamp_s': 95.0}

        def lookup(a):
            for s in world.staff.values():
                if s['badge_id'] == a.badge_id:
                    return {k: s[k] for k in ('hcw_id', 'badge_id', 'name', 'specialty', 'role')}
            raise ToolError(f"badge '{a.badge_id}' is not in the staff directory")

        def check_in(a):
            world.checked_in.append(a.hcw_id)
            return {'room': a.room, 'hcw_id': a.hcw_id, 'badge_id': a.badge_id, 'stamp_s': 96.0}
        stub.read_badge_scan, stub.lookup_staff_by_badge, stub.record_check_in = read, lookup, check_in
        InfoCollectionTools.register(stub, box)
    else:
        from robot_team.tools.display import DisplayTools

        def fetch(a):
            ids = world.care_team + [h for h in world.checked_in if h not in world.care_team]
            keys = ('hcw_id', 'name', 'specialty', 'role')
            return {'room': a.room, 'members': [{k: world.staff[h][k] for k in keys} for h in ids]}

        def show(a):
            reply = {'service': '/ed/display/show', 'success': world.display_ok,
                     'message': 'shown' if world.display_ok else 'screen offline',
                     'rendered_lines': [f'{e.role}: {e.name}' for e in a.entries]}
            if not world.display_ok:
                raise ToolError('display service refused: screen offline', output=reply)
            world.shown.append(a.model_dump())
            return reply
        stub.fetch_care_team, stub.show_display = fetch, show
        DisplayTools.register(stub, box)
    return box


def _pub(s: dict) -> dict:
    return {k: s[k] for k in ('hcw_id', 'specialty', 'area', 'x', 'y', 'availability', 'detail')}


class _EmitAdapter:
    def __init__(self, emit):
        self.emit = emit


def run_robot(role: str, brain: RobotBrain, toolbox: Toolbox, task: TaskSpec, emit) -> TaskReportModel:
    """Run ``brain`` on ``task`` as the robot node does: claim, grounding check, evidence, report."""
    try:
        claim = brain.execute(task, toolbox, lambda *_: None)
    except Exception as exc:  # noqa: BLE001 - as the robot node: a crash is a failure report
        claim = BrainReport(status=TaskStatus.FAILURE, issue=f'robot brain crashed: {type(exc).__name__}: {exc}')
    journal = toolbox.journal(task.task_id)
    problems = contradictions(task.task_type, claim, journal)
    if problems:
        emit(EventKind.FALSE_COMPLETION, f'{role} claimed success on {task.task_id}', target=task.task_id,
             reason='; '.join(problems), task_id=task.task_id, claim=claim.model_dump(mode='json'))
        claim = BrainReport(status=TaskStatus.FAILURE, issue='false completion: ' + '; '.join(problems),
                            summary=claim.summary, data=claim.data)
    report = TaskReportModel(task_id=task.task_id, task_type=task.task_type, robot=role, status=claim.status,
                             issue=claim.issue, summary=claim.summary, data=claim.data,
                             evidence={'tool_journal': [r.as_dict() for r in journal]})
    emit(EventKind.TASK_REPORT, f'{role} reports {report.status.value} on {task.task_id}', target=task.task_id,
         reason=report.issue, **report.model_dump(mode='json'))
    return report


@dataclass
class Outcome:
    """What an offline episode produced."""

    outcome: str
    record: Recorder
    observation: ManagerObservation
    world: World
    workflow: WorkflowPolicy
    extra: dict[str, Any] = field(default_factory=dict)


class OfflineTeam:
    """Run one onboarding episode with the given brains, without ROS.

    Parameters
    ----------
    manager
        The manager brain.
    robots
        Role -> robot brain.
    world
        The stub floor.
    operator
        Human answers to escalations: ``(decision, hcw_id)`` in order (default: reassign to #90).
    record
        Where events go (the brains' emitters should point to it as well).
    tool_emitter
        ``role -> emit`` for the toolboxes' events (default: ``record``), e.g. a ROS EventEmitter's.
    """

    def __init__(self, manager: ManagerBrain, robots: dict[str, RobotBrain], *, world: World | None = None,
                 operator: list[tuple[str, str]] | None = None, record: Recorder | None = None,
                 deadlines: Deadlines | None = None, tool_emitter=None):
        self.manager = manager
        self.robots = robots
        self.world = world or World()
        self.record = record or Recorder()
        self.operator = list(operator if operator is not None else [('reassign', '90')])
        self.workflow = WorkflowPolicy(deadlines or Deadlines(issue_handling_s=60.0))
        make = tool_emitter or self.record.emitter
        self.toolboxes = {role: build_toolbox(role, self.world, make(role)) for role in robots}
        self.now = 1.0
        self.obs = ManagerObservation(patient=PatientInfo(
            patient_id='P-0001', room='ER-12', presentation='signs of confusion and distress', esi_level=2,
            assigned_hcw_id='80', required_specialty='Physician'))
        self.obs.new.append('Patient P-0001 arrived in ER-12; HCW #80 assigned.')
        self._m = self.record.emitter('manager')
        self._s = self.record.emitter('supervisor')

    def run(self, max_rounds: int = 40) -> Outcome:
        """Run until the manager finishes (or ``max_rounds`` decisions); return the outcome."""
        outcome = 'timeout'
        for _ in range(max_rounds):
            snapshot = self.obs.model_copy(deep=True)
            self.obs.new.clear()
            self.obs.feedback.clear()
            actions = self.manager.decide(snapshot)
            for action in actions:
                if isinstance(action, Finish):
                    self._m(EventKind.EPISODE_FINISHED, f'episode finished: {action.outcome}', outcome=action.outcome)
                    return Outcome(action.outcome, self.record, self.obs, self.world, self.workflow)
                self._execute(action)
            if not actions and not self.obs.new and not self.obs.feedback:
                self._deadlines()
        return Outcome(outcome, self.record, self.obs, self.world, self.workflow)

    # -- as the manager node --

    def _execute(self, action) -> None:
        if isinstance(action, Delegate):
            self._delegate(action)
        elif isinstance(action, Escalate):
            try:
                esc = self.workflow.open_escalation(action.task_id, 'manager', action.reason, action.options,
                                                    self.now)
            except ValueError as exc:
                self.obs.feedback.append(f'Escalation refused: {exc}')
                return
            self._m(EventKind.ESCALATION_REQUESTED, f'manager escalates {action.task_id}', reason=action.reason)
            self.obs.handled_failures.append(action.task_id)
            self._escalated(esc, action.task_id, 'manager', action.reason)
        elif isinstance(action, Reflect):
            self._reflect(action)

    def _delegate(self, act: Delegate) -> None:
        self._m(EventKind.DELEGATION_REQUESTED, f'manager asks to delegate {act.task_type.value} to {act.robot}',
                target=act.robot, reason=act.reason, **act.model_dump(mode='json', exclude={'reason'}))
        found = prefetched_results(act)
        if found:
            self._m(EventKind.WORKFLOW_VIOLATION, f'manager put results into a {act.task_type.value} delegation',
                    target=act.robot, reason='role misalignment', found=found, who='manager',
                    what=act.model_dump(mode='json'))
            act = strip_prefetched(act)
            self.obs.feedback.append('Role misalignment: the delegation carried results (' + '; '.join(found)
                                     + '); they were removed: the robot does its own work.')
        auth = self.workflow.authorize(act.task_type.value, act.robot, act.reason, 'manager', self.now)
        if not auth.approved:
            self._s(EventKind.WORKFLOW_VIOLATION if auth.violation else EventKind.DELEGATION_REFUSED,
                    f'refused {act.task_type.value} for {act.robot}', reason=auth.explanation, rule=auth.rule)
            self._m(EventKind.DELEGATION_REFUSED, f'supervisor refused {act.task_type.value} for {act.robot}',
                    target=act.robot, reason=auth.explanation)
            self.obs.feedback.append(f'Delegation refused: {auth.explanation}')
            return
        record = TaskRecord(task_id=auth.task_id, task_type=act.task_type, robot=act.robot, hcw_id=act.hcw_id,
                            room=act.room)
        self.obs.tasks.append(record)
        if act.handles_task_id:
            self.obs.handled_failures.append(act.handles_task_id)
        self._m(EventKind.DELEGATION, f'manager delegated {auth.task_id}', target=act.robot, task_id=auth.task_id,
                instructions=act.instructions, context=act.context)
        task = TaskSpec(task_id=auth.task_id, task_type=act.task_type, room=act.room, hcw_id=act.hcw_id,
                        instructions=act.instructions, context=act.context)
        report = run_robot(act.robot, self.robots[act.robot], self.toolboxes[act.robot], task,
                           self.record.emitter(act.robot))
        self.now += 30.0
        self.workflow.record_report(report, self.now)
        record.state, record.issue = report.status.value, report.issue
        record.summary, record.data = report.summary, report.data
        self.obs.new.append(f'{act.robot} finished {auth.task_id}')

    def _reflect(self, act: Reflect) -> None:
        auth = self.workflow.authorize('reflection', 'manager', 'all workflow steps are done', 'manager', self.now)
        if not auth.approved:
            self._m(EventKind.REFLECTION_REJECTED, 'supervisor refused the reflection now', reason=auth.explanation)
            self.obs.feedback.append(f'Reflection refused: {auth.explanation}')
            return
        problems = act.reflection.missing_parts()
        what = 'incomplete'
        if not problems:
            problems, what = reflection_contradictions(act.reflection, self.obs.tasks), 'contradicts the record'
        if problems:
            self._m(EventKind.REFLECTION_REJECTED, f'reflection {what}', reason='; '.join(problems),
                    missing=problems)
            self.obs.feedback.append(f'Reflection refused, {what}: ' + '; '.join(problems))
            self.workflow.record_report(TaskReportModel(task_id=auth.task_id, task_type=TaskType.REFLECTION,
                                                        robot='manager', status=TaskStatus.FAILURE,
                                                        issue=f'reflection {what}'), self.now)
            return
        self.workflow.record_report(TaskReportModel(task_id=auth.task_id, task_type=TaskType.REFLECTION,
                                                    robot='manager', status=TaskStatus.SUCCESS), self.now)
        self._m(EventKind.REFLECTION, 'manager wrote the reflection', **act.reflection.model_dump(mode='json'))
        self.obs.reflection_done = True
        self.obs.new.append('Reflection accepted.')

    # -- as the supervisor and the operator --

    def _deadlines(self) -> None:
        self.now += self.workflow.deadlines.issue_handling_s + 1.0
        for missed in self.workflow.due(self.now):
            self._s(EventKind.DEADLINE_MISSED, f'{missed.kind} deadline of {missed.task_id} missed',
                    reason=f'no action within {missed.duration_s:g} s', task_id=missed.task_id, kind=missed.kind)
            if missed.kind == 'issue_handling':
                why = f'manager did not handle the failure of {missed.task_id} in time'
                esc = self.workflow.open_escalation(missed.task_id, 'supervisor', why, [], self.now)
                self._escalated(esc, missed.task_id, 'supervisor', why)

    def _escalated(self, esc: str, task_id: str, by: str, reason: str) -> None:
        self._s(EventKind.ESCALATION, f'{esc} on {task_id} raised by {by}', reason=reason, escalation_id=esc,
                task_id=task_id, raised_by=by)
        record = EscalationRecord(escalation_id=esc, task_id=task_id, raised_by=by, reason=reason)
        self.obs.escalations.append(record)
        self.obs.new.append(f'Escalation {esc} ({by}): {reason}')
        if self.operator:
            decision, hcw = self.operator.pop(0)
            self.workflow.resolve(esc, decision, hcw, 'Dr. Brennan covers ER-12', 'charge_nurse', self.now)
            record.decision, record.hcw_id, record.note = decision, hcw, 'Dr. Brennan covers ER-12'
            record.operator_id = 'charge_nurse'
            self._s(EventKind.HUMAN_DECISION, f'human decision on {esc}: {decision}', escalation_id=esc,
                    decision=decision, hcw_id=hcw)
            self.obs.new.append(f'Human decision on {esc}: {decision} {hcw}')
