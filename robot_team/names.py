"""ROS 2 names shared by every node of the team: one place, so that nodes cannot disagree.

Robots live in their own namespace (``/<robot>/...``); team-wide topics and services live under
``/team``; the ED floor's infrastructure (real or simulated) lives under ``/ed``. Names follow
ROS 2 conventions (snake_case, relative per-robot names resolved in the robot's namespace).
"""

from enum import Enum


class Robot(str, Enum):
    """Robot roles of the ED team; the value is the node name and ROS namespace."""

    MANAGER = 'manager'
    NAVIGATION = 'navigation_robot'
    INFO_COLLECTION = 'info_collection_robot'
    DISPLAY = 'display_robot'


SUPERVISOR = 'supervisor'
SIMULATOR = 'ed_sim'
OPERATOR = 'scripted_operator'
RECORDER = 'team_recorder'

# Team topics and services.
TEAM_EVENTS = '/team/events'
TASK_REPORTS = '/team/task_reports'
ESCALATIONS = '/team/escalations'
HUMAN_DECISIONS = '/team/human_decisions'
AUTHORIZE_TASK = '/team/supervisor/authorize_task'
REQUEST_ESCALATION = '/team/supervisor/request_escalation'
RESOLVE_ESCALATION = '/team/supervisor/resolve_escalation'

# ED floor infrastructure (served by the embedded simulator, or by the hospital's systems).
PATIENT_ARRIVALS = '/ed/patient_arrivals'
BADGE_SCANS = '/ed/badge_scans'
LOCATE_STAFF = '/ed/rtls/locate_staff'
PAGE_STAFF = '/ed/paging/page_staff'
SHOW_DISPLAY = '/ed/display/show'
DISPLAY_CONTENT = '/ed/display/content'

# Per-robot names, relative to the robot's namespace.
EXECUTE_TASK = 'execute_task'
NAVIGATE_TO_POSE = 'navigate_to_pose'   # nav2_msgs/action/NavigateToPose, as Nav2's bt_navigator
ODOM = 'odom'
POSE = 'pose'   # geometry_msgs/PoseStamped of the robot in the map frame (simulator ground truth)

MAP_FRAME = 'map'   # REP-105


def robot_action(robot: 'Robot | str', relative: str) -> str:
    """Return the absolute name of ``relative`` in ``robot``'s namespace, e.g. ``/display_robot/execute_task``."""
    name = robot.value if isinstance(robot, Robot) else str(robot)
    return f'/{name}/{relative}'
