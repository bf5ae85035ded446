"""The shift generator, the shift summary and its Markdown and timeline, without a ROS graph."""

import math

import numpy as np
import pytest
import yaml
from matplotlib.image import imread

from robot_team.contracts.config import ConfigError, PatientSpec, load_scenario, load_staff_seed
from robot_team.evaluation.shift import (
    ESI_SHARES,
    FAILURE_SHARE,
    ROOM_TURNOVER_S,
    UNFORESEEN_ANSWERS,
    generate_shift,
    plot_timeline,
    summarize_shift,
    write_shift,
    write_summary_md,
)
from robot_team.contracts.floor import load_floor


@pytest.fixture(scope='module')
def shift():
    return generate_shift(hours=8, arrivals_per_hour=5, seed=11)


@pytest.fixture(scope='module')
def staff():
    return {m.hcw_id: m for m in load_staff_seed(load_scenario('onboarding').staff_path).staff}


def test_same_seed_same_shift_and_other_seeds_differ(shift):
    again = generate_shift(hours=8, arrivals_per_hour=5, seed=11)
    assert again == shift
    assert again.model_dump() == shift.model_dump()
    other = generate_shift(hours=8, arrivals_per_hour=5, seed=12)
    assert other.model_dump()['arrivals'] != shift.model_dump()['arrivals']
    assert [p.arrival_time_s for p in other.cases] != [p.arrival_time_s for p in shift.cases]


def test_a_generated_shift_serves_its_cases_at_once_and_the_scenarios_one_at_a_time(shift):
    # while held, every patient nobody was asked about still goes to a person on time (check_waiting)
    assert (shift.cases_at_once, load_scenario('onboarding').cases_at_once) == (0, 1)


def test_shape_names_and_limits(shift):
    assert shift.name == 'shift-8h-5ph-seed11'
    assert shift.time_limit_s == 8 * 3600 + 1800
    cases = shift.cases
    assert shift.patient == cases[0] and shift.arrivals == cases[1:]
    assert [p.patient_id for p in cases] == [f'S11-{i:03d}' for i in range(1, len(cases) + 1)]
    times = [p.arrival_time_s for p in cases]
    assert times == sorted(times) and 60.0 <= times[0] and times[-1] < 8 * 3600
    assert 15 <= len(cases) <= 70   # Poisson with mean about 40
    assert shift.blocked_doors == [] and shift.badge_overrides == {}   # time-varying failures come later
    assert shift.expected_outcome is None
    assert all(p.expected_outcome in ('success', 'escalated') for p in cases)


def test_rooms_levels_and_hcws_come_from_the_floor_and_directory(shift, staff):
    patient_rooms = {r.name for r in load_floor(shift.floor_path).rooms.values() if r.kind == 'patient_room'}
    cases = shift.cases
    assert {p.room for p in cases} <= patient_rooms
    assert len({p.room for p in cases}) > 1   # not onboarding's ER-12 every time
    assert {p.esi_level for p in cases} <= {1, 2, 3, 4, 5}
    for p in cases:
        assert p.assigned_hcw_id in staff
        assert staff[p.assigned_hcw_id].specialty == p.required_specialty
        assert p.presentation


@pytest.mark.parametrize('rate, seed', [(5, 11), (8, 3), (30, 7)])
def test_overlapping_patients_never_share_a_room_while_another_is_free(rate, seed):
    shift = generate_shift(hours=3, arrivals_per_hour=rate, seed=seed)
    rooms = {r.name for r in load_floor(shift.floor_path).rooms.values() if r.kind == 'patient_room'}
    given: dict[str, float] = {}
    for p in shift.cases:
        free = {r for r in rooms if p.arrival_time_s - given.get(r, -math.inf) >= ROOM_TURNOVER_S}
        assert p.room in free or (not free and given[p.room] == min(given.values())), (p.patient_id, p.room)
        given[p.room] = p.arrival_time_s


