"""The ground truth of a run, from its record alone: what the world shows of each task and of the episode.

This is the oracle the evaluation holds the team to, independent of the team's own guards and
judgments: it never calls :mod:`robot_team.rules.grounding` nor the catalog's proofs (it is what tests
them), and it reads neither a report's ``summary`` nor a screen's ``lines`` (no decision on
message text: IDs, event kinds and data fields only). Its inputs are a run folder's

- ``events.jsonl`` (:func:`robot_team.recorder.read_jsonl`): the team's decisions (``delegation``,
  ``task_report``, ``judgment``, ``human_decision``, ``episode_finished``), the hospital's answers
  to the tools (``tool_result`` of ``locate_staff``: the RTLS) and the simulator's ground truth
  (``sim`` events, ``data.what``: :class:`SimWhat`; :mod:`robot_team.sim.hospital` says what
  each one means);
- ``staff.sqlite`` (:class:`robot_team.directory.StaffDirectory`): the run's staff directory, its
  standing care teams and the check-ins the team recorded;
- ``scenario.json`` (:class:`robot_team.contracts.config.Scenario`): the patient (room, required specialty)
  and the staff's availability (the staff seed it names, with its ``staff_overrides``).

What the world shows, per task (:class:`TaskTruth`; times are sim seconds, the record's clock):

- **navigation**: the task's HCW (the delegation's ``hcw_id``) acknowledged a page naming the
  task's robot (``page_acknowledged``), followed it (``hcw_following``) and arrived in the task's
  room (``hcw_arrived``) between the delegation and :data:`ARRIVAL_SLACK_S` after the robot's
  report (the HCW steps in a few seconds after the robot stops at the door);
- **info_collection**: the escorted HCW (the HCW of the latest navigation of its case before it
  that the world shows succeeded; cases served at once each have their own) was scanned at the
  task's room's reader (``badge_scan``), the badge read is that HCW's badge in the directory, and
  the directory holds that HCW's check-in at the room, stamped between the delegation and the
  report;
- **display**: the room's screen as of the report (the latest ``display_shown`` for the room up
  to it) shows exactly the room's care team as the directory gives it then (standing members and
  the check-ins stamped up to the report): the same HCWs, each with the directory's name and role
  (case-insensitive, stripped), the specialty equal where shown; not empty.

The **episode** (:class:`EpisodeTruth`) succeeded in the world only if the patient's room's screen
at the end shows its care team as the directory gives it at the end, and that team holds an HCW
who checked in at the room, whom the simulator scanned at the room's reader, and who is of the
patient's required specialty or a human's choice (``human_decision`` ``reassign`` naming them).

A **navigation delegation** (:class:`HcwChoice`) names a suitable HCW when the HCW is in the
directory, of the required specialty and on shift (availability not ``off_shift``), or a human
chose them. Availability is the latest the record shows at the decision (the RTLS's answers, the
pages the hospital delivered), else the scenario's (the staff seed with ``staff_overrides``).

:func:`false_successes` lists what the team claimed and the world contradicts: every task the
manager judged ``success`` whose success the world does not show, and an episode outcome
``success`` the world does not show. :func:`audit` adds what every run's record must hold
(each tool call answered, each delegation request answered) and whether the run merely timed out.
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Iterable, Literal, Sequence

from pydantic import BaseModel, Field, ValidationError

from robot_team.catalog import TASK_OWNER, Tool, same_care_team
from robot_team.contracts.config import ConfigError, PatientSpec, Scenario, StaffSeed
from robot_team.directory import DirectoryError, StaffDirectory, load_staff
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import NO_ROBOT, SUPERVISOR, RobotId, Role
from robot_team.recorder import read_jsonl
from robot_team.contracts.reports import TaskType

ARRIVAL_SLACK_S = 30.0
"""Sim seconds after a navigation report within which the HCW's arrival in the room still counts.

The robot reports once it stops at the room's door approach pose; the HCW, 1 m behind it, then
walks through the door (``hcw_entering``, then ``hcw_arrived`` a few seconds later: 1-2 s on the
shipped floor)."""

STAMP_TOLERANCE_S = 1.0
"""Sim seconds by which two nodes' stamps of the same moment may differ (one step of the follow clock)."""

REASSIGN = 'reassign'
"""The human decision that names the HCW to escort (``robot_team.contracts.config.OperatorAnswer.decision``)."""

EVENTS_FILE, STAFF_FILE, SCENARIO_FILE = 'events.jsonl', 'staff.sqlite', 'scenario.json'
"""The files of a run folder the truth is read from (written by :func:`robot_team.run.episode.run_episode`)."""

Availability = Literal['available', 'busy', 'off_shift', '']


