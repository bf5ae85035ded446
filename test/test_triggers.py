"""Triggers that do not depend on sampling: badge readers and the follow trigger test segments, not points.

A position stream that jumps (an HCW who walks 5 m per 0.1 s update, a robot seen metres apart)
still triggers a zone its way passes through between two updates, once per entry, and does not
trigger one it passes by. Pure Python, no ROS graph.
"""

import math

import numpy as np
import pytest

from robot_team.contracts.config import load_scenario, load_staff_seed
from robot_team.sim.common import Polyline, segment_near
from robot_team.sim.hospital import HospitalEngine
from robot_team.sim.motion import MotionEngine
from robot_team.sim.world import Pose2D, load_world

NAV = 'navigation_robot'
FAST = 50.0          # m/s: an HCW who moves 5 m per 0.1 s update, more than a reader zone's 2.4 m width
DT = 0.1


def make_hospital(hcw_speed=1.2):
    scenario = load_scenario('onboarding')
    world = load_world(scenario.floor_path)
    return HospitalEngine(world, load_staff_seed(scenario.staff_path), scenario, hcw_speed=hcw_speed)


def scans(events):
    return [e for e in events if e.kind == 'badge_scan']


def waiting_in_the_lounge(hcw_speed=1.2):
    """HCW #90 has acknowledged a page for the navigation robot and waits at the Staff lounge's centre."""
    hospital = make_hospital(hcw_speed)
    hospital.page('90', NAV)
    hospital.step(9.0)
    assert hospital.hcw('90').state == 'waiting'
    assert where(hospital) == (25.5, 12.0)
    return hospital


def fast_follower_in_the_main_corridor(lane_y):
    """HCW #90 walks 5 m per update behind the robot, out of the Staff lounge into the main corridor.

    The robot was last seen at (25.5, ``lane_y``), south of the lounge's door; the HCW stands 1 m
    behind it. No reader is within reach of that way.
    """
    hospital = waiting_in_the_lounge(FAST)
    hospital.observe_robot(NAV, 25.5, 10.5, stamp=hospital.t)
    hospital.step(1.0)
    assert hospital.hcw('90').state == 'following'
    hospital.observe_robot(NAV, 25.5, lane_y, stamp=hospital.t)
    assert scans(hospital.step(1.0)) == []
    assert where(hospital) == pytest.approx((25.5, lane_y + 1.0))
    return hospital


def where(hospital):
    """Where HCW #90 is: (x, y), m."""
    pose = hospital.hcw('90').pose
    return pose.x, pose.y


def lead(hospital, x, y):
    """Show the robot at (``x``, ``y``) (the followers' next trail point) and run 1 s; return the events."""
    hospital.observe_robot(NAV, x, y, stamp=hospital.t)
    return hospital.step(1.0)


