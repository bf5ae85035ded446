"""ED shifts: a seeded generator of shift scenarios, and the summary, table and timeline of a shift's cases.

A shift is a :class:`~robot_team.contracts.config.Scenario` with more than one patient: ``patient`` (the
first arrival) and ``arrivals`` (the rest), each a :class:`~robot_team.contracts.config.PatientSpec` with
its own ``expected_outcome``. :func:`generate_shift` draws one from a seed, :func:`write_shift`
writes it as a scenario file (read back with :func:`robot_team.contracts.config.load_scenario`).

After a shift has run, its cases (one dict per patient, see :func:`summarize_shift`) are
summarised by :func:`summarize_shift`, written as Markdown by :func:`write_summary_md` and drawn
as a timeline by :func:`plot_timeline`.

No rclpy here: the layers allow this module ``robot_team.contracts.config``, ``robot_team.contracts.floor``, numpy
and matplotlib (the Agg canvas, never pyplot's global state).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import yaml

from robot_team.contracts.config import (
    DoorChange, OperatorAnswer, PatientSpec, Scenario, StaffOverride, load_staff_seed)
from robot_team.contracts.floor import load_floor
from robot_team.contracts.names import RobotId

# --- Published figures and the generator's parameters -------------------------------------

ESI_SHARES: dict[int, float] = {1: 0.040, 2: 0.116, 3: 0.528, 4: 0.255, 5: 0.061}
"""Share of ED patients per Emergency Severity Index level (1 most urgent).