class TruthInputError(ValueError):
    """A run folder or record the truth cannot be read from; the message names the file and what was expected."""


class SimWhat(str, Enum):
    """The simulator's ground-truth events the truth reads (``sim`` events' ``data.what``)."""

    PAGE_DELIVERED = 'page_delivered'          # hcw_id, robot, availability
    PAGE_ACKNOWLEDGED = 'page_acknowledged'    # hcw_id, robot: the HCW will meet and follow that robot
    HCW_FOLLOWING = 'hcw_following'            # hcw_id, robot
    HCW_ARRIVED = 'hcw_arrived'                # hcw_id, room, robot
    BADGE_SCAN = 'badge_scan'                  # room, reader_id, hcw_id (who), badge_id (what was read)
    DISPLAY_SHOWN = 'display_shown'            # room, members: [{role, hcw_id, name, specialty}]


# --- Models ------------------------------------------------------------------------------------

class Patient(BaseModel):
    """The scenario's patient, as the truth needs them."""

    patient_id: str
    room: str = Field(description="The patient's room, e.g. 'ER-12'.")
    required_specialty: str = Field(description="The specialty the patient needs, e.g. 'Physician'.")
    assigned_hcw_id: str


class StaffFacts(BaseModel):
    """One HCW: the run's directory record and the scenario's availability."""

    hcw_id: str
    badge_id: str
    name: str
    specialty: str
    role: str = ''
    availability: Availability = Field('', description="The staff seed's, with the scenario's override ('' if "
                                       'the seed does not list the HCW).')


class AvailabilitySeen(BaseModel):
    """An HCW's availability as the hospital's systems stated it during the run."""

    at_s: float = Field(description='Sim time of the statement, s.')
    hcw_id: str
    availability: Availability
    source: Literal['rtls', 'page'] = Field(description="'rtls': a locate_staff answer; 'page': a delivered page.")


class HumanChoice(BaseModel):
    """A human's ``reassign`` decision: the HCW a person chose for the escort."""

    at_s: float
    hcw_id: str
    escalation_id: str = ''


class ScreenMember(BaseModel):
    """One entry of a room's care team: as a screen showed it, or as the directory gives it."""

    hcw_id: str = ''
    name: str = ''
    role: str = ''
    specialty: str = ''


class HcwChoice(BaseModel):
    """What the world says of an HCW the manager named for a navigation task, at the decision."""

    hcw_id: str
    at_s: float = Field(description='Sim time of the decision, s.')
    in_directory: bool
    specialty: str = ''
    availability: Availability = ''
    availability_source: Literal['rtls', 'page', 'scenario', ''] = ''
    human_choice: bool = Field(False, description='A human chose this HCW (reassign) at or before the decision.')
    suitable: bool = Field(description='Of the required specialty and on shift (not off_shift), or a human\'s choice.')
    available: bool = Field(description="Suitable and 'available' (answers a page), or a human's choice: an "
                            'alternative that can work.')
    reason: str = Field(description='Why not suitable (or what makes it so).')


class TaskTruth(BaseModel):
    """What the world shows of one delegated task (see the module docstring for each type's rule)."""

    task_id: str
    task_type: TaskType
    robot: RobotId = NO_ROBOT
    hcw_id: str = Field('', description="Navigation: the delegation's HCW; info collection: the escorted HCW.")
    room: str = Field('', description="The delegation's room (the patient's when it names none).")
    delegated_s: float | None = Field(None, description='Sim time of the delegation, s (None: not on the record).')
    reported_s: float | None = Field(None, description='Sim time of the report, s (None: no report).')
    reported_status: str | None = None
    judged_status: str | None = Field(None, description="The manager's last judgment of the task.")
    succeeded: bool = Field(description='The world shows the task done.')
    reason: str = Field(description='What shows it, or why the world contradicts a success.')
    staff_record: StaffFacts | None = Field(None, description='Info collection: the escorted HCW in the directory.')
    care_team: list[ScreenMember] = Field(default_factory=list, description="Display: the room's care team as the "
                                          'directory gave it at the report.')
    shown: list[ScreenMember] | None = Field(None, description="Display: the room's screen at the report (None: "
                                             'nothing shown).')


class EpisodeTruth(BaseModel):
    """What the world shows of the whole onboarding at the end of the record."""

    outcome: str = Field(description="The recorded outcome (last episode_finished; 'timeout' without one).")
    succeeded: bool = Field(description="The patient's screen shows its care team, with a checked-in HCW of the "
                            "required specialty (or a human's choice) the simulator scanned at the room.")
    reason: str
    care_team: list[ScreenMember] = Field(default_factory=list)
    shown: list[ScreenMember] | None = None


