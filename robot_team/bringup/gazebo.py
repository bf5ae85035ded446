"""Gazebo (gz sim Harmonic and newer): the world's systems, the robot models and the ros_gz_bridge configuration.

Robots are spawned at their docks (floor description) with ``ros_gz_sim create -name <robot>``;
each model's Gazebo topics are scoped by its name (``/model/<robot>/...``). One ros_gz_bridge
per robot runs in the robot's ROS namespace and maps them to the robot's relative ROS names
(:mod:`robot_team.contracts.names`), as a Nav2 robot has them::

    ROS (relative, in <team>/<robot>)   direction   Gazebo
    cmd_vel      geometry_msgs/TwistStamped ROS -> GZ /model/<robot>/cmd_vel      (DiffDrive; gz.msgs.Twist)
    odom         nav_msgs/Odometry       GZ -> ROS   /model/<robot>/odometry      (DiffDrive)
    tf           tf2_msgs/TFMessage      GZ -> ROS   /model/<robot>/tf            (odom -> base_link)
    scan         sensor_msgs/LaserScan   GZ -> ROS   /model/<robot>/scan          (gpu_lidar, frame base_scan)
    joint_states sensor_msgs/JointState  GZ -> ROS   /model/<robot>/joint_state   (JointStatePublisher)

and one bridge in the team namespace carries Gazebo's ``/clock``. Frames are unprefixed
(``odom``, ``base_link``, ``base_scan``): each robot's TF tree lives on its own ``tf`` topic,
as in Nav2's multi-robot bringup (``/tf:=tf``). Figures come from
:mod:`robot_team.bringup.platform`. Plugin file and class names are gz-sim's
(``gz-sim-<name>-system``, ``gz::sim::systems::<Name>``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robot_team.contracts import names
from robot_team.contracts.names import RobotId, role_name
from robot_team.bringup.platform import DISPLAY_ROBOT, PLATFORM, SCREEN, BasePlatform

SCAN = 'scan'                 # sensor_msgs/LaserScan, relative to the robot's namespace
CMD_VEL = 'cmd_vel'           # CMD_VEL_TYPE, relative to the robot's namespace (Nav2's output)
CMD_VEL_STAMPED = True
"""Nav2 publishes ``cmd_vel`` as ``geometry_msgs/msg/TwistStamped``: every Nav2 server that publishes
velocity gets ``enable_stamped_cmd_vel`` set to this (Kilted's default; Jazzy's is false), so that
one configuration publishes the same type on both, and the bridge carries that type."""
CMD_VEL_TYPE = 'geometry_msgs/msg/TwistStamped' if CMD_VEL_STAMPED else 'geometry_msgs/msg/Twist'
JOINT_STATES = 'joint_states'  # sensor_msgs/JointState
TF = 'tf'                     # tf2_msgs/TFMessage: the robot's own TF tree (/tf remapped to tf)
TF_STATIC = 'tf_static'
CLOCK = 'clock'               # the team's clock topic, relative to the team namespace (/clock in '/')
SCAN_FRAME = 'base_scan'

WORLD_SYSTEMS = (
    ('gz-sim-physics-system', 'gz::sim::systems::Physics', ''),
    ('gz-sim-user-commands-system', 'gz::sim::systems::UserCommands', ''),
    ('gz-sim-scene-broadcaster-system', 'gz::sim::systems::SceneBroadcaster', ''),
    ('gz-sim-sensors-system', 'gz::sim::systems::Sensors', '<render_engine>ogre2</render_engine>'),
)
"""(filename, name, inner XML) of the systems the world declares: physics, user commands (spawn,
move, remove entities: what ``ros_gz_sim create`` calls), scene broadcaster (the GUI's view) and
sensors (renders the gpu_lidar)."""

DIFF_DRIVE = ('gz-sim-diff-drive-system', 'gz::sim::systems::DiffDrive')
JOINT_STATE_PUBLISHER = ('gz-sim-joint-state-publisher-system', 'gz::sim::systems::JointStatePublisher')
LIDAR_TYPE = 'gpu_lidar'


def gz_topic(robot: RobotId, name: str) -> str:
    """Return the Gazebo topic ``/model/<robot>/<name>`` (scoped by the model's name)."""
    return f'/model/{robot}/{name}'


def _f(value: float) -> str:
    text = f'{value:.6f}'.rstrip('0').rstrip('.')
    return '0' if text in ('-0', '') else text


def world_systems_xml(indent: str = '    ') -> str:
    """Return the world's ``<physics>`` and system ``<plugin>`` elements (SDFormat), one per line."""
    lines = [f'{indent}<physics name="1ms" type="ignored">',
             f'{indent}  <max_step_size>0.001</max_step_size>',
             f'{indent}  <real_time_factor>1.0</real_time_factor>',
             f'{indent}</physics>']
    for filename, name, inner in WORLD_SYSTEMS:
        lines.append(f'{indent}<plugin filename="{filename}" name="{name}">{inner}</plugin>')
    return '\n'.join(lines) + '\n'


def _inertia_cylinder(mass: float, radius: float, length: float) -> str:
    ixx = mass * (3 * radius ** 2 + length ** 2) / 12
    izz = mass * radius ** 2 / 2
    return (f'<inertial><mass>{_f(mass)}</mass><inertia><ixx>{_f(ixx)}</ixx><ixy>0</ixy><ixz>0</ixz>'
            f'<iyy>{_f(ixx)}</iyy><iyz>0</iyz><izz>{_f(izz)}</izz></inertia></inertial>')


def _material(r: float, g: float, b: float) -> str:
    return f'<material><ambient>{r} {g} {b} 1</ambient><diffuse>{r} {g} {b} 1</diffuse></material>'


def _wheel(side: str, y: float, p: BasePlatform) -> str:
    geometry = f'<geometry><cylinder><radius>{_f(p.wheel_radius)}</radius><length>{_f(p.wheel_width)}</length>' \
               f'</cylinder></geometry>'
    return f'''    <link name="{side}_wheel">
      <pose>0 {_f(y)} {_f(p.wheel_radius)} {_f(-math.pi / 2)} 0 0</pose>
      {_inertia_cylinder(1.0, p.wheel_radius, p.wheel_width)}
      <collision name="collision">{geometry}
        <surface><friction><ode><mu>1.0</mu><mu2>1.0</mu2></ode></friction></surface>
      </collision>
      <visual name="visual">{geometry}{_material(0.1, 0.1, 0.1)}</visual>
    </link>
    <joint name="{side}_wheel_joint" type="revolute">
      <parent>base_link</parent>
      <child>{side}_wheel</child>
      <axis><xyz>0 0 1</xyz><limit><lower>-1e16</lower><upper>1e16</upper></limit></axis>
    </joint>
'''


def robot_model_sdf(robot: RobotId, platform: BasePlatform = PLATFORM) -> str:
    """Return the SDFormat 1.9 model of ``robot``: a differential-drive base with a 2-D lidar.

    A display robot (of a fleet too) also carries a screen on a mast. The model's name is ``robot``; its
    plugins publish on :func:`gz_topic` topics and its frames are ``odom``, ``base_link`` and
    ``base_scan`` (see the module docstring).
    """
    p = platform
    lidar = p.lidar
    chassis_z = p.chassis_clearance + p.chassis_height / 2
    chassis = f'<geometry><cylinder><radius>{_f(p.chassis_radius)}</radius><length>{_f(p.chassis_height)}' \
              f'</length></cylinder></geometry>'
    caster = f'<geometry><sphere><radius>{_f(p.caster_radius)}</radius></sphere></geometry>'
    no_friction = '<surface><friction><ode><mu>0</mu><mu2>0</mu2></ode></friction></surface>'
    caster_x = p.chassis_radius - p.caster_radius
    screen = ''
    if role_name(robot) == DISPLAY_ROBOT:
        mast_top = SCREEN.elevation - SCREEN.height / 2
        mast_len = mast_top - (p.chassis_clearance + p.chassis_height)
        mast = f'<geometry><box><size>0.04 0.04 {_f(mast_len)}</size></box></geometry>'
        panel = f'<geometry><box><size>0.03 {_f(SCREEN.width)} {_f(SCREEN.height)}</size></box></geometry>'
        screen = f'''    <link name="screen">
      <pose>0 0 {_f(p.chassis_clearance + p.chassis_height)} 0 0 0</pose>
      <inertial><mass>1.5</mass><inertia><ixx>0.05</ixx><ixy>0</ixy><ixz>0</ixz><iyy>0.05</iyy><iyz>0</iyz>
        <izz>0.02</izz></inertia></inertial>
      <visual name="mast"><pose>0 0 {_f(mast_len / 2)} 0 0 0</pose>{mast}{_material(0.3, 0.3, 0.3)}</visual>
      <visual name="panel"><pose>0.02 0 {_f(mast_len + SCREEN.height / 2)} 0 0 0</pose>{panel}
        <material><ambient>0.1 0.3 0.8 1</ambient><diffuse>0.1 0.3 0.8 1</diffuse><emissive>0.1 0.3 0.8 1</emissive>
        </material>
      </visual>
      <collision name="panel"><pose>0.02 0 {_f(mast_len + SCREEN.height / 2)} 0 0 0</pose>{panel}</collision>
    </link>
    <joint name="screen_joint" type="fixed"><parent>base_link</parent><child>screen</child></joint>
'''
    body_color = (0.2, 0.5, 0.8) if role_name(robot) == DISPLAY_ROBOT else (0.9, 0.9, 0.95)
    return f'''<?xml version="1.0" ?>
<!-- Generated by scripts/gen_gazebo_nav2.py from robot_team/bringup (platform, names): do not edit. -->
<sdf version="1.9">
  <model name="{robot}">
    <link name="base_link">
      <inertial>
        <pose>0 0 {_f(chassis_z)} 0 0 0</pose>
        <mass>{_f(p.mass)}</mass>
        <inertia><ixx>{_f(p.mass * (3 * p.chassis_radius ** 2 + p.chassis_height ** 2) / 12)}</ixx><ixy>0</ixy>
          <ixz>0</ixz><iyy>{_f(p.mass * (3 * p.chassis_radius ** 2 + p.chassis_height ** 2) / 12)}</iyy><iyz>0</iyz>
          <izz>{_f(p.mass * p.chassis_radius ** 2 / 2)}</izz></inertia>
      </inertial>
      <collision name="chassis"><pose>0 0 {_f(chassis_z)} 0 0 0</pose>{chassis}</collision>
      <visual name="chassis"><pose>0 0 {_f(chassis_z)} 0 0 0</pose>{chassis}{_material(*body_color)}</visual>
      <collision name="front_caster"><pose>{_f(caster_x)} 0 {_f(p.caster_radius)} 0 0 0</pose>{caster}{no_friction}
      </collision>
      <collision name="rear_caster"><pose>{_f(-caster_x)} 0 {_f(p.caster_radius)} 0 0 0</pose>{caster}{no_friction}
      </collision>
      <sensor name="lidar" type="{LIDAR_TYPE}">
        <pose>0 0 {_f(lidar.height)} 0 0 0</pose>
        <always_on>true</always_on>
        <update_rate>{_f(lidar.rate_hz)}</update_rate>
        <topic>{gz_topic(robot, SCAN)}</topic>
        <gz_frame_id>{SCAN_FRAME}</gz_frame_id>
        <lidar>
          <scan><horizontal><samples>{lidar.samples}</samples><resolution>1</resolution>
            <min_angle>{_f(-math.pi)}</min_angle><max_angle>{_f(math.pi - 2 * math.pi / lidar.samples)}</max_angle>
          </horizontal></scan>
          <range><min>{_f(lidar.min_range)}</min><max>{_f(lidar.max_range)}</max><resolution>0.01</resolution></range>
          <noise><type>gaussian</type><mean>0</mean><stddev>{_f(lidar.noise_stddev)}</stddev></noise>
        </lidar>
      </sensor>
    </link>
{_wheel('left', p.wheel_separation / 2, p)}{_wheel('right', -p.wheel_separation / 2, p)}{screen}\
    <plugin filename="{DIFF_DRIVE[0]}" name="{DIFF_DRIVE[1]}">
      <left_joint>left_wheel_joint</left_joint>
      <right_joint>right_wheel_joint</right_joint>
      <wheel_separation>{_f(p.wheel_separation)}</wheel_separation>
      <wheel_radius>{_f(p.wheel_radius)}</wheel_radius>
      <max_linear_velocity>{_f(p.max_speed)}</max_linear_velocity>
      <max_angular_velocity>{_f(p.max_yaw_rate)}</max_angular_velocity>
      <max_linear_acceleration>{_f(p.max_accel)}</max_linear_acceleration>
      <max_angular_acceleration>{_f(p.max_yaw_accel)}</max_angular_acceleration>
      <topic>{gz_topic(robot, CMD_VEL)}</topic>
      <odom_topic>{gz_topic(robot, 'odometry')}</odom_topic>
      <tf_topic>{gz_topic(robot, TF)}</tf_topic>
      <frame_id>{names.ODOM_FRAME}</frame_id>
      <child_frame_id>{names.BASE_FRAME}</child_frame_id>
      <odom_publish_frequency>30</odom_publish_frequency>
    </plugin>
    <plugin filename="{JOINT_STATE_PUBLISHER[0]}" name="{JOINT_STATE_PUBLISHER[1]}">
      <topic>{gz_topic(robot, 'joint_state')}</topic>
    </plugin>
  </model>
</sdf>
'''


def model_config(robot: RobotId) -> str:
    """Return the ``model.config`` (Gazebo model manifest) of ``robot``'s model."""
    display = role_name(robot) == DISPLAY_ROBOT
    kind = 'display robot (base, lidar, screen)' if display else 'mobile base with a 2-D lidar'
    return f'''<?xml version="1.0" ?>
<!-- Generated by scripts/gen_gazebo_nav2.py: do not edit. -->
<model>
  <name>{robot}</name>
  <version>1.0</version>
  <sdf version="1.9">model.sdf</sdf>
  <author><name>robot_team maintainers</name><email>maintainers@robot-team.dev</email></author>
  <description>ED team {kind}: differential drive, odometry, gpu_lidar.</description>
</model>
'''


@dataclass(frozen=True)
class BridgeEntry:
    """One ros_gz_bridge topic (the fields of its YAML ``config_file`` entries)."""

    ros_topic_name: str
    gz_topic_name: str
    ros_type_name: str
    gz_type_name: str
    direction: str      # GZ_TO_ROS | ROS_TO_GZ

    def as_dict(self) -> dict:
        """Return the entry as ros_gz_bridge reads it from YAML."""
        return {'ros_topic_name': self.ros_topic_name, 'gz_topic_name': self.gz_topic_name,
                'ros_type_name': self.ros_type_name, 'gz_type_name': self.gz_type_name,
                'direction': self.direction, 'lazy': False}


def robot_bridge(robot: RobotId) -> list[BridgeEntry]:
    """Return the bridge entries of ``robot`` (ROS names relative to its namespace; see the module docstring)."""
    return [
        BridgeEntry(CMD_VEL, gz_topic(robot, CMD_VEL), CMD_VEL_TYPE, 'gz.msgs.Twist', 'ROS_TO_GZ'),
        BridgeEntry(names.ODOM, gz_topic(robot, 'odometry'), 'nav_msgs/msg/Odometry', 'gz.msgs.Odometry',
                    'GZ_TO_ROS'),
        BridgeEntry(TF, gz_topic(robot, TF), 'tf2_msgs/msg/TFMessage', 'gz.msgs.Pose_V', 'GZ_TO_ROS'),
        BridgeEntry(SCAN, gz_topic(robot, SCAN), 'sensor_msgs/msg/LaserScan', 'gz.msgs.LaserScan', 'GZ_TO_ROS'),
        BridgeEntry(JOINT_STATES, gz_topic(robot, 'joint_state'), 'sensor_msgs/msg/JointState', 'gz.msgs.Model',
                    'GZ_TO_ROS'),
    ]


def clock_bridge() -> list[BridgeEntry]:
    """Return the bridge entry of Gazebo's clock (``clock`` in the team namespace: ``/clock`` in ``/``)."""
    return [BridgeEntry(CLOCK, '/clock', 'rosgraph_msgs/msg/Clock', 'gz.msgs.Clock', 'GZ_TO_ROS')]
