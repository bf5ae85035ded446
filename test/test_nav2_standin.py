"""The simulator as a Nav2 stand-in: BasicNavigator's calls, made the way it makes them.

The client is a node in the robot's namespace (``BasicNavigator(namespace='navigation_robot')``)
that uses the relative names and QoS of nav2_simple_commander's ``robot_navigator.py`` (Kilted):
``<node>/get_state`` (lifecycle_msgs/srv/GetState) for ``amcl`` and ``bt_navigator`` (and the
planner and controller servers), a reliable transient-local ``amcl_pose`` subscription of depth 1,
and the action clients ``navigate_to_pose``, ``compute_path_to_pose``, ``follow_path`` and
``navigate_through_poses``, cancelled with ``cancel_goal_async`` as ``cancelTask`` does. Each test
drives the embedded simulator to SUCCEEDED, CANCELED or ABORTED on its own domain and context.
"""

import math
import threading
import time

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from nav2_msgs.action import ComputePathToPose, FollowPath, NavigateThroughPoses, NavigateToPose
from nav2_msgs.msg import WaypointStatus
from nav_msgs.msg import Goals
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy

from robot_team.contracts.config import load_scenario
from robot_team.contracts.events import TeamEventModel
from robot_team.msg import TeamEvent
from robot_team.contracts.names import NAV2_LIFECYCLE_NODES, TEAM_EVENTS
from robot_team.ros.messages import event_from_msg, events_qos
from robot_team.sim.motion_node import MotionSimNode
from ros_helpers import wait_for

NAV = 'navigation_robot'
# robot_navigator.py's amcl_pose QoS.
AMCL_POSE_QOS = QoSProfile(durability=QoSDurabilityPolicy.TRANSIENT_LOCAL,
                           reliability=QoSReliabilityPolicy.RELIABLE,
                           history=QoSHistoryPolicy.KEEP_LAST, depth=1)


def pose_stamped(x, y, yaw=0.0, frame='map'):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = float(x), float(y)
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def xy(pose):
    return pose.position.x, pose.position.y


class Navigator:
    """BasicNavigator's interfaces, in the robot's namespace, with its relative names and QoS."""

    def __init__(self, context, executor, rtf=50.0):
        self.sim = MotionSimNode(load_scenario('onboarding'), context=context,
                                 parameter_overrides=[Parameter('real_time_factor', value=float(rtf))])
        self.node = rclpy.create_node('basic_navigator', namespace=NAV, context=context)
        self.team = rclpy.create_node('team_listener', context=context)
        self.events: list[TeamEventModel] = []
        self.team.create_subscription(TeamEvent, TEAM_EVENTS,
                                      lambda m: self.events.append(event_from_msg(m)), events_qos())
        self.clients = {
            'navigate_to_pose': ActionClient(self.node, NavigateToPose, 'navigate_to_pose'),
            'navigate_through_poses': ActionClient(self.node, NavigateThroughPoses, 'navigate_through_poses'),
            'follow_path': ActionClient(self.node, FollowPath, 'follow_path'),
            'compute_path_to_pose': ActionClient(self.node, ComputePathToPose, 'compute_path_to_pose'),
        }
        self.executor = executor
        for node in (self.sim, self.node, self.team):
            executor.add_node(node)

    def close(self):
        for node in (self.team, self.node, self.sim):
            self.executor.remove_node(node)
        time.sleep(0.2)   # let callbacks already in flight finish before anything is destroyed
        for client in self.clients.values():
            client.destroy()
        for node in (self.team, self.node, self.sim):
            node.destroy_node()

    def get_state(self, lifecycle_node):
        client = self.node.create_client(GetState, f'{lifecycle_node}/get_state')
        assert client.wait_for_service(timeout_sec=5.0), f'{lifecycle_node}/get_state not available'
        future = client.call_async(GetState.Request())
        assert wait_for(future.done, 5.0), f'{lifecycle_node}/get_state did not answer'
        self.node.destroy_client(client)
        return future.result().current_state

    def send(self, action, goal, feedback=None):
        client = self.clients[action]
        assert client.wait_for_server(timeout_sec=5.0), f'{action} server not available'
        future = client.send_goal_async(goal, feedback_callback=feedback)
        assert wait_for(future.done, 5.0), f'{action}: no goal response'
        handle = future.result()
        assert handle.accepted, f'{action} goal rejected'
        return handle

    @staticmethod
    def result(handle, timeout=20.0):
        future = handle.get_result_async()
        assert wait_for(future.done, timeout), 'no result'
        return future.result()

    def get_path(self, goal, start=None):
        request = ComputePathToPose.Goal(goal=goal, use_start=start is not None)
        if start is not None:
            request.start = start
        return self.result(self.send('compute_path_to_pose', request), timeout=10.0)

    def input_errors(self):
        return [e for e in self.events if e.kind == 'input_error']

    def sim_events(self, what):
        return [e for e in self.events if e.kind == 'sim' and e.data.get('what') == what]

    def robot_xy(self):
        pose = self.sim.engine.robot_pose(NAV)
        return pose.x, pose.y


