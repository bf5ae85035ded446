"""The hospital's systems alone on a ROS graph: no motion simulator, only /clock and a robot's amcl_pose.

This is the hospital node as it would run next to Gazebo and Nav2 or on a real floor: the test is
the clock source and plays a robot's localizer, publishing ``navigation_robot/amcl_pose`` the way
AMCL does (reliable, transient local; nothing while the robot stands still). A paged HCW must
follow that "robot" from the staff lounge and, when it stops at ER-12's door approach pose, walk
in past the door's badge reader, whose scan comes out on ``ed/badge_scans``.
"""

import threading
import time

import pytest
import rclpy
from geometry_msgs.msg import PoseWithCovarianceStamped
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from robot_team.contracts.config import load_scenario
from robot_team.msg import BadgeScan, ClockAck, TeamEvent
from robot_team.contracts.names import AMCL_POSE, BADGE_SCANS, CLOCK_ACKS, LOCATE_STAFF, TEAM_EVENTS, robot_name
from robot_team.ros.messages import event_from_msg, events_qos
from robot_team.ros.clock import clock_acks_qos
from robot_team.ros.stamps import s_to_stamp, stamp_to_s
from robot_team.sim.common import Polyline
from robot_team.sim.planner import OccupancyGrid
from robot_team.sim.hospital_node import HospitalSystemsNode
from robot_team.sim.world import load_world
from robot_team.srv import LocateStaff
from robot_team.ros.messages import amcl_pose_qos
from ros_helpers import page, wait_for

NAV = 'navigation_robot'
SPEED = 0.5      # m/s, the robot's
STEP_S = 0.2     # sim s per clock message


class FakeFloor:
    """The test's side of the graph: /clock, one robot's amcl_pose, and what comes back."""

    def __init__(self, context):
        self.node = rclpy.create_node('fake_floor', context=context)
        self.clock_pub = self.node.create_publisher(Clock, '/clock', 10)
        self.pose_pub = self.node.create_publisher(PoseWithCovarianceStamped, robot_name(NAV, AMCL_POSE),
                                                   amcl_pose_qos())
        self.scans, self.events = [], []
        self.node.create_subscription(BadgeScan, BADGE_SCANS, self.scans.append,
                                      QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(TeamEvent, TEAM_EVENTS,
                                      lambda m: self.events.append(event_from_msg(m)), events_qos())
        self.t = 0.0

    def tick(self, pose=None):
        """Advance sim time by STEP_S; publish the robot's pose (x, y, yaw) first if it is given (it moved)."""
        self.t = round(self.t + STEP_S, 6)
        if pose is not None:
            msg = PoseWithCovarianceStamped()
            msg.header.stamp, msg.header.frame_id = s_to_stamp(self.t), 'map'
            msg.pose.pose.position.x, msg.pose.pose.position.y = pose
            self.pose_pub.publish(msg)
        self.clock_pub.publish(Clock(clock=s_to_stamp(self.t)))
        time.sleep(0.004)

    def sim(self, what):
        return [e for e in self.events if e.kind == 'sim' and e.data.get('what') == what]


def _leave(executor, *nodes):
    """Take ``nodes`` off the test's executor, let callbacks in flight finish, destroy them."""
    for node in nodes:
        executor.remove_node(node)
    time.sleep(0.2)
    for node in nodes:
        node.destroy_node()


def call(node, srv_type, name, request, keep_ticking, timeout=30.0):
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=10.0), f'{name} not available'
    future = client.call_async(request)
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        keep_ticking()
    assert future.done(), f'{name} did not answer'
    return future.result()