def test_expected_outcome_follows_availability(staff):
    for seed in range(6):
        shift = generate_shift(hours=6, arrivals_per_hour=6, seed=seed, failure_share=0.4)
        unavailable = {h for h, m in staff.items() if m.availability != 'available'}
        unavailable |= {h for h, o in shift.staff_overrides.items() if o.availability != 'available'}
        assert all(o.availability == 'busy' for o in shift.staff_overrides.values())
        escalated = 0
        for p in shift.cases:
            free = [h for h, m in staff.items() if m.specialty == p.required_specialty and h not in unavailable]
            assert p.expected_outcome == ('success' if free else 'escalated'), p
            if p.assigned_hcw_id not in unavailable:
                assert p.expected_outcome == 'success'
            escalated += p.expected_outcome == 'escalated'
        # One scripted human answer (abort the navigation) per escalated case, and per case the
        # answers to an unforeseen escalation; each names its case.
        foreseen = [a for a in shift.operator_script if a.task_type is not None]
        assert len(foreseen) == escalated
        assert all(a.task_type == 'navigation' and a.decision == 'abort' for a in foreseen)
        unforeseen = [(a.patient_id, a.decision) for a in shift.operator_script if a.task_type is None]
        assert unforeseen == [(p.patient_id, d) for p in shift.cases for d, _ in UNFORESEEN_ANSWERS]
        assert {a.patient_id for a in foreseen} <= {p.patient_id for p in shift.cases if p.expected_outcome
                                                    == 'escalated'}


def test_failure_share_zero_and_one(staff):
    calm = generate_shift(hours=4, arrivals_per_hour=6, seed=3, failure_share=0.0)
    assert calm.staff_overrides == {}
    assert all(staff[p.assigned_hcw_id].availability == 'available' for p in calm.cases)
    assert all(p.expected_outcome == 'success' for p in calm.cases)
    rough = generate_shift(hours=4, arrivals_per_hour=6, seed=3, failure_share=1.0)
    busy = set(rough.staff_overrides) | {h for h, m in staff.items() if m.availability != 'available'}
    assert all(p.assigned_hcw_id in busy for p in rough.cases)
    # Every case fails: a specialty with one HCW has no alternative (escalated); the others do.
    singles = {s for s in {m.specialty for m in staff.values()}
               if sum(m.specialty == s for m in staff.values()) == 1}
    assert singles == {'Technician', 'Respiratory Therapist'}
    for p in rough.cases:
        assert p.expected_outcome == ('escalated' if p.required_specialty in singles else 'success'), p
    assert any(p.expected_outcome == 'escalated' for p in rough.cases)
    assert len([a for a in rough.operator_script if a.task_type]) == sum(p.expected_outcome == 'escalated'
                                                                         for p in rough.cases)


def test_an_override_never_fails_cases_that_were_not_drawn_as_failures(staff):
    """A specialty's only HCW is made busy only when all its cases fail, so the failure share stays near the draw."""
    shift = generate_shift(hours=400, arrivals_per_hour=10, seed=7)
    unavailable = set(shift.staff_overrides) | {h for h, m in staff.items() if m.availability != 'available'}
    failures = np.mean([p.assigned_hcw_id in unavailable for p in shift.cases])
    expressible = np.mean([p.required_specialty in ('Physician', 'Nurse') for p in shift.cases])
    assert abs(failures - FAILURE_SHARE * expressible) < 0.02
    assert all(p.expected_outcome == 'success' for p in shift.cases)
    assert {h: staff[h].specialty for h in shift.staff_overrides} in ({'41': 'Nurse'}, {'42': 'Nurse'})


