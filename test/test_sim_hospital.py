"""The hospital's systems (pure Python, no ROS graph): arrivals, RTLS, paging, following, badges, displays.

The hospital sees robots only through observed poses. Here a :class:`MotionEngine` moves the robot
and its localization reports (AMCL's: every 0.25 m, where it stops, nothing while it stands) are
handed over as the nodes hand them over on ``amcl_pose`` (or poses are made up, for the stop
rules), so both engines are exercised deterministically and without ROS.
"""

import math

import pytest

from robot_team.contracts.config import ConfigError, StaffOverride, load_scenario, load_staff_seed
from robot_team.sim.hospital import HospitalEngine, SimInputError
from robot_team.sim.motion import MotionEngine
from robot_team.sim.world import Pose2D, load_world

NAV = 'navigation_robot'
DT = 0.1


def make_floor(name='onboarding', **changes):
    scenario = load_scenario(name)
    if changes:
        scenario = scenario.model_copy(update=changes)
    world = load_world(scenario.floor_path)
    hospital = HospitalEngine(world, load_staff_seed(scenario.staff_path), scenario)
    motion = MotionEngine(world, closed_doors=scenario.blocked_doors, door_changes=scenario.door_changes)
    return motion, hospital


def run(motion, hospital, seconds, odometry=False):
    """Step both engines in lockstep (the hospital sees each localization report, and with
    ``odometry`` each robot's twist, as the nodes hand them over); return both's events."""
    events = []
    for _ in range(int(round(seconds / DT))):
        events += motion.step(DT)
        for robot, t, pose in motion.drain_localization():
            hospital.observe_robot(robot, pose.x, pose.y, pose.yaw, stamp=t)
        if odometry:
            for robot in hospital.robots:
                hospital.observe_motion(robot, *motion.robot_velocity(robot), stamp=motion.t)
        events += hospital.step(DT)
    return events


def kinds(events, kind):
    return [e for e in events if e.kind == kind]


def fetch(motion, hospital, hcw_id):
    """Page the HCW for the robot and drive the robot to them; return the events."""
    page = hospital.page(hcw_id, NAV, 'Please meet navigation_robot')
    events = run(motion, hospital, hospital.page_response_delay_s + 0.5)
    assert page.acknowledged
    where = hospital.hcw(hcw_id).pose
    motion.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    return events + run(motion, hospital, 80)


def escort(motion, hospital, hcw_id, target, seconds=150):
    """Fetch the HCW, then drive the robot to ``target``; return the events."""
    events = fetch(motion, hospital, hcw_id)
    motion.start_goal(NAV, target)
    return events + run(motion, hospital, seconds)


def test_patient_arrival_at_scenario_time():
    _, hospital = make_floor()
    events = hospital.step(3.0)
    (arrival,) = kinds(events, 'patient_arrival')
    assert arrival.t == pytest.approx(1.0) and arrival.data['room'] == 'ER-12'
    assert arrival.data['assigned_hcw_id'] == '80'
    assert hospital.advance_to(2.0) == [] and hospital.t == pytest.approx(3.0)   # time never goes back


def test_locate_by_id_and_specialty():
    _, hospital = make_floor()
    records, unknown = hospital.locate(['90', '999', '90'])
    assert [r.hcw_id for r in records] == ['90'] and unknown == ['999']
    assert records[0].area == 'Staff lounge'
    physicians, _ = hospital.locate([], 'physician')
    assert {r.hcw_id for r in physicians} == {'80', '90', '91'}
    busy = {r.hcw_id: (r.availability, r.detail) for r in physicians}
    assert busy['80'][0] == 'busy' and 'urgent call' in busy['80'][1]    # scenario override
    nurses, _ = hospital.locate([], 'Nurse')
    assert len({(r.pose.x, r.pose.y) for r in nurses}) == 2                # distinct spots
    assert all(r.area == 'Nurses station' for r in nurses)
    both, _ = hospital.locate(['90'], 'Physician')                        # the asked ID first, then the rest
    assert [r.hcw_id for r in both][0] == '90' and sorted(r.hcw_id for r in both) == ['80', '90', '91']
    everyone, _ = hospital.locate()
    assert len(everyone) > len(physicians)