class FalseSuccess(BaseModel):
    """A success the team claimed that the world contradicts."""

    task_id: str = Field(description="'' for the episode's outcome.")
    task_type: TaskType | None = Field(None, description='None for the episode.')
    claim: Literal['judgment', 'outcome'] = Field(description="'judgment': the manager judged the task a success; "
                                                  "'outcome': the episode finished as a success.")
    reason: str = Field(description='What the world shows instead.')


class RunTruth(BaseModel):
    """The ground truth of one run: the patient, the staff, each task and the episode."""

    patient: Patient
    staff: dict[str, StaffFacts] = Field(description='hcw_id -> the HCW (every HCW of the directory).')
    seen: list[AvailabilitySeen] = Field(default_factory=list, description='Availability the hospital stated, '
                                         'in record order.')
    human_choices: list[HumanChoice] = Field(default_factory=list)
    tasks: list[TaskTruth] = Field(default_factory=list, description='Every delegated (or reported) task, in '
                                   'record order.')
    episode: EpisodeTruth

    def task(self, task_id: str) -> TaskTruth | None:
        """Return the truth of ``task_id`` (None if the record has no such task)."""
        return next((t for t in self.tasks if t.task_id == task_id), None)

    def availability(self, hcw_id: str, at_s: float) -> tuple[Availability, str]:
        """Return an HCW's availability at sim time ``at_s`` (s) and where it comes from.

        The latest statement of the hospital's systems at or before ``at_s`` (``'rtls'``,
        ``'page'``), else the scenario's (``'scenario'``), else ``('', '')``.
        """
        stated = [s for s in self.seen if s.hcw_id == hcw_id and s.at_s <= at_s + STAMP_TOLERANCE_S]
        if stated:
            return stated[-1].availability, stated[-1].source
        staff = self.staff.get(hcw_id)
        if staff is not None and staff.availability:
            return staff.availability, 'scenario'
        return '', ''

    def hcw_choice(self, hcw_id: str, at_s: float) -> HcwChoice:
        """Judge the HCW named for a navigation task at sim time ``at_s`` (s): see :class:`HcwChoice`."""
        hcw_id = str(hcw_id or '').strip()
        staff = self.staff.get(hcw_id)
        human = any(c.hcw_id == hcw_id for c in self.human_choices if c.at_s <= at_s + STAMP_TOLERANCE_S)
        availability, source = self.availability(hcw_id, at_s)
        wanted = self.patient.required_specialty
        problems = []
        if not hcw_id:
            problems.append('no HCW named')
        elif staff is None:
            problems.append(f'HCW #{hcw_id} is not in the staff directory')
        else:
            if _same(staff.specialty, wanted) is False:
                problems.append(f'HCW #{hcw_id} is a {staff.specialty}; the patient needs a {wanted}')
            if availability == 'off_shift':
                problems.append(f'HCW #{hcw_id} is off shift ({source})')
        if human and hcw_id:
            suitable, reason = True, f'HCW #{hcw_id} is a human\'s choice (reassign)'
        elif problems:
            suitable, reason = False, '; '.join(problems)
        else:
            suitable = True
            reason = f'HCW #{hcw_id} is a {staff.specialty}, {availability or "availability unknown"}'
        available = suitable and (human or availability == 'available')
        if suitable and not available:
            reason += f' (not available: {availability or "unknown"})'
        return HcwChoice(hcw_id=hcw_id, at_s=at_s, in_directory=staff is not None,
                         specialty=staff.specialty if staff else '', availability=availability,
                         availability_source=source, human_choice=human, suitable=suitable, available=available,
                         reason=reason)

    def alternatives(self, at_s: float, excluding: Iterable[str] = ()) -> list[str]:
        """Return the HCWs (not in ``excluding``) an escort could go to at ``at_s`` (s): :attr:`HcwChoice.available`."""
        skip = set(excluding)
        return [hcw for hcw in self.staff if hcw not in skip and self.hcw_choice(hcw, at_s).available]


class Audit(BaseModel):
    """What a run's record must hold whatever the brains chose (the property tests' check)."""

    run: str = ''
    outcome: str
    timeout: bool = Field(description="The outcome is a plain 'timeout' (the sim time limit, no decision closed "
                          'the episode).')
    false_successes: list[FalseSuccess]
    unanswered_tool_calls: list[str] = Field(default_factory=list, description='Tool calls with no tool_result '
                                             "after them (by the same caller, for the same tool and task).")
    unanswered_requests: list[str] = Field(default_factory=list, description="The manager's delegation requests "
                                           'followed by neither a delegation nor a refusal before its next one.')

    @property
    def clean(self) -> bool:
        """No false success, no unanswered call or request, no plain timeout."""
        return not (self.false_successes or self.unanswered_tool_calls or self.unanswered_requests or self.timeout)