@pytest.mark.parametrize('seed', [11, 3, 29])
def test_door_failures_close_untouched_rooms_for_a_while_and_leave_every_other_draw_as_it_is(seed):
    from robot_team.evaluation.shift import DOOR_CLOSED_S
    plain = generate_shift(hours=8, arrivals_per_hour=5, seed=seed)
    doors = generate_shift(hours=8, arrivals_per_hour=5, seed=seed, door_share=0.5)
    assert plain.door_changes == [] and doors.door_changes
    keep = ('patient_id', 'arrival_time_s', 'esi_level', 'required_specialty', 'presentation')
    assert [p.model_dump(include=set(keep)) for p in plain.cases] == [p.model_dump(include=set(keep))
                                                                      for p in doors.cases]
    assert doors.staff_overrides == plain.staff_overrides
    homes = {m.area for m in load_staff_seed(doors.staff_path).staff}
    closed = {c.room: c for c in doors.door_changes if c.state == 'closed'}
    opened = {c.room: c for c in doors.door_changes if c.state == 'open'}
    assert set(closed) == set(opened) and len(doors.door_changes) == 2 * len(closed)
    by_room = {}
    for patient in doors.cases:
        by_room.setdefault(patient.room, []).append(patient)
    for room, change in closed.items():
        first = by_room[room][0]                       # a room nobody had before, nobody's home
        assert change.at_s == first.arrival_time_s and room not in homes
        assert opened[room].at_s == pytest.approx(change.at_s + DOOR_CLOSED_S)
        assert all(p.arrival_time_s >= opened[room].at_s for p in by_room[room][1:])   # found open again
        assert first.expected_outcome == 'escalated'
        assert plain.expected_outcomes[first.patient_id] == 'success'
        answers = [a for a in doors.operator_script if a.patient_id == first.patient_id]
        assert (answers[0].task_type, answers[0].decision) == ('navigation', 'abort')
    normal = [p for p in doors.cases if p.room not in closed or by_room[p.room][0] is not p]
    assert all(doors.expected_outcomes[p.patient_id] == plain.expected_outcomes[p.patient_id] for p in normal)
    assert generate_shift(hours=8, arrivals_per_hour=5, seed=seed, door_share=0.5) == doors   # seeded


def test_esi_mix_follows_the_published_shares():
    shift = generate_shift(hours=400, arrivals_per_hour=10, seed=5)
    levels = np.array([p.esi_level for p in shift.cases])
    assert abs(sum(ESI_SHARES.values()) - 1.0) < 1e-9
    for level, share in ESI_SHARES.items():
        observed = float(np.mean(levels == level))
        assert abs(observed - share) < 4 * math.sqrt(share * (1 - share) / len(levels)) + 1e-3, level
    gaps = np.diff([0.0] + [p.arrival_time_s for p in shift.cases])
    assert 300 < float(np.mean(gaps[1:])) < 420   # mean inter-arrival 360 s
    physician = np.mean([p.required_specialty == 'Physician' for p in shift.cases])
    assert 0.55 < physician < 0.65


def test_round_trips_through_yaml(tmp_path, shift):
    path = write_shift(shift, tmp_path / 'shift.yaml')
    text = path.read_text()
    assert '&' not in text.split('\n', 1)[1] and '*id' not in text   # no anchors or aliases
    assert yaml.safe_load(text)['name'] == shift.name
    assert load_scenario(str(path)) == shift
    for seed in (0, 1, 2):
        other = generate_shift(hours=1, arrivals_per_hour=12, seed=seed)
        assert load_scenario(str(write_shift(other, tmp_path / f's{seed}.yaml'))) == other


def test_base_scenario_settings_carry_over_but_not_its_patient():
    base = load_scenario('onboarding').model_copy(update={'real_time_factor': 7.0})
    shift = generate_shift(hours=1, arrivals_per_hour=10, seed=4, base=base)
    assert shift.real_time_factor == 7.0 and shift.floor == base.floor and shift.deadlines == base.deadlines
    assert 'P-0001' not in {p.patient_id for p in shift.cases}
    assert shift.operator_script != base.operator_script or not base.operator_script


@pytest.mark.parametrize('kwargs, words', [
    ({'hours': 0, 'arrivals_per_hour': 5}, ['hours=0', '> 0']),
    ({'hours': -1, 'arrivals_per_hour': 5}, ['hours=-1', 'expected']),
    ({'hours': 0.01, 'arrivals_per_hour': 5}, ['hours=0.01', 'more than']),
    ({'hours': 8, 'arrivals_per_hour': 0}, ['arrivals_per_hour=0', '> 0']),
    ({'hours': 8, 'arrivals_per_hour': float('nan')}, ['arrivals_per_hour=nan', 'expected']),
    ({'hours': 8, 'arrivals_per_hour': 1e9}, ['arrivals_per_hour', 'at most']),
    ({'hours': 8, 'arrivals_per_hour': 5, 'seed': -1}, ['seed=-1', 'integer >= 0']),
    ({'hours': 8, 'arrivals_per_hour': 5, 'failure_share': 1.5}, ['failure_share=1.5', '[0, 1]']),
])
def test_bad_input_is_named(kwargs, words):
    kwargs.setdefault('seed', 11)
    with pytest.raises(ValueError) as info:
        generate_shift(**kwargs)
    for word in words:
        assert word in str(info.value)


