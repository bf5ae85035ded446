"""ROS 2 names shared by every node of the team: one place, so that nodes cannot disagree.

Every name here is **relative**, resolved the ROS way (REP-144 / ``rcl`` name resolution):

- A team lives in a *team namespace* ``T`` (``/`` by default; ``robot-team run --namespace floor2``
  gives ``/floor2``). The manager, supervisor, operator, recorder and the simulator's nodes
  (``motion_sim``, ``hospital_systems``) are nodes in ``T``;
  team topics and services (``team/...``) and the floor's infrastructure (``ed/...``) are relative
  to ``T``: ``team/events`` is ``/team/events`` in the default team, ``/floor2/team/events`` in
  ``/floor2``.
- Each robot is a node named after its role in its own namespace ``T/<role>``, like a Nav2 robot
  (``BasicNavigator(namespace='navigation_robot')``): its interfaces (``execute_task``,
  ``navigate_to_pose``, ``amcl_pose``...) are relative to that namespace. A team node reaches
  them as ``<role>/<name>`` (:func:`robot_name`). ``ros2 run ... --ros-args -r
  __ns:=/floor2/navigation_robot`` moves one robot; its team namespace is the parent of its own
  (:func:`team_namespace_of`), or its ``team_namespace`` parameter.
- ``/clock`` is global in ROS; a namespaced team remaps it (:func:`clock_remap`) so that two
  simulated teams can share one domain.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NewType


class NameEnum(str, Enum):
    """A closed set of names whose members *are* their names: ``str()`` and f-strings give the value.

    As Python 3.11's ``enum.StrEnum`` (the package supports 3.10): ``f'{Role.NAVIGATION}_2'`` is
    ``'navigation_robot_2'``, never ``'Role.NAVIGATION_2'``, so a member can go wherever its name goes
    (a node name, a namespace, a log line, a message field).
    """

    __str__ = str.__str__
    __format__ = str.__format__


class Role(NameEnum):
    """The roles (kinds of robot) of the ED team; the value is the node name of its first robot (and its namespace)."""

    MANAGER = 'manager'
    NAVIGATION = 'navigation_robot'
    INFO_COLLECTION = 'info_collection_robot'
    DISPLAY = 'display_robot'


RobotId = NewType('RobotId', str)
"""One robot's ID: its node name and its namespace in the team namespace, e.g. ``'navigation_robot'``,
or ``'navigation_robot_2'`` in a fleet (:func:`fleet_robots`). Its kind is a :class:`Role`
(:func:`role_name` gives the role's value)."""
NO_ROBOT = RobotId('')
"""The empty robot ID: no robot (an unassigned task, a team-wide escalation) or, as a filter, every robot."""


class Tool(NameEnum):
    """The operational robots' tools (the value is the name the LLM and the record use).

    Declared here, with the roles, so that every module below the catalog (each role's
    declaration, ``robot_team.roles``) names a tool through it; what a tool means is in its
    role's declaration, gathered by ``robot_team.catalog``.
    """

    LOCATE_STAFF = 'locate_staff'
    PAGE_STAFF = 'page_staff'
    ROOM_DOOR_POSE = 'room_door_pose'
    PLAN_PATH = 'plan_path'
    NAVIGATE_TO_POSE = 'navigate_to_pose'
    READ_BADGE_SCAN = 'read_badge_scan'
    LOOKUP_STAFF_BY_BADGE = 'lookup_staff_by_badge'
    RECORD_CHECK_IN = 'record_check_in'
    FETCH_CARE_TEAM = 'fetch_care_team'
    SHOW_DISPLAY = 'show_display'


SUPERVISOR = 'supervisor'
MOTION_SIM = 'motion_sim'              # embedded stand-in for Gazebo + Nav2 (robot motion, /clock)
HOSPITAL_SYSTEMS = 'hospital_systems'  # embedded stand-in for the hospital's systems (HCWs, RTLS, paging...)
OPERATOR = 'scripted_operator'
RECORDER = 'team_recorder'
FHIR_GATEWAY = 'fhir_gateway'         # FHIR Encounter notifications in (robot_team.agents.fhir_gateway_node)

# Team topics and services, relative to the team namespace.
TEAM_EVENTS = 'team/events'
TASK_REPORTS = 'team/task_reports'
ESCALATIONS = 'team/escalations'
HUMAN_DECISIONS = 'team/human_decisions'
AUTHORIZE_TASK = 'team/supervisor/authorize_task'
SUBMIT_REPORT = 'team/supervisor/submit_report'
REQUEST_ESCALATION = 'team/supervisor/request_escalation'
RESOLVE_ESCALATION = 'team/supervisor/resolve_escalation'
ACKNOWLEDGE_ESCALATION = 'team/supervisor/acknowledge_escalation'
RAISE_ESCALATION = 'team/supervisor/raise_escalation'
SEND_INSTRUCTION = 'team/supervisor/send_instruction'
CLOSE_CASE = 'team/supervisor/close_case'   # robot_team/srv/CloseCase: the hospital's record ended a case
TEAM_HOLD = 'team/hold'
INSTRUCTIONS = 'team/instructions'
STAFF_BOARD = 'team/staff'
SUPERVISOR_DIRECTIVES = 'team/supervisor/directives'   # robot_team/msg/SupervisorDirective (safe defaults)
CLOCK_HOLDS = 'team/clock_holds'   # robot_team/msg/ClockHold: lockstep LLM clock (robot_team.llm.lockstep)
CLOCK_ACKS = 'team/clock_acks'     # robot_team/msg/ClockAck: the follow clock (contracts.clock_sync, ros.clock)
HEARTBEAT = 'team/heartbeat'       # + '/<node>': robot_team/msg/Heartbeat, one per incarnation (contracts.liveness)
LIVENESS = 'team/liveness'         # robot_team/msg/NodeLiveness: nodes lost and back, as the supervisor noticed

# ED floor infrastructure (served by the hospital's systems, or their stand-in hospital_systems),
# relative to the team namespace.
PATIENT_ARRIVALS = 'ed/patient_arrivals'
BADGE_SCANS = 'ed/badge_scans'
LOCATE_STAFF = 'ed/rtls/locate_staff'
STAFF_LOCATIONS = 'ed/rtls/locations'   # robot_team/msg/StaffLocation: the RTLS stream (hospital_systems)
PAGE_STAFF = 'ed/paging/page_staff'
SHOW_DISPLAY = 'ed/display/show'
DISPLAY_CONTENT = 'ed/display/content'

# Map and clock, as map_server and Gazebo/ros_gz publish them.
MAP = 'map'             # nav_msgs/OccupancyGrid, transient local, relative to the team namespace
CLOCK = '/clock'        # rosgraph_msgs/Clock (global; see clock_remap)

# Per-robot names, relative to the robot's namespace (Nav2's names where Nav2 defines them).
EXECUTE_TASK = 'execute_task'                    # robot_team/action/ExecuteTask
NAVIGATE_TO_POSE = 'navigate_to_pose'            # nav2_msgs/action/NavigateToPose (bt_navigator)
NAVIGATE_THROUGH_POSES = 'navigate_through_poses'  # nav2_msgs/action/NavigateThroughPoses (bt_navigator)
COMPUTE_PATH_TO_POSE = 'compute_path_to_pose'    # nav2_msgs/action/ComputePathToPose (planner_server)
FOLLOW_PATH = 'follow_path'                      # nav2_msgs/action/FollowPath (controller_server)
AMCL_POSE = 'amcl_pose'                          # geometry_msgs/PoseWithCovarianceStamped, transient local
INITIAL_POSE = 'initialpose'                     # geometry_msgs/PoseWithCovarianceStamped
ODOM = 'odom'                                    # nav_msgs/Odometry
TRAJECTORY = 'trajectory'
"""nav_msgs/Path, per robot, transient local: the localization reports the simulator's robot will make
while its goal runs, each pose stamped with its sim time (``motion_sim`` only; empty while it stands).
The hospital's simulator replays it instead of waiting for ``amcl_pose``, so that the follow clock
may jump across a drive (``robot_team.sim.motion.MotionEngine.forecast``)."""
NAV2_LIFECYCLE_NODES = ('bt_navigator', 'planner_server', 'controller_server', 'amcl')
"""Nav2 lifecycle nodes per robot whose ``<node>/get_state`` (lifecycle_msgs/srv/GetState) a
BasicNavigator waits on (``waitUntilNav2Active`` with its default navigator and localizer)."""
PLANNER_ID = 'GridBased'      # planner_server's plugin ID (Nav2's default; '' selects it too)
CONTROLLER_ID = 'FollowPath'  # controller_server's plugin ID (Nav2's default; '' selects it too)

MAP_FRAME = 'map'       # REP-105
ODOM_FRAME = 'odom'     # REP-105
BASE_FRAME = 'base_link'  # REP-105

_NAME_PART = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
_FLEET_INDEX = re.compile(r'^(?P<role>.+)_(?P<index>[1-9][0-9]*)$')
OPERATIONAL_ROLES: tuple[str, ...] = tuple(r.value for r in Role if r is not Role.MANAGER)
"""The roles of the robots that run tasks (every :class:`Role` but the manager), in workflow order."""


def fleet_robots(role: 'Role | str', count: int = 1) -> list[RobotId]:
    """Return the names of ``count`` robots of ``role``: the role's own name for one robot.

    Several robots of a role are ``<role>_1``, ``<role>_2``... (nav2_bringup's multi-robot
    naming: each is a node of that name in its own namespace). E.g. ``fleet_robots('navigation_robot', 2)
    == ['navigation_robot_1', 'navigation_robot_2']``.

    Raises
    ------
    ValueError
        If ``count`` is below 1.
    """
    name = role.value if isinstance(role, Role) else str(role)
    if int(count) < 1:
        raise ValueError(f'a fleet has at least one robot per role; got {count} for {name}')
    return [RobotId(name)] if int(count) == 1 else [RobotId(f'{name}_{i}') for i in range(1, int(count) + 1)]


def role_name(robot: RobotId) -> str:
    """Return the role of robot ``robot``: ``'navigation_robot'`` for ``'navigation_robot_2'`` and itself.

    A name that is neither a role nor ``<role>_<n>`` (n >= 1) is returned unchanged: it is no
    operational robot, and whoever checks ownership refuses it.
    """
    name = str(robot)
    if name in OPERATIONAL_ROLES:
        return name
    match = _FLEET_INDEX.match(name)
    return match['role'] if match and match['role'] in OPERATIONAL_ROLES else name


def validate_robots(robots, what: str = 'robots') -> list[RobotId]:
    """Return ``robots`` (the team's operational robots' names) as a list, after checking it.

    Each name is a role's or ``<role>_<n>`` (:func:`fleet_robots`), none twice, and every
    operational role has a robot.

    Raises
    ------
    ValueError
        Naming ``what``, the names that are not robots of a role, repeated, or the roles with none.
    """
    names = [RobotId(str(r)) for r in robots]
    wrong = [r for r in names if role_name(r) not in OPERATIONAL_ROLES]
    twice = sorted({r for r in names if names.count(r) > 1})
    missing = [role for role in OPERATIONAL_ROLES if role not in {role_name(r) for r in names}]
    if wrong or twice or missing:
        raise ValueError(f'{what}: expected the robots of every role ({", ".join(OPERATIONAL_ROLES)}), each '
                         f'named <role> or <role>_<n> once; got {names}'
                         + (f'; not robots of a role: {wrong}' if wrong else '')
                         + (f'; repeated: {twice}' if twice else '')
                         + (f'; no robot for: {missing}' if missing else ''))
    return names


def role_robots(robot: RobotId, robots) -> list[RobotId]:
    """Return the robots a delegation to ``robot`` may go to among the team's ``robots``.

    ``robot`` itself if it is one of them (or ``robots`` is empty: one robot per role, named
    after it); else the robots of the role ``robot`` names (a fleet's ``<role>_<n>``); else none.
    """
    robots = list(robots)
    if robot in robots or not robots:
        return [robot]
    return [r for r in robots if role_name(r) == robot]


def parse_fleet(text: str, what: str = 'fleet') -> dict[str, int]:
    """Parse ``--fleet`` text, e.g. ``'navigation_robot=2,display_robot=1'``, into robots per role.

    Roles not named keep one robot (they are left out of the result).

    Raises
    ------
    ValueError
        Naming ``what`` and the part that is not ``<role>=<count>`` with an operational role and a
        count of at least 1.
    """
    fleet: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in str(text).split(','))):
        role, sep, count = part.partition('=')
        role = role.strip()
        if not sep or role not in OPERATIONAL_ROLES or not count.strip().isdigit() or int(count) < 1:
            raise ValueError(f"{what} part {part!r}: expected <role>=<count> with a role among "
                             f"{', '.join(OPERATIONAL_ROLES)} and a count of at least 1")
        fleet[role] = int(count)
    return fleet


