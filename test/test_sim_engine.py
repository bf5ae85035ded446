"""The simulation engine (pure Python, no ROS graph): motion, paging, following, badges, displays."""

import math

import pytest

from robot_team.config import ConfigError, StaffOverride, load_scenario, load_staff_seed
from robot_team.sim.engine import FollowPathError, SimEngine, SimInputError
from robot_team.sim.grid import PlanningError
from robot_team.sim.world import Pose2D, load_world

NAV = 'navigation_robot'


def make_engine(name='onboarding', **changes):
    scenario = load_scenario(name)
    if changes:
        scenario = scenario.model_copy(update=changes)
    return SimEngine(load_world(scenario.floor_path), load_staff_seed(scenario.staff_path), scenario)


def run(engine, seconds, dt=0.5):
    events = []
    for _ in range(int(round(seconds / dt))):
        events += engine.step(dt)
    return events


def kinds(events, kind):
    return [e for e in events if e.kind == kind]


def escort(engine, hcw_id, room):
    """Page the HCW, fetch them, escort them to the room's door; return all events."""
    events = []
    page = engine.page(hcw_id, NAV, 'Please meet navigation_robot')
    events += run(engine, engine.page_response_delay_s + 0.5)
    assert page.acknowledged
    where = engine.hcw(hcw_id).pose
    engine.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    events += run(engine, 80)
    engine.start_goal(NAV, engine.world.room(room).door)
    events += run(engine, 150)
    return events


def test_robots_start_at_docks_and_move_at_max_speed():
    engine = make_engine()
    dock = engine.world.dock(NAV).pose
    assert engine.robot_pose(NAV) == Pose2D(dock.x, dock.y, dock.yaw)
    target = engine.world.room('Staff lounge').center
    goal_id = engine.start_goal(NAV, Pose2D(*target, 0.5))
    total = engine.goal(goal_id).distance_remaining
    engine.step(4.0)
    status = engine.goal(goal_id)
    assert status.state == 'active'
    assert total - status.distance_remaining == pytest.approx(0.5 * 4.0, abs=1e-6)
    assert status.eta_s == pytest.approx(status.distance_remaining / 0.5)
    assert status.navigation_time_s == pytest.approx(4.0)
    assert engine.robot_velocity(NAV)[0] == pytest.approx(0.5, rel=0.05)
    events = run(engine, total / 0.5)     # the rest of the way, to the nearest half second
    events += engine.step(0.5)
    (done,) = kinds(events, 'goal_succeeded')
    assert done.t == pytest.approx(total / 0.5, abs=0.11)
    pose = engine.robot_pose(NAV)
    assert (pose.x, pose.y, pose.yaw) == pytest.approx((target[0], target[1], 0.5))
    assert engine.goal_status(NAV).state == 'succeeded'
    assert engine.goal_status(NAV).distance_remaining == 0.0


def test_patient_arrival_at_scenario_time():
    engine = make_engine()
    events = run(engine, 3.0)
    (arrival,) = kinds(events, 'patient_arrival')
    assert arrival.t == pytest.approx(1.0) and arrival.data['room'] == 'ER-12'
    assert arrival.data['assigned_hcw_id'] == '80'


def test_locate_by_id_and_specialty():
    engine = make_engine()
    records, unknown = engine.locate(['90', '999', '90'])
    assert [r.hcw_id for r in records] == ['90'] and unknown == ['999']
    assert records[0].area == 'Staff lounge'
    physicians, _ = engine.locate([], 'physician')
    assert {r.hcw_id for r in physicians} == {'80', '90', '91'}
    busy = {r.hcw_id: (r.availability, r.detail) for r in physicians}
    assert busy['80'][0] == 'busy' and 'urgent call' in busy['80'][1]    # scenario override
    nurses, _ = engine.locate([], 'Nurse')
    assert len({(r.pose.x, r.pose.y) for r in nurses}) == 2                # distinct spots
    assert all(r.area == 'Nurses station' for r in nurses)
    both, _ = engine.locate(['90'], 'Physician')                          # the asked ID first, then the rest
    assert [r.hcw_id for r in both][0] == '90' and sorted(r.hcw_id for r in both) == ['80', '90', '91']
    everyone, _ = engine.locate()
    assert len(everyone) > len(physicians)