@pytest.fixture
def nav(ros_context):
    # Driving goals block an executor thread each while they run: give the graph enough threads.
    executor = MultiThreadedExecutor(num_threads=8, context=ros_context)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    navigator = Navigator(ros_context, executor)
    try:
        yield navigator
    finally:
        navigator.close()
        executor.shutdown(timeout_sec=2.0)
        thread.join(timeout=5.0)


def test_wait_until_nav2_active_lifecycle_and_latched_amcl_pose(nav):
    # waitUntilNav2Active(): amcl and bt_navigator report 'active' on <node>/get_state.
    for node in NAV2_LIFECYCLE_NODES:
        state = nav.get_state(node)
        assert (state.id, state.label) == (State.PRIMARY_STATE_ACTIVE, 'active'), node
    # ... then it waits for amcl_pose: transient local, so a late subscriber still gets the last one.
    assert wait_for(lambda: nav.sim.sim_time > 1.0, 5.0)
    poses = []
    nav.node.create_subscription(PoseWithCovarianceStamped, 'amcl_pose', poses.append, AMCL_POSE_QOS)
    assert wait_for(lambda: poses, 5.0), 'no amcl_pose'
    dock = nav.sim.engine.world.dock(NAV).pose
    assert poses[0].header.frame_id == 'map'
    assert math.dist(xy(poses[0].pose.pose), (dock.x, dock.y)) < 1e-6
    assert poses[0].pose.covariance[0] > 0 and poses[0].pose.covariance[35] > 0


def test_go_to_pose_get_path_and_follow_path_succeed(nav):
    lounge = nav.sim.engine.world.room('Staff lounge').center
    # goToPose + isTaskComplete/getResult.
    feedback = []
    handle = nav.send('navigate_to_pose', NavigateToPose.Goal(pose=pose_stamped(*lounge, 1.0)),
                      lambda m: feedback.append(m.feedback))
    response = nav.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == NavigateToPose.Result.NONE
    assert feedback and feedback[0].distance_remaining > feedback[-1].distance_remaining
    assert math.dist(nav.robot_xy(), lounge) < 0.05

    # getPath(start, goal) with use_start=False: from the robot's pose, in map, a pose per cell.
    target = (20.0, 7.5)
    response = nav.get_path(pose_stamped(*target, math.pi))
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    result = response.result
    assert result.error_code == ComputePathToPose.Result.NONE and result.error_msg == ''
    path = result.path
    assert path.header.frame_id == 'map' and len(path.poses) > 20
    assert math.dist(xy(path.poses[0].pose), nav.robot_xy()) < 1e-6
    assert math.dist(xy(path.poses[-1].pose), target) < 1e-6
    assert abs(path.poses[-1].pose.orientation.z - 1.0) < 1e-6     # the goal's yaw (pi)
    steps = [math.dist(xy(a.pose), xy(b.pose)) for a, b in zip(path.poses, path.poses[1:])]
    assert max(steps) <= nav.sim.engine.grid.resolution + 1e-6
    assert result.planning_time.sec >= 0 and (result.planning_time.sec, result.planning_time.nanosec) != (0, 0)
    assert math.dist(nav.robot_xy(), lounge) < 0.05, 'planning must not move the robot'
    assert wait_for(lambda: nav.sim_events('path_computed'), 5.0)

    # followPath(path): drives along it; feedback distance_to_goal falls, speed is the robot's.
    feedback = []
    response = nav.result(nav.send('follow_path', FollowPath.Goal(path=path), lambda m: feedback.append(m.feedback)))
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == FollowPath.Result.NONE
    assert len(feedback) >= 2
    assert feedback[0].distance_to_goal > feedback[-1].distance_to_goal
    assert any(0.0 < f.speed <= nav.sim.engine.max_speed + 1e-6 for f in feedback)
    assert math.dist(nav.robot_xy(), target) < 0.05
    assert abs(abs(nav.sim.engine.robot_pose(NAV).yaw) - math.pi) < 1e-6
    accepted = nav.sim_events('goal_accepted')
    assert [e.data['action'] for e in accepted] == ['navigate_to_pose', 'follow_path']