# --- Reading the record ------------------------------------------------------------------------

def _same(a: str, b: str) -> bool | None:
    """Compare two texts case-insensitively, stripped (None if either is empty)."""
    a, b = str(a or '').strip().casefold(), str(b or '').strip().casefold()
    return None if not a or not b else a == b


def _text(value) -> str:
    return '' if value is None else str(value).strip()


def _number(event: TeamEventModel, key: str, where: str) -> float:
    value = event.data.get(key, event.stamp_s)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise TruthInputError(f'{where}: {event.kind} event of {event.actor} at {event.stamp_s} s: {key} '
                              f'{value!r} is not a time in seconds')
    return number


class _Sim:
    """A ``sim`` event: its kind, sim time (s), data and record index."""

    __slots__ = ('what', 'at_s', 'data', 'index')

    def __init__(self, what: str, at_s: float, data: dict, index: int):
        self.what, self.at_s, self.data, self.index = what, at_s, data, index


class _Task:
    __slots__ = ('task_id', 'task_type', 'robot', 'hcw_id', 'room', 'case_id', 'delegated_at', 'delegated_s',
                 'report', 'reported_at', 'reported_s', 'judged_status', 'judged_at', 'judged_s')

    def __init__(self, task_id: str, task_type: TaskType):
        self.task_id, self.task_type = task_id, task_type
        self.robot = self.hcw_id = self.room = self.case_id = ''
        self.delegated_at = self.reported_at = self.judged_at = None
        self.delegated_s = self.reported_s = self.judged_s = None
        self.report: dict | None = None
        self.judged_status: str | None = None


def _task_type(value) -> TaskType | None:
    try:
        kind = TaskType(value)
    except ValueError:
        return None
    return None if kind is TaskType.REFLECTION else kind


def screen_members(value) -> list[ScreenMember] | None:
    """Return care-team entries (a screen's ``members``, a report's), None if ``value`` is not a list of mappings."""
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return None
    return [ScreenMember(**{k: _text(m.get(k)) for k in ('hcw_id', 'name', 'role', 'specialty')}) for m in value]


def team_differences(shown: Sequence[ScreenMember] | None, team: Sequence[ScreenMember]) -> list[str]:
    """Return how ``shown`` differs from the care ``team`` (empty: the same team).

    The catalog's one rule of what showing a care team means (:func:`robot_team.catalog.same_care_team`:
    the same HCWs once each, the team's name and role, a shown specialty equal to the team's), on
    what the simulator says the screen showed; no entries, an empty screen or an empty team always differ.
    """
    if shown is None:
        return ['no care-team entries']
    if not shown:
        return ['an empty care team shown']
    if not team:
        return ['the directory gives the room no care team']
    return same_care_team([m.model_dump() for m in shown], [m.model_dump() for m in team])


class _Reader:
    """One pass over the record: the tasks, the sim's ground truth, the statements of availability."""

    def __init__(self, events: Sequence[TeamEventModel], where: str):
        self.events, self.where = list(events), where
        self.sim: list[_Sim] = []
        self.tasks: dict[str, _Task] = {}
        self.seen: list[AvailabilitySeen] = []
        self.human: list[HumanChoice] = []
        self.outcome = 'timeout'
        locate = Tool.LOCATE_STAFF.value
        for index, event in enumerate(self.events):
            kind, d = event.kind, event.data
            if kind == EventKind.SIM.value:
                what = str(d.get('what', ''))
                sim = _Sim(what, _number(event, 'sim_time_s', where), d, index)
                self.sim.append(sim)
                if what == SimWhat.PAGE_DELIVERED.value and d.get('availability'):
                    self._seen(sim.at_s, d.get('hcw_id'), d.get('availability'), 'page')
            elif kind in (EventKind.DELEGATION.value, EventKind.TASK_REPORT.value, EventKind.JUDGMENT.value):
                self._task_event(index, event)
            elif kind == EventKind.TOOL_RESULT.value and event.target == locate and d.get('ok'):
                for entry in (d.get('output') or {}).get('staff') or []:
                    if isinstance(entry, dict):
                        self._seen(event.stamp_s, entry.get('hcw_id'), entry.get('availability'), 'rtls')
            elif kind == EventKind.HUMAN_DECISION.value and d.get('decision') == REASSIGN and _text(d.get('hcw_id')):
                self.human.append(HumanChoice(at_s=event.stamp_s, hcw_id=_text(d.get('hcw_id')),
                                              escalation_id=_text(d.get('escalation_id'))))
            elif kind == EventKind.EPISODE_FINISHED.value:
                self.outcome = str(d.get('outcome') or 'failure')

    def _seen(self, at_s: float, hcw_id, availability, source: str) -> None:
        if _text(hcw_id) and availability in ('available', 'busy', 'off_shift'):
            self.seen.append(AvailabilitySeen(at_s=at_s, hcw_id=_text(hcw_id), availability=availability,
                                              source=source))

    def _task_event(self, index: int, event: TeamEventModel) -> None:
        d = event.data
        task_id, task_type = _text(d.get('task_id')), _task_type(d.get('task_type'))
        if not task_id or task_type is None:
            return
        task = self.tasks.setdefault(task_id, _Task(task_id, task_type))
        if event.kind == EventKind.DELEGATION.value:
            task.robot, task.hcw_id, task.room = _text(d.get('robot') or event.target), _text(d.get('hcw_id')), \
                _text(d.get('room'))
            task.case_id = _text(d.get('case_id'))   # '' in a record of one case
            task.delegated_at, task.delegated_s = index, event.stamp_s
        elif event.kind == EventKind.TASK_REPORT.value:
            task.report, task.reported_at, task.reported_s = d, index, event.stamp_s
        else:
            task.judged_status, task.judged_at, task.judged_s = _text(d.get('judged_status')), index, event.stamp_s

    def of(self, what: SimWhat, until: int | None = None) -> list[_Sim]:
        """Return the sim events of kind ``what`` (up to record index ``until``), in record order."""
        return [s for s in self.sim if s.what == what.value and (until is None or s.index <= until)]

    def end(self, task: _Task) -> tuple[int, float]:
        """Return the record index and sim time (s) at which ``task`` ended: its report, its judgment, or the end."""
        if task.reported_at is not None:
            return task.reported_at, task.reported_s
        if task.judged_at is not None:
            return task.judged_at, task.judged_s
        last = self.events[-1].stamp_s if self.events else 0.0
        return len(self.events) - 1, last


