"""The team's server: manager, supervisor, recorder (and the scripted operator for unattended runs).

Usage (on the server, ROS 2 install)::

    ros2 launch robot_team team.launch.py scenario:=onboarding out_dir:=/srv/ed_runs/today
    ros2 launch robot_team team.launch.py scenario:='' staff:=/srv/ed/staff.sqlite fhir_port:=8089 operator:=none

Arguments: ``scenario`` ('': none, a deployment: patients from the FHIR gateway or
``ed/patient_arrivals``, recorded until stopped with a report per case as it closes),
``floor``/``staff`` (the floor description; the staff directory, a YAML seed or a SQLite
directory used in place; '' the scenario's), ``brain``, ``kb``, ``out_dir``, ``team_namespace``, ``use_sim_time``
(true when a simulator elsewhere publishes the clock), ``operator`` (scripted: the scenario's
operator script answers escalations; none: humans answer from rqt or ``robot-team resolve``),
``end_with_episode`` (true: stop with report.json at the episode's end; false: record until
interrupted), ``fleet`` (robots per role beyond one, e.g. ``navigation_robot=2``: start each with
``robot.launch.py robot:=navigation_robot_1``...), ``fhir_port``/``fhir_host`` (the FHIR
gateway: the hospital's Encounter notifications in; 0: none), ``discovery_range``. The manager, supervisor
and operator respawn when they die (0.5 s later, at most 3 times; the recorder does not: it holds
the record), with the team's Fast DDS profile unless ``FASTDDS_DEFAULT_PROFILES_FILE`` is set.
Checked in ``robot_team.bringup.plan.plan_team``.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

ARGUMENTS = (
    ('scenario', 'onboarding', "Scenario name (config/scenarios) or YAML path; '': none, a deployment (patients "
                               'from the FHIR gateway or ed/patient_arrivals, recorded until stopped).', None),
    ('floor', '', "Floor description (config/floors name or path; '': the scenario's, else the ED floor).", None),
    ('staff', '', "Staff directory: YAML seed, or SQLite directory used in place ('': the scenario's).", None),
    ('brain', 'protocol', "The manager's brain.", ('protocol', 'openai', 'local')),
    ('kb', 'true', 'LLM brains: knowledge base.', ('true', 'false')),
    ('out_dir', '/tmp/robot_team_run', 'Run folder: report.json, events, staff.sqlite.', None),
    ('team_namespace', '/', "The team's namespace.", None),
    ('use_sim_time', 'false', 'true when a simulator publishes the clock.', ('true', 'false')),
    ('operator', 'scripted', 'scripted (scenario operator script) or none (humans: rqt, CLI).',
     ('scripted', 'none')),
    ('end_with_episode', 'true', "Stop at the episode's end with report.json.", ('true', 'false')),
    ('fleet', '', "Robots per role beyond one, e.g. 'navigation_robot=2' (default: the scenario's).", None),
    ('fhir_port', '0', 'FHIR gateway port: Encounter notifications in (0: none; docs/deployment.md).', None),
    ('fhir_host', '127.0.0.1', 'FHIR gateway address (off loopback: the bearer token in ROBOT_TEAM_FHIR_TOKEN).',
     None),
    ('discovery_range', 'SUBNET', 'ROS_AUTOMATIC_DISCOVERY_RANGE (SUBNET: the team talks to its robots).', None),
)


def _team(context, *args, **kwargs):
    from robot_team.bringup.launch_actions import plan_actions
    from robot_team.bringup.plan import plan_team

    def arg(name):
        return LaunchConfiguration(name).perform(context)
    return plan_actions(plan_team(
        scenario=arg('scenario'), brain=arg('brain'), kb=arg('kb'), out_dir=arg('out_dir'),
        team_namespace=arg('team_namespace'), use_sim_time=arg('use_sim_time'), operator=arg('operator'),
        end_with_episode=arg('end_with_episode'), fleet=arg('fleet'), fhir_port=arg('fhir_port'),
        fhir_host=arg('fhir_host'), floor=arg('floor'), staff=arg('staff')))


def generate_launch_description():
    """Return the launch description of the team's server."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=text,
                                      **({'choices': list(choices)} if choices else {}))
                for name, default, text, choices in ARGUMENTS]
    return LaunchDescription([
        *declared,
        SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', LaunchConfiguration('discovery_range')),
        OpaqueFunction(function=_team),
    ])
