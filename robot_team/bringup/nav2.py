"""Nav2 per robot namespace: parameters and the map for map_server, derived from the floor and the platform.

Parameters (:func:`nav2_params`) follow ``nav2_bringup/params/nav2_params.yaml`` (Jazzy and
Kilted) with our robots' figures: AMCL starts at the robot's dock, costmaps use the platform's
footprint radius, the controller and velocity smoother its speed limits, frames are REP-105's
unprefixed ``map``/``odom``/``base_link`` (each robot's TF tree is on its own ``tf`` topic) and
topics are relative, so that ``nav2_bringup``'s ``bringup_launch.py namespace:=<team>/<robot>``
(Nav2's multi-robot bringup) puts each stack in its robot's namespace. The navigators are named
after the actions the robots call (:data:`robot_team.contracts.names.NAVIGATE_TO_POSE`...), the planner and
controller plugins after Nav2's default IDs (:data:`robot_team.contracts.names.PLANNER_ID`,
:data:`robot_team.contracts.names.CONTROLLER_ID`).

The map (:func:`write_map`) is a ``map_server`` map (PGM + YAML, trinary mode): the floor's walls
(and closed doors) rasterized with Pillow at :data:`MAP_RESOLUTION`, on the same cell-aligned
extent as the embedded simulator's grid. :func:`load_map` reads a map the way ``nav2_map_server``
does (``map_io.cpp``: occupancy p = (255 - pixel) / 255, or pixel / 255 with ``negate``;
p > occupied_thresh -> 100, p < free_thresh -> 0, else -1; the image's first row is the map's
top, y max) and returns a ``nav_msgs/OccupancyGrid``-ordered array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import yaml
from PIL import Image, ImageDraw

from robot_team.contracts import names
from robot_team.bringup.gazebo import CMD_VEL_STAMPED, SCAN
from robot_team.bringup.platform import PLATFORM, BasePlatform
from robot_team.contracts.config import ConfigError
from robot_team.contracts.floor import Floor, Wall
from robot_team.contracts.names import RobotId

MAP_RESOLUTION = 0.1          # m per cell: the embedded simulator's grid resolution
OCCUPIED_THRESH = 0.65
FREE_THRESH = 0.25
FREE_PIXEL, OCCUPIED_PIXEL = 254, 0
INFLATION_MARGIN = 0.25       # m of inflation beyond the footprint radius
LIFECYCLE_NODES = names.NAV2_LIFECYCLE_NODES


def nav2_params(floor: Floor, robot: RobotId, platform: BasePlatform = PLATFORM) -> dict:
    """Return Nav2's parameters for ``robot`` (a YAML mapping: node name -> ``ros__parameters``).

    Raises
    ------
    FloorError
        If the floor has no dock for ``robot`` (AMCL's initial pose and the docking server's dock).
    """
    dock = floor.dock(robot).pose
    p = platform
    lidar = p.lidar
    inflation = round(p.footprint_radius + INFLATION_MARGIN, 3)
    frames = {'global_frame': names.MAP_FRAME, 'robot_base_frame': names.BASE_FRAME}

    # Fresh dicts per costmap (functions, not shared objects): a shared object is written as a YAML
    # anchor + alias, which rcl's params parser rejects ("Will not support aliasing").
    def scan_source() -> dict:
        return {'topic': SCAN, 'data_type': 'LaserScan', 'clearing': True, 'marking': True,
                'max_obstacle_height': 2.0, 'raytrace_max_range': min(lidar.max_range, 6.0),
                'raytrace_min_range': 0.0, 'obstacle_max_range': min(lidar.max_range, 5.5),
                'obstacle_min_range': 0.0}

    def inflation_layer() -> dict:
        return {'plugin': 'nav2_costmap_2d::InflationLayer', 'cost_scaling_factor': 3.0,
                'inflation_radius': inflation}
    # Every server that publishes velocity says which type (Jazzy's default is Twist, Kilted's
    # TwistStamped); the bridge carries the same type (gazebo.CMD_VEL_TYPE).
    stamped = {'enable_stamped_cmd_vel': CMD_VEL_STAMPED}
    error_codes = ['compute_path', 'follow_path', 'smoother', 'spin', 'backup', 'drive_on_heading',
                   'wait', 'nav_to_pose', 'nav_thru_poses', 'route', 'dock_robot', 'undock_robot',
                   'assisted_teleop']

    def node(params: dict) -> dict:
        return {'ros__parameters': params}

    return {
        'amcl': node({
            'base_frame_id': names.BASE_FRAME, 'global_frame_id': names.MAP_FRAME, 'odom_frame_id': names.ODOM_FRAME,
            'scan_topic': SCAN, 'map_topic': names.MAP, 'robot_model_type': 'nav2_amcl::DifferentialMotionModel',
            'set_initial_pose': True,
            'initial_pose': {'x': dock.x, 'y': dock.y, 'z': 0.0, 'yaw': dock.yaw},
            'alpha1': 0.2, 'alpha2': 0.2, 'alpha3': 0.2, 'alpha4': 0.2, 'alpha5': 0.2,
            'laser_model_type': 'likelihood_field', 'laser_max_range': lidar.max_range,
            'laser_min_range': lidar.min_range, 'laser_likelihood_max_dist': 2.0, 'max_beams': 60,
            'min_particles': 500, 'max_particles': 2000, 'pf_err': 0.05, 'pf_z': 0.99,
            'resample_interval': 1, 'sigma_hit': 0.2, 'z_hit': 0.5, 'z_max': 0.05, 'z_rand': 0.5, 'z_short': 0.05,
            'lambda_short': 0.1, 'tf_broadcast': True, 'transform_tolerance': 1.0, 'update_min_a': 0.2,
            'update_min_d': 0.25, 'save_pose_rate': 0.5, 'recovery_alpha_fast': 0.0, 'recovery_alpha_slow': 0.0,
            'do_beamskip': False}),
        'map_server': node({'topic_name': names.MAP, 'frame_id': names.MAP_FRAME}),
        'bt_navigator': node({
            **frames, 'odom_topic': names.ODOM, 'bt_loop_duration': 10, 'default_server_timeout': 20,
            'wait_for_service_timeout': 1000,
            'navigators': [names.NAVIGATE_TO_POSE, names.NAVIGATE_THROUGH_POSES],
            names.NAVIGATE_TO_POSE: {'plugin': 'nav2_bt_navigator::NavigateToPoseNavigator'},
            names.NAVIGATE_THROUGH_POSES: {'plugin': 'nav2_bt_navigator::NavigateThroughPosesNavigator'},
            # Kilted reads error_code_name_prefixes and refuses to start when error_code_names is set
            # (bt_navigator declares every override); Jazzy ignores the prefixes and uses its default
            # error_code_names, compute_path_error_code and follow_path_error_code: what we would set.
            'error_code_name_prefixes': error_codes}),
        'controller_server': node({
            **stamped, 'controller_frequency': 20.0, 'costmap_update_timeout': 0.3, 'min_x_velocity_threshold': 0.001,
            'min_y_velocity_threshold': 0.5, 'min_theta_velocity_threshold': 0.001, 'failure_tolerance': 0.3,
            'odom_topic': names.ODOM,
            'progress_checker_plugins': ['progress_checker'], 'goal_checker_plugins': ['general_goal_checker'],
            'controller_plugins': [names.CONTROLLER_ID],
            'progress_checker': {'plugin': 'nav2_controller::SimpleProgressChecker',
                                 'required_movement_radius': 0.5, 'movement_time_allowance': 10.0},
            'general_goal_checker': {'plugin': 'nav2_controller::SimpleGoalChecker', 'stateful': True,
                                     'xy_goal_tolerance': 0.25, 'yaw_goal_tolerance': 0.25},
            names.CONTROLLER_ID: {
                'plugin': 'nav2_regulated_pure_pursuit_controller::RegulatedPurePursuitController',
                'desired_linear_vel': p.max_speed, 'lookahead_dist': 0.6, 'min_lookahead_dist': 0.3,
                'max_lookahead_dist': 0.9, 'lookahead_time': 1.5, 'rotate_to_heading_angular_vel': 1.0,
                'transform_tolerance': 0.1, 'use_velocity_scaled_lookahead_dist': False,
                'min_approach_linear_velocity': 0.05, 'approach_velocity_scaling_dist': 0.6,
                'use_collision_detection': True, 'max_allowed_time_to_collision_up_to_carrot': 1.0,
                'use_regulated_linear_velocity_scaling': True, 'use_cost_regulated_linear_velocity_scaling': False,
                'regulated_linear_scaling_min_radius': 0.9, 'regulated_linear_scaling_min_speed': 0.25,
                'use_rotate_to_heading': True, 'allow_reversing': False, 'rotate_to_heading_min_angle': 0.785,
                'max_angular_accel': p.max_yaw_accel}}),
        'local_costmap': {'local_costmap': node({
            'global_frame': names.ODOM_FRAME, 'robot_base_frame': names.BASE_FRAME, 'rolling_window': True,
            'width': 4, 'height': 4, 'resolution': 0.05, 'update_frequency': 5.0, 'publish_frequency': 2.0,
            'robot_radius': p.footprint_radius, 'always_send_full_costmap': True,
            'plugins': ['obstacle_layer', 'inflation_layer'],
            'obstacle_layer': {'plugin': 'nav2_costmap_2d::ObstacleLayer', 'enabled': True,
                               'observation_sources': SCAN, SCAN: scan_source()},
            'inflation_layer': inflation_layer()})},
        'global_costmap': {'global_costmap': node({
            **frames, 'update_frequency': 1.0, 'publish_frequency': 1.0, 'resolution': MAP_RESOLUTION,
            'robot_radius': p.footprint_radius, 'track_unknown_space': True, 'always_send_full_costmap': True,
            'plugins': ['static_layer', 'obstacle_layer', 'inflation_layer'],
            'static_layer': {'plugin': 'nav2_costmap_2d::StaticLayer', 'map_topic': names.MAP,
                             'map_subscribe_transient_local': True},
            'obstacle_layer': {'plugin': 'nav2_costmap_2d::ObstacleLayer', 'enabled': True,
                               'observation_sources': SCAN, SCAN: scan_source()},
            'inflation_layer': inflation_layer()})},
        'planner_server': node({
            'expected_planner_frequency': 20.0, 'costmap_update_timeout': 1.0,
            'planner_plugins': [names.PLANNER_ID],
            names.PLANNER_ID: {'plugin': 'nav2_navfn_planner::NavfnPlanner', 'tolerance': 0.5,
                               'use_astar': False, 'allow_unknown': False}}),
        'smoother_server': node({
            'smoother_plugins': ['simple_smoother'],
            'simple_smoother': {'plugin': 'nav2_smoother::SimpleSmoother', 'tolerance': 1.0e-10, 'max_its': 1000,
                                'do_refinement': True}}),
        'behavior_server': node({
            'local_costmap_topic': 'local_costmap/costmap_raw', 'global_costmap_topic': 'global_costmap/costmap_raw',
            'local_footprint_topic': 'local_costmap/published_footprint',
            'global_footprint_topic': 'global_costmap/published_footprint', 'cycle_frequency': 10.0, **stamped,
            'behavior_plugins': ['spin', 'backup', 'drive_on_heading', 'assisted_teleop', 'wait'],
            'spin': {'plugin': 'nav2_behaviors::Spin'}, 'backup': {'plugin': 'nav2_behaviors::BackUp'},
            'drive_on_heading': {'plugin': 'nav2_behaviors::DriveOnHeading'},
            'wait': {'plugin': 'nav2_behaviors::Wait'}, 'assisted_teleop': {'plugin': 'nav2_behaviors::AssistedTeleop'},
            'local_frame': names.ODOM_FRAME, 'global_frame': names.MAP_FRAME, 'robot_base_frame': names.BASE_FRAME,
            'transform_tolerance': 0.1, 'simulate_ahead_time': 2.0, 'max_rotational_vel': 1.0,
            'min_rotational_vel': 0.4, 'rotational_acc_lim': p.max_yaw_accel}),
        'waypoint_follower': node({
            'loop_rate': 20, 'stop_on_failure': False, 'waypoint_task_executor_plugin': 'wait_at_waypoint',
            'wait_at_waypoint': {'plugin': 'nav2_waypoint_follower::WaitAtWaypoint', 'enabled': True,
                                 'waypoint_pause_duration': 200}}),
        'velocity_smoother': node({
            **stamped, 'smoothing_frequency': 20.0, 'scale_velocities': False, 'feedback': 'OPEN_LOOP',
            'max_velocity': [p.max_speed, 0.0, p.max_yaw_rate], 'min_velocity': [-p.max_speed, 0.0, -p.max_yaw_rate],
            'max_accel': [p.max_accel, 0.0, p.max_yaw_accel], 'max_decel': [-p.max_accel, 0.0, -p.max_yaw_accel],
            'odom_topic': names.ODOM, 'odom_duration': 0.1, 'deadband_velocity': [0.0, 0.0, 0.0],
            'velocity_timeout': 1.0}),
        'collision_monitor': node({
            **stamped, 'base_frame_id': names.BASE_FRAME, 'odom_frame_id': names.ODOM_FRAME,
            'cmd_vel_in_topic': 'cmd_vel_smoothed', 'cmd_vel_out_topic': 'cmd_vel',
            'state_topic': 'collision_monitor_state', 'transform_tolerance': 0.2, 'source_timeout': 1.0,
            'base_shift_correction': True, 'stop_pub_timeout': 2.0, 'polygons': ['FootprintApproach'],
            'FootprintApproach': {'type': 'polygon', 'action_type': 'approach',
                                  'footprint_topic': 'local_costmap/published_footprint',
                                  'time_before_collision': 1.2, 'simulation_time_step': 0.1, 'min_points': 6,
                                  'visualize': False, 'enabled': True},
            'observation_sources': [SCAN],
            # min_height/max_height are pointcloud sources' parameters only.
            SCAN: {'type': 'scan', 'topic': SCAN, 'enabled': True}}),
        'docking_server': node({
            **stamped, 'controller_frequency': 50.0, 'initial_perception_timeout': 5.0, 'wait_charge_timeout': 5.0,
            'dock_approach_timeout': 30.0, 'undock_linear_tolerance': 0.05, 'undock_angular_tolerance': 0.1,
            'max_retries': 3, 'base_frame': names.BASE_FRAME, 'fixed_frame': names.ODOM_FRAME,
            'dock_prestaging_tolerance': 0.5, 'dock_plugins': ['simple_charging_dock'],
            'simple_charging_dock': {'plugin': 'opennav_docking::SimpleChargingDock', 'docking_threshold': 0.05,
                                     'staging_x_offset': -0.7, 'use_external_detection_pose': False,
                                     'use_battery_status': False, 'use_stall_detection': False},
            # The floor description's dock of this robot, as a docking_server dock instance.
            'docks': ['home_dock'],
            'home_dock': {'type': 'simple_charging_dock', 'frame': names.MAP_FRAME,
                          'pose': [dock.x, dock.y, dock.yaw]},
            'controller': {'k_phi': 3.0, 'k_delta': 2.0, 'v_linear_min': 0.15, 'v_linear_max': 0.15,
                           'use_collision_detection': True, 'costmap_topic': 'local_costmap/costmap_raw',
                           'footprint_topic': 'local_costmap/published_footprint', 'transform_tolerance': 0.1,
                           'projection_time': 5.0, 'simulation_time_step': 0.1, 'dock_collision_threshold': 0.3}}),
        'route_server': node({'boundary_radius_to_achieve_node': 1.0, 'radius_to_achieve_node': 2.0,
                              'smooth_corners': True}),
    }


def params_yaml(floor: Floor, robot: RobotId, source: str = 'config/floors/ed_floor.yaml') -> str:
    """Return :func:`nav2_params` as the YAML text of ``config/nav2/<robot>.yaml``."""
    header = (f'# Nav2 parameters of {robot}, for nav2_bringup bringup_launch.py namespace:=<team>/{robot}.\n'
              f'# Generated by scripts/gen_gazebo_nav2.py from {source} and robot_team/bringup: do not edit.\n')
    return header + yaml.dump(nav2_params(floor, robot), Dumper=_NoAliasDumper, sort_keys=False,
                              default_flow_style=None, width=110)


class _NoAliasDumper(yaml.SafeDumper):
    """A SafeDumper that writes repeated objects in full: rcl's params parser rejects YAML aliases."""

    def ignore_aliases(self, data) -> bool:
        """Never write an anchor or an alias."""
        return True