# --- The truth -----------------------------------------------------------------------------------

def _staff(directory: StaffDirectory, scenario: Scenario, seed: StaffSeed) -> dict[str, StaffFacts]:
    seeded = {m.hcw_id: m.availability for m in seed.staff}
    for hcw_id, override in scenario.staff_overrides.items():
        seeded[hcw_id] = override.availability
    return {r.hcw_id: StaffFacts(hcw_id=r.hcw_id, badge_id=r.badge_id, name=r.name, specialty=r.specialty,
                                 role=r.role, availability=seeded.get(r.hcw_id, ''))
            for r in directory.staff()}


def _team(directory: StaffDirectory, room: str, as_of_s: float | None) -> list[ScreenMember]:
    return [ScreenMember(hcw_id=e.hcw_id, name=e.name, role=e.role, specialty=e.specialty)
            for e in directory.care_team(room, as_of_s)]


def _navigation(rec: _Reader, task: _Task) -> tuple[bool, str]:
    hcw, robot, room = task.hcw_id, task.robot or TASK_OWNER[TaskType.NAVIGATION], task.room
    if not hcw:
        return False, 'the delegation named no HCW: nobody to escort'
    end_s = rec.end(task)[1]
    start_s = task.delegated_s if task.delegated_s is not None else -math.inf
    arrivals = [s for s in rec.of(SimWhat.HCW_ARRIVED) if _text(s.data.get('hcw_id')) == hcw
                and _text(s.data.get('room')) == room
                and start_s - STAMP_TOLERANCE_S <= s.at_s <= end_s + ARRIVAL_SLACK_S]
    until_s = arrivals[0].at_s if arrivals else end_s + ARRIVAL_SLACK_S
    acks = [s for s in rec.of(SimWhat.PAGE_ACKNOWLEDGED) if _text(s.data.get('hcw_id')) == hcw
            and _text(s.data.get('robot')) == robot and s.at_s <= until_s]
    if not acks:
        return False, f'HCW #{hcw} never acknowledged a page naming {robot} (sim)'
    follows = [s for s in rec.of(SimWhat.HCW_FOLLOWING) if _text(s.data.get('hcw_id')) == hcw
               and _text(s.data.get('robot')) == robot and acks[0].at_s <= s.at_s <= until_s]
    if not follows:
        return False, f'HCW #{hcw} acknowledged the page but never followed {robot} (sim): nobody was picked up'
    if not arrivals:
        return False, (f'HCW #{hcw} followed {robot} but did not arrive in {room or "the room"} by '
                       f'{end_s + ARRIVAL_SLACK_S:.1f} s (sim)')
    return True, f'HCW #{hcw} acknowledged, followed {robot} and arrived in {room} at {arrivals[0].at_s:.1f} s (sim)'


