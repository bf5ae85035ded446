"""The simulator's two nodes on a real ROS graph: motion_sim (Nav2 stand-in, /clock) and hospital_systems.

Each test builds its graph on a private domain and context (fixtures in conftest.py) and runs the
clock fast (real_time_factor 50-100), so that sim minutes take wall seconds. The hospital node runs
on sim time and sees the robots only through their ``amcl_pose``, as it would next to Gazebo.
"""

import math
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav2_msgs.action import NavigateToPose
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from robot_team.contracts.config import ConfigError, load_scenario
from robot_team.contracts.events import TeamEventModel
from robot_team.msg import BadgeScan, DisplayContent, DisplayEntry, PatientArrival, TeamEvent
from robot_team.contracts.names import (
    AMCL_POSE, BADGE_SCANS, DISPLAY_CONTENT, LOCATE_STAFF, NAVIGATE_TO_POSE, ODOM, PATIENT_ARRIVALS,
    SHOW_DISPLAY, TEAM_EVENTS, robot_name)
from robot_team.ros.messages import event_from_msg, events_qos
from robot_team.sim.grid import PlanningError
from robot_team.sim.hospital_node import HospitalSystemsNode
from robot_team.sim.motion_node import MotionSimNode
from robot_team.srv import LocateStaff, ShowDisplay
from robot_team.ros.messages import amcl_pose_qos
from ros_helpers import page, wait_for

NAV = 'navigation_robot'
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Graph:
    """The two simulator nodes and a client node on the test's executor."""

    def __init__(self, context, executor, scenario, rtf, motion_params=()):
        scenario = load_scenario(scenario)
        self.hospital = HospitalSystemsNode(scenario, context=context,
                                            parameter_overrides=[Parameter('use_sim_time', value=True)])
        self.motion = MotionSimNode(scenario, context=context, parameter_overrides=[
            Parameter('real_time_factor', value=float(rtf)), *motion_params])
        self.client = rclpy.create_node('sim_test_client', context=context)
        self.events: list[TeamEventModel] = []
        self.client.create_subscription(TeamEvent, TEAM_EVENTS, self._record, events_qos())
        self.nav = ActionClient(self.client, NavigateToPose, robot_name(NAV, NAVIGATE_TO_POSE))
        for node in (self.hospital, self.motion, self.client):
            executor.add_node(node)
        self.executor = executor

    def _record(self, msg):
        self.events.append(event_from_msg(msg))

    def close(self):
        nodes = (self.client, self.motion, self.hospital)
        for node in nodes:
            self.executor.remove_node(node)
        time.sleep(0.2)   # let callbacks already handed to executor threads finish before nodes are destroyed
        for node in nodes:
            node.destroy_node()

    def sim_events(self, what, actor=None):
        return [e for e in self.events if e.kind == 'sim' and e.data.get('what') == what
                and (actor is None or e.actor == actor)]

    def call(self, srv_type, name, request, timeout=10.0):
        client = self.client.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=5.0), f'{name} not available'
        future = client.call_async(request)
        assert wait_for(future.done, timeout), f'{name} did not answer'
        self.client.destroy_client(client)
        return future.result()

    def send_goal(self, x, y, yaw=0.0, frame='map', feedback=None):
        assert self.nav.wait_for_server(timeout_sec=5.0)
        goal = NavigateToPose.Goal()
        goal.pose.header.frame_id = frame
        goal.pose.pose.position.x, goal.pose.pose.position.y = float(x), float(y)
        goal.pose.pose.orientation.z, goal.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        future = self.nav.send_goal_async(goal, feedback_callback=feedback)
        assert wait_for(future.done, 5.0)
        handle = future.result()
        assert handle.accepted
        return handle

    @staticmethod
    def result(handle, timeout=10.0):
        future = handle.get_result_async()
        assert wait_for(future.done, timeout), 'no navigate_to_pose result'
        return future.result()