# --- the map ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class MapInfo:
    """A map's geometry: ``width`` x ``height`` cells of ``resolution`` m, lower-left corner at ``origin`` (m)."""

    resolution: float
    origin: tuple[float, float]
    width: int
    height: int


def map_info(floor: Floor, resolution: float = MAP_RESOLUTION) -> MapInfo:
    """Return the cell-aligned extent of ``floor``'s walls: the origin on a multiple of ``resolution``.

    The embedded simulator's grid is built on the same rule, so that both share every cell.
    """
    xmin, ymin, xmax, ymax = floor.bounds
    ox = resolution * math.floor(round(xmin / resolution, 2))
    oy = resolution * math.floor(round(ymin / resolution, 2))
    width = int(math.ceil(round((xmax - ox) / resolution, 2)))
    height = int(math.ceil(round((ymax - oy) / resolution, 2)))
    return MapInfo(resolution, (round(ox, 9), round(oy, 9)), width, height)


def closed_door_panels(floor: Floor, closed_doors: Iterable[str]) -> list[Wall]:
    """Return a wall panel across the door gap of every room in ``closed_doors`` (0.4 m thick, 0.4 m wider).

    Raises
    ------
    FloorError
        If a room does not exist.
    """
    panels = []
    for name in closed_doors:
        room = floor.room(name)
        gx, gy = room.door_gap
        panels.append(Wall(f'{name}/closed_door', gx, gy, room.door.yaw + math.pi / 2, room.door_width + 0.4, 0.4))
    return panels