def test_paging_busy_versus_available():
    _, hospital = make_floor()
    busy = hospital.page('80', NAV, 'ER-12 needs you')
    available = hospital.page('90', NAV, 'ER-12 needs you')
    events = hospital.step(7.5)
    assert not available.acknowledged
    events += hospital.step(30)
    assert busy.delivered and not busy.acknowledged and busy.reply == ''
    assert available.acknowledged and available.response_time_s == pytest.approx(8.0)
    assert 'follow navigation_robot' in available.reply
    assert [e.data['hcw_id'] for e in kinds(events, 'page_acknowledged')] == ['90']
    assert hospital.hcw('90').state == 'waiting'
    with pytest.raises(SimInputError, match="unknown HCW '12345'"):
        hospital.page('12345', NAV)
    with pytest.raises(SimInputError, match="unknown robot 'r2d2'"):
        hospital.page('90', 'r2d2')


def test_off_shift_pages_are_not_delivered():
    _, hospital = make_floor(staff_overrides={'90': StaffOverride(availability='off_shift')})
    page = hospital.page('90', NAV)
    hospital.step(20)
    assert not page.delivered and not page.acknowledged


def test_waiting_hcw_follows_only_a_robot_that_comes_close():
    motion, hospital = make_floor()
    hospital.page('90', NAV)
    run(motion, hospital, 9.0)
    assert hospital.hcw('90').state == 'waiting'          # the robot is still at its dock
    where = hospital.hcw('90').pose
    hospital.observe_robot(NAV, where.x + 5.0, where.y)   # seen, but too far away
    hospital.step(1.0)
    assert hospital.hcw('90').state == 'waiting'
    events = fetch(motion, hospital, '90')
    (following,) = kinds(events, 'hcw_following')
    assert following.data['area'] == 'Staff lounge' and following.data['robot'] == NAV


def test_hcw_follows_the_robot_into_the_room_and_badges_in():
    motion, hospital = make_floor()
    events = escort(motion, hospital, '90', motion.world.room('ER-12').entry)
    assert motion.goal_status(NAV).state == 'succeeded'
    scans = kinds(events, 'badge_scan')
    assert [(s.data['reader_id'], s.data['badge_id']) for s in scans] == [('er_12_door', 'ED-0090')]
    (arrived,) = kinds(events, 'hcw_arrived')
    assert arrived.data['room'] == 'ER-12'
    assert not kinds(events, 'hcw_entering')             # followed in, no separate entry
    record = hospital.hcw('90')
    assert record.area == 'ER-12' and record.state == 'arrived'
    assert arrived.t >= [e.t for e in events if e.kind == 'badge_scan'][0]


def test_robot_stopped_at_the_door_sends_the_hcw_in():
    motion, hospital = make_floor()
    door = motion.world.room('ER-12').door                # the approach pose in the corridor
    events = escort(motion, hospital, '90', door)
    stopped_at = kinds(events, 'goal_succeeded')[-1].t
    (entering,) = kinds(events, 'hcw_entering')
    assert entering.data['room'] == 'ER-12'
    [scan] = kinds(events, 'badge_scan')
    assert scan.data['reader_id'] == 'er_12_door' and scan.t > entering.t
    (arrived,) = kinds(events, 'hcw_arrived')
    assert arrived.data['room'] == 'ER-12' and hospital.hcw('90').area == 'ER-12'
    # The HCW waited until the robot had stood there for 3 s (no new pose: AMCL is silent) before walking in.
    assert entering.t == pytest.approx(stopped_at + 3.0, abs=0.21)


