"""Several cases at once on shared robots (issue 27, item 2): the cores of the manager and the supervisor.

With ``cases_at_once`` > 1 the manager and the gate keep several cases open, each with its own
policy, observation and brain. A robot runs one task at a time: a case whose next step needs a
robot busy with another case's task waits for it (``waiting_for_robot``), is told when it is free,
and the most urgent waiting case gets it first; its decision deadline is moved on meanwhile. The
property runs the real cores with robots whose tasks end in a seeded random order; each case's
robot tasks run the robot node's core on that case's stub floor, so every success is grounded.
"""

import random

import pytest

from robot_team.brains.base import PatientInfo, StaffInfo
from robot_team.brains.protocol import ManagerProtocolBrain, protocol_robot_brain
from robot_team.contracts.cases import case_key
from robot_team.catalog import TASK_OWNER
from robot_team.contracts.config import Deadlines
from robot_team.core.manager import ManagerCore
from robot_team.core.robot import RobotCore
from robot_team.core.supervisor import SupervisorCore
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.names import OPERATIONAL_ROLES, Role, fleet_robots, role_name
from robot_team.contracts.reports import EscalationAnswer, ReportAnswer, TaskReportModel, TaskType
from robot_team.rules.workflow.policy import WorkflowPolicy
from robot_team.rules.workflow.rules import engaged_hcws
from team_harness import Recorder, World, build_toolbox, observer
from test_no_stall import ROBOTS


class SharedFloor:
    """The manager's ports over the supervisor's core and robots whose tasks end when the test says.

    Each case has its own stub floor (``World``); a task runs on its case's floor with the robot
    node's core when :meth:`finish` ends it. ``busy`` maps each robot to its running task.
    """

    def __init__(self, cases_at_once: int, record: Recorder, robots: list[str] = ROBOTS):
        self.t = 0.0
        self.record = record
        self.robots = list(robots)
        self.supervisor = SupervisorCore(WorkflowPolicy(Deadlines(decision_s=30.0, issue_handling_s=60.0)),
                                         record.emitter('supervisor'), self._escalated, lambda esc: None,
                                         cases_at_once=cases_at_once, robots=self.robots)
        self.manager = ManagerCore(ManagerProtocolBrain(), self, record.emitter('manager'), self.robots, cases=0,
                                   cases_at_once=cases_at_once, make_brain=ManagerProtocolBrain)
        self.worlds: dict[str, World] = {}
        self.busy: dict[str, tuple] = {}   # robot -> (task, done, case)
        self.handovers: list[tuple[str, list[str], str]] = []   # (robot, cases waiting for it, case it went to)
        self.distances: dict[str, float] = {}   # robot -> its planned path length to any HCW (m; none: no path)

    def arrive(self, patient: PatientInfo) -> None:
        world = World(scan_badge=f'ED-00{patient.assigned_hcw_id}')   # its room's reader reads their HCW's badge
        world.clock = lambda: self.t
        self.worlds[patient.patient_id] = world
        self.manager.on_staff([StaffInfo(hcw_id=h, specialty=f.specialty, availability=f.availability)
                               for h, f in world.staff_facts().items()])
        self.supervisor.on_patient_arrival(patient.patient_id, self.t, assigned_hcw_id=patient.assigned_hcw_id,
                                           required_specialty=patient.required_specialty, room=patient.room,
                                           esi_level=patient.esi_level)
        self.manager.on_arrival(patient)

    def settle(self) -> None:
        """Let the manager decide until nothing changes."""
        for _ in range(200):
            if not self.manager.step():
                return
        raise AssertionError('the manager kept deciding')

    def finish(self, robot: str) -> None:
        """End ``robot``'s running task on its case's floor: the robot core's grounded report."""
        task, done, case = self.busy.pop(robot)
        waiting = [c for c, lane in self.manager._lanes.items() if lane.parked in (robot, role_name(robot))]
        world, role = self.worlds[case], role_name(robot)
        core = RobotCore(role, protocol_robot_brain(role), build_toolbox(role, world), lambda *a, **k: None,
                         lambda: self.t, observer(world), robot=robot)
        report = core.run(task, lambda *_: None)
        self.t += 5.0
        self.supervisor.submit_report(report, self.t)
        done(report, '')
        if waiting:
            self.settle()
            self.handovers.append((robot, waiting, self.busy[robot][2] if robot in self.busy else ''))

    # -- ManagerPorts --

    def authorize(self, task_type, robot, reason, hcw_id='', case_id=''):
        world = self.worlds.get(case_id) or World()
        return self.supervisor.authorize(task_type, robot, reason, 'manager', self.t, hcw_id=hcw_id,
                                         staff=world.staff_facts(), case_id=case_id)

    def request_escalation(self, task_id, reason, options):
        accepted, escalation_id, message = self.supervisor.request_escalation(task_id, reason, options, self.t)
        return EscalationAnswer(accepted=accepted, escalation_id=escalation_id, message=message)

    def submit_report(self, report: TaskReportModel):
        accepted, explanation = self.supervisor.submit_report(report, self.t)
        return ReportAnswer(accepted=accepted, explanation=explanation)

    def send_task(self, robot, task, done):
        case = self.manager._task_case[task.task_id]
        assert robot not in self.busy, f'{robot} got {task.task_id} while it runs {self.busy[robot][0].task_id}'
        self.busy[robot] = (task, done, case)

    def now(self):
        return self.t

    def path_lengths(self, robots, hcw_id):
        return {r: self.distances[r] for r in robots if r in self.distances}

    def _escalated(self, esc: EscalationRecord) -> None:
        self.manager.on_escalation(esc)


