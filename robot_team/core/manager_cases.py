"""The manager's cases: each open case's lane, the waiting and closed cases, the team's board (no rclpy).

A :class:`Lane` is one open case as the manager serves it: its observation, its brain, whether it
changed since its last decision round, the guard feedback of its rounds and the robot it waits
for. :class:`CaseBook` keeps the lanes with what goes across them: which case each task serves,
the patients whose case waits, the cases closed, the team's own observation (the staff board and
the lost robots, copied into each case's) and what a restarted manager stores of them
(:class:`~robot_team.core.manager_store.ManagerState`). :func:`run_outcome` is a run's outcome
from its cases' outcomes.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

from robot_team.brains.base import GuardFeedback, ManagerBrain, ManagerObservation, PatientInfo, TaskRecord
from robot_team.contracts.cases import WaitingCase, case_key, next_case
from robot_team.core.manager_store import ClosedCase, ManagerState, OpenCase, WaitingPatient
from robot_team.contracts.names import RobotId, role_name
from robot_team.rules.workflow.rules import engaged_hcws


class Lane:
    """One open case as the manager serves it: its observation, brain and guard feedback (under the core's lock).

    Parameters
    ----------
    patient
        The case's patient (its ``patient_id`` is the case's ID).
    arrived_s
        When the patient arrived, ROS time, s.
    obs
        The case's observation.
    brain
        The brain that decides for the case.
    """

    def __init__(self, patient: PatientInfo, arrived_s: float, obs: ManagerObservation, brain: ManagerBrain):
        self.case_id = patient.patient_id
        self.arrived_s = arrived_s     # when its patient arrived (ROS time, s)
        self.obs = obs
        self.brain = brain
        self.dirty = False             # the observation changed since its last decision round
        self.last_feedback: list[GuardFeedback] = []    # what the guards said in its last decision round
        self.round_feedback: list[GuardFeedback] = []   # ... and in the one running
        self.parked = ''               # the robot it waits for (busy with another case's task; '' none)

    def key(self) -> tuple:
        """Its place among the open cases: :func:`robot_team.contracts.cases.case_key` (ESI, arrival, patient)."""
        patient = self.obs.patient
        return case_key(patient.esi_level if patient else 0, self.arrived_s, self.case_id)


class CaseBook:
    """The manager's open cases (lanes), the tasks' cases, the waiting and closed cases, the team's board.

    Parameters
    ----------
    lock
        The manager core's lock, which guards the book: the methods that say so take it, the
        others are called with it held.

    Attributes
    ----------
    lanes : dict[str, Lane]
        The open cases, by patient, in the order they opened.
    task_case : dict[str, str]
        Task ID -> the open case it serves.
    team : ManagerObservation
        The team's: staff board, lost robots (copied into each case's).
    last_obs : ManagerObservation
        The latest closed case's observation.
    waiting : dict[str, WaitingPatient]
        The patients whose case waits to open, by patient, in arrival order.
    closed : list[ClosedCase]
        The cases this run closed, in order.
    """

    def __init__(self, lock: threading.RLock):
        self.lock = lock
        self.lanes: dict[str, Lane] = {}
        self.task_case: dict[str, str] = {}
        self.team = ManagerObservation()
        self.last_obs = ManagerObservation()
        self.waiting: dict[str, WaitingPatient] = {}
        self.closed: list[ClosedCase] = []

    def known(self, patient_id: str) -> bool:
        """Whether ``patient_id``'s case is open, waits or closed (lock held)."""
        return (patient_id in self.lanes or patient_id in self.waiting
                or any(c.case_id == patient_id for c in self.closed))

    def of_task(self, task_id: str) -> Lane | None:
        """Return the open case task ``task_id`` serves (None: none open does; takes the lock)."""
        with self.lock:
            return self.lanes.get(self.task_case.get(task_id, ''))

    def sole(self) -> Lane | None:
        """Return the only open case (None: several or none; takes the lock)."""
        with self.lock:
            return next(iter(self.lanes.values())) if len(self.lanes) == 1 else None

    def with_escalation(self, escalation_id: str) -> Lane | None:
        """Return the open case whose observation has escalation ``escalation_id`` (None: none; lock held)."""
        return next((lane for lane in self.lanes.values()
                     if any(e.escalation_id == escalation_id for e in lane.obs.escalations)), None)

    def observations(self) -> Iterator[ManagerObservation]:
        """Yield the team's observation, then every open case's (lock held)."""
        yield self.team
        for lane in self.lanes.values():
            yield lane.obs

    def new_observation(self, robots: list[RobotId], lessons: list[str]) -> ManagerObservation:
        """Return a new case's observation: the team's staff board and lost robots, ``robots``, ``lessons``.

        Called with the lock held.
        """
        return ManagerObservation(staff=list(self.team.staff), staff_ids=list(self.team.staff_ids),
                                  lost_robots=list(self.team.lost_robots), robots=list(robots),
                                  lessons=list(lessons))

    def open(self, lane: Lane) -> None:
        """Serve ``lane``'s case (lock held)."""
        self.lanes[lane.case_id] = lane

    def track(self, record: TaskRecord, lane: Lane) -> None:
        """Know that task ``record`` serves ``lane``'s case (lock held)."""
        self.task_case[record.task_id] = lane.case_id

    def drop(self, lane: Lane) -> bool:
        """Stop serving ``lane``'s case and forget its tasks (lock held); return whether another case changed.

        The open cases that saw its HCW engaged change (``dirty``): that HCW is free (``engaged_hcws``).
        """
        del self.lanes[lane.case_id]
        woken = False
        for other in self.lanes.values():
            if lane.case_id in other.obs.engaged_hcws.values():
                other.dirty = True
                woken = True
        for task in [task for task, case in self.task_case.items() if case == lane.case_id]:
            del self.task_case[task]
        return woken

    def busy_elsewhere(self, lane: Lane, robot: RobotId) -> str:
        """Return the ID of a task ``robot`` runs for another open case than ``lane``'s ('' none; lock held)."""
        for other in self.lanes.values():
            if other is not lane:
                task = next((t for t in other.obs.tasks if t.robot == robot and t.state == 'running'), None)
                if task is not None:
                    return task.task_id
        return ''

    def engaged_elsewhere(self, lane: Lane) -> dict[str, str]:
        """Return the HCWs the other open cases than ``lane``'s have (lock held).

        As :func:`~robot_team.rules.workflow.rules.engaged_hcws`: HCW ID -> the case that has them.
        """
        return engaged_hcws({other.case_id: other.obs.outlines() for other in self.lanes.values() if other is not lane})

    def robot_free(self, robot: RobotId) -> list[Lane]:
        """Wake the cases waiting for ``robot`` or for any robot of its role; return them (takes the lock)."""
        with self.lock:
            woken = [lane for lane in self.lanes.values() if lane.parked in (robot, role_name(robot))]
            for lane in woken:
                lane.parked, lane.dirty = '', True
                lane.obs.new.append(f'{robot} is free.')
        return woken

    def next_waiting(self) -> WaitingPatient:
        """Take the most urgent waiting case out of the queue (lock held).

        The rule is :func:`~robot_team.contracts.cases.next_case`.
        """
        chosen = next_case(WaitingCase(w.patient.patient_id, w.patient.esi_level, w.arrived_s)
                           for w in self.waiting.values())
        return self.waiting.pop(chosen.patient_id)

    def snapshot(self) -> ManagerObservation:
        """Return a copy of the observation of the first open case (none open: the latest closed one's).

        Takes the lock.
        """
        with self.lock:
            lane = next(iter(self.lanes.values()), None)
            obs = lane.obs if lane is not None else (self.last_obs if self.closed else self.team)
            return obs.model_copy(deep=True)

    def state(self, taken_over: bool, held_on: str, lessons: list[str]) -> ManagerState:
        """Return what a restarted manager takes up, with the manager's role state and lessons (takes the lock).

        The observations are stored less what is new since their last decision (:func:`without_news`).
        """
        with self.lock:
            lanes = list(self.lanes.values())
            obs = lanes[0].obs if lanes else self.team
            return ManagerState(observation=without_news(obs), arrived_s=lanes[0].arrived_s if lanes else 0.0,
                                others=[OpenCase(observation=without_news(lane.obs), arrived_s=lane.arrived_s)
                                        for lane in lanes[1:]],
                                taken_over=taken_over, held_on=held_on, waiting=list(self.waiting.values()),
                                closed=list(self.closed), lessons=list(lessons))

    def restore(self, state: ManagerState, take_brain: Callable[[], ManagerBrain]) -> list[TaskRecord]:
        """Take up the cases of a stored state (a restart; lock held); return their tasks.

        Each stored open case opens again with a brain from ``take_brain``; the waiting and closed
        cases and the team's staff board and lost robots come back too.
        """
        self.waiting = {w.patient.patient_id: w for w in state.waiting}
        self.closed = list(state.closed)
        first = without_news(state.observation)
        self.team = ManagerObservation(staff=first.staff, staff_ids=first.staff_ids, lost_robots=first.lost_robots)
        tasks = []
        for obs, arrived_s in ((first, state.arrived_s),
                               *((without_news(c.observation), c.arrived_s) for c in state.others)):
            if obs.patient is None:
                continue
            lane = Lane(obs.patient, arrived_s, obs, take_brain())
            self.open(lane)
            for task in obs.tasks:
                self.track(task, lane)
                tasks.append(task)
        return tasks


def without_news(obs: ManagerObservation) -> ManagerObservation:
    """Return a copy of ``obs`` less what is new since its last decision (cues, guard feedback): what is stored."""
    return obs.model_copy(deep=True, update={'new': [], 'feedback': []})


def run_outcome(outcomes: list[str]) -> str:
    """Return a run's outcome from its cases' outcomes (in order): the case's for one case.

    Several: ``success`` when every case succeeded, else ``failure`` when one failed, else
    ``escalated`` (people closed some); each case's own outcome is in the record (``case_closed``).

    Raises
    ------
    ValueError
        If ``outcomes`` is empty.
    """
    if not outcomes:
        raise ValueError('a run outcome needs at least one case outcome')
    if len(set(outcomes)) == 1:
        return outcomes[0]
    return 'failure' if 'failure' in outcomes else 'escalated'