@pytest.fixture
def graph_factory(ros_context):
    # Goals and pages block an executor thread each while they wait: give the graph enough threads.
    from rclpy.executors import MultiThreadedExecutor
    executor = MultiThreadedExecutor(num_threads=8, context=ros_context)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    graphs = []

    def make(scenario='onboarding', rtf=50.0, motion_params=()):
        graph = Graph(ros_context, executor, scenario, rtf, motion_params)
        graphs.append(graph)
        return graph
    yield make
    for graph in graphs:
        graph.close()
    executor.shutdown(timeout_sec=2.0)
    thread.join(timeout=5.0)


def test_navigate_succeeds_with_decreasing_distance(graph_factory):
    graph = graph_factory()
    odom = []
    graph.client.create_subscription(Odometry, robot_name(NAV, ODOM), odom.append, 10)
    feedback = []
    lounge = graph.motion.engine.world.room('Staff lounge').center
    handle = graph.send_goal(*lounge, yaw=1.0, feedback=lambda m: feedback.append(m.feedback))
    response = graph.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == NavigateToPose.Result.NONE
    distances = [f.distance_remaining for f in feedback]
    assert len(distances) >= 3, distances
    assert distances[0] > 10 and distances[-1] < distances[0]
    assert all(b <= a + 1e-3 for a, b in zip(distances, distances[1:]))
    assert feedback[-1].current_pose.header.frame_id == 'map'
    assert feedback[-1].number_of_recoveries == 0
    assert feedback[-1].navigation_time.sec > 0

    def at_lounge():
        return odom and math.dist((odom[-1].pose.pose.position.x, odom[-1].pose.pose.position.y),
                                  lounge) < 0.05
    assert wait_for(at_lounge, 5.0)
    assert odom[-1].header.frame_id == 'odom' and odom[-1].child_frame_id == f'{NAV}/base_link'
    assert wait_for(lambda: graph.sim_events('goal_succeeded'), 5.0)
    assert graph.sim_events('goal_accepted')[0].target == NAV
    assert {e.actor for e in graph.sim_events('goal_accepted')} == {'motion_sim'}


def test_blocked_door_aborts_with_no_valid_path(graph_factory):
    graph = graph_factory('no_path')
    room = graph.motion.engine.world.room('ER-12')
    response = graph.result(graph.send_goal(*room.center))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == PlanningError.NO_VALID_PATH == 208
    assert 'no valid path' in response.result.error_msg
    assert wait_for(lambda: graph.sim_events('goal_aborted'), 5.0)
    # An unknown frame is Nav2's TF_ERROR, recorded as an input error.
    response = graph.result(graph.send_goal(*room.door.xy, frame='moon'))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == NavigateToPose.Result.TF_ERROR
    assert wait_for(lambda: any(e.kind == 'input_error' for e in graph.events), 5.0)


def test_preempt_and_cancel(graph_factory):
    graph = graph_factory()
    feedback = []
    first = graph.send_goal(5.0, 7.5, feedback=lambda m: feedback.append(m.feedback))
    assert wait_for(lambda: len(feedback) >= 2, 5.0)
    second = graph.send_goal(1.5, 12.0, feedback=lambda m: feedback.append(m.feedback))
    response = graph.result(first)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'preempted' in response.result.error_msg
    cancel = second.cancel_goal_async()
    assert wait_for(cancel.done, 5.0)
    assert len(cancel.result().goals_canceling) == 1
    response = graph.result(second)
    assert response.status == GoalStatus.STATUS_CANCELED
    stopped = graph.motion.engine.robot_pose(NAV)
    t0 = graph.motion.sim_time
    assert wait_for(lambda: graph.motion.sim_time > t0 + 5.0, 5.0)
    assert graph.motion.engine.robot_pose(NAV) == stopped
    assert wait_for(lambda: graph.sim_events('goal_canceled'), 5.0)


