"""Configuration: where the package's data lives, and the scenario and staff-directory schemas.

Scenario files (``config/scenarios/*.yaml``) and the staff directory seed (``config/staff.yaml``)
are validated with pydantic; a malformed file raises :class:`ConfigError` naming the file, the
field and what was expected.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from robot_team.contracts import names
from robot_team.contracts.names import RobotId

PACKAGE = 'robot_team'


class ConfigError(ValueError):
    """A configuration, scenario, world or directory file that cannot be used."""


def share_dir() -> Path:
    """Return the folder holding ``config/``, ``worlds/`` and ``launch/``.

    Looked up in order: ``$ROBOT_TEAM_SHARE``; the source checkout this module was imported
    from (if it is one); the ament index (``share/robot_team`` of a colcon install); the Python
    prefix's ``share/robot_team`` (the embedded install, where ``AMENT_PREFIX_PATH`` is unset).

    Raises
    ------
    ConfigError
        If none of them holds a ``config/`` folder.
    """
    candidates: list[Path] = []
    if os.environ.get('ROBOT_TEAM_SHARE'):
        candidates.append(Path(os.environ['ROBOT_TEAM_SHARE']))
    # A source checkout: the code and its data belong together.
    candidates.append(Path(__file__).resolve().parents[2])   # robot_team/contracts/config.py
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory(PACKAGE)))
    except Exception:  # noqa: BLE001 - not installed through ament, or AMENT_PREFIX_PATH unset
        pass
    # The embedded setup installs share/robot_team into the virtual environment's prefix.
    candidates.append(Path(sys.prefix) / 'share' / PACKAGE)
    for path in candidates:
        if (path / 'config').is_dir():
            return path
    raise ConfigError(f"cannot find robot_team's data folder (config/); looked in: "
                      f"{', '.join(str(c) for c in candidates)}. Set ROBOT_TEAM_SHARE.")


SAFE_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
"""PyYAML's safe loader, on libyaml where the wheel has it (``yaml.CSafeLoader``: some 20 times faster
than the pure-Python one on the floor and role files, which every node reads at start)."""


def load_yaml(path: Path, what: str) -> dict:
    """Read a YAML mapping from ``path``.

    Raises
    ------
    ConfigError
        If the file is missing, is not YAML, or is not a mapping.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as exc:
        raise ConfigError(f'{what} {path}: cannot read ({exc.strerror})') from exc
    try:
        data = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise ConfigError(f'{what} {path}: not valid YAML ({exc})') from exc
    if not isinstance(data, dict):
        raise ConfigError(f'{what} {path}: expected a mapping at the top level, got {type(data).__name__}')
    return data


def _validate(model, data: dict, path: Path, what: str):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = '.'.join(str(p) for p in err['loc'])
            parts.append(f"{loc}: {err['msg']}")
        raise ConfigError(f'{what} {path}: ' + '; '.join(parts)) from exc


# --- Staff directory seed -------------------------------------------------------------------

IdText = Annotated[str, BeforeValidator(lambda value: str(value) if isinstance(value, int) else value)]
"""An ID written in YAML as text or as a bare number (``80`` and ``"80"`` are the same HCW)."""


class StaffMember(BaseModel):
    """One HCW in the institutional staff directory."""

    model_config = ConfigDict(extra='forbid')
    hcw_id: IdText = Field(min_length=1, description="HCW number, e.g. '80'.")
    badge_id: IdText = Field(min_length=1, description="ID encoded on the HCW's badge, e.g. 'ED-0080'.")
    name: str = Field(min_length=1)
    specialty: str = Field(min_length=1, description='Physician, Nurse, Technician...')
    role: str = Field('', description="Role on a care team, e.g. 'Attending physician'.")
    area: str = Field(min_length=1, description='Room of the ED floor where the HCW is at start.')
    availability: Literal['available', 'busy', 'off_shift'] = 'available'
    detail: str = ''


class CareTeamMember(BaseModel):
    """A standing member of a room's care team."""

    model_config = ConfigDict(extra='forbid')
    hcw_id: IdText
    role: str


