"""The ED floor and its whole team: on the embedded simulator or on Gazebo + Nav2 per robot.

Usage (a ROS 2 install after ``colcon build``; or the embedded setup with ``launch`` added,
``AMENT_PREFIX_PATH=$PWD/.venv``)::

    ros2 launch robot_team ed_floor.launch.py sim:=embedded scenario:=onboarding out_dir:=/tmp/ed_run
    ros2 launch robot_team ed_floor.launch.py sim:=gazebo brain:=openai kb:=false
    ros2 launch robot_team ed_floor.launch.py scenario:='' fhir_port:=8089   # a deployment's path

Arguments: ``sim`` (embedded | gazebo), ``brain`` (protocol | openai | local), ``kb`` (true |
false: LLM brains' knowledge base), ``scenario`` (name in config/scenarios or a YAML path; '':
none, patients from the FHIR gateway or ``ed/patient_arrivals``, recorded until stopped, see
docs/deployment.md), ``floor``/``staff`` (floor description; staff directory, YAML or SQLite),
``out_dir`` (run folder), ``real_time_factor`` (embedded simulator; default the scenario's, 5 for
LLM brains), ``clock`` (embedded simulator: wall | follow, see robot_team.contracts.clock_sync), ``gz_gui``
(true: Gazebo's GUI too), ``map`` (map_server YAML for Nav2; default the scenario's, generated from
the floor description into out_dir), ``fleet`` (robots per role beyond one, e.g.
``navigation_robot=2``: each its own node in its own namespace from its own dock),
``discovery_range`` (ROS_AUTOMATIC_DISCOVERY_RANGE, LOCALHOST unless you deploy across hosts).

The team starts first; the simulator (sim:=embedded) or the hospital's systems (sim:=gazebo)
once every team node has announced itself (``team_ready``). The launch ends by itself when the
episode ends, with ``out_dir/report.json`` (as ``robot-team run``), ``events.jsonl``,
``events.mcap``. Bad input (an argument out of its set, a missing world/model/params file, a
robot without a dock, a map that disagrees with the world) stops it before anything starts.
The team's nodes and the hospital's systems respawn when they die (0.5 s later, at most 3 times;
not the simulator nor the recorder: they cannot resume), and every process gets the team's Fast
DDS profile (a dead node leaves the graph in ~3 s) unless ``FASTDDS_DEFAULT_PROFILES_FILE`` is set.
What starts is planned in ``robot_team.bringup.plan.plan_floor``.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

ARGUMENTS = (
    ('sim', 'embedded', 'Simulator: embedded (robot motion + hospital systems) or gazebo (gz sim + Nav2).',
     ('embedded', 'gazebo')),
    ('brain', 'protocol', "Robots' brain.", ('protocol', 'openai', 'local')),
    ('kb', 'true', "LLM brains: give each robot its knowledge base.", ('true', 'false')),
    ('scenario', 'onboarding', "Scenario name (config/scenarios) or YAML path; '': none, a deployment (patients "
                               'from the FHIR gateway or ed/patient_arrivals, recorded until stopped).', None),
    ('floor', '', "Floor description (config/floors name or path; '': the scenario's, else the ED floor).", None),
    ('staff', '', "Staff directory: YAML seed, or SQLite directory used in place ('': the scenario's).", None),
    ('out_dir', '/tmp/robot_team_run', 'Run folder: report.json, events.jsonl/.mcap, staff.sqlite.', None),
    ('real_time_factor', '', "Embedded simulator: sim s per wall s (default: the scenario's; clock:=follow: a "
                             'cap, default none).', None),
    ('clock', 'wall', 'Embedded simulator: wall (real_time_factor x wall time) or follow (as fast as every team '
                      'node keeps up).', ('wall', 'follow')),
    ('gz_gui', 'false', "Gazebo: also start the GUI.", ('true', 'false')),
    ('map', '', 'Gazebo: map_server YAML (default: generated from the floor for the scenario).', None),
    ('fleet', '', "Robots per role beyond one, e.g. 'navigation_robot=2' (default: the scenario's).", None),
    ('fhir_port', '0', 'FHIR gateway port: Encounter notifications in (0: none; docs/deployment.md).', None),
    ('fhir_host', '127.0.0.1', 'FHIR gateway address (off loopback: the bearer token in ROBOT_TEAM_FHIR_TOKEN).',
     None),
    ('discovery_range', 'LOCALHOST', 'ROS_AUTOMATIC_DISCOVERY_RANGE (SUBNET for multi-host).', None),
)


def _floor(context, *args, **kwargs):
    from robot_team.bringup.launch_actions import plan_actions
    from robot_team.bringup.plan import plan_floor

    def arg(name):
        return LaunchConfiguration(name).perform(context)
    plan = plan_floor(sim=arg('sim'), brain=arg('brain'), kb=arg('kb'), scenario=arg('scenario'),
                      out_dir=arg('out_dir'), real_time_factor=arg('real_time_factor'), gz_gui=arg('gz_gui'),
                      map_yaml=arg('map'), clock=arg('clock'), fleet=arg('fleet'), fhir_port=arg('fhir_port'),
                      fhir_host=arg('fhir_host'), floor=arg('floor'), staff=arg('staff'))
    return plan_actions(plan)


def generate_launch_description():
    """Return the launch description of the ED floor and its team."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=text,
                                      **({'choices': list(choices)} if choices else {}))
                for name, default, text, choices in ARGUMENTS]
    return LaunchDescription([
        *declared,
        SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', LaunchConfiguration('discovery_range')),
        OpaqueFunction(function=_floor),
    ])