def rasterize(floor: Floor, closed_doors: Iterable[str] = (), resolution: float = MAP_RESOLUTION):
    """Return (image, info): the map as an 8-bit grey image (``PIL.Image``, first row = top) and its geometry.

    Walls and closed-door panels are filled polygons (occupied pixels ``0``), the rest free
    (``254``); a pixel is a wall if its centre lies inside a wall's footprint.
    """
    info = map_info(floor, resolution)
    image = Image.new('L', (info.width, info.height), FREE_PIXEL)
    draw = ImageDraw.Draw(image)
    # Pillow fills every pixel that a polygon overlaps (pixel (c, r) spans [c, c+1) x [r, r+1) in
    # image coordinates). A wall shrunk by just under half a cell on every side overlaps exactly
    # the cells whose centres lie in the wall (a wall thinner than a cell keeps a line of cells).
    shrink = 0.499 * resolution
    for wall in [*floor.walls, *closed_door_panels(floor, closed_doors)]:
        inner = Wall(wall.name, wall.x, wall.y, wall.yaw, max(wall.sx - 2 * shrink, 1e-3 * resolution),
                     max(wall.sy - 2 * shrink, 1e-3 * resolution))
        corners = inner.corners()
        px = (corners[:, 0] - info.origin[0]) / resolution
        py = info.height - (corners[:, 1] - info.origin[1]) / resolution   # row 0 is the top (y max)
        draw.polygon([(float(x), float(y)) for x, y in zip(px, py)], fill=OCCUPIED_PIXEL)
    return image, info