def test_no_arrival_in_the_window_is_named():
    with pytest.raises(ValueError, match='no patient arrives'):
        generate_shift(hours=0.02, arrivals_per_hour=0.001, seed=1)


def test_directory_without_hcw_is_refused(tmp_path):
    (tmp_path / 'empty_staff.yaml').write_text('staff: []\n')
    base = load_scenario('onboarding').model_copy(update={'staff_directory': str(tmp_path / 'empty_staff.yaml')})
    with pytest.raises(ValueError) as info:
        generate_shift(hours=1, arrivals_per_hour=5, seed=1, base=base)
    assert isinstance(info.value, ConfigError)
    assert 'empty_staff.yaml' in str(info.value) and 'staff' in str(info.value)


# --- summary ----------------------------------------------------------------------------------

def case(pid, esi, arrival, started, closed, outcome, expected='success', d2p=None, waited=0.0, esc=0,
         takeovers=0, decisions=None):
    return {'patient_id': pid, 'esi_level': esi, 'room': 'ER-3', 'arrival_s': arrival, 'started_s': started,
            'closed_s': closed, 'outcome': outcome, 'expected_outcome': expected, 'door_to_provider_s': d2p,
            'waited_for_robot_s': waited, 'escalations': esc, 'takeovers': takeovers,
            'decisions': decisions or {'protocol': 3}, 'attempted': 15.0, 'floor': 14.0}


CASES = [
    case('A', 2, 100.0, 105.0, 400.0, 'success', d2p=200.0, decisions={'protocol': 4}),
    case('B', 4, 150.0, 410.0, 700.0, 'success', d2p=300.0, waited=260.0),
    case('C', 1, 300.0, 720.0, None, None, d2p=None, waited=420.0, esc=1, takeovers=1),   # waits behind B
    case('D', 2, 320.0, 330.0, 600.0, 'escalated', expected='escalated', d2p=100.0, esc=2,
         decisions={'protocol': 2, 'human': 1}),
    case('E', 5, 50.0, 60.0, 200.0, 'failure', expected=None, d2p=90.0),
]


def test_summary_figures():
    summary = summarize_shift(CASES, robots={'navigation_robot_1': 1800.0, 'display_robot_1': 0.0}, duration_s=3600)
    assert summary['cases'] == 5
    assert summary['as_expected'] == 3
    assert summary['not_as_expected'] == ['C', 'E']   # E: failure vs. success (None means success)
    d2p = summary['door_to_provider_s']
    assert list(d2p) == ['1', '2', '4', '5', 'all']
    assert d2p['2'] == {'n': 2, 'median': 150.0, 'p90': float(np.percentile([200.0, 100.0], 90)), 'missing': 0}
    assert d2p['1'] == {'n': 0, 'median': None, 'p90': None, 'missing': 1}
    assert d2p['all']['n'] == 4 and d2p['all']['missing'] == 1
    assert d2p['all']['median'] == float(np.median([200.0, 300.0, 100.0, 90.0]))
    assert summary['longest_wait_for_robot_s'] == {'patient_id': 'C', 'seconds': 420.0}
    assert summary['escalations_per_case'] == pytest.approx(3 / 5)
    assert summary['utilisation'] == {'navigation_robot_1': 0.5, 'display_robot_1': 0.0}
    assert summary['takeovers'] == 1
    assert summary['decisions'] == {'protocol': 15, 'human': 1}
    # B (ESI 4) started at 410 s, before C (ESI 1, arrived 300 s, started 720 s); A and D had started before B.
    assert summary['priority_inversions'] == [('C', 'B')]