class StaffSeed(BaseModel):
    """Contents of ``config/staff.yaml``: the directory's HCWs and standing care teams."""

    model_config = ConfigDict(extra='forbid')
    staff: list[StaffMember] = Field(min_length=1)
    care_teams: dict[str, list[CareTeamMember]] = Field(default_factory=dict)


def load_staff_seed(path: Path) -> StaffSeed:
    """Load and validate a staff directory seed file (see :class:`StaffSeed`)."""
    return _validate(StaffSeed, load_yaml(path, 'staff directory file'), Path(path), 'staff directory file')


# --- Scenarios ------------------------------------------------------------------------------

class PatientSpec(BaseModel):
    """A patient whose arrival opens a case: the scenario's first patient or a later arrival.

    ``expected_outcome`` is the case's own (None: the scenario's ``expected_outcome``).
    """

    model_config = ConfigDict(extra='forbid')
    patient_id: str = 'P-0001'
    room: str = Field(min_length=1, description="e.g. 'ER-12'")
    presentation: str = ''
    esi_level: int = Field(0, ge=0, le=5, description='Emergency Severity Index, 1-5 (0 unknown).')
    assigned_hcw_id: IdText = Field(min_length=1)
    required_specialty: str = 'Physician'
    arrival_time_s: float = Field(1.0, ge=0.0, description='Sim time of the arrival, s.')
    expected_outcome: Literal['success', 'failure', 'escalated'] | None = Field(
        None, description="What a correct team achieves for this case (None: the scenario's expected_outcome).")


class StaffOverride(BaseModel):
    """Availability of one HCW in this scenario (overrides the directory seed)."""

    model_config = ConfigDict(extra='forbid')
    availability: Literal['available', 'busy', 'off_shift'] = 'available'
    detail: str = ''
    area: str | None = None


class StaffChange(BaseModel):
    """A change of one HCW at a sim time of a shift: a break, a code blue, back on the floor, a badge mix-up.

    From ``at_s`` on the HCW's availability and detail are these (the RTLS reports them; a page
    to a busy HCW is not answered, also one sent before that did not get its answer yet), and a
    given ``badge_id`` is what the door readers read of them from then on.
    """

    model_config = ConfigDict(extra='forbid')
    at_s: float = Field(ge=0.0, description='Sim time of the change, s.')
    hcw_id: str
    availability: Literal['available', 'busy', 'off_shift'] = 'available'
    detail: str = Field('', description="e.g. 'on break', 'code blue in Resuscitation'.")
    badge_id: str | None = Field(None, description='The badge the readers read of them from then on (a mix-up).')

    @field_validator('hcw_id', mode='before')
    @classmethod
    def _id_as_text(cls, value):
        return str(value)


class DoorChange(BaseModel):
    """A room's door closing or opening at a sim time of a shift (jammed, locked for cleaning, open again).

    From ``at_s`` on, robots plan no path through a closed door (an active goal whose way ahead
    crosses it is aborted: a room has one door, so Nav2's replanning would find no other way) and
    HCWs cannot walk through it. The hospital records
    each change (``door_changed``). The embedded simulator only: Gazebo's world takes
    ``blocked_doors`` (closed for the whole run).
    """

    model_config = ConfigDict(extra='forbid')
    at_s: float = Field(ge=0.0, description='Sim time of the change, s.')
    room: str = Field(min_length=1, description="The room whose door changes, e.g. 'ER-3'.")
    state: Literal['closed', 'open'] = Field(description="The door's state from then on.")


class OperatorAnswer(BaseModel):
    """A scripted human answer to an escalation (unattended runs)."""

    model_config = ConfigDict(extra='forbid')
    task_type: str | None = Field(None, description='Answer escalations about this task type (None: any).')
    patient_id: str = Field('', description="Answer only escalations of this patient's case ('' any case).")
    decision: Literal['reassign', 'retry', 'abort']
    hcw_id: IdText = ''
    note: str = ''
    delay_s: float = Field(5.0, ge=0.0, description='Sim seconds the human takes to answer.')