def test_segment_near_finds_the_closest_point_of_the_segment():
    centres = [[5.0, 1.0], [12.0, 0.0], [-1.0, 0.5], [5.0, -1.3]]
    near, closest, along = segment_near((0.0, 0.0), (10.0, 0.0), centres, [1.2, 1.9, 1.2, 1.3])
    assert near.tolist() == [True, False, True, True]      # both ends outside the first zone: passed through
    assert closest.tolist() == [[5.0, 0.0], [10.0, 0.0], [0.0, 0.0], [5.0, 0.0]]
    assert along.tolist() == [0.5, 1.0, 0.0, 0.5]          # the second: beyond b, on the line but not the segment
    near, closest, along = segment_near((1.0, 1.0), (1.0, 1.0), [[1.0, 2.0], [1.0, 2.1]], 1.0)   # a point
    assert near.tolist() == [True, False] and closest.tolist() == [[1.0, 1.0]] * 2 and along.tolist() == [0, 0]
    near, closest, _ = segment_near((0.0, 0.0), (1.0, 1.0), np.zeros((0, 2)), np.zeros(0))
    assert near.shape == (0,) and closest.shape == (0, 2)
    with pytest.raises(ValueError):
        segment_near((0.0, 0.0), (1.0, 1.0), [[0.0, 0.0], [1.0, 1.0]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        segment_near((0.0, 0.0, 0.0), (1.0, 1.0), [[0.0, 0.0]], 1.0)


def test_polyline_between_is_the_way_walked():
    line = Polyline([(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (2.0, 1.0)])
    assert line.between(0.5, 2.5) == [(0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (1.5, 1.0)]
    assert line.between(1.0, 2.0) == [(1.0, 0.0), (1.0, 1.0)]        # a vertex at an end is not repeated
    assert line.between(-1.0, 0.25) == [(0.0, 0.0), (0.25, 0.0)]      # clamped to the polyline
    assert line.between(2.5, 9.0) == [(1.5, 1.0), (2.0, 1.0)]


def test_an_hcw_whose_walk_jumps_across_reader_zones_scans_once_per_entry():
    """5 m per update along the main corridor, 0.65 m from the south rooms' readers (zones 2.4 m wide)."""
    hospital = fast_follower_in_the_main_corridor(lane_y=6.8)
    readers = {r.reader_id: r for r in hospital.world.readers}
    # Stops 1 m behind the robot, 1.41 m short of ER-3's reader, on a line through its zone: no scan.
    assert scans(lead(hospital, 23.7, 6.8)) == []
    assert where(hospital) == pytest.approx((24.7, 6.8))
    # West past ER-3, ER-2 and ER-1's doors (no update lands in a zone), then back east into ER-3's zone.
    west = scans(lead(hospital, 10.5, 6.8))
    east = scans(lead(hospital, 24.5, 6.8))
    assert [s.data['reader_id'] for s in west] == ['er_3_door', 'er_2_door', 'er_1_door']
    assert [s.data['reader_id'] for s in east] == ['er_1_door', 'er_2_door', 'er_3_door']
    for scan in west + east:      # in the zone, on the way walked
        reader = readers[scan.data['reader_id']]
        assert math.hypot(scan.data['x'] - reader.x, scan.data['y'] - reader.y) <= reader.radius
        assert scan.data['y'] == pytest.approx(6.8) and 10.5 <= scan.data['x'] <= 24.7
        assert scan.data['badge_id'] == 'ED-0090' and scan.data['room'] == reader.room
    # Eastwards, each zone was passed by one straight step: scanned where it came closest to the reader.
    assert [s.data['x'] for s in east] == pytest.approx([readers[s.data['reader_id']].x for s in east])
    assert [s.t for s in west + east] == sorted(s.t for s in west + east)
    # Standing in ER-3's zone, then leaving it: no new scan; coming back into it: one more.
    assert where(hospital) == pytest.approx((23.5, 6.8))
    assert scans(lead(hospital, 26.5, 6.8)) == []
    again = scans(lead(hospital, 21.0, 6.8))
    assert [s.data['reader_id'] for s in again] == ['er_3_door']


def test_a_jump_past_the_reader_zones_scans_nothing():
    """The same jumps 1.3 m from the readers (radius 1.2 m): no zone is entered."""
    hospital = fast_follower_in_the_main_corridor(lane_y=7.45)
    assert scans(lead(hospital, 10.5, 7.45)) == []
    assert where(hospital) == pytest.approx((11.5, 7.45))
    assert scans(lead(hospital, 30.0, 7.45)) == []
    assert where(hospital) == pytest.approx((29.0, 7.45))


def floor_with_motion():
    """Onboarding's floor with fast HCWs and a robot; return (world, hospital, motion, events, run(seconds))."""
    scenario = load_scenario('onboarding')
    world = load_world(scenario.floor_path)
    hospital = HospitalEngine(world, load_staff_seed(scenario.staff_path), scenario, hcw_speed=FAST)
    motion = MotionEngine(world, closed_doors=scenario.blocked_doors)
    events = []

    def run(seconds):
        for _ in range(int(round(seconds / DT))):
            events.extend(motion.step(DT))
            for robot, t, pose in motion.drain_localization():
                hospital.observe_robot(robot, pose.x, pose.y, pose.yaw, stamp=t)
            events.extend(hospital.step(DT))
    return world, hospital, motion, events, run


def test_an_hcw_who_jumps_into_a_room_badges_once_at_its_door():
    """The walk in from the door approach pose takes one update: the scan is at the door, once."""
    world, hospital, motion, events, run = floor_with_motion()

    hospital.page('90', NAV)
    run(hospital.page_response_delay_s + 0.5)
    motion.start_goal(NAV, Pose2D(25.5, 12.0, 0.0))
    run(80)
    assert hospital.hcw('90').state == 'following'
    motion.start_goal(NAV, world.room('ER-12').door)
    run(150)
    (entering,) = [e for e in events if e.kind == 'hcw_entering']
    (arrived,) = [e for e in events if e.kind == 'hcw_arrived']
    assert arrived.t - entering.t <= 0.1 + 1e-9            # the whole way in, in one update
    (scan,) = scans(events)
    reader = world.reader_for('ER-12')
    assert scan.data['reader_id'] == reader.reader_id and entering.t <= scan.t <= arrived.t
    assert math.hypot(scan.data['x'] - reader.x, scan.data['y'] - reader.y) <= reader.radius
    assert hospital.hcw('90').area == 'ER-12'


def test_a_waiting_hcw_follows_a_robot_seen_passing_by_between_two_poses():
    """Seen 5 m apart across the lounge, never within 2 m of the HCW, but its way passed 1 m from them."""
    hospital = waiting_in_the_lounge()
    for x, y in ((23.0, 14.5), (28.0, 14.5), (28.0, 13.0)):      # its way never comes within 2 m
        hospital.observe_robot(NAV, x, y, stamp=hospital.t)
        assert not [e for e in hospital.step(0.5) if e.kind == 'hcw_following']
        assert hospital.hcw('90').state == 'waiting'
    hospital.observe_robot(NAV, 23.0, 13.0, stamp=hospital.t)    # 2.69 m from the HCW, as (28, 13) was
    events = hospital.step(0.5)
    (following,) = [e for e in events if e.kind == 'hcw_following']
    assert following.data['robot'] == NAV and following.data['area'] == 'Staff lounge'
    assert hospital.hcw('90').state == 'following'
    # To where the robot passed closest, then along its way: 1 m behind where it was last seen.
    assert hospital._hcws['90'].trail.points == [(25.5, 12.0), (25.5, 13.0), (23.0, 13.0)]
    hospital.step(5.0)
    assert where(hospital) == pytest.approx((24.0, 13.0))


def test_an_hcw_escorted_once_is_picked_up_where_they_arrived_for_the_next_patient():
    """A shift's second escort of an HCW starts in the room the first one left them in (issue 27).

    The robot stopping next to them in that room is the pickup, not an arrival there: they follow it
    to the next patient's room (the room they arrived in is where they rest until paged again). A
    page naming the room they rest in finds them there: the robot's stop next to them is their arrival.
    """
    world, hospital, motion, events, run = floor_with_motion()

    for room, pickup in (('ER-12', Pose2D(25.5, 12.0, 0.0)), ('ER-9', -1.0), ('ER-9', 1.0)):
        paged_at = hospital.t
        hospital.page('90', NAV, room=room)   # the page names the patient's room, as paging systems do
        run(hospital.page_response_delay_s + 0.5)
        if not isinstance(pickup, Pose2D):   # next to where the last escort left them, inside that room
            here = hospital.hcw('90').pose
            pickup = Pose2D(here.x, here.y + pickup, 0.0)   # the third: deeper in, away from its door
        before = len([e for e in events if e.kind == 'hcw_arrived'])
        motion.start_goal(NAV, pickup)
        run(80)
        if hospital.hcw('90').area == room:   # the page's room is where they are: they are there, badged in
            assert hospital.hcw('90').state == 'arrived' and len([e for e in events if e.kind == 'hcw_arrived']) \
                == before + 1
            arrived_at = [e.t for e in events if e.kind == 'hcw_arrived'][-1]
            assert [e.data['room'] for e in events if e.kind == 'badge_scan' and paged_at < e.t <= arrived_at] \
                == [room]
        else:
            assert hospital.hcw('90').state == 'following', room
        motion.start_goal(NAV, world.room(room).door)
        run(150)
        arrived = [e.data['room'] for e in events if e.kind == 'hcw_arrived']
        assert arrived[-1] == room and hospital.hcw('90').area == room and hospital.hcw('90').state == 'arrived'
    assert arrived == ['ER-12', 'ER-9', 'ER-9']


def test_a_page_naming_the_room_takes_the_hcw_only_into_that_room():
    """A robot pausing at another room's door on the way is not an arrival: the page said where to go."""
    world, hospital, motion, events, run = floor_with_motion()
    hospital.page('90', NAV, room='ER-12')
    run(hospital.page_response_delay_s + 0.5)
    motion.start_goal(NAV, Pose2D(25.5, 12.0, 0.0))   # the pickup, next to them in the Staff lounge
    run(80)
    motion.start_goal(NAV, world.room('ER-9').door)   # a pause at ER-9's door
    run(120)
    assert hospital.hcw('90').state == 'following' and not [e for e in events if e.kind == 'hcw_entering']
    motion.start_goal(NAV, world.room('ER-12').door)
    run(150)
    assert [e.data['room'] for e in events if e.kind == 'hcw_arrived'] == ['ER-12']