def test_paging_busy_versus_available():
    engine = make_engine()
    busy = engine.page('80', NAV, 'ER-12 needs you')
    available = engine.page('90', NAV, 'ER-12 needs you')
    events = run(engine, 7.5)
    assert not available.acknowledged
    events += run(engine, 30)
    assert busy.delivered and not busy.acknowledged and busy.reply == ''
    assert available.acknowledged and available.response_time_s == pytest.approx(8.0)
    assert 'follow navigation_robot' in available.reply
    assert [e.data['hcw_id'] for e in kinds(events, 'page_acknowledged')] == ['90']
    assert engine.hcw('90').state == 'waiting'
    with pytest.raises(SimInputError, match="unknown HCW '12345'"):
        engine.page('12345', NAV)
    with pytest.raises(SimInputError, match="unknown robot 'r2d2'"):
        engine.page('90', 'r2d2')


def test_off_shift_pages_are_not_delivered():
    engine = make_engine(staff_overrides={'90': StaffOverride(availability='off_shift')})
    page = engine.page('90', NAV)
    run(engine, 20)
    assert not page.delivered and not page.acknowledged


def test_hcw_follows_the_robot_and_badges_in():
    engine = make_engine()
    events = escort(engine, '90', 'ER-12')
    (following,) = kinds(events, 'hcw_following')
    assert following.data['area'] == 'Staff lounge'
    scans = kinds(events, 'badge_scan')
    assert [(s.data['reader_id'], s.data['badge_id']) for s in scans] == [('er_12_door', 'ED-0090')]
    record = engine.hcw('90')
    assert record.area == 'ER-12' and record.state == 'arrived'


def test_follower_stays_about_a_metre_behind():
    engine = make_engine()
    engine.page('90', NAV)
    run(engine, 8.5)
    where = engine.hcw('90').pose
    engine.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    run(engine, 80)
    engine.start_goal(NAV, Pose2D(20.0, 7.5, math.pi))     # along the main corridor
    gaps = []
    for _ in range(40):
        engine.step(0.5)
        robot, hcw = engine.robot_pose(NAV), engine.hcw('90').pose
        gaps.append(math.hypot(robot.x - hcw.x, robot.y - hcw.y))
    assert engine.hcw('90').state == 'following'
    assert max(gaps[10:]) <= 1.05 and min(gaps[10:]) >= 0.7


def test_badge_override_is_what_the_reader_reads():
    engine = make_engine('unknown_badge')
    events = escort(engine, '90', 'ER-12')
    (scan,) = kinds(events, 'badge_scan')
    assert scan.data['badge_id'] == 'ED-9999' and scan.data['room'] == 'ER-12'


def test_closed_door_aborts_at_once():
    engine = make_engine('no_path')
    with pytest.raises(PlanningError) as err:
        engine.start_goal(NAV, engine.world.room('ER-12').entry)
    assert err.value.code == PlanningError.NO_VALID_PATH
    status = engine.goal_status(NAV)
    assert status.state == 'aborted' and status.error_code == PlanningError.NO_VALID_PATH
    (aborted,) = kinds(engine.step(0.1), 'goal_aborted')
    assert aborted.data['error_code'] == PlanningError.NO_VALID_PATH


def test_new_goal_preempts_and_cancel_stops():
    engine = make_engine()
    first = engine.start_goal(NAV, Pose2D(20.0, 7.5, 0.0))
    engine.step(2.0)
    second = engine.start_goal(NAV, Pose2D(30.0, 7.5, 0.0))
    events = engine.step(0.5)
    assert engine.goal(first).state == 'aborted' and 'preempted' in engine.goal(first).message
    assert engine.goal(second).state == 'active'
    assert [e.data['goal_id'] for e in kinds(events, 'goal_aborted')] == [first]
    assert engine.cancel_goal(NAV) is True
    stopped = engine.robot_pose(NAV)
    events = engine.step(2.0)
    assert engine.goal(second).state == 'canceled' and kinds(events, 'goal_canceled')
    assert engine.robot_pose(NAV) == stopped
    assert engine.cancel_goal(NAV) is False