def map_yaml(image_name: str, info: MapInfo) -> dict:
    """Return the map_server YAML of a map image (trinary mode, not negated)."""
    return {'image': image_name, 'mode': 'trinary', 'resolution': info.resolution,
            'origin': [info.origin[0], info.origin[1], 0.0], 'negate': 0,
            'occupied_thresh': OCCUPIED_THRESH, 'free_thresh': FREE_THRESH}


def write_map(floor: Floor, yaml_path: str | Path, closed_doors: Iterable[str] = (),
              resolution: float = MAP_RESOLUTION) -> Path:
    """Write ``<name>.pgm`` (binary PGM) and ``yaml_path`` (map_server YAML) for ``floor``; return the YAML path."""
    yaml_path = Path(yaml_path)
    image, info = rasterize(floor, closed_doors, resolution)
    pgm = yaml_path.with_suffix('.pgm')
    header = f'P5\n# {floor.name}: generated by robot_team.bringup.nav2 from the floor description\n' \
             f'{info.width} {info.height}\n255\n'
    pgm.write_bytes(header.encode('ascii') + image.tobytes())
    text = yaml.safe_dump(map_yaml(pgm.name, info), sort_keys=False, default_flow_style=None)
    yaml_path.write_text(f'# map_server map of {floor.name}: generated from the floor description, do not edit.\n'
                         + text, encoding='utf-8')
    return yaml_path