class Deadlines(BaseModel):
    """Deadlines the supervisor enforces, in sim seconds, and what it does when the manager misses one.

    The team never stalls silently: from the patient cue to the reflection, whenever only the
    manager can move the onboarding on, a deadline runs; when it passes, the supervisor pages a
    human (an escalation) and applies ``safe_default``.

    Rationale of the defaults (sim seconds; the published onboarding takes about 310 s of sim
    time with the protocol brain, whose decisions take milliseconds):

    - ``decision_s`` 120: the patient waits at most two minutes for the team's first step, and
      never longer between steps. A well-behaved LLM manager needs a few requests per step (a
      few wall seconds on a hosted model, 6-7 s per request for a 0.5B model on 2 CPU cores):
      24 wall s at the LLM runs' default sim speed (5x), enough for a few requests, and no
      bound at all on the model in ``lockstep`` sim time, where sim time waits for the LLM.
    - ``issue_handling_s`` 60: a failure report (the HCW does not come, the path is blocked) is
      more urgent than a routine next step, as in the published evaluation's issue-handling
      metric ("right after the failure report").
    - ``onboarding_s`` 900: patient cue to reflection, about three times the protocol brain's
      run, and below a scenario's default 1200 s time limit, so that a human is paged before
      the run is cut off.
    - ``task_s`` 600: the longest a robot may work on one task (an escort across the floor at
      0.5 m/s takes about 100 s; a page waits 30 s).
    - ``safe_default`` ``takeover``: the protocol brain (the deterministic reference policy)
      takes over the manager's role for the rest of the episode, so the patient is served
      while the human reads the escalation. ``hold``: the manager stops deciding until a human
      answers that escalation (the hook of the supervisor's stop-and-hold). ``escalate``: page
      the human only (the manager keeps its brain: for experiments that study what an LLM
      does after a human's answer).
    """

    model_config = ConfigDict(extra='forbid')
    issue_handling_s: float = Field(60.0, gt=0, description='After a failure report, time for the manager to act.')
    task_s: float = Field(600.0, gt=0, description='Longest a delegated task may run.')
    decision_s: float = Field(120.0, gt=0, description='After the patient cue, a successful report or a human '
                                                       'decision, time for the manager to delegate, escalate or '
                                                       'reflect.')
    onboarding_s: float = Field(900.0, gt=0, description='From the patient cue, time for the whole onboarding '
                                                         '(until the reflection is recorded).')
    safe_default: Literal['takeover', 'hold', 'escalate'] = Field(
        'takeover', description='What the supervisor applies, besides the escalation, when the manager misses '
                                'a deadline: the protocol brain takes over, the team holds, or escalate only.')


class ManagerPolicy(BaseModel):
    """Knobs of the protocol manager brain (to reproduce behaviours in tests and evaluation)."""

    model_config = ConfigDict(extra='forbid')
    issue_handling: Literal['propose_alternative', 'escalate', 'ignore'] = 'propose_alternative'