def test_with_odometry_the_hcw_goes_in_after_1_s_of_standing_and_silence_is_no_stop():
    motion, hospital = make_floor()
    door = motion.world.room('ER-12').door
    page = hospital.page('90', NAV, 'Please meet navigation_robot')
    run(motion, hospital, hospital.page_response_delay_s + 0.5, odometry=True)
    assert page.acknowledged
    where = hospital.hcw('90').pose
    motion.start_goal(NAV, Pose2D(where.x, where.y, 0.0))
    run(motion, hospital, 80, odometry=True)
    motion.start_goal(NAV, door)
    events, start, silent_checks = [], motion.t, 0
    for _ in range(int(round(150 / DT))):
        events += motion.step(DT)
        silence = start + 10.0 <= motion.t < start + 16.0      # 6 s without a pose, on the way
        for robot, t, pose in motion.drain_localization():
            if not silence:
                hospital.observe_robot(robot, pose.x, pose.y, pose.yaw, stamp=t)
        hospital.observe_motion(NAV, *motion.robot_velocity(NAV), stamp=motion.t)
        events += hospital.step(DT)
        if silence and motion.t > start + 14.0:
            assert not hospital.robot_stopped(NAV)             # moving, by odometry: silence is no stop
            silent_checks += 1
    assert silent_checks > 5
    stopped_at = kinds(events, 'goal_succeeded')[-1].t
    (entering,) = kinds(events, 'hcw_entering')
    assert entering.data['room'] == 'ER-12'
    assert entering.t == pytest.approx(stopped_at + 1.0, abs=0.21)
    assert [e.data['room'] for e in kinds(events, 'hcw_arrived')] == ['ER-12']


def test_odometry_decides_whether_a_robot_stands():
    _, hospital = make_floor()
    hospital.observe_robot(NAV, 10.0, 7.5, 0.0, stamp=0.0)
    hospital.observe_motion(NAV, 0.5, 0.0, stamp=0.0)
    hospital.step(30.0)
    assert not hospital.robot_stopped(NAV)                 # moving, by odometry: 30 s of silence is no stop
    hospital.observe_motion(NAV, 0.0, 0.3, stamp=30.0)
    hospital.step(2.0)
    assert not hospital.robot_stopped(NAV)                 # turning in place is moving
    for k in range(10):
        hospital.observe_motion(NAV, 0.001, 0.0, stamp=31.0 + 0.1 * k)
        assert not hospital.robot_stopped(NAV)
    hospital.observe_motion(NAV, 0.0, 0.0, stamp=32.0)
    assert hospital.robot_stopped(NAV)                     # standing for 1 s by the stamps
    hospital.observe_motion(NAV, 0.5, 0.0, stamp=31.5)     # older than the last: ignored
    hospital.observe_motion(NAV, math.nan, 0.0)            # a glitch: ignored
    assert hospital.robot_stopped(NAV)
    hospital.observe_motion(NAV, 0.2, 0.0, stamp=32.1)
    assert not hospital.robot_stopped(NAV)
    with pytest.raises(SimInputError, match="unknown robot 'r2d2'"):
        hospital.observe_motion('r2d2', 0.0, 0.0)


def test_passing_a_door_without_stopping_does_not():
    motion, hospital = make_floor()
    er12 = motion.world.room('ER-12')
    fetch(motion, hospital, '90')
    # Through ER-1's door approach pose (on the way) without stopping, then to ER-12's room.
    er1 = motion.world.room('ER-1').door
    motion.start_through_poses(NAV, [Pose2D(er1.x, er1.y, er1.yaw), er12.entry])
    events = run(motion, hospital, 200)
    assert [e.data['room'] for e in kinds(events, 'hcw_arrived')] == ['ER-12']
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']


def test_long_clock_steps_still_leave_a_walkable_trail():
    """A stalled clock may advance 20 s at once; the localization reports still trace the way in."""
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    motion.start_goal(NAV, motion.world.room('ER-12').entry)
    events = []
    for _ in range(10):
        events += motion.step(20.0)
        for robot, t, pose in motion.drain_localization():
            hospital.observe_robot(robot, pose.x, pose.y, pose.yaw, stamp=t)
        events += hospital.step(20.0)
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']
    assert [e.data['room'] for e in kinds(events, 'hcw_arrived')] == ['ER-12']