def test_clock_runs_faster_than_wall_and_map_is_latched(graph_factory):
    graph = graph_factory(rtf=50.0)
    clocks, maps = [], []
    graph.client.create_subscription(Clock, '/clock', lambda m: clocks.append((time.monotonic(), m.clock)),
                                     10)
    graph.client.create_subscription(OccupancyGrid, '/map', maps.append, LATCHED)
    assert wait_for(lambda: clocks, 5.0)
    wall0, sim0 = time.monotonic(), graph.motion.sim_time
    time.sleep(1.0)
    node_rtf = (graph.motion.sim_time - sim0) / (time.monotonic() - wall0)
    (w0, c0), (w1, c1) = clocks[0], clocks[-1]
    sim_dt = (c1.sec + c1.nanosec * 1e-9) - (c0.sec + c0.nanosec * 1e-9)
    wall_dt = w1 - w0
    print(f'real-time factor: {node_rtf:.1f} in the node, {sim_dt / wall_dt:.1f} as received on /clock '
          '(requested 50)')
    assert sim_dt > wall_dt
    assert wait_for(lambda: maps, 5.0)
    grid = graph.motion.engine.grid
    assert (maps[0].info.width, maps[0].info.height) == (grid.width, grid.height)
    assert maps[0].header.frame_id == 'map' and max(maps[0].data) == 100
    # The hospital runs on that clock.
    assert wait_for(lambda: graph.hospital.engine.t > 5.0, 5.0)


def test_paused_clock_waits_for_its_subscribers_then_resumes(graph_factory):
    # 20 subscribers are never coming: after clock_start_timeout_s the clock starts anyway, recorded.
    graph = graph_factory(motion_params=[Parameter('paused', value=True),
                                         Parameter('min_clock_subscribers', value=20),
                                         Parameter('clock_start_timeout_s', value=1.0)])
    clocks = []
    graph.client.create_subscription(Clock, '/clock', clocks.append, 10)
    assert wait_for(lambda: len(clocks) > 20, 5.0)
    assert graph.motion.sim_time == 0.0 and clocks[-1].clock.sec == 0 and clocks[-1].clock.nanosec == 0
    time.sleep(1.2)                                   # past the start timeout, but paused
    assert graph.motion.sim_time == 0.0 and not graph.sim_events('clock_started')
    graph.motion.set_parameters([Parameter('paused', value=False)])
    assert wait_for(lambda: graph.motion.sim_time > 5.0, 5.0)
    assert wait_for(lambda: graph.sim_events('clock_started'), 5.0)    # the event comes over DDS
    (started,) = graph.sim_events('clock_started')
    assert 0 < started.data['subscribers'] < 20
    shortfall = [e for e in graph.events if e.kind == 'input_error' and e.target == '/clock']
    assert shortfall and 'of the 20 subscribers expected' in shortfall[0].summary
    graph.motion.set_parameters([Parameter('paused', value=True)])
    assert wait_for(lambda: graph.sim_events('clock_paused'), 5.0)
    held = graph.motion.sim_time
    time.sleep(0.3)
    assert graph.motion.sim_time == held


def test_clock_starts_once_every_subscriber_is_there(graph_factory):
    # The hospital (on sim time) subscribes to /clock; the second subscriber comes later.
    graph = graph_factory(motion_params=[Parameter('min_clock_subscribers', value=2)])
    time.sleep(0.5)
    assert graph.motion.sim_time == 0.0
    late = rclpy.create_node('late_joiner', context=graph.client.context,
                             parameter_overrides=[Parameter('use_sim_time', value=True)])
    graph.executor.add_node(late)
    try:
        assert wait_for(lambda: graph.sim_events('clock_started'), 10.0)
        assert graph.sim_events('clock_started')[0].data['subscribers'] == 2
        assert not [e for e in graph.events if e.kind == 'input_error']
    finally:
        graph.executor.remove_node(late)
        late.destroy_node()