class Scenario(BaseModel):
    """One ED episode: the floor, the patient, who is available, what goes wrong.

    Loaded from ``config/scenarios/<name>.yaml`` by :func:`load_scenario`. An ``open_ended``
    scenario is a deployment's (:func:`deployment_scenario`): its patients arrive from the
    hospital's systems (the FHIR gateway, ``ed/patient_arrivals``), beside any it schedules, and
    it runs until stopped. Any other scenario schedules at least one patient.
    """

    model_config = ConfigDict(extra='forbid')
    name: str = Field(min_length=1)
    description: str = ''
    world: str = Field('ed_floor.sdf', description='SDFormat world file in worlds/ (or a path), for Gazebo.')
    floor: str = Field('ed_floor.yaml', description='Floor description in config/floors/ (or a path): rooms, '
                       'doors, badge readers, docks; read by the simulator and the robots.')
    staff_directory: str = Field('staff.yaml', description='Staff seed file in config/ (or a path).')
    real_time_factor: float = Field(40.0, gt=0, description='Sim seconds per wall second.')
    time_limit_s: float = Field(1200.0, gt=0, description='Sim seconds before the episode is stopped (not an '
                                'open-ended one: it runs until stopped).')
    patient: PatientSpec | None = Field(
        None, description='The first patient (required unless the scenario is open_ended).')
    open_ended: bool = Field(False, description="A deployment's: patients arrive from the hospital's systems; "
                                                'no episode end, it runs until stopped.')
    arrivals: list[PatientSpec] = Field(
        default_factory=list, description='More patients arriving during the run, each opening its own case '
                                          '(a shift); the four published scenarios have none.')
    staff_overrides: dict[str, StaffOverride] = Field(default_factory=dict)
    staff_changes: list[StaffChange] = Field(
        default_factory=list, description='HCWs changing over the shift (breaks, a code blue, badge mix-ups).')
    blocked_doors: list[str] = Field(default_factory=list, description='Rooms whose door is closed at the start.')
    door_changes: list[DoorChange] = Field(
        default_factory=list, description='Doors closing and opening during the run, in any order (applied by '
                                          'at_s; file order on ties).')
    badge_overrides: dict[str, str] = Field(
        default_factory=dict, description='hcw_id -> badge ID the door reader reads instead of the real one.')
    operator_script: list[OperatorAnswer] = Field(default_factory=list)
    deadlines: Deadlines = Field(default_factory=Deadlines)
    manager: ManagerPolicy = Field(default_factory=ManagerPolicy)
    cases_at_once: int = Field(1, ge=0, description='How many cases the team serves at once (contracts.cases): '
                                                    '1 one at a time, 0 no limit (a robot still runs one task '
                                                    'at a time; a case waits for a busy robot).')
    fleet: dict[str, int] = Field(default_factory=dict,
                                  description='Robots per role beyond one (e.g. {navigation_robot: 2}): named '
                                              '<role>_1, <role>_2... (robot_team.contracts.names.fleet_robots).')
    expected_outcome: Literal['success', 'failure', 'escalated'] | None = Field(
        None, description='What a correct team achieves here (used by tests and evaluation).')

    @field_validator('staff_overrides', 'badge_overrides', mode='before')
    @classmethod
    def _keys_as_text(cls, value):
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
        return value

    @field_validator('fleet')
    @classmethod
    def _fleet_roles(cls, value: dict[str, int]) -> dict[str, int]:
        return names.parse_fleet(','.join(f'{role}={count}' for role, count in value.items()), 'scenario fleet')

    @property
    def robots(self) -> list[RobotId]:
        """The operational robots' names, role by role in workflow order (:func:`~.names.fleet_robots`)."""
        return [r for role in names.OPERATIONAL_ROLES for r in names.fleet_robots(role, self.fleet.get(role, 1))]

    @model_validator(mode='after')
    def _patients_or_open_ended(self) -> 'Scenario':
        if self.patient is None and self.arrivals:
            raise ValueError('arrivals without a patient: expected the first patient in patient, the later ones '
                             'in arrivals')
        if self.patient is None and not self.open_ended:
            raise ValueError('patient: missing: expected the patient whose arrival opens the first case (or '
                             'open_ended: true for a deployment, whose patients come from the hospital\'s systems)')
        return self

    @model_validator(mode='after')
    def _one_case_per_patient(self) -> 'Scenario':
        ids = [p.patient_id for p in self.cases]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"patient ID(s) {', '.join(repeated)} arrive more than once: expected one arrival "
                             f"per patient (a case per patient)")
        return self

    @model_validator(mode='after')
    def _doors_change_state(self) -> 'Scenario':
        closed = set(self.blocked_doors)
        for change in self.door_schedule:
            if (change.room in closed) == (change.state == 'closed'):
                raise ValueError(f"door_changes: {change.room}'s door is already {change.state} at "
                                 f'{change.at_s:g} s: expected each change to close an open door or open a '
                                 f'closed one')
            closed.symmetric_difference_update({change.room})
        return self

    @property
    def door_schedule(self) -> list[DoorChange]:
        """The ``door_changes`` in the order they apply: by ``at_s``, file order on ties."""
        return sorted(self.door_changes, key=lambda change: change.at_s)

    @property
    def cases(self) -> list[PatientSpec]:
        """Every patient of the run (``patient`` and ``arrivals``), by arrival time, then patient ID."""
        scheduled = [self.patient, *self.arrivals] if self.patient is not None else list(self.arrivals)
        return sorted(scheduled, key=lambda p: (p.arrival_time_s, p.patient_id))

    @property
    def expected_outcomes(self) -> dict[str, str | None]:
        """Return each case's expected outcome by patient ID (its own, else the scenario's; None: unknown)."""
        return {p.patient_id: p.expected_outcome or self.expected_outcome for p in self.cases}

    def resolve(self, relative: str, folder: str) -> Path:
        """Return the path of a data file named in this scenario (``folder`` of the share dir, or as given)."""
        path = Path(relative)
        if path.is_absolute() or path.exists():
            return path
        return share_dir() / folder / relative

    @property
    def world_path(self) -> Path:
        """Path of the SDFormat world."""
        return self.resolve(self.world, 'worlds')

    @property
    def floor_path(self) -> Path:
        """Path of the floor description (``config/floors/<floor>``, or the path given)."""
        return self.resolve(self.floor, 'config/floors')

    @property
    def staff_database(self) -> bool:
        """True when the staff directory is a SQLite database used in place (not a seed to build one from)."""
        return is_staff_database(self.staff_path)

    @property
    def staff_path(self) -> Path:
        """Path of the staff directory: a YAML seed, or a SQLite directory (:data:`STAFF_DATABASE_SUFFIXES`)."""
        return self.resolve(self.staff_directory, 'config')


