"""An in-memory team for LLM brains: the nodes' own cores wired to each other, without ROS.

Used by tests that need many episodes fast. It is wiring only: the manager is the
:class:`~robot_team.core.manager.ManagerCore` the manager node runs, each robot the
:class:`~robot_team.core.robot.RobotCore` its node runs, the supervisor the
:class:`~robot_team.core.supervisor.SupervisorCore` (gate, report record, deadlines) its node
runs; this module only connects their ports in memory and plays the human operator. Tools are
stubs with the real tools' names, descriptions and input models (the real ``register`` methods
bind them), answering from the onboarding scenario's staff table; the stub world keeps what the
tools did (who was paged and picked up, the escort's end, check-ins, the screen), so each robot's
``observe`` (what the world shows of a success claim) answers from it as the real tools do from
the RTLS, the directory and the display system. Time is a counter (s): a robot's task takes 30 s,
and an idle team jumps past the issue-handling deadline so that the supervisor's deadlines run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from robot_team.brains.base import ManagerBrain, ManagerObservation, PatientInfo, RobotBrain, StaffInfo, TaskSpec
from robot_team.contracts.config import Deadlines
from robot_team.core.manager import ManagerCore
from robot_team.core.manager_ports import TaskDone
from robot_team.contracts.reports import EscalationAnswer, ReportAnswer
from robot_team.core.robot import RobotCore
from robot_team.core.supervisor import SupervisorCore
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.events import EventKind
from robot_team.contracts.reports import TaskReportModel
from robot_team.tools.base import Toolbox
from robot_team.catalog import TaskFacts, Tool, WorldFact, register_tools
from robot_team.contracts.errors import ToolError
from robot_team.contracts.names import Role
from robot_team.roles.navigation.tools import page_result
from robot_team.rules.workflow.policy import WorkflowPolicy
from robot_team.rules.workflow.rules import StaffFacts
from robot_team.rules.workflow.state import Authorization

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
    clock: Callable[[], float] = lambda: 0.0
    paged: str = ''         # the HCW who acknowledged the latest page (waits for the robot)
    following: str = ''     # the HCW following the robot (picked up where they waited)
    check_in_stamps: dict[str, float] = field(default_factory=dict)
    screen_stamp: float | None = None

    def staff_facts(self) -> dict[str, StaffFacts]:
        """Return the gate's view of the staff (specialty, availability), as the supervisor's board gives it."""
        return {h: StaffFacts(s['specialty'], s['availability']) for h, s in self.staff.items()}


def _navigation_stubs(world: World) -> dict:
    def locate(a):   # as the RTLS: the requested IDs first, then the others of the specialty
        ids = [h for h in a.hcw_ids if h in world.staff]
        if a.specialty or not a.hcw_ids:
            ids += [h for h, s in world.staff.items() if h not in ids
                    and (not a.specialty or s['specialty'].lower() == a.specialty.lower())]
        return {'staff': [_pub(world.staff[h]) for h in ids],
                'unknown_ids': [h for h in a.hcw_ids if h not in world.staff]}

    def page(a):
        ok = world.staff.get(a.hcw_id, {}).get('availability') == 'available'
        meet_at = {k: world.staff[a.hcw_id][k] for k in ('area', 'x', 'y')} if ok else {}
        if ok:
            world.paged = a.hcw_id
        return page_result({'hcw_id': a.hcw_id, 'delivered': a.hcw_id in world.staff, 'acknowledged': ok,
                            'reply': 'on my way' if ok else '', 'response_time_s': 12.0 if ok else a.timeout_s,
                            'meet_at': meet_at})

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
        waiting = world.staff.get(world.paged)
        if waiting is not None and math.hypot(a.x - waiting['x'], a.y - waiting['y']) <= 1.0:
            world.following = world.paged   # picked up where they waited
        elif world.following and (a.x, a.y) == (DOOR['x'], DOOR['y']):
            world.staff[world.following].update(area=DOOR['room'], x=DOOR['x'], y=DOOR['y'])   # steps in
        elif world.following:
            world.staff[world.following].update(area='corridor', x=a.x, y=a.y)
        return {'action': 'navigate_to_pose', 'outcome': 'succeeded', 'error_code': 0, 'error_name': 'NONE',
                'goal': [a.x, a.y, a.yaw], 'final_pose': [a.x, a.y, a.yaw], 'duration_s': 30.0}
    return {Tool.LOCATE_STAFF: locate, Tool.PAGE_STAFF: page, Tool.ROOM_DOOR_POSE: door, Tool.PLAN_PATH: plan,
            Tool.NAVIGATE_TO_POSE: navigate}


def _info_stubs(world: World) -> dict:
    def read(a):
        return {'badge_id': world.scan_badge, 'reader_id': f'{a.room}-door', 'room': a.room, 'stamp_s': 95.0}

    def lookup(a):
        for s in world.staff.values():
            if s['badge_id'] == a.badge_id:
                return {k: s[k] for k in ('hcw_id', 'badge_id', 'name', 'specialty', 'role')}
        raise ToolError(f"badge '{a.badge_id}' is not in the staff directory")

    def check_in(a):
        if world.staff.get(a.hcw_id, {}).get('badge_id') != a.badge_id:
            raise ToolError(f"check-in refused by the staff directory: badge '{a.badge_id}' is not HCW "
                            f"{a.hcw_id}'s badge")
        if a.hcw_id not in world.checked_in:   # checked in twice (a second patient) is one membership
            world.checked_in.append(a.hcw_id)
        world.check_in_stamps[a.hcw_id] = world.clock()
        return {'room': a.room, 'hcw_id': a.hcw_id, 'badge_id': a.badge_id, 'stamp_s': world.clock()}
    return {Tool.READ_BADGE_SCAN: read, Tool.LOOKUP_STAFF_BY_BADGE: lookup, Tool.RECORD_CHECK_IN: check_in}


def _display_stubs(world: World) -> dict:
    def fetch(a):
        return {'room': a.room, 'members': _care_team(world)}

    def show(a):
        reply = {'service': '/ed/display/show', 'success': world.display_ok,
                 'message': 'shown' if world.display_ok else 'screen offline',
                 'rendered_lines': [f'{e.role}: {e.name}' for e in a.entries]}
        if not world.display_ok:
            raise ToolError('display service refused: screen offline', output=reply)
        world.shown.append(a.model_dump())
        world.screen_stamp = world.clock()
        return reply
    return {Tool.FETCH_CARE_TEAM: fetch, Tool.SHOW_DISPLAY: show}


STUBS = {Role.NAVIGATION: _navigation_stubs, Role.INFO_COLLECTION: _info_stubs, Role.DISPLAY: _display_stubs}
"""Each operational role's stub tools (every role of ``robot_team.catalog.ROLES``)."""