Source: Golzari S, Soleimanpour H, Raoufi P, et al. *Accuracy of Emergency Severity Index,
Version 4 in emergency room patients' classification.* Journal of Analytical Research in
Clinical Medicine 2014;2(1):36-41, doi:10.5681/jarcm.2014.006
(https://jrcm.tbzmed.ac.ir/Article/JARCM_1442_20140115095350), abstract, results: 1,309 ED
patient files (one tenth of a quarter's files, 2008, ESI v4) classified as ESI 1 4.0%, ESI 2
11.6%, ESI 3 52.8%, ESI 4 25.5%, ESI 5 6.1%. The study reports no untriaged or unknown level (a
level 0 would be excluded here); :func:`generate_shift` renormalises the five shares to sum to 1
(they sum to 100.0% as published). A single-centre figure (Tabriz, Iran); the US CDC NHAMCS
Emergency Department Summary Tables' distribution by triage level could not be checked from
this project's references, so it is not used.
"""

FAILURE_SHARE = 0.14
"""Default share of cases whose assigned HCW does not come (busy for the shift).

Source: "The Silent Treatment: An Analysis of Why No One Responded", Society of Hospital
Medicine abstract (https://shmabstracts.org/abstract/the-silent-treatment-an-analysis-of-why-no-one-responded/):
on a medical, a surgical and a step-down unit of an academic medical centre, 278 pages from
nurses to providers (reported as 14.16%, n=2037; 278/2037 is 13.6%) received no response
before a priority-structured paging intervention, 219 (8.98%, n=2440) after. That is the nearest
published figure found for "the assigned clinician does not answer the page" (the published
onboarding case); it comes from inpatient units, not an ED. Rounded to 0.14.
"""

PHYSICIAN_SHARE = 0.6
"""Default share of cases that need a Physician (the rest share the directory's other specialties equally).

A modelling choice, not a published figure: the team fetches the provider for a new patient, in
an ED most often a physician.
"""

SHIFT_START_S = 60.0
"""Arrivals start after this much sim time (s), when the team is up."""

TIME_LIMIT_MARGIN_S = 1800.0
"""The shift's sim time limit is its length plus this (s): time to finish the last cases."""

MAX_EXPECTED_ARRIVALS = 5000
"""Most arrivals a shift may expect (hours x arrivals per hour): a guard against a typo."""

OPERATOR_DELAY_S = 10.0
"""Sim seconds the scripted human takes to answer an escalation of a generated shift."""

ROOM_TURNOVER_S = 3600.0
"""Sim seconds a room stays a patient's after their arrival before the generator gives it to another.

An assumption, not a published figure: a patient keeps an ED room for at least an hour, below
usual ED lengths of stay, and longer than any case the team serves (its onboarding deadline is
900 s), so that cases served at once never share a room, its door's badge reader and its screen."""

DOOR_CLOSED_S = 1800.0
"""Sim seconds a generated door failure keeps a room's door closed (jammed until facilities fix it).

An assumption, not a published figure: longer than the onboarding deadline (900 s), so that the
team cannot wait the failure out and must report it, and shorter than :data:`ROOM_TURNOVER_S`,
so that the room's next patient finds the door open."""

DOOR_NOTE = 'the door of the room is jammed; facilities are called and the charge nurse takes the case'

PATIENT_ROOM_KIND = 'patient_room'
"""The floor's room kind where patients are seen (the ``ER-*`` rooms of ``ed_floor.yaml``)."""

PRESENTATIONS: dict[int, tuple[str, ...]] = {
    1: ('cardiac arrest', 'unresponsive after a fall', 'severe respiratory distress'),
    2: ('chest pain', 'signs of confusion and distress', 'sudden weakness of one side'),
    3: ('abdominal pain', 'shortness of breath', 'fever and vomiting'),
    4: ('ankle injury', 'laceration of the hand', 'urinary symptoms'),
    5: ('medication refill', 'rash', 'sore throat'),
}
"""Presentation texts per ESI level; one is drawn for each case."""

UNFORESEEN_ANSWERS = (('retry', 'the charge nurse asks the team to try again'),
                      ('abort', 'the charge nurse takes the case over'))
"""The scripted human's answers to a case's unforeseen escalations, in order (any task type)."""

BUSY_DETAIL = 'on another emergency for the whole shift'
ESCALATION_NOTE = 'no other HCW of the required specialty is free; the charge nurse takes the case'


# --- Generator ------------------------------------------------------------------------------

def _positive(name: str, value, expected: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{name}={value!r}: expected {expected}') from None
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise ValueError(f'{name}={value!r}: expected {expected}')
    return number


def generate_shift(*, hours: float, arrivals_per_hour: float, seed: int, base: Scenario | None = None,
                   failure_share: float = FAILURE_SHARE, physician_share: float = PHYSICIAN_SHARE,
                   door_share: float = 0.0) -> Scenario:
    """Draw an ED shift: patients arriving over ``hours`` of sim time, each a case with its expected outcome.

    Everything is drawn from ``numpy.random.default_rng(seed)``: the same arguments give the same
    shift, whatever the machine.

    - **Arrivals**: a Poisson process, exponential inter-arrival times with mean
      ``3600 / arrivals_per_hour`` s, over ``[60 s, hours * 3600 s)`` of sim time (rounded down
      to 0.1 s). Patient IDs are ``S<seed>-<index>`` (``S11-001``, ``S11-002``... by arrival).
    - **Room**: uniform over the floor's patient rooms (``kind: patient_room``, the ``ER-*``
      rooms of ``config/floors/ed_floor.yaml``, read from the base scenario's floor file) not
      given to another patient in the last :data:`ROOM_TURNOVER_S` (the room given longest ago
      when none is free): two patients whose cases overlap are never put in one room.
    - **ESI level**: :data:`ESI_SHARES` (Golzari et al. 2014, 1,309 ED patients: ESI 1 4.0%,
      2 11.6%, 3 52.8%, 4 25.5%, 5 6.1%; no unknown level there, level 0 excluded; shares
      renormalised to sum to 1). **Presentation**: uniform over :data:`PRESENTATIONS` of the level.
    - **Required specialty**: over the specialties of the staff directory's HCWs,
      ``physician_share`` for ``Physician`` (when the directory has one and another specialty),
      the rest equally over the others. **Assigned HCW**: an HCW of that specialty.
    - **Failure cases** (each case with probability ``failure_share``, default 0.14 from the
      share of unanswered pages in "The Silent Treatment", see :data:`FAILURE_SHARE`): the
      assigned HCW is busy for the whole shift, so the team must find another HCW of the same
      specialty. The case gets an HCW of its specialty who is unavailable already (busy in the
      directory, or made busy for an earlier failure case), else one is made busy
      (``staff_overrides``). An override lasts the whole shift, so the only available HCW of a
      specialty is made busy only when every case of that specialty is a failure case; otherwise
      that case stays a normal one. The share of failure cases is therefore at most about
      ``failure_share``: lower where a specialty has a single available HCW (in ``staff.yaml``,
      Technician and Respiratory Therapist). Normal cases get an available HCW of their specialty.
    - **Cases at once**: no limit (``cases_at_once`` 0): the team serves a case as soon as it
      arrives, its robots (one per role, or the fleet asked for) one task at a time, most urgent
      first. While the team is held, every patient nobody was asked about is still given to a
      person on time (:meth:`robot_team.core.supervisor.SupervisorCore.check_waiting`).
    - **Expected outcome** per case: ``success`` if an HCW of its specialty is available (the
      assigned one, or another the team reassigns the case to), else ``escalated``; for each escalated case the
      ``operator_script`` holds one human answer (``navigation``, ``abort``, after
      :data:`OPERATOR_DELAY_S`); every case's answers name its patient, and every case also has
      :data:`UNFORESEEN_ANSWERS` for an escalation nobody foresaw (an unattended shift never
      waits for a person who is not there).

    - **Door failures** (each case that is not a failure case with probability ``door_share``,
      default 0: no published rate of jammed doors was found, so they are opt-in; drawn from a
      stream of their own, ``default_rng([seed, 1])``, so that any share leaves every other draw
      as it is): the door of the case's room closes at its arrival and opens
      :data:`DOOR_CLOSED_S` later (``door_changes``). Such a case gets a room no patient had
      before in the shift and where no HCW starts (nobody is shut in or out of it by the closing;
      the room given by the usual draw among those); without one, the case stays a normal one.
      Expected outcome ``escalated``: the escort cannot reach the room; the scripted human
      answers the navigation escalation with ``abort``.

    Badges read normally and staff availability stays as drawn for the whole shift
    (``badge_overrides`` and ``staff_changes`` empty): what a mix-up or a break at a given time
    does to a case depends on which HCW the team picks then, so those come from shift files.

    Parameters
    ----------
    hours
        Length of the shift in hours (sim time), more than 1/60 (the arrivals start at 60 s).
    arrivals_per_hour
        Mean arrival rate, patients per hour, > 0.
    seed
        Seed of the draws, an integer >= 0.
    base
        The scenario whose world, floor, staff directory, ``real_time_factor``, ``deadlines`` and
        ``manager`` policy the shift uses; its patients, failures and operator script are not
        carried over. None: the defaults (``ed_floor.yaml``, ``staff.yaml``).
    failure_share
        Probability that a case is drawn as a failure case, in [0, 1].
    physician_share
        Probability that a case needs a Physician, in [0, 1] (see above).
    door_share
        Probability that a case (not a failure case) is a door failure, in [0, 1] (see above).

    Returns
    -------
    Scenario
        Named ``shift-<hours>h-<rate>ph-seed<seed>``; ``patient`` is the first arrival and
        ``arrivals`` the rest, in arrival order; ``time_limit_s`` is ``hours * 3600 + 1800``;
        ``expected_outcome`` per case (the scenario's own stays None).

    Raises
    ------
    ValueError
        If ``hours`` <= 1/60, ``arrivals_per_hour`` <= 0 (or either is not a finite number), more
        than :data:`MAX_EXPECTED_ARRIVALS` arrivals are expected, ``seed`` is not an integer >= 0,
        a share is outside [0, 1], the floor has no patient room, the staff directory has no HCW
        (a :class:`~robot_team.contracts.config.ConfigError`, also a ValueError, for an unreadable file), or
        no patient arrives in the window; the message names the input and what was expected.
    """
    hours = _positive('hours', hours, 'a shift length in hours > 0')
    rate = _positive('arrivals_per_hour', arrivals_per_hour, 'a mean arrival rate in patients per hour > 0')
    end_s = hours * 3600.0
    if end_s <= SHIFT_START_S:
        raise ValueError(f'hours={hours:g}: expected more than {SHIFT_START_S / 3600:g} h (arrivals start at '
                         f'{SHIFT_START_S:g} s of sim time)')
    if (end_s - SHIFT_START_S) / 3600.0 * rate > MAX_EXPECTED_ARRIVALS:
        raise ValueError(f'hours={hours:g}, arrivals_per_hour={rate:g}: expected at most {MAX_EXPECTED_ARRIVALS} '
                         f'arrivals in a shift (hours x arrivals per hour)')
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f'seed={seed!r}: expected an integer >= 0')
    for name, share in (('failure_share', failure_share), ('physician_share', physician_share),
                        ('door_share', door_share)):
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
            raise ValueError(f'{name}={share!r}: expected a probability in [0, 1]')
    base = base if base is not None else Scenario.model_construct()

    floor = load_floor(base.floor_path)
    rooms = [room.name for room in floor.rooms.values() if room.kind == PATIENT_ROOM_KIND]
    if not rooms:
        raise ValueError(f"floor {base.floor_path}: no room of kind '{PATIENT_ROOM_KIND}': expected at least one "
                         f'patient room')
    staff = load_staff_seed(base.staff_path).staff
    if not staff:
        raise ValueError(f'staff directory {base.staff_path}: no HCW: expected at least one staff member')
    by_specialty: dict[str, list[str]] = {}
    for member in staff:
        by_specialty.setdefault(member.specialty, []).append(member.hcw_id)
    specialties = list(by_specialty)
    if 'Physician' in by_specialty and len(specialties) > 1:
        others = (1.0 - physician_share) / (len(specialties) - 1)
        weights = np.array([physician_share if s == 'Physician' else others for s in specialties])
    else:
        weights = np.ones(len(specialties))
    weights = weights / weights.sum()
    levels = sorted(level for level in ESI_SHARES if level >= 1)
    esi_p = np.array([ESI_SHARES[level] for level in levels])
    esi_p = esi_p / esi_p.sum()

    rng = np.random.default_rng(int(seed))
    times: list[float] = []
    t = SHIFT_START_S
    while True:
        t += rng.exponential(3600.0 / rate)
        if t >= end_s:
            break
        times.append(math.floor(t * 10.0) / 10.0)
    if not times:
        raise ValueError(f'hours={hours:g}, arrivals_per_hour={rate:g}, seed={seed}: no patient arrives in '
                         f'[{SHIFT_START_S:g} s, {end_s:g} s): expected at least one arrival (a longer shift, '
                         f'a higher rate or another seed)')

    # Draw every case's own attributes first, in a fixed order, so that who is busy (decided
    # below) never shifts the random stream.
    drawn = []
    for index, arrival in enumerate(times, start=1):
        esi = levels[int(rng.choice(len(levels), p=esi_p))]
        drawn.append({
            'patient_id': f'S{seed}-{index:03d}', 'arrival': arrival, 'esi': esi,
            'room_pick': float(rng.random()),
            'presentation': PRESENTATIONS[esi][int(rng.integers(len(PRESENTATIONS[esi])))],
            'specialty': specialties[int(rng.choice(len(specialties), p=weights))],
            'failure': bool(rng.random() < failure_share), 'pick': float(rng.random())})

    door_rng = np.random.default_rng([int(seed), 1])
    for case in drawn:
        case['door'] = bool(door_rng.random() < door_share) and not case['failure']

    # Rooms in arrival order: one not given to a patient within ROOM_TURNOVER_S (the one given
    # longest ago when every room was). A door failure's room: one never given, where no HCW starts.
    given: dict[str, float] = {}
    homes = {member.area for member in staff}
    for case in drawn:
        free = [r for r in rooms if case['arrival'] - given.get(r, -math.inf) >= ROOM_TURNOVER_S]
        pool = free or [min(rooms, key=lambda r: given.get(r, -math.inf))]
        if case['door']:
            untouched = [r for r in free if r not in given and r not in homes]
            case['door'] = bool(untouched)
            pool = untouched or pool
        case['room'] = pool[int(case['room_pick'] * len(pool))]
        given[case['room']] = case['arrival']

    # Who is busy for the shift: a failure case gets an HCW of its specialty who is unavailable
    # already, else one is made busy, unless that HCW is the specialty's last available one and
    # some case of the specialty is not a failure case (an override lasts the whole shift: it
    # would turn that case into a failure too); then the case stays a normal one.
    unavailable = {m.hcw_id for m in staff if m.availability != 'available'}
    overrides: dict[str, StaffOverride] = {}
    for case in (c for c in drawn if c['failure']):
        specialty = case['specialty']
        pool = by_specialty[specialty]
        taken = [h for h in pool if h in unavailable]
        if not taken:
            if len(pool) == 1 and not all(c['failure'] for c in drawn if c['specialty'] == specialty):
                case['failure'] = False
                continue
            taken = pool
        hcw = taken[int(case['pick'] * len(taken))]
        if hcw not in unavailable:
            unavailable.add(hcw)
            overrides[hcw] = StaffOverride(availability='busy', detail=BUSY_DETAIL)
        case['hcw'] = hcw
    patients: list[PatientSpec] = []
    script: list[OperatorAnswer] = []
    for case in drawn:
        pool = by_specialty[case['specialty']]
        free = [h for h in pool if h not in unavailable]
        if 'hcw' not in case:
            case['hcw'] = (free or pool)[int(case['pick'] * len(free or pool))]
        expected = 'success' if free and not case['door'] else 'escalated'
        if expected == 'escalated':
            script.append(OperatorAnswer(task_type='navigation', patient_id=case['patient_id'], decision='abort',
                                         note=DOOR_NOTE if case['door'] and free else ESCALATION_NOTE,
                                         delay_s=OPERATOR_DELAY_S))
        script.extend(OperatorAnswer(patient_id=case['patient_id'], decision=decision, note=note,
                                     delay_s=OPERATOR_DELAY_S) for decision, note in UNFORESEEN_ANSWERS)
        patients.append(PatientSpec(
            patient_id=case['patient_id'], room=case['room'], presentation=case['presentation'],
            esi_level=case['esi'], assigned_hcw_id=case['hcw'], required_specialty=case['specialty'],
            arrival_time_s=case['arrival'], expected_outcome=expected))

    failures = sum(1 for p in patients if p.assigned_hcw_id in unavailable)
    escalated = sum(1 for p in patients if p.expected_outcome == 'escalated')
    doors = [change for case in drawn if case['door'] for change in (
        DoorChange(at_s=case['arrival'], room=case['room'], state='closed'),
        DoorChange(at_s=round(case['arrival'] + DOOR_CLOSED_S, 1), room=case['room'], state='open'))]
    return Scenario(
        name=f'shift-{hours:g}h-{rate:g}ph-seed{seed}',
        description=(f'Generated ED shift: {len(patients)} arrival(s) over {hours:g} h ({rate:g}/h, seed {seed}); '
                     f'{failures} with the assigned HCW unavailable, {len(doors) // 2} with the room\'s door '
                     f'jammed for {DOOR_CLOSED_S:g} s from the arrival ({escalated} escalated in all); badges '
                     f'normal.'),
        world=base.world, floor=base.floor, staff_directory=base.staff_directory,
        real_time_factor=base.real_time_factor, time_limit_s=end_s + TIME_LIMIT_MARGIN_S,
        patient=patients[0], arrivals=patients[1:], staff_overrides=overrides, operator_script=script,
        door_changes=doors,
        deadlines=base.deadlines.model_copy(deep=True), manager=base.manager.model_copy(deep=True),
        cases_at_once=0)


class _NoAliasDumper(yaml.SafeDumper):
    """A YAML dumper that writes every value out (no anchors and aliases, which some parsers refuse)."""

    def ignore_aliases(self, data) -> bool:
        return True


def write_shift(scenario: Scenario, path) -> Path:
    """Write ``scenario`` as a scenario file (YAML) at ``path``; return the path.

    Fields at their defaults are left out; :func:`robot_team.contracts.config.load_scenario` reads the file
    back into an equal :class:`~robot_team.contracts.config.Scenario`.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    path = Path(path)
    data = scenario.model_dump(mode='json', exclude_defaults=True)
    header = (f'# {scenario.name}: an ED shift scenario, {len(scenario.cases)} case(s) '
              f'(robot_team.evaluation.shift). {scenario.description}\n')
    path.write_text(header + yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True,
                                       default_flow_style=False), encoding='utf-8')
    return path


# --- Summary --------------------------------------------------------------------------------

CASE_KEYS = ('patient_id', 'esi_level', 'arrival_s', 'started_s', 'outcome', 'expected_outcome',
             'door_to_provider_s', 'waited_for_robot_s', 'escalations', 'takeovers')
"""Keys :func:`summarize_shift` reads from every case (the other documented keys are optional there)."""

URGENT_LEVELS = (1, 2)
"""ESI levels of the urgent cases, in :func:`summarize_shift`'s priority inversions."""
LOW_LEVELS = (4, 5)
"""ESI levels of the least urgent cases, in :func:`summarize_shift`'s priority inversions."""


def _check_cases(cases: list[dict]) -> None:
    for index, case in enumerate(cases):
        missing = [key for key in CASE_KEYS if key not in case]
        if missing:
            raise ValueError(f"case {index} ({case.get('patient_id', 'no patient_id')}): missing "
                             f"{', '.join(missing)}: expected the keys {', '.join(CASE_KEYS)}")
        waited = case['waited_for_robot_s']
        if waited is None or waited < 0:
            raise ValueError(f"case {case['patient_id']}: waited_for_robot_s={waited!r}: expected seconds >= 0")


def _distribution(values: list[float], missing: int) -> dict:
    if not values:
        return {'n': 0, 'median': None, 'p90': None, 'missing': missing}
    array = np.asarray(values, dtype=float)
    return {'n': len(values), 'median': float(np.median(array)), 'p90': float(np.percentile(array, 90)),
            'missing': missing}


def _expected(case: dict) -> str:
    return case['expected_outcome'] or 'success'


def summarize_shift(cases: list[dict], *, robots: dict[RobotId, float], duration_s: float) -> dict:
    """Summarise a shift's cases and robots: what ``shift.json``'s ``summary`` holds.

    Parameters
    ----------
    cases
        One dict per case: ``patient_id`` (str), ``esi_level`` (int 0-5; 0 or None: unknown), ``room``,
        ``arrival_s`` (sim s), ``started_s`` (when the team began the case, sim s; None if never),
        ``closed_s`` (None if not closed), ``outcome`` and ``expected_outcome`` (str or None),
        ``door_to_provider_s`` (s from the arrival to the HCW at the room's door; None if never),
        ``waited_for_robot_s`` (s the case waited for a robot of a role, >= 0), ``escalations``
        and ``takeovers`` (ints), ``decisions`` (source -> count), ``attempted`` and ``floor``
        (the case's rubric points, or None). Only the keys in :data:`CASE_KEYS` are required here.
    robots
        Robot name -> seconds it was busy during the shift (sim s, >= 0).
    duration_s
        Length of the shift run, sim s, > 0.

    Returns
    -------
    dict
        ``cases``: number of cases. ``as_expected``: cases whose ``outcome`` equals their
        ``expected_outcome`` (``success`` where that is None, as the run report reads a scenario
        that names none). ``not_as_expected``: those cases' patient IDs, in input order.
        ``door_to_provider_s``: per ESI level (the level as text, e.g. ``'2'``, in increasing
        order) and ``'all'``, ``{'n', 'median', 'p90', 'missing'}``: cases with a value, their
        median and 90th percentile (numpy, linear interpolation; None without values), in s, and
        cases without a value. ``longest_wait_for_robot_s``: ``{'patient_id', 'seconds'}`` of the
        case that waited longest for a robot (the first on a tie; None and 0.0 without cases).
        ``escalations_per_case``: escalations / cases (0.0 without cases). ``utilisation``: robot
        -> busy seconds / ``duration_s`` (0-1; above 1 only if the busy spans overlap or outlast
        the run, which a one-task-at-a-time robot's record should never show; reported as is).
        ``takeovers``: total over the cases.
        ``decisions``: decisions per source, summed over the cases that report them.
        ``priority_inversions``: pairs ``(a, b)`` of patient IDs where case ``b`` (ESI 4-5) was
        started before case ``a`` (ESI 1-2; started later or never), although ``a`` had arrived
        before ``b`` was started; sorted by ``b``'s start. Case-level: a case counts as started at
        its first task, whatever the robot.

    Raises
    ------
    ValueError
        If ``duration_s`` <= 0, a robot's busy time is negative or None, a case lacks
        a key of :data:`CASE_KEYS`, or a case's ``waited_for_robot_s`` is negative or None.
    """
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) or not duration_s > 0 \
            or not math.isfinite(duration_s):
        raise ValueError(f'duration_s={duration_s!r}: expected the shift run length in sim s > 0')
    for robot, busy in robots.items():
        if busy is None or not busy >= 0.0:
            raise ValueError(f"robot '{robot}': busy {busy!r} s: expected seconds >= 0")
    _check_cases(cases)

    not_as_expected = [c['patient_id'] for c in cases if c['outcome'] != _expected(c)]
    levels = sorted({int(c['esi_level'] or 0) for c in cases})
    door_to_provider: dict[str, dict] = {}
    for level in levels:
        group = [c['door_to_provider_s'] for c in cases if int(c['esi_level'] or 0) == level]
        values = [float(v) for v in group if v is not None]
        door_to_provider[str(level)] = _distribution(values, len(group) - len(values))
    values = [float(c['door_to_provider_s']) for c in cases if c['door_to_provider_s'] is not None]
    door_to_provider['all'] = _distribution(values, len(cases) - len(values))

    longest = {'patient_id': None, 'seconds': 0.0}
    for case in cases:
        if longest['patient_id'] is None or case['waited_for_robot_s'] > longest['seconds']:
            longest = {'patient_id': case['patient_id'], 'seconds': float(case['waited_for_robot_s'])}

    decisions: dict[str, int] = {}
    for case in cases:
        for source, count in (case.get('decisions') or {}).items():
            decisions[source] = decisions.get(source, 0) + int(count)

    inversions = []
    low = sorted((c for c in cases if c['esi_level'] in LOW_LEVELS and c['started_s'] is not None),
                 key=lambda c: c['started_s'])
    for b in low:
        for a in cases:
            if a['esi_level'] in URGENT_LEVELS and a['arrival_s'] < b['started_s'] \
                    and (a['started_s'] is None or a['started_s'] > b['started_s']):
                inversions.append((a['patient_id'], b['patient_id']))

    escalations = sum(int(c['escalations']) for c in cases)
    return {
        'cases': len(cases),
        'as_expected': len(cases) - len(not_as_expected),
        'not_as_expected': not_as_expected,
        'door_to_provider_s': door_to_provider,
        'longest_wait_for_robot_s': longest,
        'escalations_per_case': escalations / len(cases) if cases else 0.0,
        'utilisation': {robot: float(busy) / duration_s for robot, busy in robots.items()},
        'takeovers': sum(int(c['takeovers']) for c in cases),
        'decisions': decisions,
        'priority_inversions': inversions,
    }


# --- Markdown -------------------------------------------------------------------------------

def _num(value, digits: int = 1) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return f'{value:.{digits}f}'
    return str(value)


def write_summary_md(summary: dict, cases: list[dict], path) -> Path:
    """Write ``summary.md``: the shift's figures, then one table row per case; return the path.

    ``summary`` is what :func:`summarize_shift` returned for ``cases`` (same keys); times are in
    sim seconds. Missing optional case keys (``room``, ``closed_s``, ``attempted``, ``floor``)
    are shown as ``-``.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    longest = summary['longest_wait_for_robot_s']
    lines = [
        '# ED shift summary', '',
        f"- Cases: {summary['cases']}; as expected: {summary['as_expected']}; not as expected: "
        f"{', '.join(summary['not_as_expected']) or 'none'}",
        f"- Escalations per case: {summary['escalations_per_case']:.2f}; takeovers: {summary['takeovers']}",
        f"- Longest wait for a robot: {_num(longest['seconds'])} s ({longest['patient_id'] or '-'})",
        f"- Priority inversions (ESI 1-2 case, ESI 4-5 case started before it): "
        f"{', '.join(f'{a} < {b}' for a, b in summary['priority_inversions']) or 'none'}",
    ]
    if 'robot_waits' in summary:   # a run's record: each wait for a robot against the robots' busy spans
        waits = summary['robot_waits']
        idle = ', '.join(f"{w['patient_id']} ({w['robot']} idle {_num(w['idle_s'])} s)"
                         for w in waits['beside_an_idle_robot'])
        behind = ', '.join(f"{w['patient_id']} < {w['given_to']}" for w in waits['behind_less_urgent'])
        lines += [f"- Waits for a robot: {waits['waits']}; while a robot of the role was idle: {idle or 'none'}",
                  f'- A robot given to an ESI 4-5 case while an ESI 1-2 case waited for its role: {behind or "none"}']
    if 'false_successes' in summary:   # a run's record audited against the simulator's ground truth
        found = summary['false_successes']
        lines.append('- False successes (world audit): ' + (
            'not audited: ' + summary.get('audit_error', '') if found is None else
            ', '.join(f"{f['task_id'] or 'the episode'} ({f['reason']})" for f in found) or 'none'))
    if summary.get('decisions'):
        lines.append('- Decisions by source: ' + ', '.join(f'{k} {v}' for k, v in sorted(summary['decisions'].items())))
    lines += ['', '## Door to provider (s)', '', '| ESI | n | missing | median | p90 |', '|---|---|---|---|---|']
    for level, row in summary['door_to_provider_s'].items():
        lines.append(f"| {level} | {row['n']} | {row['missing']} | {_num(row['median'])} | {_num(row['p90'])} |")
    lines += ['', '## Robots', '', '| robot | utilisation |', '|---|---|']
    for robot, share in summary['utilisation'].items():
        lines.append(f'| {robot} | {100 * share:.1f}% |')
    lines += ['', '## Cases', '',
              '| patient | ESI | room | arrival s | started s | closed s | outcome | expected | door to provider s '
              '| waited for robot s | escalations | takeovers | attempted | floor |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for c in cases:
        lines.append(
            f"| {c['patient_id']} | {c['esi_level']} | {c.get('room') or '-'} | {_num(c['arrival_s'])} "
            f"| {_num(c['started_s'])} | {_num(c.get('closed_s'))} | {c['outcome'] or '-'} | {_expected(c)} "
            f"| {_num(c['door_to_provider_s'])} | {_num(c['waited_for_robot_s'])} | {c['escalations']} "
            f"| {c['takeovers']} | {_num(c.get('attempted'))} | {_num(c.get('floor'))} |")
    path = Path(path)
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return path


# --- Timeline -------------------------------------------------------------------------------

OUTCOME_COLOURS = {'success': 'tab:green', 'failure': 'tab:red', 'escalated': 'tab:orange',
                   'held_for_human': 'tab:purple', 'timeout': 'tab:brown', 'interrupted': 'tab:pink'}
"""Colour of a case's bar from start to close, by outcome (others, and open cases: :data:`OTHER_COLOUR`)."""
OTHER_COLOUR = 'tab:blue'
WAIT_COLOUR = 'lightgrey'
ROBOT_COLOUR = 'tab:cyan'


def plot_timeline(cases: list[dict], robot_spans: dict[RobotId, list[tuple[float, float, str]]], path) -> Path:
    """Draw the shift's timeline as a PNG (matplotlib, Agg canvas); return the path.

    One row per case, by arrival: a tick at ``arrival_s``, grey from there to ``started_s``
    (waiting; to the end of the plot if never started), then from ``started_s`` to ``closed_s``
    coloured by ``outcome`` (:data:`OUTCOME_COLOURS`; hatched up to the end of the plot while not closed),
    outlined in black when the outcome is not the expected one. Then one row per robot: its busy
    spans ``(start_s, end_s, patient_id)`` labelled with the patient ID. The x axis is sim time in
    minutes.

    Raises
    ------
    ValueError
        If a case lacks ``patient_id``, ``arrival_s``, ``started_s`` or ``outcome``, or a span ends
        before it starts.
    OSError
        If the file cannot be written.
    """
    # matplotlib, an optional dependency (issue 15), only where a figure is drawn: every CLI
    # command imports this module, and matplotlib is about a second of each command's start-up.
    # A Figure made without pyplot saves a PNG through the Agg canvas by itself (matplotlib's
    # "Embedding in a web application server" example).
    from matplotlib import figure, lines, patches
    Figure, Line2D, Patch = figure.Figure, lines.Line2D, patches.Patch

    for case in cases:
        missing = [k for k in ('patient_id', 'arrival_s', 'started_s', 'outcome') if k not in case]
        if missing:
            raise ValueError(f"case {case.get('patient_id', '?')}: missing {', '.join(missing)}: expected "
                             f'patient_id, arrival_s, started_s and outcome')
    for robot, spans in robot_spans.items():
        for start, end, patient in spans:
            if end < start:
                raise ValueError(f"robot '{robot}': span for {patient} ends at {end:g} s before it starts at "
                                 f'{start:g} s: expected start <= end')
    ordered = sorted(cases, key=lambda c: (c['arrival_s'], c['patient_id']))
    times = [0.0]
    for c in ordered:
        times += [t for t in (c['arrival_s'], c['started_s'], c.get('closed_s')) if t is not None]
    times += [t for spans in robot_spans.values() for s in spans for t in s[:2]]
    end_s = max(times) or 60.0

    rows = len(ordered) + len(robot_spans)
    fig = Figure(figsize=(12, max(3.0, 0.28 * rows + 1.4)))
    ax = fig.add_subplot()
    labels = []
    minutes = 60.0
    for y, c in enumerate(ordered):
        labels.append(f"{c['patient_id']} (ESI {c.get('esi_level', '?')})")
        start = c['started_s'] if c['started_s'] is not None else end_s
        ax.barh(y, (start - c['arrival_s']) / minutes, left=c['arrival_s'] / minutes, color=WAIT_COLOUR, height=0.6)
        ax.plot([c['arrival_s'] / minutes], [y], marker='|', markersize=9, color='black')
        if c['started_s'] is None:
            continue
        closed = c.get('closed_s')
        expected = c.get('expected_outcome') or 'success'
        ax.barh(y, ((closed if closed is not None else end_s) - start) / minutes, left=start / minutes, height=0.6,
                color=OUTCOME_COLOURS.get(c['outcome'], OTHER_COLOUR) if closed is not None else OTHER_COLOUR,
                hatch=None if closed is not None else '//',
                edgecolor='black' if c['outcome'] != expected else 'none', linewidth=1.2)
    for k, (robot, spans) in enumerate(robot_spans.items()):
        y = len(ordered) + k
        labels.append(robot)
        for start, end, patient in spans:
            ax.barh(y, (end - start) / minutes, left=start / minutes, color=ROBOT_COLOUR, edgecolor='black',
                    linewidth=0.5, height=0.6)
            ax.text((start + end) / 2 / minutes, y, patient, ha='center', va='center', fontsize=6, clip_on=True)
    if rows == 0:
        ax.text(0.5, 0.5, 'no cases and no robots', ha='center', va='center', transform=ax.transAxes)
    else:
        ax.set_yticks(range(rows), labels, fontsize=7)
        ax.set_ylim(rows - 0.5, -0.5)   # the first arrival on top, the robots below the cases
        if ordered and robot_spans:
            ax.axhline(len(ordered) - 0.5, color='black', linewidth=0.8)
    ax.set_xlim(0, end_s / minutes * 1.02)
    ax.set_xlabel('sim time (min)')
    ax.set_title(f'ED shift: {len(ordered)} case(s), {len(robot_spans)} robot(s)')
    legend = [Line2D([], [], marker='|', markersize=9, color='black', linestyle='none', label='arrival'),
              Patch(color=WAIT_COLOUR, label='waiting (arrival to start)')]
    legend += [Patch(color=colour, label=outcome) for outcome, colour in OUTCOME_COLOURS.items()]
    legend += [Patch(facecolor=OTHER_COLOUR, hatch='//', label='open / other'),
               Patch(facecolor='white', edgecolor='black', label='not as expected'),
               Patch(color=ROBOT_COLOUR, label='robot busy (patient)')]
    ax.legend(handles=legend, fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110, format='png')
    return path
