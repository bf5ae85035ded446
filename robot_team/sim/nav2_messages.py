"""The Nav2 stand-in's messages: the requests ``motion_sim`` parses and the messages it builds.

For each driving action (``navigate_to_pose``, ``navigate_through_poses``, ``follow_path``) a
:class:`DriveAction`: how a goal request becomes an engine goal (frames and controller checked:
:class:`BadGoal`), and the action's feedback and result (error codes, waypoint statuses) built from
the engine's :class:`~robot_team.sim.motion.GoalStatus`. Also ``compute_path_to_pose``'s request
check and path, and what a Nav2 robot publishes: ``amcl_pose``, ``odom`` and map_server's ``map``.
The ROS wiring (action servers, publishers, locks) is :mod:`robot_team.sim.motion_node`'s.

Units: SI (m, s, rad), poses in the ``map`` frame (``odom`` == ``map`` in the sim).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav2_msgs.action import ComputePathToPose, FollowPath, NavigateThroughPoses, NavigateToPose
from nav2_msgs.msg import WaypointStatus
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path

from robot_team.contracts.names import (
    BASE_FRAME, FOLLOW_PATH, MAP_FRAME, NAVIGATE_THROUGH_POSES, NAVIGATE_TO_POSE, ODOM_FRAME, RobotId)
from robot_team.ros.stamps import s_to_duration, s_to_stamp
from robot_team.sim.grid import PlanningError, WallGrid
from robot_team.sim.motion import ABORTED, ACTIVE, SUCCEEDED, FollowPathError, GoalStatus
from robot_team.sim.node_common import pose2d, pose_msg, yaw_of
from robot_team.sim.planner import densify
from robot_team.sim.world import Pose2D

PLANNER_ID = 'GridBased'    # the one planner plugin (Nav2's default ID); '' selects it too
CONTROLLER_ID = 'FollowPath'   # the one controller plugin (Nav2's default ID); '' selects it too
AMCL_POSITION_VARIANCE = 0.05 ** 2   # m^2: covariance reported on amcl_pose (the sim localizes exactly)
AMCL_YAW_VARIANCE = 0.02 ** 2        # rad^2


def frame_problem(frame_id: str) -> str:
    """Return why ``frame_id`` cannot be used for a goal ('' if it can: '', 'map' or 'odom')."""
    frame = frame_id.strip().lstrip('/')
    if frame in ('', MAP_FRAME, ODOM_FRAME):
        return ''
    return f"frame '{frame_id}' is unknown: expected '{MAP_FRAME}' (or '{ODOM_FRAME}')"


def path_msg(points, final_yaw: float, t: float, spacing: float) -> Path:
    """Return a nav_msgs/Path in ``map`` through ``points`` (shape (N, 2), m), a pose every ``spacing`` m.

    Each pose heads towards the next; the last one has ``final_yaw`` (rad).
    """
    dense = densify(points, spacing)
    msg = Path()
    msg.header.stamp, msg.header.frame_id = s_to_stamp(t), MAP_FRAME
    for i, (x, y) in enumerate(dense):
        if i + 1 < len(dense):
            yaw = math.atan2(dense[i + 1][1] - y, dense[i + 1][0] - x)
        else:
            yaw = final_yaw
        msg.poses.append(pose_msg(Pose2D(float(x), float(y), yaw), t))
    return msg


class BadGoal(Exception):
    """A goal the simulator rejects before planning (unknown frame or plugin ID): ``code``, ``message``."""

    def __init__(self, code: int, message: str, **data):
        super().__init__(message)
        self.code, self.message, self.data = int(code), message, data


# Planner and controller errors that mean the request itself was bad (recorded as INPUT_ERROR too).
BAD_INPUT_CODES = frozenset({
    PlanningError.START_OUTSIDE_MAP, PlanningError.GOAL_OUTSIDE_MAP, PlanningError.START_OCCUPIED,
    PlanningError.GOAL_OCCUPIED, FollowPathError.INVALID_PATH, FollowPathError.NO_VALID_CONTROL})


@dataclass(frozen=True)
class DriveAction:
    """How one Nav2 driving action maps onto the engine: parse a goal, build feedback and results.

    ``parse(request)`` returns ``start(engine, robot) -> goal_id`` or raises :class:`BadGoal`;
    ``feedback(status, t, speed, request)`` and ``result(error_code, message, state, status,
    request, failed_index)`` build the action's messages (``status`` may be None before the engine
    has a goal; ``failed_index`` is the pose whose leg could not be planned, if known).
    """

    name: str
    type: Any
    unknown: int
    parse: Callable
    feedback: Callable
    result: Callable


def _check_frame(pose: PoseStamped, code: int, what: str = 'goal', default_frame: str = '') -> None:
    frame = pose.header.frame_id or default_frame
    problem = frame_problem(frame)
    if problem:
        raise BadGoal(code, f'{what} {problem}', frame_id=frame)


def _parse_to_pose(request):
    _check_frame(request.pose, NavigateToPose.Result.TF_ERROR)
    target = pose2d(request.pose.pose)
    return lambda engine, robot: engine.start_goal(robot, target)


def _parse_through_poses(request):
    goals = list(request.poses.goals)
    if not goals:
        raise BadGoal(NavigateThroughPoses.Result.UNKNOWN, 'no poses given')
    for i, pose in enumerate(goals):
        _check_frame(pose, NavigateThroughPoses.Result.TF_ERROR, f'pose {i + 1} of {len(goals)}',
                     request.poses.header.frame_id)
    targets = [pose2d(p.pose) for p in goals]
    return lambda engine, robot: engine.start_through_poses(robot, targets)


def _parse_follow_path(request):
    if request.controller_id not in ('', CONTROLLER_ID):
        raise BadGoal(FollowPath.Result.INVALID_CONTROLLER, f"controller_id '{request.controller_id}' is "
                      f"unknown: expected '' or '{CONTROLLER_ID}'", controller_id=request.controller_id)
    problem = frame_problem(request.path.header.frame_id)
    if problem:
        raise BadGoal(FollowPath.Result.TF_ERROR, f'path {problem}', frame_id=request.path.header.frame_id)
    points = [(p.pose.position.x, p.pose.position.y) for p in request.path.poses]
    yaw = yaw_of(request.path.poses[-1].pose.orientation) if points else 0.0
    return lambda engine, robot: engine.start_follow_path(robot, points, yaw)


def _nav_feedback(feedback, status: GoalStatus, t: float):
    feedback.current_pose = pose_msg(status.pose, t)
    feedback.navigation_time = s_to_duration(status.navigation_time_s)
    feedback.estimated_time_remaining = s_to_duration(status.eta_s)
    feedback.number_of_recoveries = 0
    feedback.distance_remaining = float(status.distance_remaining)
    return feedback


def _waypoint_statuses(request, state: str, status: GoalStatus | None, error_code: int, message: str,
                       failed_index: int | None = None):
    """Return WaypointStatus per requested pose: COMPLETED if passed, FAILED where an abort stopped it.

    ``failed_index`` is the pose whose leg could not be planned (nothing was driven then).
    """
    goals = list(request.poses.goals)
    if failed_index is not None:
        reached, failed = 0, failed_index
    else:
        if state == SUCCEEDED:
            reached = len(goals)
        else:
            reached = status.poses_total - status.poses_remaining if status is not None else 0
        failed = reached if state == ABORTED else None
    out = []
    for i, pose in enumerate(goals):
        w = WaypointStatus(waypoint_index=i, waypoint_pose=pose)
        if i < reached:
            w.waypoint_status = WaypointStatus.COMPLETED
        elif i == failed:
            w.waypoint_status, w.error_code, w.error_msg = WaypointStatus.FAILED, int(error_code), message
        else:
            w.waypoint_status = WaypointStatus.PENDING
        out.append(w)
    return out


def _through_feedback(status: GoalStatus, t: float, speed: float, request):
    feedback = _nav_feedback(NavigateThroughPoses.Feedback(), status, t)
    feedback.number_of_poses_remaining = int(status.poses_remaining)
    feedback.waypoint_statuses = _waypoint_statuses(request, ACTIVE, status, 0, '')
    return feedback


def _through_result(error_code: int, message: str, state: str, status, request, failed_index=None):
    return NavigateThroughPoses.Result(error_code=error_code, error_msg=message,
                                       waypoint_statuses=_waypoint_statuses(request, state, status, error_code,
                                                                            message, failed_index))


def _follow_feedback(status: GoalStatus, t: float, speed: float, request):
    return FollowPath.Feedback(distance_to_goal=float(status.distance_remaining), speed=float(speed))


DRIVE_ACTIONS = (
    DriveAction(NAVIGATE_TO_POSE, NavigateToPose, NavigateToPose.Result.UNKNOWN, _parse_to_pose,
                lambda status, t, speed, request: _nav_feedback(NavigateToPose.Feedback(), status, t),
                lambda code, message, *_: NavigateToPose.Result(error_code=code, error_msg=message)),
    DriveAction(NAVIGATE_THROUGH_POSES, NavigateThroughPoses, NavigateThroughPoses.Result.UNKNOWN,
                _parse_through_poses, _through_feedback, _through_result),
    DriveAction(FOLLOW_PATH, FollowPath, FollowPath.Result.UNKNOWN, _parse_follow_path, _follow_feedback,
                lambda code, message, *_: FollowPath.Result(error_code=code, error_msg=message)),
)


def path_request_problem(request) -> tuple[int, str] | None:
    """Return why a ComputePathToPose ``request`` cannot be planned before planning: ``(error code, message)``.

    None if its planner ID is ``''`` or :data:`PLANNER_ID` and its goal (and start, if used) are
    in a known frame.
    """
    if request.planner_id not in ('', PLANNER_ID):
        return (ComputePathToPose.Result.INVALID_PLANNER,
                f"planner_id '{request.planner_id}' is unknown: expected '' or '{PLANNER_ID}'")
    for what, pose in (('goal', request.goal), ('start', request.start if request.use_start else None)):
        if pose is not None and frame_problem(pose.header.frame_id):
            return (ComputePathToPose.Result.TF_ERROR, f'{what} {frame_problem(pose.header.frame_id)}')
    return None


def odometry_msg(robot: RobotId, pose: Pose2D, speed: float, yaw_rate: float, t: float) -> Odometry:
    """Return ``robot``'s odometry at sim time ``t`` (s): ``pose`` (m, rad), ``speed`` (m/s), ``yaw_rate`` (rad/s).

    In frame ``odom`` (== ``map``), child ``<robot>/base_link``, as a base controller publishes it.
    """
    odom = Odometry()
    odom.header.stamp = s_to_stamp(t)
    odom.header.frame_id = ODOM_FRAME
    odom.child_frame_id = f'{robot}/{BASE_FRAME}'
    odom.pose.pose = pose_msg(pose, t).pose
    odom.twist.twist.linear.x = float(speed)
    odom.twist.twist.angular.z = float(yaw_rate)
    return odom


def amcl_pose_msg(pose: Pose2D, t: float) -> PoseWithCovarianceStamped:
    """Return a localization report, ``pose`` (m, rad) in ``map`` at sim time ``t`` (s), as AMCL publishes it."""
    amcl = PoseWithCovarianceStamped()
    amcl.header.stamp, amcl.header.frame_id = s_to_stamp(t), MAP_FRAME
    amcl.pose.pose = pose_msg(pose, t).pose
    amcl.pose.covariance[0] = amcl.pose.covariance[7] = AMCL_POSITION_VARIANCE
    amcl.pose.covariance[35] = AMCL_YAW_VARIANCE
    return amcl


def trajectory_msg(reports, t: float) -> Path:
    """Return a robot's forecast localization reports ``[(sim time s, Pose2D)]`` made at sim time ``t`` as a Path.

    Each pose in ``map``, stamped with its own time (the robot's ``trajectory``); none: it stands.
    """
    msg = Path()
    msg.header.stamp, msg.header.frame_id = s_to_stamp(t), MAP_FRAME
    msg.poses = [pose_msg(pose, at) for at, pose in reports]
    return msg


def map_msg(grid: WallGrid) -> OccupancyGridMsg:
    """Return the occupancy grid ``grid`` (walls and closed doors) as map_server's ``map`` (unstamped)."""
    msg = OccupancyGridMsg()
    msg.header.frame_id = MAP_FRAME
    msg.info.resolution = float(grid.resolution)
    msg.info.width, msg.info.height = grid.width, grid.height
    msg.info.origin.position.x, msg.info.origin.position.y = float(grid.origin[0]), float(grid.origin[1])
    msg.info.origin.orientation.w = 1.0
    msg.data = grid.data.ravel().tolist()
    return msg