def test_a_robot_seen_rarely_is_followed_through_the_door():
    """Poses 1 m apart (a node that skips poses under load): the trail still goes through ER-12's door."""
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    motion.start_goal(NAV, motion.world.room('ER-12').entry)
    events, last, seen = [], None, 0
    for k in range(1500):
        events += motion.step(DT)
        reports = motion.drain_localization()
        last = reports[-1] if reports else last
        if last is not None and (k % 20 == 0 or motion.goal_status(NAV).state != 'active'):
            hospital.observe_robot(NAV, last[2].x, last[2].y, last[2].yaw, stamp=last[1])   # 2 s (1 m) apart
            last, seen = None, seen + 1
        events += hospital.step(DT)
    assert seen <= 60
    assert motion.goal_status(NAV).state == 'succeeded'
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']
    assert [e.data['room'] for e in kinds(events, 'hcw_arrived')] == ['ER-12']
    trail = hospital._hcws['90'].trail.points
    assert all(hospital.grid.line_of_sight(p, q) for p, q in zip(trail, trail[1:]))


def test_trail_goes_through_the_door_between_two_sightings():
    """Seen in the corridor, next seen inside ER-12 with a wall between: the HCW follows through the door."""
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    room = motion.world.room('ER-12')
    corridor, inside = (room.door.x + 3.0, room.door.y), room.center      # no line of sight between them
    assert not hospital.grid.line_of_sight(corridor, inside)
    motion.start_goal(NAV, Pose2D(*corridor))
    run(motion, hospital, 150)                                           # seen all the way there
    hospital.observe_robot(NAV, *inside, stamp=hospital.t)               # and next seen in the room
    trail = hospital._hcws['90'].trail.points
    assert all(hospital.grid.line_of_sight(p, q) for p, q in zip(trail, trail[1:]))
    assert (room.door.x, room.door.y) in trail and room.door_gap in trail
    events = []
    for _ in range(600):
        events += hospital.step(DT)
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']
    assert hospital.hcw('90').area == 'ER-12'


def test_follower_stays_about_a_metre_behind():
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    motion.start_goal(NAV, Pose2D(20.0, 7.5, math.pi))     # along the main corridor
    gaps = []
    for _ in range(40):
        run(motion, hospital, 0.5)
        robot, hcw = motion.robot_pose(NAV), hospital.hcw('90').pose
        gaps.append(math.hypot(robot.x - hcw.x, robot.y - hcw.y))
    assert hospital.hcw('90').state == 'following'
    # 1 m behind the robot's last reported pose, which is up to 0.25 m (+ a substep) behind the robot.
    assert max(gaps[10:]) <= 1.3 and min(gaps[10:]) >= 0.95


def test_stops_from_observations_and_from_silence():
    _, hospital = make_floor()
    assert not hospital.robot_stopped(NAV)                 # never seen
    hospital.observe_robot(NAV, 10.0, 7.5, 0.0, stamp=0.0)
    for k in range(1, 10):                                 # seen moving (1 m/s): not stopped
        hospital.step(0.1)
        hospital.observe_robot(NAV, 10.0 + 0.1 * k, 7.5, 0.0, stamp=hospital.t)
        assert not hospital.robot_stopped(NAV)
    moved_at = hospital.t                                  # last seen moving, at x = 10.9
    for _ in range(9):                                     # then still (within 5 cm) for 0.9 s: not yet
        hospital.step(0.1)
        hospital.observe_robot(NAV, 10.93, 7.51, 0.0, stamp=hospital.t)
        assert not hospital.robot_stopped(NAV)
    hospital.step(0.1)
    hospital.observe_robot(NAV, 10.92, 7.49, 0.0, stamp=hospital.t)
    assert hospital.t - moved_at == pytest.approx(1.0)
    assert hospital.robot_stopped(NAV)                     # still for 1 s by the stamps
    hospital.observe_robot(NAV, 11.0, 7.5, 0.0, stamp=hospital.t + 0.1)
    assert not hospital.robot_stopped(NAV)
    hospital.step(2.9)
    assert not hospital.robot_stopped(NAV)
    hospital.step(0.2)
    assert hospital.robot_stopped(NAV)                     # nothing heard for 3 s (AMCL is silent when still)
    # A jump of the clock alone is not silence: the pose sent with it may still be on its way.
    hospital.observe_robot(NAV, 12.0, 7.5, 0.0, stamp=hospital.t)
    hospital.step(20.0)
    assert not hospital.robot_stopped(NAV)
    hospital.observe_robot(NAV, 22.0, 7.5, 0.0, stamp=hospital.t)
    hospital.step(0.1)
    assert not hospital.robot_stopped(NAV)
    # Poses that arrive late (here 2 s after their stamp) lengthen the silence that counts as a stop.
    hospital.observe_robot(NAV, 23.0, 7.5, 0.0, stamp=hospital.t - 2.0)   # older than the last: ignored...
    assert hospital.robot_pose(NAV) == Pose2D(22.0, 7.5, 0.0)
    hospital.observe_robot(NAV, 24.0, 7.5, 0.0, stamp=hospital.t)
    hospital.step(4.8)
    assert not hospital.robot_stopped(NAV)                 # ... but its delay counts: 3 s + 2 s needed
    hospital.step(0.3)
    assert hospital.robot_stopped(NAV)
    hospital.observe_robot(NAV, math.nan, 7.5)             # a glitch is ignored
    assert hospital.robot_pose(NAV) == Pose2D(24.0, 7.5, 0.0)
    with pytest.raises(SimInputError, match="unknown robot 'r2d2'"):
        hospital.observe_robot('r2d2', 1.0, 1.0)