def load_map(yaml_path: str | Path) -> tuple[np.ndarray, MapInfo]:
    """Read a map_server map as nav2_map_server does; return (data, info).

    ``data`` has shape (height, width), int8, row 0 at the bottom (``nav_msgs/OccupancyGrid``
    order): 100 occupied, 0 free, -1 unknown (trinary mode).

    Raises
    ------
    ConfigError
        If the YAML or the image cannot be read, a key is missing, or the mode is not
        ``trinary``/``scale``/``raw``; the message names the file.
    """
    yaml_path = Path(yaml_path)
    try:
        spec = yaml.safe_load(yaml_path.read_text(encoding='utf-8'))
        image_path = yaml_path.parent / spec['image']
        resolution = float(spec['resolution'])
        origin = (float(spec['origin'][0]), float(spec['origin'][1]))
        negate = int(spec.get('negate', 0))
        occupied, free = float(spec['occupied_thresh']), float(spec['free_thresh'])
        mode = spec.get('mode', 'trinary')
        with Image.open(image_path) as image:
            pixels = np.asarray(image.convert('L'), dtype=float)
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f'map file {yaml_path}: cannot be read as a map_server map ({exc!r})') from exc
    if mode not in ('trinary', 'scale', 'raw'):
        raise ConfigError(f"map file {yaml_path}: mode {mode!r}: expected 'trinary', 'scale' or 'raw'")
    p = pixels / 255.0 if negate else (255.0 - pixels) / 255.0
    data = np.full(p.shape, -1, dtype=np.int8)
    data[p > occupied] = 100
    data[p < free] = 0
    data = data[::-1]     # image rows top-down -> grid rows bottom-up
    return data, MapInfo(resolution, origin, data.shape[1], data.shape[0])


