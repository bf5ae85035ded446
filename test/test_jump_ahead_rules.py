"""Jumping ahead inside a case, without ROS: what each node says of its next work holds, whatever happens.

The follow clock jumps to the step that brings the earliest ``next_event_s`` its followers gave
(:mod:`robot_team.contracts.clock_sync`). A follower that gives a time later than its real next
work makes the team decide differently with the jump than without. So each rule is held to what
the code that acts does, over random choices (a random chooser of the supervisor's inputs, random
places to stop a robot), not over one episode:

- the supervisor (:meth:`EscalationDesk.next_event_s`): between now and the time it gives,
  its deadline check (:meth:`EscalationDesk.tick`, what its timer runs) does nothing; with no
  time (``inf``), nothing ever;
- the hospital (:meth:`HospitalEngine.next_event_s`): once the HCWs who follow or wait for a
  stopped robot are ``settled``, stepping the floor changes none of them and produces no event
  until the time it gives;
- the manager (:attr:`ManagerCore.idle`): not idle from an observation until its decision round
  has run.
"""

from __future__ import annotations

import math
import random
import threading

import pytest

hypothesis = pytest.importorskip('hypothesis')
from hypothesis import given, settings, strategies as st  # noqa: E402

from robot_team.brains.base import ManagerBrain, PatientInfo  # noqa: E402
from robot_team.contracts.clock_sync import BUSY  # noqa: E402
from robot_team.core.manager import ManagerCore  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.sim.world import Pose2D  # noqa: E402
from test_escalation_desk import STEPS, make_desk  # noqa: E402
from test_sim_hospital import NAV, kinds, make_floor, run  # noqa: E402

PATIENTS = ('P-1', 'P-2', 'P-3')


def _act(rng: random.Random, desk, core, t: float, state: dict) -> None:
    """One input the supervisor may get at ``t``: an arrival, a delegation, a report, an escalation, a decision."""
    choice = rng.randrange(7)
    patient = rng.choice(PATIENTS)
    if choice == 0:
        core.on_patient_arrival(patient, t, assigned_hcw_id='90', room='ER-12', esi_level=rng.randint(1, 5))
    elif choice == 1:   # the next step of a case, maybe reported at once
        step = state.setdefault(patient, 0)
        if step >= len(STEPS):
            return
        task_type, robot = STEPS[step]
        auth = core.authorize(task_type, robot, '', 'manager', t, hcw_id='90', case_id=patient)
        if auth.approved:
            state[patient] = step + 1
            state.setdefault('tasks', []).append((auth.task_id, task_type, robot))
    elif choice == 2 and state.get('tasks'):
        task_id, task_type, robot = rng.choice(state['tasks'])
        status = rng.choice(['success', 'failure'])
        core.submit_report(TaskReportModel(task_id=task_id, task_type=task_type, robot=robot, status=status,
                                           issue='' if status == 'success' else 'HCW #80 unavailable'), t)
    elif choice == 3 and state.get('tasks'):
        task_id = rng.choice(state['tasks'])[0]
        core.request_escalation(task_id, 'HCW #80 unavailable', ['reassign:90', 'abort'], t)
    elif choice == 4 and state.get('tasks'):
        desk.raise_escalation('charge_nurse', rng.choice(['concern', 'stop_and_hold']), rng.choice(state['tasks'])[0],
                              'a worry', rng.choice(['critical', 'high', 'normal']), t)
    elif choice == 5:
        open_ids = [r.escalation_id for r in desk.records() if r.is_open]
        if open_ids:
            desk.resolve(rng.choice(open_ids), rng.choice(['retry', 'abort', 'reassign']), '90', '', 'charge_nurse',
                         t)
    # choice 6: nothing comes; time passes


