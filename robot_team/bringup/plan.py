"""What each launch file starts, as plain data, checked before anything starts.

``launch/ed_floor.launch.py``, ``launch/robot.launch.py`` and ``launch/team.launch.py`` call
:func:`plan_floor`, :func:`plan_robot` and :func:`plan_team`, which validate every argument and
file and return a :class:`Plan`; :mod:`robot_team.bringup.launch_actions` turns it into
``launch``/``launch_ros`` actions. Bad input raises :class:`PlanError` naming the argument or
file and what was expected, before any process starts: an argument out of its set, a missing
world, model, bridge, params or map file, a robot without a dock, a map that disagrees with the
world.

The team's nodes (manager, supervisor, operator, robots) and the hospital's systems respawn when
they die, as ``robot-team run --processes`` restarts them (:mod:`robot_team.run.restarts`: the same
delay and the same most restarts), and every process of a launch gets the team's Fast DDS profile
(participant lease 3 s: a dead node leaves the graph within seconds) unless
``FASTDDS_DEFAULT_PROFILES_FILE`` is already set. What cannot resume is not respawned (see
:data:`NOT_RESPAWNED`).

Executables of the embedded simulator are named in one place (:data:`EMBEDDED_SIM`,
:data:`HOSPITAL_SYSTEMS`): robot motion (``motion_sim``, the Gazebo + Nav2 stand-in and clock
source) and the hospital's systems (``hospital_systems``), which also run beside Gazebo.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

from robot_team.contracts import names
from robot_team.bringup import files
from robot_team.bringup.gazebo import SCAN_FRAME, TF, TF_STATIC
from robot_team.bringup.nav2 import closed_door_panels, compare_to_grid, load_map, map_info, rasterize, write_map
from robot_team.bringup.platform import MOBILE_ROBOTS, PLATFORM
from robot_team.contracts.clock_sync import CLOCK_MODES
from robot_team.contracts.config import ConfigError, deployment_scenario, load_scenario, share_dir
from robot_team.contracts.names import RobotId
from robot_team.fhir.gateway import TOKEN_ENV, GatewayConfigError, check_binding
from robot_team.contracts.floor import Floor, Wall, load_floor
from robot_team.llm.lockstep import llm_clock_under
from robot_team.llm.settings import LLMSettings
from robot_team.nodes_plan import hospital_readers, node_parameters, prepare, team_nodes
from robot_team.run.restarts import (DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_DELAY_S, FASTDDS_PROFILES_VARIABLE,
                                     LIVENESS_PROFILE)
from robot_team.tools.localization import POSE_SOURCES

PACKAGE = 'robot_team'
SIM_CHOICES = ('embedded', 'gazebo')
BRAIN_CHOICES = ('protocol', 'openai', 'local')
BOOL_CHOICES = ('true', 'false')
OPERATOR_CHOICES = ('scripted', 'none')

EMBEDDED_SIM: tuple[str, ...] = (names.MOTION_SIM, names.HOSPITAL_SYSTEMS)
"""Executables (= node names) of the embedded simulator, started for ``sim:=embedded``: the
hospital's systems with the team (on sim time), robot motion (the clock source) once the team is up."""
HOSPITAL_SYSTEMS: tuple[str, ...] = (names.HOSPITAL_SYSTEMS,)
"""Executables of the hospital's systems (HCWs, RTLS, paging, badge readers, displays, arrivals),
started on sim time beside Gazebo and Nav2 for ``sim:=gazebo`` as beside ``motion_sim``."""

GAZEBO_PACKAGES = ('ros_gz_sim', 'ros_gz_bridge', 'nav2_bringup', 'tf2_ros')
"""ROS packages ``sim:=gazebo`` needs (exec_depend in package.xml)."""
NAV2_PACKAGES = ('nav2_bringup',)
NOT_RESPAWNED: dict[str, str] = {
    names.MOTION_SIM: 'the world and the clock source: started again it would begin sim time at 0 with every '
                      'robot back at its dock (Gazebo is not respawned either)',
    'team_ready': 'a one-shot gate: its exit (0) starts the simulator',
    'episode_recorder': 'its exit ends the launch with report.json, and it holds the record so far in memory: '
                        'a respawned one would start an empty record and overwrite it',
    names.RECORDER: 'it holds the record so far in memory and writes it at its exit: a respawned one would '
                    'overwrite events.jsonl with only what came after',
}
"""Our executables that never respawn, and why (what cannot resume its state)."""
RECORDER_RESTART_GRACE_S = 30.0
"""Wall seconds the episode recorder waits for a lost manager to come back (respawned) before it
ends the episode: the respawn delay plus a node's start-up on a loaded machine, with room."""
TF_REMAPS = (('/tf', TF), ('/tf_static', TF_STATIC))
"""Each robot's TF tree on its own topics, as in Nav2's multi-robot bringup."""