def _care_team(world: World) -> list[dict]:
    """Return the room's care team as the stub directory gives it: standing members, then check-ins."""
    ids = world.care_team + [h for h in world.checked_in if h not in world.care_team]
    return [{k: world.staff[h][k] for k in ('hcw_id', 'name', 'specialty', 'role')} for h in ids]


def observer(world: World):
    """Return an ``observe(fact, task, until)`` answering from the stub world, as the real tools classes do."""
    def observe(fact: WorldFact, task: TaskFacts, until) -> dict:
        if fact is WorldFact.HCW_AT_ROOM:
            where = world.staff.get(task.hcw_id)
            return {'hcw_id': task.hcw_id, 'room': task.room, 'door': {'x': DOOR['x'], 'y': DOOR['y'] - 3.0},
                    'entry': {'x': DOOR['x'], 'y': DOOR['y']},
                    'located': {k: where[k] for k in ('area', 'x', 'y')} if where else None}
        if fact is WorldFact.CHECKED_IN:
            return {'room': task.room, 'check_ins': [
                {'hcw_id': h, 'badge_id': world.staff[h]['badge_id'], 'stamp_s': t}
                for h, t in world.check_in_stamps.items()]}
        shown = world.shown[-1] if world.shown else None
        return {'room': task.room, 'care_team': _care_team(world),
                'screen': {'entries': shown['entries'], 'stamp_s': world.screen_stamp} if shown else None}
    return observe


def build_toolbox(role: str, world: World, emit=None) -> Toolbox:
    """Return ``role``'s toolbox: the catalog's names, descriptions and input models; stub outputs from ``world``."""
    box = Toolbox(role, _EmitAdapter(emit) if emit else None)
    register_tools(box, STUBS[Role(role)](world))
    return box


def _pub(s: dict) -> dict:
    return {k: s[k] for k in ('hcw_id', 'specialty', 'area', 'x', 'y', 'availability', 'detail')}


class _EmitAdapter:
    def __init__(self, emit):
        self.emit = emit


def run_robot(role: str, brain: RobotBrain, toolbox: Toolbox, task: TaskSpec, emit,
              world: World | None = None) -> TaskReportModel:
    """Run ``brain`` on ``task`` with the robot node's own core: claim, grounding check, evidence, report.

    ``world``: the stub world the toolbox was built on, which shows (or not) a success claim;
    ``None``: nothing can be observed, so no success is accepted.
    """
    observe = observer(world) if world is not None else None
    return RobotCore(role, brain, toolbox, emit, lambda: 0.0, observe).run(task, lambda *_: None)


@dataclass
class Outcome:
    """What an in-memory episode produced."""

    outcome: str
    record: Recorder
    observation: ManagerObservation
    world: World
    workflow: WorkflowPolicy
    extra: dict[str, Any] = field(default_factory=dict)