AVAILABLE = [('90', 'Physician'), ('41', 'Nurse'), ('55', 'Technician')]
"""The stub floor's available HCWs: patients take them in turn (the fourth the first's again)."""


def _patients(rng: random.Random, count: int) -> list[PatientInfo]:
    return [PatientInfo(patient_id=f'P-{i:02d}', room='ER-12', esi_level=rng.randint(0, 5),
                        assigned_hcw_id=AVAILABLE[i % 3][0], required_specialty=AVAILABLE[i % 3][1],
                        presentation='chest pain') for i in range(count)]


def _idle_robot_for_a_waiting_case(floor: SharedFloor) -> list[str]:
    """Return 'case:robot' for each open case with a robot idle for its next step (none: nobody waits in vain).

    A case with no task yet whose patient's HCW another open case has waits for that person, not a robot.
    """
    found = []
    for policy in floor.supervisor.open_policies:
        others = {p.patient_id: p.outlines() for p in floor.supervisor.open_policies if p is not policy}
        snap = policy.snapshot()
        if not snap.tasks and snap.assigned_hcw_id in engaged_hcws(others):
            continue
        for kind in policy.next_steps():
            found += [f'{policy.patient_id}:{robot}' for robot in floor.robots
                      if role_name(robot) == TASK_OWNER[kind] and robot not in floor.busy]
    return found


@pytest.mark.parametrize('seed', range(6))
def test_cases_share_the_robots_one_task_each_most_urgent_first_and_none_waits_for_an_idle_robot(seed):
    rng = random.Random(seed)
    record = Recorder()
    at_once = rng.choice((0, 2, 3))   # 0: no limit
    fleet = {role: rng.choice((1, 1, 2)) for role in OPERATIONAL_ROLES}   # robots per role
    floor = SharedFloor(at_once, record, [r for role, n in fleet.items() for r in fleet_robots(role, n)])
    patients = _patients(rng, rng.randint(3, 8))
    keys = {p.patient_id: case_key(p.esi_level, 0.0, p.patient_id) for p in patients}
    arrivals = list(patients)
    for _ in range(200):
        if arrivals and (not floor.busy or rng.random() < 0.4):
            floor.arrive(arrivals.pop(0))
        elif floor.busy:
            floor.finish(rng.choice(sorted(floor.busy)))
        floor.settle()
        assert len(floor.supervisor.open_policies) <= (at_once or len(patients))
        assert floor.manager.open_cases == [p.patient_id for p in floor.supervisor.open_policies]
        assert floor.supervisor.cases_kept == floor.manager.open_cases   # no escalation: closed cases let go
        assert _idle_robot_for_a_waiting_case(floor) == []
        if not arrivals and not floor.busy:
            break
    assert [c.outcome for c in floor.manager.closed_cases] == ['success'] * len(patients)
    # a closed case's state is let go on both sides (bounded over a shift)
    assert floor.supervisor.cases_kept == [] and floor.manager.open_cases == []
    # each case's tasks carry its own IDs, and the supervisor's and the manager's records agree
    assert sorted(c.case_id for c in floor.manager.closed_cases) == sorted(p.patient_id for p in patients)
    # a robot freed while cases waited for it went to the most urgent of them at once
    for robot, waiting, case in floor.handovers:
        assert case == min(waiting, key=keys.get), (robot, waiting, case)
    assert not record.of('deadline_missed') and not record.of('workflow_violation')
    # every robot's tasks are its role's, and a fleet's robots all worked when cases overlapped
    delegated = [e['data'] for e in record.of('delegation', 'manager')]
    assert all(role_name(d['robot']) == TASK_OWNER[TaskType(d['task_type'])] for d in delegated)
    assert {d['robot'] for d in delegated} <= set(floor.robots)