def test_priority_inversion_needs_the_urgent_case_to_have_arrived():
    late = [case('U', 1, 500.0, 510.0, 600.0, 'success'), case('L', 5, 10.0, 20.0, 300.0, 'success')]
    assert summarize_shift(late, robots={}, duration_s=600)['priority_inversions'] == []
    never = [case('U', 2, 5.0, None, None, None), case('L', 4, 10.0, 20.0, 300.0, 'success')]
    assert summarize_shift(never, robots={}, duration_s=600)['priority_inversions'] == [('U', 'L')]


def test_summary_of_no_cases():
    summary = summarize_shift([], robots={'navigation_robot_1': 0.0}, duration_s=10.0)
    assert summary['cases'] == 0 and summary['as_expected'] == 0 and summary['escalations_per_case'] == 0.0
    assert summary['door_to_provider_s'] == {'all': {'n': 0, 'median': None, 'p90': None, 'missing': 0}}
    assert summary['longest_wait_for_robot_s'] == {'patient_id': None, 'seconds': 0.0}


@pytest.mark.parametrize('cases, robots, duration, words', [
    (CASES, {}, 0.0, ['duration_s=0.0', '> 0']),
    (CASES, {'nav': -1.0}, 100.0, ["'nav'", '>= 0']),
    ([{'patient_id': 'X'}], {}, 100.0, ['case 0 (X)', 'missing', 'esi_level']),
    ([case('N', 3, 0.0, 1.0, 2.0, 'success', waited=-1.0)], {}, 100.0, ['waited_for_robot_s=-1.0', '>= 0']),
])
def test_summary_bad_input_is_named(cases, robots, duration, words):
    with pytest.raises(ValueError) as info:
        summarize_shift(cases, robots=robots, duration_s=duration)
    for word in words:
        assert word in str(info.value)


def test_summary_markdown(tmp_path):
    summary = summarize_shift(CASES, robots={'navigation_robot_1': 1800.0}, duration_s=3600)
    text = write_summary_md(summary, CASES, tmp_path / 'summary.md').read_text()
    assert text.startswith('# ED shift summary')
    assert 'not as expected: C, E' in text and 'C < B' in text
    assert '| navigation_robot_1 | 50.0% |' in text
    rows = [line for line in text.splitlines() if line.startswith('| ') and line.split('|')[1].strip() in 'ABCDE']
    assert len(rows) == 5
    assert '| C | 1 | ER-3 | 300.0 | 720.0 | - | - | success |' in text


def test_timeline_png(tmp_path):
    spans = {'navigation_robot_1': [(60.0, 200.0, 'E'), (105.0, 400.0, 'A'), (410.0, 700.0, 'B')],
             'display_robot_1': [(720.0, 800.0, 'C')]}
    path = plot_timeline(CASES, spans, tmp_path / 'summary.png')
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert float(image[..., :3].std()) > 0.01   # something is drawn
    empty = imread(plot_timeline([], {}, tmp_path / 'empty.png'))
    assert empty.shape[0] > 100
    with pytest.raises(ValueError, match='ends at'):
        plot_timeline(CASES, {'nav': [(10.0, 5.0, 'A')]}, tmp_path / 'bad.png')


def test_generated_shift_feeds_the_summary(tmp_path, shift):
    """A generated shift's cases, as a run would report them, go through summary, Markdown and plot."""
    cases = [case(p.patient_id, p.esi_level, p.arrival_time_s, p.arrival_time_s + 5, p.arrival_time_s + 300,
                  p.expected_outcome, expected=p.expected_outcome, d2p=120.0) for p in shift.cases]
    assert all(isinstance(p, PatientSpec) for p in shift.cases)
    summary = summarize_shift(cases, robots={'navigation_robot_1': 3600.0}, duration_s=shift.time_limit_s)
    assert summary['as_expected'] == len(cases) and summary['priority_inversions'] == []
    write_summary_md(summary, cases, tmp_path / 'summary.md')
    spans = {'navigation_robot_1': [(c['started_s'], c['closed_s'], c['patient_id']) for c in cases]}
    assert imread(plot_timeline(cases, spans, tmp_path / 'summary.png')).ndim == 3