@settings(max_examples=30, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(min_value=0, max_value=2 ** 31 - 1))
def test_the_supervisor_does_nothing_by_itself_before_the_time_it_gives(tmp_path_factory, seed):
    rng = random.Random(seed)
    desk, core, ports, events, _ = make_desk(tmp_path_factory.mktemp('desk'))
    core.cases_at_once = rng.choice([0, 1, 2])
    t, checked, scheduled, state = 0.0, 0, 0, {}
    for _ in range(60):
        for _ in range(rng.randint(0, 3)):
            _act(rng, desk, core, t, state)
        desk.tick(t)   # what the inputs made due now happens now
        wake = desk.next_event_s(t)
        assert wake != BUSY, 'no deadline pause in this test: the supervisor always knows its next work'
        before = (len(events), len(ports.published), len(ports.holds))
        # any time before it: whole steps, and times between them, as a timer may fire
        later = t + rng.uniform(0.001, 400.0) if math.isinf(wake) else rng.uniform(t, wake)
        if later < wake:
            desk.tick(later)
            assert (len(events), len(ports.published), len(ports.holds)) == before, (
                f'seed {seed}: the supervisor acted at {later:.3f} s, before its next work at {wake} s (now {t} s): '
                f'{events[before[0]:]}')
            checked += 1
            scheduled += not math.isinf(wake)
        t = later if later < wake else wake + 0.5   # then on, past the time it gave
    assert checked >= 30 and scheduled >= 1


@pytest.mark.parametrize('odometry', [False, True])
@pytest.mark.parametrize('escort', [False, True])
@pytest.mark.parametrize('seed', [1, 2])
def test_hcws_settled_behind_a_stopped_robot_stay_until_the_time_the_hospital_gives(seed, escort, odometry):
    stop_after = random.Random(seed * 4 + escort * 2 + odometry).uniform(0.5, 30.0)   # where the robot stops
    motion, hospital = make_floor()
    page = hospital.page('90', NAV, 'Please meet navigation_robot', room='ER-12')
    run(motion, hospital, hospital.page_response_delay_s + 0.5, odometry)
    assert page.acknowledged and hospital.hcw('90').state == 'waiting'
    where = hospital.hcw('90').pose
    motion.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    if escort:   # pick the HCW up, then stop on the way to the room
        run(motion, hospital, 80, odometry)
        motion.start_goal(NAV, Pose2D(12.5, 19.5, 0.0))
    run(motion, hospital, stop_after, odometry)
    driving = motion.goal_status(NAV) is not None and motion.goal_status(NAV).state == 'active'
    if driving:   # the engine gives when the robot reaches its goal (its forecast tells the way there)
        remaining = motion.goal_status(NAV).distance_remaining
        assert motion.t < motion.next_event_s() <= motion.t + remaining / motion.max_speed + 1e-6
    motion.cancel_goal(NAV)
    for _ in range(300):   # the robot stops; its HCW catches up and stands
        run(motion, hospital, 0.1, odometry)
        if hospital.settled():
            break
    assert hospital.settled(), (stop_after, escort, odometry, hospital.hcw('90').state)
    wake = hospital.next_event_s()
    assert wake > hospital.t
    hcw = hospital.hcw('90')
    quiet = run(motion, hospital, min(wake - hospital.t - 0.1, 20.0), odometry)
    assert quiet == [] and hospital.hcw('90') == hcw, kinds(quiet, 'hcw_following')
    assert hospital.settled()


class _Clock:
    """The manager's ports, as far as this test reaches them: ROS time."""

    def now(self) -> float:
        return 1.0


class _Deliberate(ManagerBrain):
    """A manager brain that takes its time over each round and then waits for the next cue (no action)."""

    def __init__(self):
        self.deciding, self.go = threading.Event(), threading.Event()

    def decide(self, observation):
        self.deciding.set()
        self.go.wait(10.0)
        return []