def compare_to_grid(data: np.ndarray, info: MapInfo, grid_data: np.ndarray, grid_origin, grid_resolution: float,
                    walls: Iterable[Wall], band_cells: float = 0.5) -> dict:
    """Compare a map with the embedded simulator's grid cell by cell.

    The tolerance: a cell may differ only where its centre lies within ``band_cells`` cells of
    a wall's edge (rasterizers may decide those either way); everywhere else both must agree.

    Returns
    -------
    dict
        ``same_geometry`` (bool), ``cells``, ``mismatches`` (total), ``mismatches_outside_band``,
        ``first_outside`` (up to 5 (row, col, map value, grid value) tuples).
    """
    same = (data.shape == grid_data.shape and abs(info.resolution - grid_resolution) < 1e-9
            and np.allclose(info.origin, grid_origin, atol=1e-6))
    result = {'same_geometry': bool(same), 'cells': int(data.size), 'mismatches': -1,
              'mismatches_outside_band': -1, 'first_outside': []}
    if not same:
        return result
    differ = (data != grid_data)
    rows, cols = np.nonzero(differ)
    band = np.zeros_like(differ)
    if len(rows):
        xs = info.origin[0] + (cols + 0.5) * info.resolution
        ys = info.origin[1] + (rows + 0.5) * info.resolution
        margin = band_cells * info.resolution
        near = np.zeros(len(rows), dtype=bool)
        for wall in walls:
            c, s = math.cos(wall.yaw), math.sin(wall.yaw)
            u = np.abs(c * (xs - wall.x) + s * (ys - wall.y))
            v = np.abs(-s * (xs - wall.x) + c * (ys - wall.y))
            inside_outer = (u <= wall.sx / 2 + margin) & (v <= wall.sy / 2 + margin)
            outside_inner = (u >= wall.sx / 2 - margin) | (v >= wall.sy / 2 - margin)
            near |= inside_outer & outside_inner
        band[rows[near], cols[near]] = True
    outside = differ & ~band
    result.update(mismatches=int(differ.sum()), mismatches_outside_band=int(outside.sum()),
                  first_outside=[(int(r), int(c), int(data[r, c]), int(grid_data[r, c]))
                                 for r, c in np.argwhere(outside)[:5]])
    return result