def robot_name(robot: 'Role | RobotId', relative: str) -> str:
    """Return ``relative`` in ``robot``'s namespace, relative to the team namespace.

    E.g. ``robot_name('display_robot', 'execute_task') == 'display_robot/execute_task'``, which a
    node in the team namespace ``/floor2`` resolves to ``/floor2/display_robot/execute_task``.
    """
    name = robot.value if isinstance(robot, Role) else str(robot)
    return f'{name}/{relative}'


def validate_namespace(namespace: str, what: str = 'namespace') -> str:
    """Return ``namespace`` as an absolute ROS namespace (``'floor2'`` -> ``'/floor2'``, ``''`` -> ``'/'``).

    Raises
    ------
    ValueError
        If it is not a valid ROS namespace: tokens of letters, digits and underscores, not
        starting with a digit, separated by single slashes (the message names ``what``).
    """
    text = (namespace or '').strip()
    if text in ('', '/'):
        return '/'
    parts = text.strip('/').split('/')
    bad = [p for p in parts if not _NAME_PART.match(p)]
    if bad or '//' in text:
        raise ValueError(f"{what} {namespace!r} is not a valid ROS namespace: expected tokens of letters, "
                         f"digits and '_' (not starting with a digit) separated by '/', e.g. 'floor2' or "
                         f"'/hospital/floor2'")
    return '/' + '/'.join(parts)