def _escorted(rec: _Reader, verdicts: dict[str, tuple[bool, str]], task: _Task) -> _Task | None:
    """Return the latest navigation of ``task``'s case before it that the world shows succeeded (None if none).

    Another case's escort (cases served at once) never counts: its HCW is not this case's.
    """
    before = task.delegated_at if task.delegated_at is not None else rec.end(task)[0]
    done = [t for t in rec.tasks.values() if t.task_type is TaskType.NAVIGATION and verdicts[t.task_id][0]
            and t.delegated_at is not None and t.delegated_at < before and t.case_id == task.case_id]
    return max(done, key=lambda t: t.delegated_at) if done else None


def _info(rec: _Reader, directory: StaffDirectory, staff: dict[str, StaffFacts], escorted: _Task | None,
          task: _Task) -> tuple[bool, str, StaffFacts | None]:
    if escorted is None:
        return False, 'no navigation before it that the world shows succeeded: nobody was escorted', None
    hcw, room = escorted.hcw_id, task.room
    record = staff.get(hcw)
    if record is None:
        return False, f'the escorted HCW #{hcw} is not in the staff directory', None
    end_at, end_s = rec.end(task)
    scans = [s for s in rec.of(SimWhat.BADGE_SCAN, end_at) if _text(s.data.get('room')) == room
             and _text(s.data.get('hcw_id')) == hcw]
    if not scans:
        return False, f"the sim shows no badge scan of the escorted HCW #{hcw} at {room}'s reader", record
    read = _text(scans[-1].data.get('badge_id'))
    if read != record.badge_id:
        return False, (f"{room}'s reader read badge {read!r}, not #{hcw}'s badge {record.badge_id!r} "
                       'in the directory'), record
    start_s = task.delegated_s if task.delegated_s is not None else -math.inf
    check_ins = [c for c in directory.check_ins(room) if c.hcw_id == hcw
                 and start_s - STAMP_TOLERANCE_S <= c.stamp_s <= end_s + STAMP_TOLERANCE_S]
    if not check_ins:
        return False, (f'the directory holds no check-in of #{hcw} at {room} stamped between '
                       f'{start_s:.1f} s and {end_s:.1f} s'), record
    return True, f'badge {read} of #{hcw} scanned at {room}; checked in at {check_ins[0].stamp_s:.1f} s', record


def _display(rec: _Reader, directory: StaffDirectory, task: _Task
             ) -> tuple[bool, str, list[ScreenMember], list[ScreenMember] | None]:
    room = task.room
    end_at, end_s = rec.end(task)
    team = _team(directory, room, end_s)
    screens = [s for s in rec.of(SimWhat.DISPLAY_SHOWN, end_at) if _text(s.data.get('room')) == room]
    if not screens:
        return False, f"nothing was shown on {room}'s screen by the report", team, None
    shown = screen_members(screens[-1].data.get('members'))
    problems = team_differences(shown, team)
    if problems:
        return False, f"{room}'s screen does not show its care team: " + '; '.join(problems), team, shown
    return True, f"{room}'s screen shows its care team ({len(team)} member(s))", team, shown


def _episode(rec: _Reader, directory: StaffDirectory, patient: Patient, human: list[HumanChoice]) -> EpisodeTruth:
    room = patient.room
    team = _team(directory, room, None)
    screens = [s for s in rec.of(SimWhat.DISPLAY_SHOWN) if _text(s.data.get('room')) == room]
    shown = screen_members(screens[-1].data.get('members')) if screens else None
    problems = team_differences(shown, team) if screens else ['nothing shown']
    scanned = {_text(s.data.get('hcw_id')) for s in rec.of(SimWhat.BADGE_SCAN) if _text(s.data.get('room')) == room}
    chosen = {c.hcw_id for c in human}
    checked = {c.hcw_id for c in directory.check_ins(room)}
    carers = [m.hcw_id for m in team if m.hcw_id in checked and m.hcw_id in scanned
              and (_same(m.specialty, patient.required_specialty) or m.hcw_id in chosen)]
    if not carers:
        problems.append(f'no HCW of the required specialty ({patient.required_specialty}) or chosen by a human '
                        f'checked in at {room} after a badge scan there')
    if problems:
        return EpisodeTruth(outcome=rec.outcome, succeeded=False, care_team=team, shown=shown,
                            reason=f'{room} at the end: ' + '; '.join(problems))
    return EpisodeTruth(outcome=rec.outcome, succeeded=True, care_team=team, shown=shown,
                        reason=f"{room}'s screen shows its care team with #{', #'.join(carers)} checked in")