class PlanError(ConfigError):
    """A launch argument or file that cannot be used; the message names it and what was expected."""


@dataclass(frozen=True)
class NodeSpec:
    """A node to start: ``launch_ros.actions.Node`` arguments (``namespace`` '' = the node's default)."""

    package: str
    executable: str
    name: str
    namespace: str = ''
    parameters: tuple = ()        # dicts and parameter-file paths
    remappings: tuple = ()
    arguments: tuple = ()
    respawn: bool = False         # launch's respawn: started again when it exits (not at shutdown)
    respawn_delay: float = 0.0    # wall s before the respawn
    respawn_max_retries: int = -1  # the most respawns (-1: no limit, launch's default)


def respawning(spec: NodeSpec) -> NodeSpec:
    """Return ``spec`` respawned as ``robot-team run --processes`` restarts its nodes (delay, most restarts)."""
    return replace(spec, respawn=True, respawn_delay=DEFAULT_RESTART_DELAY_S,
                   respawn_max_retries=DEFAULT_MAX_RESTARTS)


@dataclass(frozen=True)
class IncludeSpec:
    """A launch file of another package to include: ``<share of package>/<path>`` with ``arguments``."""

    package: str
    path: str
    arguments: tuple = ()         # (name, value) pairs


@dataclass
class Plan:
    """Everything a launch file starts.

    ``first`` starts at once (Gazebo, bridges, Nav2, the team); ``after_team`` once
    ``team_ready`` exits 0 (the simulator or hospital systems); ``recorder`` ends the launch
    when it exits (None: the launch runs until interrupted). ``packages`` must be installed
    (checked by :func:`check_packages` in the launch file); ``environment`` is appended to
    (name -> path); ``environment_defaults`` are set only where the launch's environment lacks
    them (name -> value); ``paths`` are the files written or used (run folder, map...).
    """

    first: list = field(default_factory=list)
    after_team: list = field(default_factory=list)
    team_ready: NodeSpec | None = None
    recorder: NodeSpec | None = None
    packages: tuple = ()
    environment: dict = field(default_factory=dict)
    environment_defaults: dict = field(default_factory=dict)
    paths: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def nodes(self) -> list[NodeSpec]:
        """Every node of the plan."""
        extra = [n for n in (self.team_ready, self.recorder) if n is not None]
        return [n for n in [*self.first, *self.after_team, *extra] if isinstance(n, NodeSpec)]

    def includes(self) -> list[IncludeSpec]:
        """Every included launch file of the plan."""
        return [i for i in [*self.first, *self.after_team] if isinstance(i, IncludeSpec)]


def choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` (lower-cased, stripped) if it is one of ``choices``; else raise PlanError naming ``name``."""
    text = str(value).strip().lower()
    if text not in choices:
        raise PlanError(f"launch argument {name}:={value!r} is not valid: expected one of {', '.join(choices)}")
    return text


def flag(name: str, value: str) -> bool:
    """Return a ``true``/``false`` launch argument as a bool (PlanError otherwise)."""
    return choice(name, value, BOOL_CHOICES) == 'true'


def namespace(name: str, value: str) -> str:
    """Return the ROS namespace launch argument ``name`` gives (:func:`robot_team.contracts.names.validate_namespace`).

    Raises
    ------
    PlanError
        If ``value`` is not a valid namespace; the message names the argument.
    """
    try:
        return names.validate_namespace(value, f'launch argument {name}')
    except ValueError as exc:
        raise PlanError(str(exc)) from exc


def existing(path: str | Path, what: str) -> Path:
    """Return ``path`` if it is a file; else raise PlanError naming ``what`` and the path."""
    path = Path(path)
    if not path.is_file():
        raise PlanError(f'{what} {path} does not exist')
    return path


def check_packages(packages) -> None:
    """Raise PlanError naming every package of ``packages`` the ament index does not know."""
    missing = []
    for package in packages:
        try:
            get_package_share_directory(package)
        except (PackageNotFoundError, ValueError, OSError):
            missing.append(package)
    if missing:
        raise PlanError(f"ROS package(s) {', '.join(missing)} not found (AMENT_PREFIX_PATH): install them "
                        f"(rosdep install --from-paths src), or use sim:=embedded")


def _floor(path, robots=MOBILE_ROBOTS) -> Floor:
    floor = load_floor(path)
    for robot in robots:
        floor.dock(robot)        # FloorError: "no dock for robot '...'"
    return floor


def run_scenario(scenario: str, floor: str = '', staff: str = '', fleet: str = ''):
    """Return the scenario a launch runs: launch arguments ``scenario``, ``floor``, ``staff``, ``fleet``.

    ``scenario`` '' (or only spaces): no scenario, a deployment
    (:func:`robot_team.contracts.config.deployment_scenario`: no patient scheduled, arrivals from the FHIR
    gateway or ``ed/patient_arrivals``, recorded until stopped). ``floor`` (a floor description:
    name in ``config/floors`` or path) and ``staff`` (the staff directory: a YAML seed, or a
    SQLite directory used in place) replace the scenario's ('' keeps them; with no scenario, the
    shipped ED floor and staff). ``fleet`` as :func:`with_fleet`.

    Raises
    ------
    PlanError, ConfigError
        Unknown scenario, missing floor or staff file, bad fleet.
    """
    overrides = {key: str(value).strip() for key, value in (('floor', floor), ('staff_directory', staff))
                 if str(value or '').strip()}
    if not str(scenario or '').strip():
        loaded = deployment_scenario(overrides.get('floor', ''), overrides.get('staff_directory', ''))
    else:
        loaded = load_scenario(str(scenario).strip())
        if overrides:
            loaded = loaded.model_copy(update=overrides)
    for path, what in ((loaded.floor_path, 'floor'), (loaded.staff_path, 'staff')):
        if not path.exists():
            raise PlanError(f'launch argument {what}: {path} does not exist: expected a file (a name in the package\'s '
                            f"{'config/floors' if what == 'floor' else 'config'} folder, or a path)")
    return with_fleet(loaded, fleet)


def with_fleet(scenario, fleet: str):
    """Return ``scenario`` with the launch argument ``fleet`` (e.g. ``navigation_robot=2``; '' keeps its own).

    Raises
    ------
    PlanError
        If ``fleet`` is not ``<role>=<count>,...`` (:func:`robot_team.contracts.names.parse_fleet`).
    """
    if not str(fleet).strip():
        return scenario
    try:
        return scenario.model_copy(update={'fleet': names.parse_fleet(fleet, 'launch argument fleet')})
    except ValueError as exc:
        raise PlanError(str(exc)) from exc


def world_walls(world_file: Path) -> list[Wall]:
    """Return the wall boxes of an SDFormat world generated from a floor (static ``wall_*`` models).

    Raises
    ------
    PlanError
        If the file is not SDFormat XML or has no walls.
    """
    try:
        root = ET.parse(world_file).getroot()
    except (ET.ParseError, OSError) as exc:
        raise PlanError(f'world file {world_file}: not SDFormat XML ({exc})') from exc
    walls = []
    for model in root.iter('model'):
        size = model.findtext('./link/collision/geometry/box/size')
        if not model.get('name', '').startswith('wall_') or size is None:
            continue
        x, y, _, _, _, yaw = (float(v) for v in model.findtext('pose', '0 0 0 0 0 0').split())
        sx, sy, _ = (float(v) for v in size.split())
        walls.append(Wall(model.get('name'), x, y, yaw, sx, sy))
    if not walls:
        raise PlanError(f'world file {world_file}: no wall_* models (expected a world generated by '
                        'scripts/gen_ed_floor.py)')
    return walls


def check_map_against_world(map_yaml: Path, world_file: Path, floor: Floor, closed_doors=()) -> dict:
    """Check a map_server map against the world's walls (plus closed-door panels), cell by cell.

    Tolerance: cells within half a cell of a wall edge may differ (see
    :func:`robot_team.bringup.nav2.compare_to_grid`).

    Raises
    ------
    PlanError
        If the map cannot be read, covers another extent, or disagrees with the world elsewhere;
        the message names both files and the first disagreeing cells (map frame, m).
    """
    try:
        data, info = load_map(map_yaml)
    except ConfigError as exc:
        raise PlanError(str(exc)) from exc
    walls = world_walls(world_file) + closed_door_panels(floor, closed_doors)
    image, expected_info = rasterize(replace(floor, walls=walls, rooms=floor.rooms), (), info.resolution)
    expected = np.where(np.asarray(image)[::-1] < 128, 100, 0).astype(np.int8)
    result = compare_to_grid(data, info, expected, expected_info.origin, expected_info.resolution, walls)
    if not result['same_geometry']:
        raise PlanError(f'map {map_yaml} disagrees with world {world_file}: it covers {info.width}x{info.height} '
                        f'cells of {info.resolution} m from {info.origin}, the world {expected_info.width}x'
                        f'{expected_info.height} from {expected_info.origin}')
    if result['mismatches_outside_band']:
        cells = ', '.join(f'({info.origin[0] + (c + 0.5) * info.resolution:.2f}, '
                          f'{info.origin[1] + (r + 0.5) * info.resolution:.2f}) map {m} world {w}'
                          for r, c, m, w in result['first_outside'])
        raise PlanError(f"map {map_yaml} disagrees with world {world_file} in {result['mismatches_outside_band']} "
                        f'cells, e.g. {cells}: regenerate it (scripts/gen_gazebo_nav2.py) or pass the right map')
    return result


def _dds_profile(plan: Plan, share: Path) -> None:
    """Give every process of ``plan`` the team's Fast DDS profile unless FASTDDS_DEFAULT_PROFILES_FILE is set.

    Also ``PYTHONFAULTHANDLER=1`` unless set: a node that crashes natively logs its Python stacks.

    Raises
    ------
    PlanError
        If the share folder has no profile (``config/fastdds/team_liveness.xml``).
    """
    profile = existing(share / LIVENESS_PROFILE, 'Fast DDS profile')
    plan.environment_defaults[FASTDDS_PROFILES_VARIABLE] = str(profile)
    plan.paths['dds_profile'] = str(profile)
    # A native crash (SIGSEGV, SIGABRT...) of a node leaves its Python stacks in the node's log.
    plan.environment_defaults['PYTHONFAULTHANDLER'] = '1'


def _brain_options(brain: str, kb: bool) -> dict:
    return {'kb': kb} if brain in ('openai', 'local') else {}


def _team_nodes(scenario, paths, brain, brain_options, team_ns, use_sim_time, pose_source, operator=True,
                robots=True, manager_side=True):
    nodes = []
    team_side = ([names.SUPERVISOR] + ([names.OPERATOR] if operator else []) + [names.Role.MANAGER.value]
                 if manager_side else [])
    for name in team_side:
        params = node_parameters(name, scenario, paths, brain, brain_options)
        params['use_sim_time'] = use_sim_time
        nodes.append(respawning(NodeSpec(PACKAGE, name, name, team_ns, (params,))))
    for robot in (scenario.robots if robots else ()):   # a fleet's robot: its role's executable, its own name
        params = node_parameters(robot, scenario, paths, brain, brain_options)
        params['use_sim_time'] = use_sim_time
        if names.role_name(robot) == names.Role.NAVIGATION.value:
            params['pose_source'] = pose_source
        nodes.append(respawning(NodeSpec(PACKAGE, names.role_name(robot), robot, names.join(team_ns, robot),
                                         (params,), TF_REMAPS)))
    return nodes


def fhir_gateway(fhir_port: str, fhir_host: str, paths: dict, team_ns: str, use_sim_time: bool,
                 environ: dict | None = None) -> list[NodeSpec]:
    """Return the FHIR gateway node (respawning) for launch argument ``fhir_port`` ('' or '0': none).

    Its parameters are the address, the run's floor and staff directory, and its record of the
    Encounters received (kept across a respawn: a retried Encounter opens nothing); its bearer token comes
    from the launching environment (:data:`robot_team.fhir.gateway.TOKEN_ENV`), never from a
    parameter. ``environ``: the environment checked (default ``os.environ``).

    Raises
    ------
    PlanError
        If ``fhir_port`` is not a port number (0-65535), or ``fhir_host`` is not a loopback address
        and no token is set (:func:`robot_team.fhir.gateway.check_binding`).
    """
    text = str(fhir_port or '').strip() or '0'
    if not text.isdigit() or int(text) > 65535:
        raise PlanError(f'launch argument fhir_port:={fhir_port!r} is not valid: expected a TCP port (1-65535) or 0 '
                        '(no FHIR gateway)')
    if int(text) == 0:
        return []
    try:
        check_binding(fhir_host, (os.environ if environ is None else environ).get(TOKEN_ENV))
    except GatewayConfigError as exc:
        raise PlanError(f'launch argument fhir_host:={fhir_host!r}: {exc}') from exc
    params = {'use_sim_time': use_sim_time, 'fhir_port': int(text), 'fhir_host': fhir_host,
              'floor': paths['floor'], 'staff_db': paths['staff_db'], 'state_db': paths['fhir_db']}
    return [respawning(NodeSpec(PACKAGE, names.FHIR_GATEWAY, names.FHIR_GATEWAY, team_ns, (params,)))]


def _recorder(out_dir: Path, scenario_file: str, brain: str, team_ns: str, use_sim_time: bool,
              end_with_episode: bool = True) -> NodeSpec:
    """Return the recorder (never respawned: :data:`NOT_RESPAWNED`).

    The episode recorder waits :data:`RECORDER_RESTART_GRACE_S` for a respawned manager.
    """
    params = {'use_sim_time': use_sim_time, 'out_dir': str(out_dir)}
    if end_with_episode:
        params.update(scenario=scenario_file, brain=brain, restart_grace_s=RECORDER_RESTART_GRACE_S)
        return NodeSpec(PACKAGE, 'episode_recorder', names.RECORDER, team_ns, (params,))
    return NodeSpec(PACKAGE, names.RECORDER, names.RECORDER, team_ns, (params,))


def plan_floor(*, sim: str = 'embedded', brain: str = 'protocol', kb: str = 'true', scenario: str = 'onboarding',
               out_dir: str = '/tmp/robot_team_run', real_time_factor: str = '', gz_gui: str = 'false',
               map_yaml: str = '', share: Path | None = None, clock: str = 'wall', fleet: str = '',
               fhir_port: str = '0', fhir_host: str = '127.0.0.1', floor: str = '', staff: str = '') -> Plan:
    """Plan ``ed_floor.launch.py``: the whole floor and team on the embedded simulator or on Gazebo + Nav2.

    ``scenario`` '' runs no scenario (a deployment, :func:`run_scenario`, with ``floor`` and
    ``staff``): no patient is scheduled, they arrive from the FHIR gateway or
    ``ed/patient_arrivals``, and the recorder records until stopped (Ctrl-C), writing each case's
    report as it closes (:class:`robot_team.bringup.episode.EpisodeRecorder`).

    ``fhir_port`` (a TCP port; '0' none) adds the FHIR gateway on ``fhir_host`` (:func:`fhir_gateway`).

    ``fleet`` (e.g. ``navigation_robot=2``; '' the scenario's): every robot of it runs, each its
    own node in its own namespace from its own dock; on Gazebo, a fleet's robots (``<role>_<n>``)
    get their model, bridge and Nav2 parameters written into ``out_dir/gazebo``
    (:func:`robot_team.bringup.files.write_robot`).

    Writes the run folder's staff directory and resolved ``scenario.json`` (as ``robot-team
    run`` does) and, for Gazebo, the scenario's map (closed doors drawn) unless ``map_yaml`` is
    given; nothing is started. ``clock`` is the embedded simulator's ``clock_mode``: ``wall``
    (default: ``real_time_factor`` x wall time, as Gazebo) or ``follow`` (as fast as every team
    node keeps up, :mod:`robot_team.contracts.clock_sync`; ``real_time_factor`` then caps it); Gazebo keeps
    its own clock.

    Raises
    ------
    PlanError, ConfigError
        Bad argument, scenario, floor (robot without dock), missing file, map/world disagreement.
    """
    sim = choice('sim', sim, SIM_CHOICES)
    brain = choice('brain', brain, BRAIN_CHOICES)
    kb_on = flag('kb', kb)
    gui = flag('gz_gui', gz_gui)
    clock = choice('clock', clock, CLOCK_MODES)
    if sim == 'gazebo' and clock == 'follow':
        raise PlanError("launch argument clock:='follow' is the embedded simulator's clock: with sim:=gazebo, "
                        "Gazebo's real-time factor paces sim time (clock:=wall)")
    share = Path(share) if share else share_dir()
    rtf = None
    if str(real_time_factor).strip():
        try:
            rtf = float(real_time_factor)
        except ValueError:
            rtf = -1.0
        if not rtf > 0:
            raise PlanError(f'launch argument real_time_factor:={real_time_factor!r} is not valid: expected a '
                            'positive number (sim s per wall s) or empty (the scenario\'s)')
    loaded = run_scenario(scenario, floor, staff, fleet)
    floor = _floor(loaded.floor_path, loaded.robots)
    if sim == 'gazebo':
        if loaded.door_changes:
            raise PlanError(f"scenario '{loaded.name}' has door_changes (doors closing or opening during the run): "
                            'the embedded simulator applies them (sim:=embedded); on Gazebo a door is closed for '
                            'the whole run (blocked_doors)')
        existing(loaded.world_path, 'world file')
        for robot in MOBILE_ROBOTS:
            existing(share / files.model_path(robot), f'model of {robot}')
            existing(share / files.bridge_path(robot), f'ros_gz_bridge config of {robot}')
            existing(share / files.nav2_params_path(robot), f'Nav2 params of {robot}')
        existing(share / files.bridge_path('clock'), 'ros_gz_bridge config of the clock')
    out = Path(out_dir).expanduser().resolve()
    paths = prepare(loaded, out)
    plan = Plan(paths={'out_dir': str(out), **paths})
    _dds_profile(plan, share)
    options = _brain_options(brain, kb_on)
    if options:   # LLM brains: on the follow clock they announce each wait on their LLM (lockstep)
        options['llm_clock'] = llm_clock_under(clock, 'realtime')
    if brain in ('openai', 'local') and rtf is None and clock == 'wall':
        rtf = LLMSettings().real_time_factor
    team_ns = '/'
    pose_source = 'amcl_pose' if sim == 'embedded' else 'auto'
    plan.first += _team_nodes(loaded, paths, brain, options, team_ns, True, pose_source)
    plan.first += fhir_gateway(fhir_port, fhir_host, paths, team_ns, True)
    awaited = [*team_nodes(loaded), *HOSPITAL_SYSTEMS]
    plan.team_ready = NodeSpec(PACKAGE, 'team_ready', 'team_ready', team_ns, ({'timeout_s': 60.0, 'nodes': awaited},))
    plan.recorder = _recorder(out, paths['scenario'], brain, team_ns, True)
    sim_params = {'scenario': paths['scenario'], 'clock_mode': clock}
    if clock == 'follow':   # every node team_ready waits for follows the clock: none may be jumped past unheard
        sim_params['min_clock_followers'] = len(awaited)
    if rtf is not None:
        sim_params['real_time_factor'] = rtf
    # The hospital's systems respawn, as a deployment restarts them, and take up the floor they saved.
    hospital_params = {'scenario': paths['scenario'], 'use_sim_time': True, 'state_file': paths['hospital_state'],
                       **hospital_readers(loaded)}
    hospital = [respawning(NodeSpec(PACKAGE, exe, exe, team_ns, (hospital_params,))) for exe in HOSPITAL_SYSTEMS]
    if sim == 'embedded':
        plan.first += hospital
        plan.after_team += [NodeSpec(PACKAGE, exe, exe, team_ns, (sim_params,)) for exe in EMBEDDED_SIM
                            if exe not in HOSPITAL_SYSTEMS]
        return plan
    # --- Gazebo + Nav2 per robot (as nav2_bringup's multi-robot bringup) ---
    if map_yaml:
        map_file = existing(map_yaml, 'map')
    else:
        map_file = write_map(floor, out / files.map_path(floor.name).split('/')[-1],
                             closed_doors=loaded.blocked_doors)
    check_map_against_world(map_file, loaded.world_path, floor, loaded.blocked_doors)
    plan.paths['map'] = str(map_file)
    plan.packages = GAZEBO_PACKAGES
    plan.environment['GZ_SIM_RESOURCE_PATH'] = str(share / 'models')
    plan.first.append(IncludeSpec('ros_gz_sim', 'launch/gz_sim.launch.py',
                                  (('gz_args', gz_sim_args(loaded.world_path, gui)), ('on_exit_shutdown', 'true'))))
    plan.first.append(NodeSpec('ros_gz_bridge', 'parameter_bridge', 'clock_bridge', team_ns,
                               ({'config_file': str(share / files.bridge_path('clock'))},)))
    for room in loaded.blocked_doors:
        panel = closed_door_panels(floor, [room])[0]
        token = ''.join(c if c.isalnum() else '_' for c in room)
        plan.first.append(NodeSpec('ros_gz_sim', 'create', f'spawn_closed_door_{token}', team_ns, (), (),
                                   ('-world', floor.name, '-string', door_sdf(panel, floor),
                                    '-name', f'closed_door_{token}')))
    for robot in loaded.robots:   # a fleet's robots: their files written into the run folder
        root = share if robot in MOBILE_ROBOTS else out / 'gazebo'
        if root != share:
            files.write_robot(floor, robot, root, str(loaded.floor_path))
        plan.first += gazebo_robot(robot, floor, root, team_ns, map_file)
    plan.after_team += hospital
    return plan


def gz_sim_args(world: str | Path, gui: bool) -> str:
    """Return the ``gz sim`` command line arguments (ros_gz_sim's ``gz_args``) for ``world``.

    Always running (``-r``). Without the GUI the server runs alone (``-s``) and renders offscreen
    (``--headless-rendering``, gz-sim 8 and newer): without it the gpu_lidar renders nothing on a
    machine with no display, and Nav2 gets no scan.
    """
    return f"-r {'' if gui else '-s --headless-rendering '}{world}"


def door_sdf(panel: Wall, floor: Floor) -> str:
    """Return an SDFormat static model of a closed door panel (a box ``floor.wall_height`` tall)."""
    size = f'{panel.sx:g} {panel.sy:g} {floor.wall_height:g}'
    geometry = f'<geometry><box><size>{size}</size></box></geometry>'
    return (f'<?xml version="1.0" ?><sdf version="1.9"><model name="closed_door"><static>true</static>'
            f'<pose>{panel.x:g} {panel.y:g} 0 0 0 {panel.yaw:g}</pose><link name="link">'
            f'<pose>0 0 {floor.wall_height / 2:g} 0 0 0</pose><collision name="collision">{geometry}</collision>'
            f'<visual name="visual">{geometry}</visual></link></model></sdf>')


def gazebo_robot(robot: RobotId, floor: Floor, share: Path, team_ns: str, map_file: Path) -> list:
    """Return what one robot needs in Gazebo: spawn at its dock, its bridge, its lidar's TF, its Nav2.

    Its model, bridge configuration and Nav2 parameters are read from ``share`` (the paths of
    :mod:`robot_team.bringup.files`).
    """
    dock = floor.dock(robot).pose
    ns = names.join(team_ns, robot)
    sim_time = {'use_sim_time': True}
    return [
        NodeSpec('ros_gz_sim', 'create', 'spawn', ns, (sim_time,), (), (
            '-world', floor.name, '-file', str(share / files.model_path(robot)), '-name', robot,
            '-x', str(dock.x), '-y', str(dock.y), '-z', '0.01', '-Y', str(dock.yaw))),
        NodeSpec('ros_gz_bridge', 'parameter_bridge', 'gz_bridge', ns,
                 ({'config_file': str(share / files.bridge_path(robot)), **sim_time},)),
        NodeSpec('tf2_ros', 'static_transform_publisher', 'lidar_tf', ns, (sim_time,), TF_REMAPS, (
            '--z', f'{PLATFORM.lidar.height:g}', '--frame-id', names.BASE_FRAME, '--child-frame-id', SCAN_FRAME)),
        nav2_include(ns, map_file, share / files.nav2_params_path(robot), use_sim_time=True),
    ]


def nav2_include(namespace: str, map_file: Path, params_file: Path, use_sim_time: bool) -> IncludeSpec:
    """Return nav2_bringup's ``bringup_launch.py`` for one robot namespace (Jazzy and Kilted arguments)."""
    return IncludeSpec('nav2_bringup', 'launch/bringup_launch.py', (
        ('namespace', namespace.strip('/')), ('use_namespace', 'True'), ('map', str(map_file)),
        ('params_file', str(params_file)), ('use_sim_time', str(use_sim_time)), ('autostart', 'True'),
        ('use_keepout_zones', 'False'), ('use_speed_zones', 'False'), ('slam', 'False')))


def plan_robot(*, robot: RobotId, team_namespace: str = '/', brain: str = 'protocol', kb: str = 'true',
               floor: str = 'ed_floor.yaml', staff_db: str = '', use_sim_time: str = 'false', nav2: str = 'false',
               map_yaml: str = '', params_file: str = '', pose_source: str = 'auto',
               share: Path | None = None) -> Plan:
    """Plan ``robot.launch.py``: one robot's node in ``<team_namespace>/<robot>``, optionally its Nav2.

    ``robot`` is a role (one robot of it) or a fleet's robot ``<role>_<n>``: its role's
    executable, named ``robot``. A fleet's robot's Nav2 parameters (its dock) are not in the
    share folder: give ``params_file`` (``scripts/gen_gazebo_nav2.py --robot <robot>`` writes them).

    Raises
    ------
    PlanError, ConfigError
        Unknown robot, bad namespace or flag, floor without the robot's dock, missing map/params.
    """
    robot = str(robot).strip().lower()
    if names.role_name(robot) not in MOBILE_ROBOTS:
        raise PlanError(f"launch argument robot:={robot!r} is not valid: expected one of {', '.join(MOBILE_ROBOTS)}"
                        f' or a fleet robot <role>_<n>')
    brain = choice('brain', brain, BRAIN_CHOICES)
    pose_source = choice('pose_source', pose_source, POSE_SOURCES)
    team_ns = namespace('team_namespace', team_namespace)
    share = Path(share) if share else share_dir()
    loaded = _floor(floor, (*MOBILE_ROBOTS, robot))
    params = {'brain': brain, 'floor': str(loaded.path), 'use_sim_time': flag('use_sim_time', use_sim_time),
              'team_namespace': team_ns, **_brain_options(brain, flag('kb', kb))}
    if names.role_name(robot) != names.Role.NAVIGATION.value:
        params['staff_db'] = staff_db
    else:
        params['pose_source'] = pose_source
    ns = names.join(team_ns, robot)
    plan = Plan(paths={'floor': str(loaded.path)})
    _dds_profile(plan, share)
    plan.first.append(respawning(NodeSpec(PACKAGE, names.role_name(robot), robot, ns, (params,), TF_REMAPS)))
    if flag('nav2', nav2):
        map_file = existing(map_yaml or share / files.map_path(loaded.name), 'map')
        try:
            load_map(map_file)
        except ConfigError as exc:
            raise PlanError(str(exc)) from exc
        params_path = existing(params_file or share / files.nav2_params_path(robot),
                               f'Nav2 params of {robot}' + ('' if robot in MOBILE_ROBOTS else
                                                            ' (write them: scripts/gen_gazebo_nav2.py --robot '
                                                            f'{robot}; pass params_file:=)'))
        plan.first.append(nav2_include(ns, map_file, params_path, params['use_sim_time']))
        plan.packages = NAV2_PACKAGES
        plan.paths.update(map=str(map_file), params=str(params_path))
    return plan


def plan_team(*, scenario: str = 'onboarding', brain: str = 'protocol', kb: str = 'true',
              out_dir: str = '/tmp/robot_team_run', team_namespace: str = '/', use_sim_time: str = 'false',
              operator: str = 'scripted', end_with_episode: str = 'true', share: Path | None = None,
              fleet: str = '', fhir_port: str = '0', fhir_host: str = '127.0.0.1', floor: str = '',
              staff: str = '') -> Plan:
    """Plan ``team.launch.py``: manager, supervisor, (scripted operator) and recorder on a server.

    ``scenario`` '' runs no scenario (a deployment, :func:`run_scenario`, with ``floor`` and
    ``staff``, e.g. the hospital's SQLite staff directory): patients arrive from the FHIR gateway
    or ``ed/patient_arrivals``; the recorder records until stopped, writing each case's report
    as it closes (``end_with_episode`` does not apply: there is no episode end).

    ``fhir_port`` (a TCP port; '0' none) adds the FHIR gateway on ``fhir_host`` (:func:`fhir_gateway`):
    the hospital's Encounter notifications in.

    ``fleet`` (e.g. ``navigation_robot=2``; '' the scenario's) names the robots the manager and
    the supervisor work with (each started with ``robot.launch.py robot:=<role>_<n>``).

    Raises
    ------
    PlanError, ConfigError
        Bad argument, scenario, floor or staff file.
    """
    brain = choice('brain', brain, BRAIN_CHOICES)
    operator = choice('operator', operator, OPERATOR_CHOICES)
    team_ns = namespace('team_namespace', team_namespace)
    sim_time = flag('use_sim_time', use_sim_time)
    loaded = run_scenario(scenario, floor, staff, fleet)
    out = Path(out_dir).expanduser().resolve()
    paths = prepare(loaded, out)
    plan = Plan(paths={'out_dir': str(out), **paths})
    _dds_profile(plan, Path(share) if share else share_dir())
    plan.first += _team_nodes(loaded, paths, brain, _brain_options(brain, flag('kb', kb)), team_ns, sim_time,
                              'auto', operator=operator == 'scripted', robots=False)
    plan.first += fhir_gateway(fhir_port, fhir_host, paths, team_ns, sim_time)
    end = flag('end_with_episode', end_with_episode) or loaded.open_ended   # a deployment: until stopped
    recorder = _recorder(out, paths['scenario'], brain, team_ns, sim_time, end)
    if end:
        plan.recorder = recorder
    else:
        plan.first.append(recorder)
    return plan


__all__ = ['BOOL_CHOICES', 'BRAIN_CHOICES', 'EMBEDDED_SIM', 'GAZEBO_PACKAGES', 'HOSPITAL_SYSTEMS', 'IncludeSpec',
           'NOT_RESPAWNED', 'NodeSpec', 'Plan', 'PlanError', 'RECORDER_RESTART_GRACE_S', 'SIM_CHOICES', 'respawning',
           'check_map_against_world', 'check_packages', 'fhir_gateway', 'map_info', 'plan_floor', 'plan_robot',
           'plan_team', 'world_walls']