def test_locate_page_and_display_services(graph_factory):
    graph = graph_factory()
    reply = graph.call(LocateStaff, LOCATE_STAFF, LocateStaff.Request(hcw_ids=['90', '404']))
    assert [s.hcw_id for s in reply.staff] == ['90'] and list(reply.unknown_ids) == ['404']
    assert reply.staff[0].area == 'Staff lounge' and reply.staff[0].pose.header.frame_id == 'map'
    reply = graph.call(LocateStaff, LOCATE_STAFF, LocateStaff.Request(specialty='Physician'))
    assert {s.hcw_id: s.availability for s in reply.staff} == {'80': 'busy', '90': 'available', '91': 'busy'}

    busy = page(graph.client, hcw_id='80', robot=NAV, message='ER-12', timeout_s=5.0)
    assert busy.delivered and not busy.acknowledged and busy.response_time_s >= 5.0
    ok = page(graph.client, hcw_id='90', robot=NAV, message='ER-12', timeout_s=30.0)
    assert ok.delivered and ok.acknowledged and NAV in ok.reply
    assert ok.response_time_s == pytest.approx(8.0, abs=0.6)
    unknown = page(graph.client, hcw_id='404', robot=NAV, timeout_s=5.0)
    assert not unknown.delivered and "unknown HCW '404'" in unknown.reply
    nowhere = page(graph.client, hcw_id='90', robot=NAV, room='ER-99', timeout_s=5.0)
    assert not nowhere.delivered and "unknown room 'ER-99'" in nowhere.reply   # the page's room is checked

    content = []
    graph.client.create_subscription(DisplayContent, DISPLAY_CONTENT, content.append, LATCHED)
    entries = [DisplayEntry(role='Attending physician', hcw_id='90', name='Dr. Lucas Brennan',
                            specialty='Physician')]
    shown = graph.call(ShowDisplay, SHOW_DISPLAY, ShowDisplay.Request(room='ER-12', title='Care team',
                                                                      entries=entries, layout='rows'))
    assert shown.success and shown.rendered_lines[0] == '[ER-12] Care team'
    assert wait_for(lambda: content, 5.0) and content[-1].room == 'ER-12'
    assert [(e.hcw_id, e.name, e.role) for e in content[-1].entries] == [('90', 'Dr. Lucas Brennan',
                                                                          'Attending physician')]
    assert list(content[-1].lines) == list(shown.rendered_lines)
    bad = graph.call(ShowDisplay, SHOW_DISPLAY, ShowDisplay.Request(room='ER-99', title='x', entries=entries))
    assert not bad.success and "unknown room 'ER-99'" in bad.message
    assert wait_for(lambda: len([e for e in graph.events if e.kind == 'input_error']) >= 3, 5.0)
    acknowledged = graph.sim_events('page_acknowledged')
    assert acknowledged[0].data['hcw_id'] == '90' and acknowledged[0].actor == 'hospital_systems'


