"""Gazebo and Nav2 files: SDFormat checked by libsdformat, generated files current, map = embedded grid, names.

What a real counterpart checks here: Debian's libsdformat 12 loads every SDFormat file (compiled
checker, test/sdformat_check.cc); Pillow reads the PGM map; the map is read with map_server's
rules and compared cell by cell with the embedded simulator's grid; every Nav2 params file loads
through rcl's params parser (rclpy.init --params-file, in a child process); every Nav2 parameter
is one that navigation2's jazzy and kilted servers declare (test/data/nav2_declared_params.json,
extracted from their sources by scripts/nav2_declared_params.py); the bridge's cmd_vel type is
what the configured Nav2 publishes on each distribution. Expected ROS names come from
robot_team.contracts.names (and the bringup modules' relative names), never from a second list.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_team.contracts import names
from robot_team.bringup import files, gazebo, nav2
from robot_team.bringup.plan import IncludeSpec, plan_floor
from robot_team.bringup.platform import DISPLAY_ROBOT, MOBILE_ROBOTS, PLATFORM
from robot_team.contracts.floor import FloorError, load_floor

ROOT = Path(__file__).resolve().parent.parent
FLOOR = load_floor(ROOT / 'config' / 'floors' / 'ed_floor.yaml')
SDF_FILES = [ROOT / files.world_path(FLOOR.name)] + [ROOT / files.model_path(r) for r in MOBILE_ROBOTS]


# --- SDFormat, with the real parser ---------------------------------------------------------

@pytest.fixture(scope='module')
def sdformat(tmp_path_factory):
    """Build test/sdformat_check.cc against libsdformat 12 and return a function: files -> {path: summary}."""
    if shutil.which('pkg-config') is None or shutil.which('g++') is None:
        pytest.skip('pkg-config or g++ missing: cannot build the libsdformat checker (scripts/setup.sh --dev '
                    'installs libsdformat-dev where it may use apt)')
    flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'sdformat12'], capture_output=True, text=True)
    if flags.returncode != 0:
        pytest.skip('libsdformat 12 is not installed (apt: libsdformat-dev sdformat-sdf; scripts/setup.sh --dev '
                    'installs it when run as root or with password-less sudo)')
    exe = tmp_path_factory.mktemp('sdformat') / 'sdformat_check'
    build = subprocess.run(['g++', '-O1', '-o', str(exe), str(ROOT / 'test' / 'sdformat_check.cc'),
                            *flags.stdout.split()], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]

    def check(paths):
        out = subprocess.run([str(exe), *map(str, paths)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return {Path(d['file']): d for d in map(json.loads, out.stdout.splitlines())}
    return check


def test_every_sdformat_file_loads_without_errors(sdformat):
    results = sdformat(SDF_FILES)
    for path in SDF_FILES:
        assert results[path]['errors'] == [], f'{path}: {results[path]["errors"]}'
        assert results[path]['strict_errors'] == [], f'{path} (warnings as errors): {results[path]["strict_errors"]}'


def test_world_declares_the_systems_gz_sim_needs(sdformat):
    world = sdformat([SDF_FILES[0]])[SDF_FILES[0]]['worlds'][0]
    assert world['name'] == FLOOR.name
    plugins = {(p['filename'], p['name']) for p in world['plugins']}
    assert ('gz-sim-sensors-system', 'gz::sim::systems::Sensors') in plugins
    assert {(f, n) for f, n, _ in gazebo.WORLD_SYSTEMS} == plugins
    # Geometry only: robots are spawned at their docks, not part of the world.
    assert not any(m['name'] in MOBILE_ROBOTS for m in world['models'])


def test_each_robot_model_has_its_drive_and_lidar(sdformat):
    results = sdformat(SDF_FILES[1:])
    for robot in MOBILE_ROBOTS:
        (model,) = results[ROOT / files.model_path(robot)]['models']
        assert model['name'] == robot and not model['static']
        plugins = {(p['filename'], p['name']) for p in model['plugins']}
        assert gazebo.DIFF_DRIVE in plugins and gazebo.JOINT_STATE_PUBLISHER in plugins
        lidars = [s for link in model['links'] for s in link['sensors'] if s['type'] == gazebo.LIDAR_TYPE]
        assert [s['topic'] for s in lidars] == [gazebo.gz_topic(robot, gazebo.SCAN)]
        wheels = [j for j in model['joints'] if j['type'] == 'revolute']
        assert {j['name'] for j in wheels} == {'left_wheel_joint', 'right_wheel_joint'}
        has_screen = any(link['name'] == 'screen' for link in model['links'])
        assert has_screen == (robot == DISPLAY_ROBOT)


def test_a_fleets_robot_gets_its_own_model_bridge_and_nav2_parameters(sdformat, tmp_path):
    """A fleet's robot (``<role>_<n>``): its role's body under its own name, topics and dock (libsdformat loads it)."""
    for robot in ('navigation_robot_2', 'display_robot_2'):
        written = files.write_robot(FLOOR, robot, tmp_path, 'config/floors/ed_floor.yaml')
        model_file = tmp_path / files.model_path(robot)
        (model,) = sdformat([model_file])[model_file]['models']
        assert model['name'] == robot
        lidars = [s for link in model['links'] for s in link['sensors'] if s['type'] == gazebo.LIDAR_TYPE]
        assert [s['topic'] for s in lidars] == [gazebo.gz_topic(robot, gazebo.SCAN)]
        assert any(link['name'] == 'screen' for link in model['links']) == robot.startswith(DISPLAY_ROBOT)
        bridge = yaml.safe_load((tmp_path / files.bridge_path(robot)).read_text())
        assert {e['gz_topic_name'] for e in bridge} == {e.gz_topic_name for e in gazebo.robot_bridge(robot)}
        assert all(e['gz_topic_name'].startswith(f'/model/{robot}/') for e in bridge)
        amcl = yaml.safe_load((tmp_path / files.nav2_params_path(robot)).read_text())['amcl']['ros__parameters']
        dock = FLOOR.dock(robot).pose
        assert (amcl['initial_pose']['x'], amcl['initial_pose']['y']) == pytest.approx((dock.x, dock.y))
        assert len(written) == 4


def test_model_topics_and_frames_match_the_bridge():
    """The plugins' Gazebo topics are the ones the bridge reads; frames are REP-105's."""
    import xml.etree.ElementTree as ET
    for robot in MOBILE_ROBOTS:
        root = ET.parse(ROOT / files.model_path(robot)).getroot()
        drive = root.find(f".//plugin[@name='{gazebo.DIFF_DRIVE[1]}']")
        bridged = {e.gz_topic_name for e in gazebo.robot_bridge(robot)}
        assert {drive.findtext('topic'), drive.findtext('odom_topic'), drive.findtext('tf_topic'),
                root.findtext('.//sensor/topic'),
                root.find(f".//plugin[@name='{gazebo.JOINT_STATE_PUBLISHER[1]}']").findtext('topic')} == bridged
        assert (drive.findtext('frame_id'), drive.findtext('child_frame_id')) == (names.ODOM_FRAME, names.BASE_FRAME)
        assert float(drive.findtext('max_linear_velocity')) == PLATFORM.max_speed


# --- generated files are current --------------------------------------------------------------

def test_generated_files_are_up_to_date(tmp_path):
    written = files.write_all(FLOOR, tmp_path, 'config/floors/ed_floor.yaml')
    stale = [str(p.relative_to(tmp_path)) for p in written
             if (ROOT / p.relative_to(tmp_path)).read_bytes() != p.read_bytes()]
    assert not stale, f'stale generated files {stale}: run python scripts/gen_gazebo_nav2.py and commit them'


def test_a_robot_with_no_dock_is_named(tmp_path):
    from dataclasses import replace
    floor = replace(FLOOR, docks={k: v for k, v in FLOOR.docks.items() if k != 'display_robot'})
    with pytest.raises(FloorError, match="no dock for robot 'display_robot'"):
        files.write_all(floor, tmp_path, 'x')


# --- the map: map_server's reading of it = the embedded simulator's grid -----------------------

@pytest.mark.parametrize('closed', [(), ('ER-12', 'Supply room')])
def test_map_round_trip_equals_the_embedded_grid(tmp_path, closed):
    """Tolerance: cells within half a cell of a wall edge may differ; for this floor none does."""
    from robot_team.sim.planner import OccupancyGrid
    yaml_path = nav2.write_map(FLOOR, tmp_path / 'map.yaml', closed_doors=closed)
    data, info = nav2.load_map(yaml_path)
    grid = OccupancyGrid.from_world(FLOOR, nav2.MAP_RESOLUTION, PLATFORM.footprint_radius, closed_doors=closed)
    walls = FLOOR.walls + nav2.closed_door_panels(FLOOR, closed)
    result = nav2.compare_to_grid(data, info, grid.data, grid.origin, grid.resolution, walls)
    assert result['same_geometry'], (info, grid.data.shape, grid.origin)
    assert result['mismatches_outside_band'] == 0, result
    assert result['mismatches'] == 0, result
    assert (data == 100).sum() == (grid.data == 100).sum() > 1000
    assert not (data == -1).any()


def test_committed_map_is_read_by_pillow_as_the_floor():
    from PIL import Image
    with Image.open(ROOT / 'maps' / f'{FLOOR.name}.pgm') as image:
        assert image.format == 'PPM' and image.mode == 'L'
        pixels = np.asarray(image)
    info = nav2.map_info(FLOOR)
    assert pixels.shape == (info.height, info.width)
    # A wall cell (the south outer wall at y = 0) and a free cell (the main corridor) where expected.
    col = int((20.0 - info.origin[0]) / info.resolution)
    assert pixels[info.height - 1 - int((0.0 - info.origin[1]) / info.resolution), col] == nav2.OCCUPIED_PIXEL
    assert pixels[info.height - 1 - int((7.5 - info.origin[1]) / info.resolution), col] == nav2.FREE_PIXEL


def test_map_disagreeing_with_the_world_is_found(tmp_path):
    from robot_team.sim.planner import OccupancyGrid
    data, info = nav2.load_map(nav2.write_map(FLOOR, tmp_path / 'map.yaml', closed_doors=['ER-3']))
    grid = OccupancyGrid.from_world(FLOOR, nav2.MAP_RESOLUTION, PLATFORM.footprint_radius)
    result = nav2.compare_to_grid(data, info, grid.data, grid.origin, grid.resolution, FLOOR.walls)
    assert result['mismatches_outside_band'] > 0 and result['first_outside']


def test_bad_map_file_is_named(tmp_path):
    (tmp_path / 'm.yaml').write_text('image: missing.pgm\nresolution: 0.1\norigin: [0, 0, 0]\n'
                                     'occupied_thresh: 0.65\nfree_thresh: 0.25\n')
    with pytest.raises(Exception, match='m.yaml'):
        nav2.load_map(tmp_path / 'm.yaml')


# --- bridge and Nav2 YAML name what the nodes use ------------------------------------------------

def _yaml(relative):
    return yaml.safe_load((ROOT / relative).read_text())


def test_bridge_yaml_names_the_robot_topics():
    for robot in MOBILE_ROBOTS:
        entries = _yaml(files.bridge_path(robot))
        by_ros = {e['ros_topic_name']: e for e in entries}
        # What the team and Nav2 read in the robot's namespace: odom (hospital systems, Nav2),
        # cmd_vel (Nav2's output), scan (AMCL, costmaps), tf (AMCL's odom -> base_link).
        assert set(by_ros) == {names.ODOM, gazebo.CMD_VEL, gazebo.SCAN, gazebo.TF, gazebo.JOINT_STATES}
        assert all(not name.startswith('/') for name in by_ros), 'ROS names must be relative'
        assert by_ros[names.ODOM]['ros_type_name'] == 'nav_msgs/msg/Odometry'
        assert by_ros[gazebo.CMD_VEL]['direction'] == 'ROS_TO_GZ'
        assert all(e['gz_topic_name'].startswith(f'/model/{robot}/') for e in entries)
    (clock,) = _yaml(files.bridge_path('clock'))
    assert (clock['ros_topic_name'], clock['ros_type_name']) == ('clock', 'rosgraph_msgs/msg/Clock')
    assert names.join('/', clock['ros_topic_name']) == names.CLOCK


def _walk(tree, path=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _walk(value, path + (key,))
    else:
        yield path, tree


def test_nav2_params_name_the_nodes_frames_and_topics_the_robots_use():
    for robot in MOBILE_ROBOTS:
        params = _yaml(files.nav2_params_path(robot))
        nodes = {k: v['ros__parameters'] for k, v in params.items() if 'ros__parameters' in v}
        nodes.update({k: v[k]['ros__parameters'] for k, v in params.items() if k.endswith('_costmap')})
        # Every lifecycle node BasicNavigator waits on, and the servers of the robots' actions.
        assert set(names.NAV2_LIFECYCLE_NODES) <= set(nodes)
        bt = nodes['bt_navigator']
        assert bt['navigators'] == [names.NAVIGATE_TO_POSE, names.NAVIGATE_THROUGH_POSES]
        assert nodes['planner_server']['planner_plugins'] == [names.PLANNER_ID]
        assert nodes['controller_server']['controller_plugins'] == [names.CONTROLLER_ID]
        # Frames: REP-105, unprefixed (each robot's own tf topic).
        frames = {value for path, value in _walk(params) if path[-1].endswith(('frame', 'frame_id'))}
        assert frames == {names.MAP_FRAME, names.ODOM_FRAME, names.BASE_FRAME}
        # Topics: relative, and the ones the bridge and map_server provide.
        keys = ('topic', 'scan_topic', 'odom_topic', 'map_topic', 'topic_name')
        topics = {value for path, value in _walk(params) if path[-1] in keys}
        assert topics == {gazebo.SCAN, names.ODOM, names.MAP}
        # AMCL starts at the dock; costmaps are sized to the platform.
        dock = FLOOR.dock(robot).pose
        assert nodes['amcl']['initial_pose'] == {'x': dock.x, 'y': dock.y, 'z': 0.0, 'yaw': dock.yaw}
        assert nodes['local_costmap']['robot_radius'] == nodes['global_costmap']['robot_radius'] \
            == PLATFORM.footprint_radius
        assert nodes['global_costmap']['inflation_layer']['inflation_radius'] > PLATFORM.footprint_radius
        assert nodes['velocity_smoother']['max_velocity'][0] == PLATFORM.max_speed


def test_platform_matches_the_embedded_simulator():
    """Robots are as big and as fast in Gazebo/Nav2 as in the embedded simulator."""
    import inspect

    from robot_team.sim.motion import MotionEngine
    defaults = {k: v.default for k, v in inspect.signature(MotionEngine).parameters.items()}
    assert defaults['robot_radius'] == PLATFORM.footprint_radius
    assert defaults['max_speed'] == PLATFORM.max_speed
    assert defaults['resolution'] == nav2.MAP_RESOLUTION


# --- as the real programs read them: rcl's params parser, Nav2's declared parameters ---------------

NAV2_PARAMS_FILES = [ROOT / files.nav2_params_path(r) for r in MOBILE_ROBOTS]
"""Every params file the project hands to a ROS node (``--params-file``; launch_ros writes the
NodeSpec dicts itself)."""
DECLARED = json.loads((ROOT / 'test' / 'data' / 'nav2_declared_params.json').read_text())
DISTRIBUTIONS = ('jazzy', 'kilted')
VELOCITY_SERVERS = ('controller_server', 'velocity_smoother', 'collision_monitor', 'behavior_server',
                    'docking_server')
"""The Nav2 servers that publish velocity (nav2_util::TwistPublisher in navigation2's sources)."""
DISTRIBUTION_SPECIFIC = {
    # Kilted reads it; Jazzy ignores it (and uses its default error_code_names, the same codes).
    # Kilted's bt_navigator refuses to start when error_code_names is set, so that one is never set.
    ('bt_navigator', 'error_code_name_prefixes'): 'kilted',
}
"""The allow-list: parameters that only one distribution declares, each with the one that reads it."""

RCL_LOAD = 'import sys, rclpy; rclpy.init(args=["--ros-args", "--params-file", sys.argv[1]]); rclpy.shutdown()'


def _rcl_load(path, cwd):
    pytest.importorskip('rclpy')
    return subprocess.run([sys.executable, '-c', RCL_LOAD, str(path)], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


@pytest.mark.parametrize('path', NAV2_PARAMS_FILES, ids=lambda p: p.name)
def test_every_params_file_loads_through_rcl(path, tmp_path):
    """rcl's own params parser (what every ROS node runs on --params-file) accepts the file."""
    result = _rcl_load(path, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


def test_rcl_rejects_yaml_aliases(tmp_path):
    """The check above bites: rcl refuses what PyYAML writes for a shared object."""
    shared = {'x': 1.0}
    bad = tmp_path / 'aliased.yaml'
    bad.write_text(yaml.safe_dump({'a': {'ros__parameters': {'p': shared, 'q': shared}}}))
    assert '*id001' in bad.read_text()
    result = _rcl_load(bad, tmp_path)
    assert result.returncode != 0 and 'aliasing' in result.stderr


def _nodes(params):
    """Return node name -> its parameters, flattened to dotted names (costmaps are nested one level)."""
    out = {}
    for name, body in params.items():
        body = body if 'ros__parameters' in body else body[name]
        out[name] = dict(_walk(body['ros__parameters']))
    return {node: {'.'.join(path): value for path, value in flat.items()} for node, flat in out.items()}


def _declares(patterns, name):
    """Return whether ``name`` matches one of the table's patterns ('*': one or more dotted segments)."""
    return any(re.fullmatch('.+'.join(re.escape(part) for part in pattern.split('*')), name) for pattern in patterns)


def test_declared_table_is_from_navigation2_jazzy_and_kilted():
    assert set(DECLARED['distributions']) == set(DISTRIBUTIONS)
    for table in DECLARED['distributions'].values():
        assert len(table['commit']) == 40 and table['nodes']
    # The extraction sees what it should: a renamed parameter and Kilted's new one.
    kilted, jazzy = (DECLARED['distributions'][d]['nodes'] for d in ('kilted', 'jazzy'))
    assert 'controller.simulation_time_step' in kilted['docking_server']['declared']
    assert 'error_code_name_prefixes' in kilted['bt_navigator']['declared']
    assert 'error_code_names' in jazzy['bt_navigator']['declared']
    assert 'error_code_names' not in kilted['bt_navigator']['declared']


@pytest.mark.parametrize('robot', MOBILE_ROBOTS)
def test_every_nav2_parameter_is_declared_by_jazzy_and_kilted(robot):
    nodes = _nodes(_yaml(files.nav2_params_path(robot)))
    missing = []
    for node, params in nodes.items():
        for name in params:
            readers = [d for d in DISTRIBUTIONS
                       if _declares(DECLARED['distributions'][d]['nodes'][node]['declared'], name)]
            expected = [DISTRIBUTION_SPECIFIC[node, name]] if (node, name) in DISTRIBUTION_SPECIFIC \
                else list(DISTRIBUTIONS)
            if readers != expected:
                missing.append(f'{node}: {name} (declared by {readers or "none"}, expected {expected})')
    assert not missing, '\n'.join(missing)
    # Kilted's bt_navigator throws when it is set.
    assert 'error_code_names' not in nodes['bt_navigator']


@pytest.mark.parametrize('distribution', DISTRIBUTIONS)
def test_bridge_cmd_vel_type_is_what_the_configured_nav2_publishes(distribution):
    """Every velocity server publishes one type (explicit, or the distribution's default); the bridge carries it."""
    default = DECLARED['distributions'][distribution]['enable_stamped_cmd_vel_default']
    for robot in MOBILE_ROBOTS:
        nodes = _nodes(_yaml(files.nav2_params_path(robot)))
        stamped = {nodes[server].get('enable_stamped_cmd_vel', default) for server in VELOCITY_SERVERS}
        assert len(stamped) == 1, f'{robot} on {distribution}: servers disagree on enable_stamped_cmd_vel'
        assert all('enable_stamped_cmd_vel' in nodes[server] for server in VELOCITY_SERVERS), \
            'set it explicitly: Jazzy and Kilted default to different types'
        # The velocity smoother and collision monitor chain ends on the robot's cmd_vel.
        assert nodes['collision_monitor']['cmd_vel_out_topic'] == gazebo.CMD_VEL
        expected = 'geometry_msgs/msg/TwistStamped' if stamped.pop() else 'geometry_msgs/msg/Twist'
        (entry,) = [e for e in _yaml(files.bridge_path(robot)) if e['ros_topic_name'] == gazebo.CMD_VEL]
        assert (entry['ros_type_name'], entry['gz_type_name'], entry['direction']) == \
            (expected, 'gz.msgs.Twist', 'ROS_TO_GZ')


def test_collision_monitor_heights_only_on_pointcloud_sources():
    for robot in MOBILE_ROBOTS:
        monitor = _yaml(files.nav2_params_path(robot))['collision_monitor']['ros__parameters']
        for source in monitor['observation_sources']:
            if monitor[source]['type'] != 'pointcloud':
                assert not {'min_height', 'max_height'} & set(monitor[source]), (robot, source)


@pytest.mark.parametrize('gz_gui, expected', [('true', ['-r']), ('false', ['-r', '-s', '--headless-rendering'])])
def test_gz_sim_command_line_for_each_gz_gui(tmp_path, gz_gui, expected):
    """Without the GUI gz sim renders offscreen (the gpu_lidar needs it where there is no display)."""
    plan = plan_floor(sim='gazebo', gz_gui=gz_gui, out_dir=str(tmp_path))
    (sim,) = [s for s in plan.first if isinstance(s, IncludeSpec) and s.package == 'ros_gz_sim']
    gz_args = dict(sim.arguments)['gz_args'].split()
    assert gz_args[:-1] == expected and gz_args[-1].endswith(files.world_path(FLOOR.name))