def test_badge_override_is_what_the_reader_reads():
    motion, hospital = make_floor('unknown_badge')
    events = escort(motion, hospital, '90', motion.world.room('ER-12').entry)
    (scan,) = kinds(events, 'badge_scan')
    assert scan.data['badge_id'] == 'ED-9999' and scan.data['room'] == 'ER-12'


def test_closed_door_keeps_the_hcw_out():
    motion, hospital = make_floor('no_path')
    events = escort(motion, hospital, '90', motion.world.room('ER-12').door, seconds=200)
    assert motion.goal_status(NAV).state == 'succeeded'    # the corridor side of the door is reachable
    (blocked,) = kinds(events, 'hcw_entry_blocked')         # once, not at every step
    assert blocked.data['room'] == 'ER-12' and 'the door is closed' in blocked.data['message']
    assert not kinds(events, 'badge_scan') and hospital.hcw('90').state == 'following'


def test_a_door_closed_for_a_while_keeps_the_hcw_out_until_it_opens_and_survives_a_checkpoint():
    from robot_team.contracts.config import DoorChange
    changes = [DoorChange(at_s=30.0, room='ER-12', state='closed'), DoorChange(at_s=400.0, room='ER-12', state='open')]
    motion, hospital = make_floor(door_changes=changes)
    events = escort(motion, hospital, '90', motion.world.room('ER-12').door, seconds=200)
    assert [(e.t, e.data['room'], e.data['state']) for e in kinds(events, 'door_changed')] == [
        (pytest.approx(30.0), 'ER-12', 'closed')]
    (blocked,) = kinds(events, 'hcw_entry_blocked')
    assert blocked.t > 30.0 and 'the door is closed' in blocked.data['message']
    assert not kinds(events, 'hcw_arrived') and hospital.hcw('90').state == 'following'
    _, restarted = make_floor(door_changes=changes)      # a restarted hospital: the door stays closed...
    restarted.restore(hospital.checkpoint())
    assert restarted.grid.line_of_sight(*_through_door(restarted, 'ER-12')) is False
    events = run(motion, restarted, 300)                  # ...until it opens at 400 s: the HCW goes in then
    (opened,) = kinds(events, 'door_changed')
    assert opened.data['state'] == 'open' and opened.data['closed_doors'] == []
    (arrived,) = kinds(events, 'hcw_arrived')
    assert arrived.t >= 400.0 and arrived.data['room'] == 'ER-12'


def _through_door(hospital, room):
    """A segment (m) from the corridor side of ``room``'s door approach to the room's centre."""
    r = hospital.world.room(room)
    return (r.door.x, r.door.y), tuple(r.center)


def test_door_changes_name_rooms_of_the_floor_and_change_their_state():
    from robot_team.contracts.config import DoorChange
    with pytest.raises(ConfigError, match="unknown room 'ER-99'"):
        make_floor(door_changes=[DoorChange(at_s=5.0, room='ER-99', state='closed')])
    with pytest.raises(ValueError, match="ER-12's door is already closed at 5 s"):
        load_scenario('no_path').model_validate({**load_scenario('no_path').model_dump(),
                                                 'door_changes': [{'at_s': 5.0, 'room': 'ER-12', 'state': 'closed'}]})


