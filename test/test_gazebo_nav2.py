"""Gazebo and Nav2 files: SDFormat checked by libsdformat, generated files current, map = embedded grid, names.

What a real counterpart checks here: Debian's libsdformat 12 loads every SDFormat file (compiled
checker, test/sdformat_check.cc); Pillow reads the PGM map; the map is read with map_server's
rules and compared cell by cell with the embedded simulator's grid. Expected ROS names come from
robot_team.names (and the bringup modules' relative names), never from a second list.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_team import names
from robot_team.bringup import files, gazebo, nav2
from robot_team.bringup.platform import DISPLAY_ROBOT, MOBILE_ROBOTS, PLATFORM
from robot_team.floor import FloorError, load_floor

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