def test_through_poses_passes_each_pose_in_order():
    engine = make_engine()
    lounge = engine.world.room('Staff lounge').center
    goal_id = engine.start_through_poses(NAV, [Pose2D(20.0, 7.5, 0.0), Pose2D(*lounge, 1.0)])
    assert engine.goal(goal_id).poses_remaining == 2 and engine.goal(goal_id).action == 'navigate_through_poses'
    events = run(engine, 200)
    (passed,) = kinds(events, 'waypoint_reached')
    assert passed.data['index'] == 0 and passed.data['poses_remaining'] == 1
    assert math.dist((passed.data['x'], passed.data['y']), (20.0, 7.5)) < 1e-6
    status = engine.goal(goal_id)
    assert status.state == 'succeeded' and status.poses_remaining == 0 and status.poses_total == 2
    assert events.index(passed) < events.index(kinds(events, 'goal_succeeded')[0])
    robot = engine.robot_pose(NAV)
    assert math.dist((robot.x, robot.y), lounge) < 1e-6 and robot.yaw == pytest.approx(1.0)
    with pytest.raises(PlanningError) as err:
        engine.start_through_poses(NAV, [Pose2D(20.0, 7.5, 0.0), Pose2D(500.0, 7.5, 0.0)])
    assert err.value.code == PlanningError.GOAL_OUTSIDE_MAP and err.value.pose_index == 1
    assert 'pose 2 of 2' in err.value.message
    with pytest.raises(SimInputError):
        engine.start_through_poses(NAV, [])


def test_follow_path_drives_the_given_path_or_refuses_it():
    engine = make_engine()
    start = engine.robot_pose(NAV)
    path = engine.plan_path(NAV, Pose2D(20.0, 7.5, 0.0))
    assert engine.robot_pose(NAV) == start and kinds(engine.drain_events(), 'path_computed')
    goal_id = engine.start_follow_path(NAV, path, math.pi / 2)
    run(engine, 60)
    robot = engine.robot_pose(NAV)
    assert engine.goal(goal_id).state == 'succeeded' and engine.goal(goal_id).action == 'follow_path'
    assert math.dist((robot.x, robot.y), (20.0, 7.5)) < 1e-6 and robot.yaw == pytest.approx(math.pi / 2)
    wall = engine.world.walls[0]     # the outer wall along y = 0
    for bad, code in (([], FollowPathError.INVALID_PATH),
                      ([(robot.x + 5.0, robot.y)], FollowPathError.INVALID_PATH),
                      ([(robot.x, robot.y), (wall.x, wall.y)], FollowPathError.NO_VALID_CONTROL),
                      ([(robot.x, robot.y), (robot.x, -50.0)], FollowPathError.INVALID_PATH)):
        with pytest.raises(FollowPathError) as err:
            engine.start_follow_path(NAV, bad, 0.0)
        assert err.value.code == code, bad
        assert engine.goal_status(NAV).state == 'aborted' and engine.goal_status(NAV).error_code == code
    assert engine.robot_pose(NAV) == robot
    with pytest.raises(PlanningError) as err:
        engine.plan_path(NAV, Pose2D(20.0, 7.5, 0.0), start=Pose2D(wall.x, wall.y, 0.0))
    assert err.value.code == PlanningError.START_OCCUPIED
    assert kinds(engine.drain_events(), 'path_failed')[-1].data['error_code'] == PlanningError.START_OCCUPIED


def test_display_shows_and_keeps_layout():
    engine = make_engine()
    entries = [{'role': 'Primary nurse', 'hcw_id': '41', 'name': 'Sofia Alvarez', 'specialty': 'Nurse'},
               {'role': 'Attending physician', 'hcw_id': '90', 'name': 'Dr. Lucas Brennan',
                'specialty': 'Physician'}]
    ok, message, lines = engine.show_display('ER-12', 'Care team P-0001', entries, 'rows: physician, nurse')
    assert ok and 'ER-12' in message
    assert lines[0] == '[ER-12] Care team P-0001'
    assert lines[1].startswith('Attending physician: Dr. Lucas Brennan (#90')   # ordered by the layout
    assert engine.display('ER-12') == lines
    ok, message, lines = engine.show_display('ER-99', 'x', entries)
    assert not ok and "unknown room 'ER-99'" in message and lines == []
    assert engine.display('ER-99') == []
    assert kinds(engine.step(0.1), 'display_shown')[0].data['room'] == 'ER-12'


def test_deterministic():
    def episode():
        engine = make_engine()
        events = escort(engine, '90', 'ER-12')
        return [(e.kind, round(e.t, 6), sorted(map(str, e.data.items()))) for e in events]
    assert episode() == episode()


def test_bad_scenarios_are_config_errors():
    with pytest.raises(ConfigError, match='staff_overrides name HCWs not in the staff directory: 777'):
        make_engine(staff_overrides={'777': StaffOverride()})
    with pytest.raises(ConfigError, match="unknown room 'ER-99'"):
        make_engine(blocked_doors=['ER-99'])
    with pytest.raises(ConfigError, match="area unknown room 'Roof'"):
        make_engine(staff_overrides={'90': StaffOverride(area='Roof')})