def join(namespace: str, relative: str) -> str:
    """Return the absolute name of ``relative`` in ``namespace``, e.g. ``/floor2/team/events``."""
    namespace = validate_namespace(namespace)
    return ('' if namespace == '/' else namespace) + '/' + relative.lstrip('/')


def team_namespace_of(robot_namespace: str) -> str:
    """Return the team namespace of a robot whose own namespace is ``robot_namespace`` (its parent).

    ``'/floor2/navigation_robot'`` -> ``'/floor2'``; ``'/navigation_robot'`` -> ``'/'``.
    """
    namespace = validate_namespace(robot_namespace, 'robot namespace')
    parent = namespace.rsplit('/', 1)[0]
    return parent or '/'


def clock_remap(team_namespace: str) -> list[str]:
    """Return the ``--ros-args`` remap that gives a team its own clock topic (none for ``/``).

    rclpy's time source subscribes to ``/clock``; a simulated team in ``/floor2`` publishes and
    reads ``/floor2/clock`` instead, so that two simulated teams on one domain keep their own time.
    """
    namespace = validate_namespace(team_namespace, 'team namespace')
    return [] if namespace == '/' else ['-r', f'{CLOCK}:={join(namespace, "clock")}']


def team_name(node, relative: str) -> str:
    """Return team-wide name ``relative`` (``team/...``, ``ed/...``) as ``node`` must use it.

    A node in the team namespace uses the relative name as is; a robot node (namespace
    ``<team>/<robot>``) carries a ``team_namespace`` attribute and gets the absolute name in its
    team's namespace (:func:`join`).
    """
    team_ns = getattr(node, 'team_namespace', None)
    return relative if team_ns is None else join(team_ns, relative)
