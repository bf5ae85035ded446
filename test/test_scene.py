"""The scene model (robot_team.contracts.scene), rclpy-free: what a person watching the floor is shown.

Events here are shaped as the team records them (a real run's kinds and data keys, see an
``events.jsonl``); poses and RTLS locations as the feed hands them over.
"""

import math

import pytest

from robot_team.contracts.events import TeamEventModel
from robot_team.contracts.floor import DEFAULT_FLOOR, floor_path, load_floor
from robot_team.contracts.scene import (
    SAMPLE_PERIOD_S, Sample, SceneState, SceneTimeline, floor_geometry, floor_of, read_samples, write_samples)

NAV = 'navigation_robot'


def event(t, actor, event_kind, target='', reason='', **data):
    event.seq += 1
    return TeamEventModel(stamp_s=t, wall_time=1e9 + t, seq=event.seq, actor=actor, kind=event_kind, target=target,
                          reason=reason, data=data)


event.seq = 0


def onboarding_events():
    """An onboarding case up to an escalation on nav-1, then its resolution and the case's close."""
    return [
        event(1.0, 'supervisor', 'case_opened', 'ER-12', case_id='P-0001', patient_id='P-0001', room='ER-12',
              esi_level=2, assigned_hcw_id='80'),
        event(1.5, 'supervisor', 'delegation_authorized', NAV, task_id='nav-1', task_type='navigation', robot=NAV,
              hcw_id='80', case_id='P-0001'),
        event(1.6, 'manager', 'delegation', NAV, task_id='nav-1', task_type='navigation', hcw_id='80',
              room='ER-12', case_id='P-0001'),
        event(2.0, NAV, 'tool_call', 'locate_staff', task_id='nav-1', args={'hcw_ids': ['80']}),
        event(2.1, NAV, 'tool_result', 'locate_staff', task_id='nav-1', ok=True),
        event(40.0, NAV, 'task_report', 'nav-1', task_id='nav-1', task_type='navigation', robot=NAV,
              status='failure', issue='HCW #80 unavailable'),
        event(41.0, 'supervisor', 'escalation', 'nav-1', 'tool_calls', escalation_id='esc-1', task_id='nav-1',
              kind='issue', severity='high', state='open'),
        event(60.0, 'supervisor', 'human_decision', 'nav-1', escalation_id='esc-1', decision='reassign', hcw_id='90'),
        event(200.0, 'supervisor', 'case_closed', 'reflection-1', case_id='P-0001'),
    ]


def test_events_give_each_robot_its_task_and_case_and_each_escalation_its_robot_and_room():
    state = SceneState(robots=[NAV, 'display_robot'])
    events = onboarding_events()
    state.apply_all(events[:7])
    scene = state.snapshot()
    nav = scene.robots[NAV]
    assert (nav.task_id, nav.task_type, nav.case_id, nav.room, nav.task_status) == (
        'nav-1', 'navigation', 'P-0001', 'ER-12', 'failure')
    assert nav.tool_calls == ['locate_staff (nav-1)', 'locate_staff (nav-1) ok']
    assert scene.robots['display_robot'].task_id == ''
    case = scene.cases['P-0001']
    assert (case.room, case.esi_level, case.state) == ('ER-12', 2, 'open')
    assert scene.case_in('ER-12') is case
    [esc] = scene.open_escalations()
    assert (esc.escalation_id, esc.robot, esc.room, esc.case_id) == ('esc-1', NAV, 'ER-12', 'P-0001')
    assert scene.reports[NAV] == ['nav-1 failure: HCW #80 unavailable']

    state.apply_all(events[7:])
    scene = state.snapshot()
    assert scene.open_escalations() == [] and scene.escalations['esc-1'].state == 'resolved'
    assert scene.cases['P-0001'].state == 'closed' and scene.t_s == 200.0


def test_poses_and_locations_are_kept_as_samples_thinned_while_nothing_changes():
    state = SceneState(keep_samples=True)
    for k in range(20):              # 20 poses over 0.2 s of sim time: at most one sample per SAMPLE_PERIOD_S
        state.observe_robot(NAV, 10 + 0.01 * k, 5.0, 0.0, 10 + 0.01 * k)
    for k in range(5):               # standing still: no new sample
        state.observe_robot(NAV, 10.19, 5.0, 0.0, 11 + k)
    state.observe_staff('90', x=25.5, y=12.0, stamp_s=11.0, availability='available', state='waiting', robot=NAV)
    state.observe_staff('90', x=25.5, y=12.0, stamp_s=11.05, availability='available', state='following',
                        robot=NAV)   # state changed: kept although it did not move and the period is not over
    robots = [s for s in state.samples() if s.what == 'robot']
    assert 2 <= len(robots) <= 0.2 / SAMPLE_PERIOD_S + 2
    assert all(b.t - a.t >= SAMPLE_PERIOD_S - 1e-9 for a, b in zip(robots, robots[1:]))
    assert [s.values['state'] for s in state.samples() if s.what == 'hcw'] == ['waiting', 'following']
    scene = state.snapshot()
    assert scene.robots[NAV].x == pytest.approx(10.19) and scene.hcws['90'].following == NAV
    assert scene.robots[NAV].role == NAV


def test_a_timeline_rebuilds_the_scene_at_any_sim_time(tmp_path):
    state = SceneState(keep_samples=True)
    for t in range(0, 100, 5):
        state.observe_robot(NAV, float(t), 2.0, 0.5, float(t))
    write_samples(state.samples(), tmp_path / 'scene.jsonl')
    samples = read_samples(tmp_path / 'scene.jsonl')
    assert samples == state.samples()
    timeline = SceneTimeline(None, samples, onboarding_events())
    assert (timeline.start_s, timeline.end_s) == (0.0, 200.0)
    at = timeline.at(42.0).snapshot()
    assert at.robots[NAV].x == 40.0 and at.robots[NAV].yaw == 0.5
    assert [e.escalation_id for e in at.open_escalations()] == ['esc-1']
    assert timeline.at(70.0).snapshot().open_escalations() == []
    assert timeline.at(0.5).snapshot().cases == {}


def test_a_bad_sample_line_names_the_line(tmp_path):
    (tmp_path / 'scene.jsonl').write_text(Sample(1.0, 'robot', NAV, {'x': 1, 'y': 2, 'yaw': 0}).to_json()
                                          + '\n{"t": 2}\n')
    with pytest.raises(ValueError, match='scene.jsonl:2'):
        read_samples(tmp_path / 'scene.jsonl')


def test_the_floor_geometry_has_every_room_door_reader_and_dock():
    floor = load_floor(floor_path(DEFAULT_FLOOR))
    shapes = floor_geometry(floor)
    by_kind = {}
    for s in shapes:
        by_kind.setdefault(s.kind, []).append(s)
    assert {s.name for s in by_kind['room']} == set(floor.rooms)
    assert {s.name for s in by_kind['door']} == set(floor.rooms)
    assert len(by_kind['reader']) == len(floor.readers) and len(by_kind['dock']) == len(floor.docks)
    door = next(s for s in by_kind['door'] if s.name == 'ER-12')
    assert math.hypot(door.x - floor.rooms['ER-12'].door_gap[0], door.y - floor.rooms['ER-12'].door_gap[1]) < 1e-9
    # the run's floor comes from the scenario hospital_systems announced
    started = event(0.0, 'hospital_systems', 'node_started', scenario='onboarding', robots=[NAV])
    assert set(floor_of([started]).rooms) == set(floor.rooms)