STAFF_DATABASE_SUFFIXES = ('.sqlite', '.sqlite3', '.db')
"""A staff directory file with one of these suffixes is a SQLite directory used in place
(:class:`robot_team.directory.StaffDirectory`); any other is a YAML seed (:class:`StaffSeed`)."""


def is_staff_database(path: str | os.PathLike) -> bool:
    """True when ``path`` names a SQLite staff directory (:data:`STAFF_DATABASE_SUFFIXES`), not a YAML seed."""
    return Path(path).suffix.lower() in STAFF_DATABASE_SUFFIXES


def deployment_scenario(floor: str = '', staff: str = '', **fields) -> Scenario:
    """Return an open-ended scenario for a deployment: no patient scheduled; it runs until stopped.

    ``floor``: floor description (name in ``config/floors`` or a path); ``staff``: the staff
    directory, a YAML seed (name in ``config`` or a path) or a SQLite directory used in place
    (:data:`STAFF_DATABASE_SUFFIXES`); '' for either: the :class:`Scenario` default; ``fields``:
    other :class:`Scenario` fields (``deadlines``, ``fleet``, ``cases_at_once``...). Cases are
    served as they arrive, with no limit on how many are open at once (``cases_at_once`` 0; a
    robot still runs one task at a time) unless given.

    Raises
    ------
    ConfigError
        If a field does not validate (the message names it).
    """
    data = {'name': 'deployment', 'description': 'Open-ended: patients arrive from the hospital\'s systems.',
            'cases_at_once': 0, 'open_ended': True, **({'floor': floor} if floor else {}),
            **({'staff_directory': staff} if staff else {}), **fields}
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f'deployment: {exc}') from exc


def scenario_names() -> list[str]:
    """Return the names of the scenarios shipped in ``config/scenarios``."""
    return sorted(p.stem for p in (share_dir() / 'config' / 'scenarios').glob('*.yaml'))


def load_scenario(name_or_path: str) -> Scenario:
    """Load a scenario by name (``config/scenarios/<name>.yaml``) or by path.

    Raises
    ------
    ConfigError
        If no such scenario exists or the file does not validate.
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = share_dir() / 'config' / 'scenarios' / f'{name_or_path}.yaml'
        if not path.exists():
            raise ConfigError(f"unknown scenario '{name_or_path}': expected one of "
                              f"{', '.join(scenario_names())} or a path to a .yaml file")
    return _validate(Scenario, load_yaml(path, 'scenario file'), path, 'scenario file')