def test_display_shows_and_keeps_layout():
    _, hospital = make_floor()
    entries = [{'role': 'Primary nurse', 'hcw_id': '41', 'name': 'Sofia Alvarez', 'specialty': 'Nurse'},
               {'role': 'Attending physician', 'hcw_id': '90', 'name': 'Dr. Lucas Brennan',
                'specialty': 'Physician'}]
    ok, message, lines = hospital.render_display('ER-12', 'Care team P-0001', entries, 'rows: physician, nurse')
    assert ok and 'ER-12' in message
    assert lines[0] == '[ER-12] Care team P-0001'
    assert lines[1].startswith('Attending physician: Dr. Lucas Brennan (#90')   # ordered by the layout
    assert hospital.display('ER-12') == lines
    ok, message, lines = hospital.render_display('ER-99', 'x', entries)
    assert not ok and "unknown room 'ER-99'" in message and lines == []
    assert hospital.display('ER-99') == []
    assert kinds(hospital.step(0.1), 'display_shown')[0].data['room'] == 'ER-12'


def test_deterministic():
    def episode():
        motion, hospital = make_floor()
        events = escort(motion, hospital, '90', motion.world.room('ER-12').door)
        return [(e.kind, round(e.t, 6), sorted(map(str, e.data.items()))) for e in events]
    assert episode() == episode()


def test_bad_scenarios_are_config_errors():
    with pytest.raises(ConfigError, match='staff_overrides name HCWs not in the staff directory: 777'):
        make_floor(staff_overrides={'777': StaffOverride()})
    with pytest.raises(ConfigError, match="unknown room 'ER-99'"):
        make_floor(blocked_doors=['ER-99'])
    with pytest.raises(ConfigError, match="area unknown room 'Roof'"):
        make_floor(staff_overrides={'90': StaffOverride(area='Roof')})


def test_staff_changes_at_sim_times_break_a_page_and_a_badge_and_survive_a_checkpoint():
    from robot_team.contracts.config import StaffChange
    changes = [StaffChange(at_s=5.0, hcw_id='90', availability='busy', detail='code blue in Resuscitation'),
               StaffChange(at_s=40.0, hcw_id='90', availability='available'),
               StaffChange(at_s=0.0, hcw_id='41', badge_id='ED-9999')]
    motion, hospital = make_floor(staff_changes=changes)
    (record,), _ = hospital.locate(['90'])
    assert record.availability == 'available'
    page = hospital.page('90', NAV, 'Please meet navigation_robot')   # answered 8 s later, were it not for...
    events = run(motion, hospital, 20)
    [changed] = [e.data for e in kinds(events, 'staff_changed') if e.data['hcw_id'] == '90']
    assert (changed['availability'], changed['detail']) == ('busy', 'code blue in Resuscitation')
    assert not page.acknowledged and not kinds(events, 'page_acknowledged')   # ...the code blue at 5 s
    (record,), _ = hospital.locate(['90'])
    assert (record.availability, record.detail) == ('busy', 'code blue in Resuscitation')   # the RTLS says so
    assert [e.data['badge_id'] for e in kinds(events, 'staff_changed') if e.data['hcw_id'] == '41'] == ['ED-9999']
    assert hospital._hcws['41'].badge_id == 'ED-9999'   # what its door readers read from 0 s on (a mix-up)
    # a restarted hospital takes up the floor: the changes made stay made, the later one still comes
    _, restarted = make_floor(staff_changes=changes)
    restarted.restore(hospital.checkpoint())
    events = run(motion, restarted, 25)
    assert [e.data['availability'] for e in kinds(events, 'staff_changed')] == ['available']
    again = restarted.page('90', NAV, 'Please meet navigation_robot')
    run(motion, restarted, restarted.page_response_delay_s + 0.5)
    assert again.acknowledged


def test_a_staff_change_for_an_hcw_not_in_the_directory_is_refused():
    from robot_team.contracts.config import StaffChange
    with pytest.raises(ConfigError, match='staff_changes name HCWs not in the staff directory: 404'):
        make_floor(staff_changes=[StaffChange(at_s=1.0, hcw_id='404', availability='busy')])