def ground_truth(events: Sequence[TeamEventModel], directory: StaffDirectory, scenario: Scenario,
                 seed: StaffSeed | None = None, *, where: str = 'the record') -> RunTruth:
    """Return the ground truth of a run from its loaded pieces (see the module docstring for the rules).

    Parameters
    ----------
    events
        The run's event record, in record order.
    directory
        The run's staff directory (``staff.sqlite``, with the check-ins the team recorded).
    scenario
        The run's scenario (``scenario.json``).
    seed
        The staff seed (the staff's availability); None: read the one ``scenario`` names.
    where
        How error messages name the record (e.g. its path).

    Raises
    ------
    TruthInputError
        If an event's time is not a number, or the staff seed cannot be read.
    """
    if seed is None:
        try:
            seed = load_staff(scenario.staff_path)
        except ConfigError as exc:
            raise TruthInputError(f'{where}: the staff availability comes from the staff seed the scenario names, '
                                  f'which cannot be read: {exc}') from exc
    p = scenario.patient or _first_arrival(events, where)
    patient = Patient(patient_id=p.patient_id, room=p.room, required_specialty=p.required_specialty,
                      assigned_hcw_id=p.assigned_hcw_id)
    rec = _Reader(events, where)
    staff = _staff(directory, scenario, seed)
    for task in rec.tasks.values():
        task.room = task.room or patient.room
    verdicts: dict[str, tuple[bool, str]] = {}
    for task in sorted(rec.tasks.values(), key=lambda t: rec.end(t)[0]):
        if task.task_type is TaskType.NAVIGATION:
            verdicts[task.task_id] = _navigation(rec, task)
    tasks = []
    for task in rec.tasks.values():
        extra: dict = {}
        hcw = task.hcw_id
        if task.task_type is TaskType.NAVIGATION:
            ok, reason = verdicts[task.task_id]
        elif task.task_type is TaskType.INFO_COLLECTION:
            escorted = _escorted(rec, verdicts, task)
            ok, reason, record = _info(rec, directory, staff, escorted, task)
            hcw, extra['staff_record'] = (escorted.hcw_id if escorted else ''), record
        else:
            ok, reason, extra['care_team'], extra['shown'] = _display(rec, directory, task)
        tasks.append(TaskTruth(task_id=task.task_id, task_type=task.task_type, robot=task.robot, hcw_id=hcw,
                               room=task.room, delegated_s=task.delegated_s, reported_s=task.reported_s,
                               reported_status=(task.report or {}).get('status'), judged_status=task.judged_status,
                               succeeded=ok, reason=reason, **extra))
    return RunTruth(patient=patient, staff=staff, seen=rec.seen, human_choices=rec.human, tasks=tasks,
                    episode=_episode(rec, directory, patient, rec.human))


def _first_arrival(events: Sequence[TeamEventModel], where: str) -> PatientSpec:
    """Return the first case the supervisor opened or queued (an open-ended run's first patient).

    Raises
    ------
    TruthInputError
        If the record has no case (a deployment that served no patient has nothing to audit).
    """
    for event in events:
        if event.actor == SUPERVISOR and event.kind in (EventKind.CASE_OPENED.value, EventKind.CASE_WAITING.value):
            d = event.data
            needs = {'required_specialty': str(d['required_specialty'])} if d.get('required_specialty') else {}
            try:   # (no specialty recorded: PatientSpec's own default)
                return PatientSpec(patient_id=str(d.get('case_id', '')), room=str(d.get('room', '')),
                                   assigned_hcw_id=str(d.get('assigned_hcw_id', '')), **needs)
            except ValidationError as exc:
                raise TruthInputError(f'{where}: the first case ({event.kind} at {event.stamp_s:.1f} s) lacks its '
                                      f'room or HCW: {exc}') from exc
    raise TruthInputError(f'{where}: no patient to audit: the scenario schedules none (open-ended) and the record '
                          'has no case (no case_opened or case_waiting)')


def load_truth(run_dir: str | Path) -> RunTruth:
    """Read a run folder (``events.jsonl``, ``staff.sqlite``, ``scenario.json``) and return its ground truth.

    Raises
    ------
    TruthInputError
        If a file is missing or malformed; the message names the file and what was expected.
    """
    return load_run(run_dir)[1]


def load_run(run_dir: str | Path) -> tuple[list[TeamEventModel], RunTruth]:
    """Read a run folder: its event record and its ground truth (see :func:`load_truth`).

    Raises
    ------
    TruthInputError
        If a file is missing or malformed; the message names the file and what was expected.
    """
    run_dir = Path(run_dir)
    events = _read_events(run_dir / EVENTS_FILE)
    scenario = _read_scenario(run_dir / SCENARIO_FILE)
    # a deployment's staff directory is the hospital's, used in place (robot_team.nodes_plan.prepare)
    staff_db = scenario.staff_path if scenario.staff_database else run_dir / STAFF_FILE
    try:
        directory = StaffDirectory(staff_db)
    except DirectoryError as exc:
        raise TruthInputError(f'{staff_db}: expected the run\'s staff directory (SQLite): {exc}') from exc
    try:
        return events, ground_truth(events, directory, scenario, where=str(run_dir / EVENTS_FILE))
    except DirectoryError as exc:
        raise TruthInputError(f'{staff_db}: {exc}') from exc
    finally:
        directory.close()