def test_go_through_poses_succeeds_pose_by_pose(nav):
    lounge = nav.sim.engine.world.room('Staff lounge').center
    goals = Goals()
    goals.header.frame_id = 'map'
    goals.goals = [pose_stamped(20.0, 7.5), pose_stamped(*lounge, 0.5)]
    feedback = []
    handle = nav.send('navigate_through_poses', NavigateThroughPoses.Goal(poses=goals),
                      lambda m: feedback.append(m.feedback))
    response = nav.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == NavigateThroughPoses.Result.NONE
    statuses = response.result.waypoint_statuses
    assert [s.waypoint_status for s in statuses] == [WaypointStatus.COMPLETED] * 2
    assert [s.waypoint_index for s in statuses] == [0, 1]
    remaining = [f.number_of_poses_remaining for f in feedback]
    assert remaining[0] == 2 and 1 in remaining, remaining
    assert all(b <= a for a, b in zip(remaining, remaining[1:])), remaining
    assert feedback[-1].current_pose.header.frame_id == 'map'
    assert math.dist(nav.robot_xy(), lounge) < 0.05
    assert wait_for(lambda: nav.sim_events('waypoint_reached'), 5.0)
    assert nav.sim_events('waypoint_reached')[0].data['index'] == 0


def test_cancel_task_cancels_and_a_new_goal_preempts_across_actions(nav):
    feedback = []
    first = nav.send('navigate_to_pose', NavigateToPose.Goal(pose=pose_stamped(5.0, 7.5)),
                     lambda m: feedback.append(m.feedback))
    assert wait_for(lambda: len(feedback) >= 2, 5.0)
    # A goal on another driving action preempts it: one navigation goal per robot.
    goals = Goals()
    goals.goals = [pose_stamped(5.0, 7.5), pose_stamped(20.0, 7.5)]   # the first pose is > 20 m away
    through = []
    second = nav.send('navigate_through_poses', NavigateThroughPoses.Goal(poses=goals),
                      lambda m: through.append(m.feedback))
    response = nav.result(first)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'preempted' in response.result.error_msg
    assert wait_for(lambda: len(through) >= 2, 5.0)
    # cancelTask(): cancel_goal_async on the current goal handle.
    cancel = second.cancel_goal_async()
    assert wait_for(cancel.done, 5.0)
    assert len(cancel.result().goals_canceling) == 1
    response = nav.result(second)
    assert response.status == GoalStatus.STATUS_CANCELED
    assert [s.waypoint_status for s in response.result.waypoint_statuses] == [WaypointStatus.PENDING] * 2
    stopped = nav.robot_xy()
    t0 = nav.sim.sim_time
    assert wait_for(lambda: nav.sim.sim_time > t0 + 5.0, 5.0)
    assert nav.robot_xy() == stopped
    assert wait_for(lambda: nav.sim_events('goal_canceled'), 5.0)
    assert nav.sim_events('goal_canceled')[-1].data['action'] == 'navigate_through_poses'


