"""One robot on its own computer (a physical robot): its node in its namespace, optionally its Nav2.

Usage (on the robot, ROS 2 install)::

    ros2 launch robot_team robot.launch.py robot:=navigation_robot team_namespace:=/ nav2:=true

Arguments: ``robot`` (navigation_robot | info_collection_robot | display_robot, or a fleet's
``<role>_<n>``, e.g. navigation_robot_2: its role's node under that name), ``team_namespace``
(the team's namespace; the robot runs in ``<team_namespace>/<robot>``), ``brain``, ``kb``,
``floor`` (floor description), ``staff_db`` (info collection and display robots: the staff
directory, SQLite), ``use_sim_time`` (false on a real robot), ``nav2`` (true: nav2_bringup's
bringup_launch.py in the robot's namespace), ``map`` and ``params_file`` (Nav2; default the
generated ones), ``pose_source`` (auto | tf | amcl_pose), ``discovery_range`` (SUBNET on a
robot; see docs/deployment.md). The robot's node respawns when it dies (0.5 s later, at most 3
times) and gets the team's Fast DDS profile unless ``FASTDDS_DEFAULT_PROFILES_FILE`` is set.
Checked in ``robot_team.bringup.plan.plan_robot``.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

ARGUMENTS = (
    ('robot', 'navigation_robot', 'The robot this computer is: navigation_robot, info_collection_robot, '
                                  'display_robot, or a fleet robot <role>_<n> (e.g. navigation_robot_2).', None),
    ('team_namespace', '/', "The team's namespace; the robot runs in <team_namespace>/<robot>.", None),
    ('brain', 'protocol', "The robot's brain.", ('protocol', 'openai', 'local')),
    ('kb', 'true', 'LLM brains: knowledge base.', ('true', 'false')),
    ('floor', 'ed_floor.yaml', 'Floor description (config/floors name or path).', None),
    ('staff_db', '', 'Staff directory (SQLite) for the info collection and display robots.', None),
    ('use_sim_time', 'false', 'true only when a simulator publishes /clock.', ('true', 'false')),
    ('nav2', 'false', "Start the robot's Nav2 (nav2_bringup) in its namespace.", ('true', 'false')),
    ('map', '', 'Nav2: map_server YAML (default: maps/<floor>.yaml).', None),
    ('params_file', '', 'Nav2: parameters (default: config/nav2/<robot>.yaml).', None),
    ('pose_source', 'auto', 'Navigation robot: auto, tf or amcl_pose.', ('auto', 'tf', 'amcl_pose')),
    ('discovery_range', 'SUBNET', 'ROS_AUTOMATIC_DISCOVERY_RANGE (SUBNET: the robot talks to the team).', None),
)


def _robot(context, *args, **kwargs):
    from robot_team.bringup.launch_actions import plan_actions
    from robot_team.bringup.plan import plan_robot

    def arg(name):
        return LaunchConfiguration(name).perform(context)
    return plan_actions(plan_robot(
        robot=arg('robot'), team_namespace=arg('team_namespace'), brain=arg('brain'), kb=arg('kb'),
        floor=arg('floor'), staff_db=arg('staff_db'), use_sim_time=arg('use_sim_time'), nav2=arg('nav2'),
        map_yaml=arg('map'), params_file=arg('params_file'), pose_source=arg('pose_source')))


def generate_launch_description():
    """Return the launch description of one robot."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=text,
                                      **({'choices': list(choices)} if choices else {}))
                for name, default, text, choices in ARGUMENTS]
    return LaunchDescription([
        *declared,
        SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', LaunchConfiguration('discovery_range')),
        OpaqueFunction(function=_robot),
    ])