class InMemoryTeam:
    """Run one onboarding episode with the given brains through the nodes' cores, without ROS.

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
    deadlines
        The supervisor's deadlines (default: 60 s issue handling).
    tool_emitter
        ``role -> emit`` for the toolboxes' events (default: ``record``), e.g. a ROS EventEmitter's.
    """

    ROBOT_TASK_S = 30.0
    """Time a robot's task takes in the harness, s."""

    def __init__(self, manager: ManagerBrain, robots: dict[str, RobotBrain], *, world: World | None = None,
                 operator: list[tuple[str, str]] | None = None, record: Recorder | None = None,
                 deadlines: Deadlines | None = None, tool_emitter=None):
        self.world = world or World()
        self.record = record or Recorder()
        self.operator = list(operator if operator is not None else [('reassign', '90')])
        self.t = 1.0
        self.world.clock = lambda: self.t
        make = tool_emitter or self.record.emitter
        self.toolboxes = {role: build_toolbox(role, self.world, make(role)) for role in robots}
        self.supervisor = SupervisorCore(WorkflowPolicy(deadlines or Deadlines(issue_handling_s=60.0)),
                                         self.record.emitter('supervisor'), self._escalated, self._decided,
                                         publish_directive=self._directed)
        self.workflow = self.supervisor.policy
        self.robots = {role: RobotCore(role, brain, self.toolboxes[role], self.record.emitter(role),
                                       lambda: self.t, observer(self.world)) for role, brain in robots.items()}
        self.manager = ManagerCore(manager, self, self.record.emitter('manager'), list(robots))
        self.manager.on_arrival(PatientInfo(
            patient_id='P-0001', room='ER-12', presentation='signs of confusion and distress', esi_level=2,
            assigned_hcw_id='80', required_specialty='Physician'))
        self.manager.on_staff([StaffInfo(hcw_id=h, specialty=f.specialty, availability=f.availability)
                               for h, f in self.world.staff_facts().items()])
        self.supervisor.on_patient_arrival('P-0001', self.t, assigned_hcw_id='80', required_specialty='Physician')

    def run(self, max_rounds: int = 40) -> Outcome:
        """Run until the manager finishes (or ``max_rounds`` decision rounds); return the outcome."""
        for _ in range(max_rounds):
            if not self.manager.step():   # nothing new: time passes until the supervisor's deadlines act
                self.t += self.workflow.deadlines.issue_handling_s + 1.0
                self.supervisor.check_deadlines(self.t)
                self.manager.step()
            if self.manager.finished.is_set():
                break
        outcome = self.manager.outcome if self.manager.finished.is_set() else 'timeout'
        return Outcome(outcome, self.record, self.manager.snapshot(), self.world, self.workflow)

    # -- ManagerPorts: the supervisor's services and the robots' action servers, in memory --

    def authorize(self, task_type: str, robot: str, reason: str, hcw_id: str = '',
                  case_id: str = '') -> Authorization:
        """Ask the supervisor core's gate, with the stub world's staff as its staff view."""
        return self.supervisor.authorize(task_type, robot, reason, 'manager', self.t, hcw_id=hcw_id,
                                         staff=self.world.staff_facts(), case_id=case_id)

    def request_escalation(self, task_id: str, reason: str, options: list[str]) -> EscalationAnswer:
        """Ask the supervisor core to escalate."""
        accepted, escalation_id, message = self.supervisor.request_escalation(task_id, reason, options, self.t)
        return EscalationAnswer(accepted=accepted, escalation_id=escalation_id, message=message)

    def submit_report(self, report: TaskReportModel) -> ReportAnswer:
        """Submit the manager's report to the supervisor core."""
        accepted, explanation = self.supervisor.submit_report(report, self.t)
        return ReportAnswer(accepted=accepted, explanation=explanation)

    def send_task(self, robot: str, task: TaskSpec, done: TaskDone) -> None:
        """Run the task on the robot's core at once, submit its report, then tell the manager."""
        core = self.robots.get(robot)
        if core is None or not core.accepts(task.task_type.value):
            raise ToolError(f'{robot} rejected goal {task.task_id}')
        report = core.run(task, lambda *_: None)
        self.t += self.ROBOT_TASK_S
        self.supervisor.submit_report(report, self.t)
        done(report, '')

    def now(self) -> float:
        """Return the harness time, s."""
        return self.t

    # -- the supervisor's publications, and the human operator --

    def _escalated(self, esc: EscalationRecord) -> None:
        self.manager.on_escalation(EscalationRecord(escalation_id=esc.escalation_id, task_id=esc.task_id,
                                                    task_type=esc.task_type, raised_by=esc.raised_by,
                                                    reason=esc.reason))
        if self.operator:
            decision, hcw = self.operator.pop(0)
            self.supervisor.resolve(esc.escalation_id, decision, hcw, 'Dr. Brennan covers ER-12', 'charge_nurse',
                                    self.t)

    def _decided(self, esc: EscalationRecord) -> None:
        self.manager.on_decision(esc.escalation_id, esc.decision, esc.hcw_id, esc.note, esc.decided_by)

    def _directed(self, directive) -> None:
        if directive.directive == 'takeover':
            self.manager.take_over(directive.escalation_id, directive.reason)
        elif directive.directive == 'hold':
            self.manager.hold(directive.escalation_id, directive.reason)