def test_escort_produces_badge_scan_and_arrival(graph_factory):
    # The hospital sees the robot only through amcl_pose (nothing while it stands): it infers a
    # stop from seconds of silence. On the follow clock (capped at 100x) sim time waits for the
    # hospital, so a busy machine cannot stretch the silence between two poses past that.
    graph = graph_factory('unknown_badge', rtf=100.0, motion_params=[Parameter('clock_mode', value='follow')])
    arrivals, scans = [], []
    graph.client.create_subscription(PatientArrival, PATIENT_ARRIVALS, arrivals.append, LATCHED)
    graph.client.create_subscription(BadgeScan, BADGE_SCANS, scans.append,
                                     QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    assert wait_for(lambda: arrivals, 5.0) and arrivals[0].room == 'ER-12'
    answer = {}
    # Page and fetch in parallel: the page waits in sim time while the robot drives.
    pager = threading.Thread(target=lambda: answer.update(reply=page(
        graph.client, hcw_id='90', robot=NAV, message='Patient in ER-12', timeout_s=60.0)))
    pager.start()
    lounge = graph.motion.engine.world.room('Staff lounge').center
    assert graph.result(graph.send_goal(*lounge)).status == GoalStatus.STATUS_SUCCEEDED
    pager.join(timeout=10.0)
    assert answer['reply'].acknowledged
    entry = graph.motion.engine.world.room('ER-12').entry
    response = graph.result(graph.send_goal(entry.x, entry.y, entry.yaw), timeout=15.0)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert wait_for(lambda: [s for s in scans if s.room == 'ER-12'], 5.0)
    # the escort's way may pass another room's reader zone (a scan there, as a corridor reader
    # would make); the room's own door scan is the last one, with the scenario's broken badge
    assert (scans[-1].reader_id, scans[-1].room) == ('er_12_door', 'ER-12')
    assert {s.badge_id for s in scans} == {'ED-9999'} and [s.room for s in scans].count('ER-12') == 1
    assert all(s.header.stamp.sec > 0 for s in scans)
    assert wait_for(lambda: graph.sim_events('hcw_arrived'), 5.0)
    assert graph.sim_events('hcw_arrived')[0].data['room'] == 'ER-12'
    assert graph.motion.clock_followers == ['/hospital_systems']


@pytest.mark.multiprocess
def test_both_run_as_modules(ros_context, executor, domain_id):
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get('PYTHONPATH', '')]), PYTHONFAULTHANDLER='1')
    commands = {'motion': [sys.executable, '-m', 'robot_team.sim.motion_node', '--ros-args',
                           '-p', 'scenario:=onboarding'],
                'hospital': [sys.executable, '-m', 'robot_team.sim.hospital_node', '--ros-args',
                             '-p', 'scenario:=onboarding', '-p', 'use_sim_time:=true']}
    procs = {name: subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for name, command in commands.items()}
    node = rclpy.create_node('module_probe', context=ros_context)
    poses, arrivals = [], []
    node.create_subscription(PoseWithCovarianceStamped, robot_name(NAV, AMCL_POSE), poses.append, amcl_pose_qos())
    node.create_subscription(PatientArrival, PATIENT_ARRIVALS, arrivals.append, LATCHED)
    executor.add_node(node)
    try:
        assert wait_for(lambda: poses, 20.0), 'no amcl_pose from python -m robot_team.sim.motion_node'
        assert wait_for(lambda: arrivals, 20.0), 'no patient arrival from python -m robot_team.sim.hospital_node'
    finally:
        executor.remove_node(node)
        node.destroy_node()
        outputs = {}
        for proc in procs.values():
            proc.send_signal(signal.SIGINT)
        for name, proc in procs.items():
            try:
                outputs[name] = proc.communicate(timeout=30)[0].decode(errors='replace')
            except subprocess.TimeoutExpired:   # it hangs: its threads' stacks (faulthandler on SIGABRT) say where
                proc.send_signal(signal.SIGABRT)
                stacks = proc.communicate(timeout=30)[0].decode(errors='replace')
                pytest.fail(f'{name} did not stop within 30 s of SIGINT; its output and stacks:\n{stacks[-6000:]}')
    for name, proc in procs.items():
        assert proc.returncode == 0, outputs[name]
    assert "scenario 'onboarding'" in outputs['motion'] and 'hospital systems ready' in outputs['hospital']


def test_scenario_parameter_and_bad_input(ros_context):
    node = MotionSimNode(context=ros_context, parameter_overrides=[Parameter('scenario', value='no_path')])
    try:
        assert node.scenario.name == 'no_path'
        assert node.real_time_factor == load_scenario('no_path').real_time_factor
        assert node.engine.grid.plan((1.5, 12.0), (5.0, 7.5)).shape[1] == 2
    finally:
        node.destroy_node()
    node = HospitalSystemsNode(context=ros_context, parameter_overrides=[Parameter('scenario', value='no_path')])
    try:
        assert node.scenario.name == 'no_path' and node.pose_source == 'amcl_pose'
    finally:
        node.destroy_node()
    with pytest.raises(ConfigError, match="unknown scenario 'nope'"):
        MotionSimNode(context=ros_context, parameter_overrides=[Parameter('scenario', value='nope')])
    with pytest.raises(ConfigError, match="unknown scenario 'nope'"):
        HospitalSystemsNode(context=ros_context, parameter_overrides=[Parameter('scenario', value='nope')])
    with pytest.raises(ConfigError, match='must be positive'):
        MotionSimNode(load_scenario('onboarding'), context=ros_context,
                      parameter_overrides=[Parameter('real_time_factor', value=0.0)])
    with pytest.raises(ConfigError, match="pose_source: 'gps' is not one of amcl_pose, odom, tf"):
        HospitalSystemsNode(load_scenario('onboarding'), context=ros_context,
                            parameter_overrides=[Parameter('pose_source', value='gps')])
    with pytest.raises(ConfigError, match='update_period_s must be positive'):
        HospitalSystemsNode(load_scenario('onboarding'), context=ros_context,
                            parameter_overrides=[Parameter('update_period_s', value=0)])