def test_the_manager_is_not_idle_from_an_observation_until_its_round_ran():
    brain = _Deliberate()
    core = ManagerCore(brain, _Clock(), lambda *a, **k: None, ['navigation_robot'])
    assert core.idle and core.at_rest
    core.on_arrival(PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='90'))
    assert not core.idle, 'an observation waits to be decided'
    stop = threading.Event()
    worker = threading.Thread(target=core.run, args=(stop,), daemon=True)
    worker.start()
    try:
        assert brain.deciding.wait(10.0)
        assert not core.idle, 'its round runs'
        brain.go.set()
        for _ in range(500):
            if core.idle:
                break
            threading.Event().wait(0.01)
        assert core.idle and not core.at_rest, 'its round ran; the case is open and it waits for a message'
    finally:
        stop.set()
        brain.go.set()
        worker.join(timeout=5.0)


def _floor_on_a_drive(seed: int):
    """A floor whose navigation robot drives to HCW #90 (who waits for it), or escorts them to ER-12 (``seed``)."""
    rng = random.Random(seed)
    motion, hospital = make_floor()
    page = hospital.page('90', NAV, 'Please meet navigation_robot', room='ER-12')
    run(motion, hospital, hospital.page_response_delay_s + 0.5)
    assert page.acknowledged and hospital.hcw('90').state == 'waiting'
    where = hospital.hcw('90').pose
    motion.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    if rng.random() < 0.5:   # picked up: the escort to the room
        run(motion, hospital, 80)
        motion.start_goal(NAV, Pose2D(12.5, 19.5, 0.0))
    run(motion, hospital, rng.choice([0.1, 0.5]) + rng.randrange(0, 20))   # somewhere on the way
    motion.step(math.ceil(motion.t) - motion.t)   # on the follow clock's grid of whole seconds
    hospital.advance_along(motion.t, [(t, r, p) for r, t, p in motion.drain_localization()])
    return motion, hospital


@settings(max_examples=6, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(min_value=0, max_value=2 ** 31 - 1), jump=st.integers(min_value=2, max_value=60))
def test_a_drive_jumped_across_leaves_the_floor_as_stepping_through_it(seed, jump):
    """What lets the follow clock jump across a drive (``motion_sim``'s trajectory, the hospital's replay of it).

    The motion engine's forecast is what it then reports, stepped one second at a time or all at
    once; the hospital advanced along it in one jump ends with the HCWs and events of one step at
    a time; and the time ``forecast_event_s`` gives is that of the first event (none before it).
    """
    stepped_motion, stepped = _floor_on_a_drive(seed)
    jumped_motion, jumped = _floor_on_a_drive(seed)
    t0 = stepped_motion.t
    reports = [(t, NAV, pose) for t, pose in stepped_motion.forecast(NAV)]
    assert reports == [(t, NAV, pose) for t, pose in jumped_motion.forecast(NAV)]
    wake = stepped.forecast_event_s(reports)
    events = []
    for k in range(1, jump + 1):
        stepped_motion.step(1.0)
        events += stepped.advance_along(t0 + k, reports)
    jumped_motion.step(float(jump))
    jumped_events = jumped.advance_along(t0 + jump, reports)
    told = [(t, NAV, pose) for r, t, pose in stepped_motion.drain_localization()]
    assert told == [r for r in reports if r[0] <= t0 + jump + 1e-9]           # the forecast held
    assert [(r, t, p) for r, t, p in jumped_motion.drain_localization()] == [(NAV, t, p) for t, _, p in told]
    assert stepped_motion.robot_pose(NAV) == jumped_motion.robot_pose(NAV)
    assert [(e.kind, e.t) for e in events] == [(e.kind, e.t) for e in jumped_events]
    assert stepped.hcw('90') == jumped.hcw('90')
    first = min((e.t for e in events), default=math.inf)
    assert wake > t0 and wake <= first + 1e-9, (wake, first, [(e.kind, e.t) for e in events])
    if first < t0 + jump:   # the jump the clock makes stops before it: no event is passed
        assert wake == pytest.approx(first)