def _read_events(path: Path) -> list[TeamEventModel]:
    if not path.is_file():
        raise TruthInputError(f'{path}: no such file (expected the run\'s event record, one JSON event per line)')
    try:
        return read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise TruthInputError(f'{path}: expected one team event (JSON) per line: {exc}') from exc


def _read_scenario(path: Path) -> Scenario:
    if not path.is_file():
        raise TruthInputError(f'{path}: no such file (expected the run\'s scenario, as the runner writes it)')
    try:
        return Scenario.model_validate_json(path.read_text(encoding='utf-8'))
    except (OSError, ValidationError) as exc:
        raise TruthInputError(f'{path}: expected a scenario (contracts.config.Scenario as JSON): {exc}') from exc


def false_successes(record: RunTruth | str | Path) -> list[FalseSuccess]:
    """Return every success the team claimed that the world contradicts.

    ``record``: a run's :class:`RunTruth` or its folder. A task counts when the manager's last
    judgment of it is ``success`` and the world does not show it done; the episode counts when it
    finished as ``success`` and the world does not show the onboarding done (:class:`EpisodeTruth`).
    """
    truth = record if isinstance(record, RunTruth) else load_truth(record)
    found = [FalseSuccess(task_id=t.task_id, task_type=t.task_type, claim='judgment', reason=t.reason)
             for t in truth.tasks if t.judged_status == 'success' and not t.succeeded]
    if truth.episode.outcome == 'success' and not truth.episode.succeeded:
        found.append(FalseSuccess(task_id='', task_type=None, claim='outcome', reason=truth.episode.reason))
    return found


def _unanswered_tool_calls(events: Sequence[TeamEventModel]) -> list[str]:
    open_calls: list[tuple[str, str, str, float]] = []
    for event in events:
        key = (event.actor, event.target, _text(event.data.get('task_id')))
        if event.kind == EventKind.TOOL_CALL.value:
            open_calls.append((*key, event.stamp_s))
        elif event.kind == EventKind.TOOL_RESULT.value:
            match = next((i for i, call in enumerate(open_calls) if call[:3] == key), None)
            if match is not None:
                open_calls.pop(match)
    return [f'{actor} called {tool} in {task or "no task"} at {at:.1f} s: no result'
            for actor, tool, task, at in open_calls]


_ANSWERS = (EventKind.DELEGATION.value, EventKind.DELEGATION_REFUSED.value)


def _observed_refusal(event: TeamEventModel) -> bool:
    """Whether ``event`` is the manager's observation of the supervisor's refusal (``cue: refusal``)."""
    return event.kind == EventKind.OBSERVATION.value and event.data.get('cue') == 'refusal'


def _unanswered_requests(events: Sequence[TeamEventModel]) -> list[str]:
    manager = Role.MANAGER.value
    requests = [i for i, e in enumerate(events)
                if e.kind == EventKind.DELEGATION_REQUESTED.value and e.actor == manager]
    missing = []
    for k, index in enumerate(requests):
        stop = requests[k + 1] if k + 1 < len(requests) else len(events)
        answered = any(e.actor == manager and (e.kind in _ANSWERS or _observed_refusal(e))
                       for e in events[index + 1:stop])
        if not answered:
            request = events[index]
            missing.append(f"request at {request.stamp_s:.1f} s to delegate {request.data.get('task_type')} to "
                           f'{request.target}: neither delegated nor refused')
    return missing


def audit(run_dir: str | Path) -> Audit:
    """Audit a run folder: its false successes, a plain timeout, and unanswered calls or requests.

    - ``unanswered_tool_calls``: a ``tool_call`` with no ``tool_result`` after it from the same
      caller for the same tool and task (a refused call is a ``tool_refused`` with no ``tool_call``);
    - ``unanswered_requests``: a manager's ``delegation_requested`` followed, before its next
      request, by neither its ``delegation``, nor a ``delegation_refused``, nor its ``observation``
      of the supervisor's refusal (``cue: refusal``).

    Raises
    ------
    TruthInputError
        If a file of the folder is missing or malformed.
    """
    run_dir = Path(run_dir)
    events, truth = load_run(run_dir)
    return Audit(run=str(run_dir), outcome=truth.episode.outcome, timeout=truth.episode.outcome == 'timeout',
                 false_successes=false_successes(truth), unanswered_tool_calls=_unanswered_tool_calls(events),
                 unanswered_requests=_unanswered_requests(events))