def test_a_case_waiting_for_a_robot_is_recorded_and_its_decision_deadline_waits_too():
    record = Recorder()
    floor = SharedFloor(2, record)
    first, second = _patients(random.Random(1), 2)
    first = first.model_copy(update={'esi_level': 3})
    second = second.model_copy(update={'esi_level': 2})
    floor.arrive(first)
    floor.settle()
    floor.arrive(second)   # more urgent, but the navigation robot escorts for the first case already
    floor.settle()
    [wait] = [e for e in record.of('observation', 'manager') if e['data'].get('cue') == 'waiting_for_robot']
    assert (wait['data']['case_id'], wait['data']['robot'], wait['data']['busy_with']) == (
        second.patient_id, 'navigation_robot', 'nav-1')
    # the gate refuses a second task on the busy robot, whoever asks (rule robot_busy)
    refused = floor.supervisor.authorize('navigation', 'navigation_robot', '', 'manager', floor.t, hcw_id='90',
                                         staff=World().staff_facts(), case_id=second.patient_id)
    assert (refused.approved, refused.rule.value) == (False, 'robot_busy')
    # long past the decision deadline, the waiting case is not a stall: the robot was busy
    for step in range(1, 5):
        assert floor.supervisor.check_deadlines(floor.t + 25.0 * step) == []
    floor.t += 100.0
    floor.finish('navigation_robot')
    floor.settle()
    assert floor.busy['navigation_robot'][2] == second.patient_id   # freed: the waiting case takes it
    assert floor.busy['info_collection_robot'][2] == first.patient_id   # while the first case goes on
    told = [f.kind.value for f in floor.manager._lanes[second.patient_id].obs.feedback]
    assert told == [] and not record.of('deadline_missed')


def test_a_fleet_serves_overlapping_cases_on_idle_robots_of_the_role_and_the_gate_knows_its_robots():
    record = Recorder()
    fleet = [*fleet_robots(Role.NAVIGATION, 2), *ROBOTS[1:]]
    floor = SharedFloor(0, record, fleet)
    floor.distances = {'navigation_robot_1': 40.0, 'navigation_robot_2': 12.5}
    first, second, third = _patients(random.Random(3), 3)
    for patient in (first, second):
        floor.arrive(patient)
        floor.settle()
    # the first case's escort went to the idle robot nearest its HCW, the second did not wait: the other was idle
    assert {r: floor.busy[r][2] for r in fleet[:2]} == {'navigation_robot_2': first.patient_id,
                                                        'navigation_robot_1': second.patient_id}
    [dispatch] = [e['data'] for e in record.of('observation', 'manager') if e['data'].get('cue') == 'dispatch']
    assert (dispatch['robot'], dispatch['path_lengths_m']) == ('navigation_robot_2', floor.distances)
    assert not [e for e in record.of('observation', 'manager') if e['data'].get('cue') == 'waiting_for_robot']
    floor.arrive(third)   # both busy: the third waits for either of them
    floor.settle()
    [wait] = [e for e in record.of('observation', 'manager') if e['data'].get('cue') == 'waiting_for_robot']
    assert (wait['data']['case_id'], wait['data']['robot']) == (third.patient_id, 'navigation_robot')
    floor.t += 10.0
    floor.finish('navigation_robot_1')
    floor.settle()
    assert floor.busy['navigation_robot_1'][2] == third.patient_id   # the freed one took it
    # the gate takes the fleet's robots by name, never a role's name for them or a robot outside the fleet
    staff = World().staff_facts()
    for robot, why in (('navigation_robot', "navigation_robot's robots are navigation_robot_1, navigation_robot_2"),
                       ('navigation_robot_3', "navigation_robot_3's robots are"),
                       ('vacuum_robot', 'expected one of navigation_robot_1')):
        refused = floor.supervisor.authorize('navigation', robot, '', 'manager', floor.t, hcw_id='90', staff=staff,
                                             case_id=first.patient_id)
        assert (refused.approved, refused.rule.value) == (False, 'role') and why in refused.explanation, refused
    refused = floor.supervisor.authorize('display', 'navigation_robot_1', '', 'manager', floor.t, staff=staff,
                                         case_id=first.patient_id)
    assert (refused.approved, refused.rule.value) == (False, 'role')   # a robot of the fleet, not of this role