def test_get_path_outside_the_map_aborts_and_is_recorded(nav):
    dock = nav.robot_xy()
    response = nav.get_path(pose_stamped(500.0, -3.0))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == ComputePathToPose.Result.GOAL_OUTSIDE_MAP == 204
    assert '(500.00, -3.00)' in response.result.error_msg and 'outside the map' in response.result.error_msg
    assert len(response.result.path.poses) == 0
    assert wait_for(nav.input_errors, 5.0)
    error = nav.input_errors()[0]
    assert error.target == NAV and '(500.00, -3.00)' in error.summary and 'compute_path_to_pose' in error.summary
    assert error.data['error_code'] == 204 and error.data['goal'][:2] == [500.0, -3.0]
    assert wait_for(lambda: nav.sim_events('path_failed'), 5.0)
    # A start inside a wall (use_start=True) is START_OCCUPIED; the robot never moved.
    wall = next(w for w in nav.sim.engine.world.walls if min(w.sx, w.sy) >= 0.2)
    response = nav.get_path(pose_stamped(20.0, 7.5), start=pose_stamped(wall.x, wall.y))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == ComputePathToPose.Result.START_OCCUPIED
    # An unknown planner ID is INVALID_PLANNER, as planner_server answers it.
    request = ComputePathToPose.Goal(goal=pose_stamped(20.0, 7.5), planner_id='Smac')
    response = nav.result(nav.send('compute_path_to_pose', request))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == ComputePathToPose.Result.INVALID_PLANNER
    assert nav.robot_xy() == dock
    # The simulator is still serving.
    assert nav.get_path(pose_stamped(20.0, 7.5)).status == GoalStatus.STATUS_SUCCEEDED


def test_goals_into_walls_abort_with_nav2_codes(nav):
    engine = nav.sim.engine
    wall = next(w for w in engine.world.walls if min(w.sx, w.sy) >= 0.2)
    here = nav.robot_xy()
    # followPath through a wall: the controller finds no collision-free command.
    path = nav.get_path(pose_stamped(20.0, 7.5)).result.path
    path.poses[-1].pose.position.x, path.poses[-1].pose.position.y = wall.x, wall.y
    response = nav.result(nav.send('follow_path', FollowPath.Goal(path=path)))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == FollowPath.Result.NO_VALID_CONTROL
    assert 'crosses a wall' in response.result.error_msg
    # A path that starts far from the robot is INVALID_PATH; an empty one too.
    far = nav.get_path(pose_stamped(5.0, 7.5), start=pose_stamped(20.0, 7.5)).result.path
    response = nav.result(nav.send('follow_path', FollowPath.Goal(path=far)))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == FollowPath.Result.INVALID_PATH
    response = nav.result(nav.send('follow_path', FollowPath.Goal()))
    assert response.result.error_code == FollowPath.Result.INVALID_PATH
    # goThroughPoses with its second pose in a wall: GOAL_OCCUPIED, that pose marked FAILED.
    goals = Goals()
    goals.goals = [pose_stamped(20.0, 7.5), pose_stamped(wall.x, wall.y)]
    response = nav.result(nav.send('navigate_through_poses', NavigateThroughPoses.Goal(poses=goals)))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == ComputePathToPose.Result.GOAL_OCCUPIED
    assert 'pose 2 of 2' in response.result.error_msg
    assert [s.waypoint_status for s in response.result.waypoint_statuses] == [WaypointStatus.PENDING,
                                                                              WaypointStatus.FAILED]
    # goToPose in an unknown frame: TF_ERROR.
    response = nav.result(nav.send('navigate_to_pose', NavigateToPose.Goal(pose=pose_stamped(20.0, 7.5,
                                                                                             frame='moon'))))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == NavigateToPose.Result.TF_ERROR
    assert nav.robot_xy() == here
    assert wait_for(lambda: len(nav.input_errors()) >= 5, 5.0), [e.summary for e in nav.input_errors()]
    assert len(nav.sim_events('goal_aborted')) == 4