def test_paged_hcw_follows_a_robot_seen_only_through_amcl_pose_and_badges_in(ros_context, executor):
    scenario = load_scenario('onboarding')
    hospital = HospitalSystemsNode(scenario, context=ros_context, parameter_overrides=[
        Parameter('use_sim_time', value=True), Parameter('badge_scan_readers', value=1)])
    floor = FakeFloor(ros_context)
    for node in (hospital, floor.node):
        executor.add_node(node)
    try:
        world = load_world(scenario.floor_path)
        dock, door = world.dock(NAV).pose, world.room('ER-12').door
        assert wait_for(lambda: hospital.count_subscribers(robot_name(NAV, AMCL_POSE)) >= 1, 10.0)
        floor.tick((dock.x, dock.y))
        assert wait_for(lambda: floor.sim('patient_arrival') or floor.tick(), 10.0)

        # Where is HCW #90 (RTLS), then page them for the robot; the page waits in sim time.
        located = call(floor.node, LocateStaff, LOCATE_STAFF, LocateStaff.Request(hcw_ids=['90']), floor.tick)
        hcw = located.staff[0].pose.pose.position
        answer = {}
        pager = threading.Thread(target=lambda: answer.update(reply=page(
            floor.node, hcw_id='90', robot=NAV, message='Patient in ER-12', room='ER-12', timeout_s=60.0)))
        pager.start()

        # The robot drives (on the map's free space) to the HCW, then to ER-12's door approach pose.
        grid = OccupancyGrid.from_world(world)
        route = Polyline(grid.plan((dock.x, dock.y), (hcw.x, hcw.y)))
        for point in grid.plan((hcw.x, hcw.y), (door.x, door.y))[1:]:
            route.append(*point)
        s = 0.0
        while s < route.length:
            s = min(s + SPEED * STEP_S, route.length)
            floor.tick(route.at(s))
        pager.join(timeout=10.0)
        assert answer['reply'].acknowledged and NAV in answer['reply'].reply
        assert floor.sim('hcw_following') and floor.sim('hcw_following')[0].data['area'] == 'Staff lounge'
        assert floor.sim('page_delivered')[0].data['room'] == 'ER-12'   # where the page says they are needed
        assert not floor.scans                        # still following, in the corridor
        # Stopped at the door: AMCL publishes nothing more; the HCW walks in past the reader.
        assert wait_for(lambda: floor.scans or floor.tick(), 15.0), 'no badge scan'
        stopped_at = floor.t
        assert [(m.reader_id, m.room, m.badge_id) for m in floor.scans] == [('er_12_door', 'ER-12', 'ED-0090')]
        # the scan held sim time until its one expected reader (this floor) had it (contracts.delivery)
        assert wait_for(lambda: any(d.pending.key.endswith(BADGE_SCANS) for d in hospital._deliveries.settled), 10.0)
        [scan] = [d for d in hospital._deliveries.settled if d.pending.key.endswith(BADGE_SCANS)]
        assert (scan.delivered, scan.reach.matched, scan.pending.what) == (
            True, 1, {'badge_id': 'ED-0090', 'room': 'ER-12'})
        (entering,) = floor.sim('hcw_entering')
        assert entering.data['room'] == 'ER-12' and entering.data['robot'] == NAV
        assert entering.stamp_s >= route.length / SPEED + 3.0 - STEP_S     # after 3 s of silence
        assert wait_for(lambda: floor.sim('hcw_arrived') or floor.tick(), 10.0)
        assert floor.sim('hcw_arrived')[0].data['room'] == 'ER-12'
        assert stopped_at < 400.0
        assert not [e for e in floor.events if e.kind == 'input_error']
        assert all(e.actor == 'hospital_systems' for e in floor.events)
    finally:
        _leave(executor, floor.node, hospital)


def test_a_page_awaited_tells_the_follow_clock_when_it_is_answered_or_runs_out(ros_context, executor):
    """While a page is awaited the node has nothing to do before its answer or its time out (jump ahead).

    The HCW who answers (#90) is due at the answer the pager schedules; the busy one (#80) never
    answers, and the page's own deadline is the node's next event. Not "work now" meanwhile,
    and each page's result says what that time was.
    """
    hospital = HospitalSystemsNode(load_scenario('onboarding'), context=ros_context,
                                   parameter_overrides=[Parameter('use_sim_time', value=True)])
    floor = FakeFloor(ros_context)
    acks = []
    floor.node.create_subscription(ClockAck, CLOCK_ACKS, acks.append, clock_acks_qos(subscriber=True))
    for node in (hospital, floor.node):
        executor.add_node(node)

    def tick_acknowledged():   # as the follow clock steps: the next time once the last one was acknowledged
        floor.tick()           # (ticking on regardless, a loaded host's hospital could skip the window's clocks)
        wait_for(lambda: acks and stamp_to_s(acks[-1].clock) >= floor.t - 1e-9, 5.0, period=0.001)
    try:
        assert wait_for(lambda: floor.sim('patient_arrival') or tick_acknowledged(), 10.0)
        for hcw, timeout in (('80', 6.0), ('90', 30.0)):
            result = page(floor.node, tick_acknowledged, hcw_id=hcw, robot=NAV, message='Patient in ER-12',
                          room='ER-12', timeout_s=timeout)
            [sent] = [e.data['sim_time_s'] for e in floor.sim('page_delivered') if e.target == hcw]
            due = sent + (result.response_time_s if result.acknowledged else timeout)
            assert result.acknowledged == (hcw == '90') and due < sent + timeout + STEP_S
            told = [(stamp_to_s(a.clock), a.next_event_s) for a in list(acks)
                    if sent + 3 * STEP_S <= stamp_to_s(a.clock) <= due - 3 * STEP_S]
            assert told and all(at == pytest.approx(due, abs=1e-6) for _, at in told), (hcw, due, told)
    finally:
        _leave(executor, floor.node, hospital)


def test_pose_source_odom_subscribes_to_odom_instead(ros_context):
    node = HospitalSystemsNode(load_scenario('onboarding'), context=ros_context,
                               parameter_overrides=[Parameter('pose_source', value='odom')])
    try:
        topics = dict(node.get_subscriber_names_and_types_by_node('hospital_systems', '/'))
        assert topics[f'/{NAV}/odom'] == ['nav_msgs/msg/Odometry'] and f'/{NAV}/amcl_pose' not in topics
    finally:
        node.destroy_node()