def test_several_cases_at_once_need_a_brain_per_case_and_a_limit_of_zero_or_more():
    for at_once in (0, 2):
        with pytest.raises(ValueError, match='make_brain'):
            ManagerCore(ManagerProtocolBrain(), None, lambda *a, **k: None, ROBOTS, cases_at_once=at_once)
    with pytest.raises(ValueError, match='cases_at_once'):
        SupervisorCore(WorkflowPolicy(), lambda *a, **k: None, print, print, cases_at_once=-1)


@pytest.mark.parametrize('lessons', [True, False])
def test_the_next_case_starts_with_the_earlier_lessons_unless_the_condition_leaves_them_out(lessons):
    floor = SharedFloor(1, Recorder())
    floor.manager.lessons = lessons
    first, second = _patients(random.Random(2), 2)
    floor.arrive(first)
    floor.arrive(second)   # waits for the first (one case at a time)
    floor.settle()
    while floor.manager.open_cases == [first.patient_id]:
        floor.finish(next(iter(floor.busy)))
        floor.settle()
    kept = floor.manager._lessons
    assert kept and floor.manager.snapshot().lessons == (kept if lessons else [])


def test_an_hcw_is_with_one_case_at_a_time_the_next_takes_a_stand_in_or_waits_for_them():
    record = Recorder()
    floor = SharedFloor(0, record, [*fleet_robots(Role.NAVIGATION, 2), *ROBOTS[1:]])
    first, second = (p.model_copy(update={'assigned_hcw_id': '90', 'required_specialty': 'Physician'})
                     for p in _patients(random.Random(4), 2))
    floor.arrive(first)
    floor.settle()
    floor.arrive(second)   # the hospital assigned #90 to both: #90 is being escorted to the first's room
    floor.settle()
    assert [b[2] for b in floor.busy.values()] == [first.patient_id]   # the second waits for #90, robots idle
    refused = floor.supervisor.authorize('navigation', 'navigation_robot_2', '', 'manager', floor.t, hcw_id='90',
                                         staff=World().staff_facts(), case_id=second.patient_id)
    assert (refused.approved, refused.rule.value) == (False, 'hcw') and first.patient_id in refused.explanation
    for step in range(1, 5):   # waiting for a person another case has is not a stall either
        assert floor.supervisor.check_deadlines(floor.t + 25.0 * step) == []
    while first.patient_id in floor.manager.open_cases:   # the first case closes: #90 is free for the second
        floor.finish(next(iter(floor.busy)))
        floor.settle()
    assert floor.busy and next(iter(floor.busy.values()))[0].hcw_id == '90'
    # with another physician available, the next patient of #90 gets them at once instead of waiting
    third = second.model_copy(update={'patient_id': 'P-09'})
    stand_in = World(scan_badge='ED-0080')
    stand_in.staff['80']['availability'] = 'available'
    floor.manager.on_staff([StaffInfo(hcw_id=h, specialty=f.specialty, availability=f.availability)
                            for h, f in stand_in.staff_facts().items()])
    floor.worlds[third.patient_id] = stand_in
    floor.supervisor.on_patient_arrival(third.patient_id, floor.t, assigned_hcw_id='90',
                                        required_specialty='Physician', room=third.room, esi_level=third.esi_level)
    floor.manager.on_arrival(third)
    floor.settle()
    [task] = [b[0] for b in floor.busy.values() if b[2] == third.patient_id]
    assert task.hcw_id == '80'
