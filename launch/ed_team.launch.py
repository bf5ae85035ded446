"""Launch the ED onboarding team on the embedded simulator (the same graph as `robot-team run --processes`).

Usage (on a ROS 2 install, after `colcon build` and sourcing the workspace)::

    ros2 launch robot_team ed_team.launch.py scenario:=onboarding out_dir:=/tmp/ed_run

Arguments: ``scenario`` (name in config/scenarios or a YAML path), ``brain`` ('protocol'),
``real_time_factor`` (sim seconds per wall second, default: the scenario's), ``out_dir``
(staff directory, event record), ``discovery_range`` (ROS_AUTOMATIC_DISCOVERY_RANGE; LOCALHOST
unless you deploy across hosts). The embedded simulator is two nodes: ``hospital_systems`` (HCWs,
RTLS, paging, badge readers, displays; on sim time) starts with the team, ``motion_sim`` (the
Nav2/Gazebo stand-in and clock source) ``sim_delay_s`` later, so that sim time starts when every
node is up. ``team_recorder`` writes the record to out_dir on exit.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable, TimerAction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _team(context, *args, **kwargs):
    from pathlib import Path

    from robot_team.config import load_scenario
    from robot_team.names import HOSPITAL_SYSTEMS, MOTION_SIM
    from robot_team.runner import TEAM, _node_parameters, prepare

    scenario = load_scenario(LaunchConfiguration('scenario').perform(context))
    brain = LaunchConfiguration('brain').perform(context)
    out_dir = Path(LaunchConfiguration('out_dir').perform(context)).expanduser()
    paths = prepare(scenario, out_dir)
    executables = {'supervisor': 'supervisor', 'scripted_operator': 'scripted_operator', 'manager': 'manager'}
    actions = [Node(package='robot_team', executable='team_recorder', name='team_recorder', output='screen',
                    parameters=[{'use_sim_time': True, 'out_dir': str(out_dir)}])]
    for name in TEAM:
        actions.append(Node(package='robot_team', executable=executables.get(name, name), name=name,
                            output='screen', parameters=[_node_parameters(name, scenario, paths, brain)]))
    actions.append(Node(package='robot_team', executable=HOSPITAL_SYSTEMS, name=HOSPITAL_SYSTEMS, output='screen',
                        parameters=[{'scenario': paths['scenario'], 'use_sim_time': True}]))
    rtf = LaunchConfiguration('real_time_factor').perform(context)
    motion_params = {'scenario': paths['scenario']}
    if rtf:
        motion_params['real_time_factor'] = float(rtf)
    delay = float(LaunchConfiguration('sim_delay_s').perform(context))
    actions.append(TimerAction(period=delay, actions=[
        Node(package='robot_team', executable=MOTION_SIM, name=MOTION_SIM, output='screen',
             parameters=[motion_params])]))
    return actions


def generate_launch_description():
    """Return the launch description of the ED team on the embedded simulator."""
    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='onboarding', description='Scenario name or YAML path.'),
        DeclareLaunchArgument('brain', default_value='protocol', description="Robots' brain: 'protocol'."),
        DeclareLaunchArgument('real_time_factor', default_value='', description='Sim s per wall s.'),
        DeclareLaunchArgument('out_dir', default_value='/tmp/robot_team_run', description='Run folder.'),
        DeclareLaunchArgument('sim_delay_s', default_value='3.0',
                              description='Start motion_sim (the clock) after the team.'),
        DeclareLaunchArgument('discovery_range', default_value='LOCALHOST',
                              description='ROS_AUTOMATIC_DISCOVERY_RANGE (SUBNET for multi-host).'),
        SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', LaunchConfiguration('discovery_range')),
        OpaqueFunction(function=_team),
    ])
