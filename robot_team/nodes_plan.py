"""What an episode or a deployment starts: the team's nodes, the simulator's, their parameters.

The one plan below both the embedded run (:mod:`robot_team.run`) and the launch files
(:mod:`robot_team.bringup.plan`): which nodes make up the team (:data:`TEAM`, :func:`team_nodes`),
which the embedded simulator adds (:data:`SIM_NODES`), the run folder's inputs they read
(:func:`prepare`: the staff directory, the resolved scenario) and each team node's ROS
parameters (:func:`node_parameters`).

Plain data only: this module imports no rclpy, no node, no simulator and no runner (a physical
robot's launch plans its node from here without loading the simulator); it imports
:mod:`robot_team.contracts.config`, :mod:`robot_team.directory`, :mod:`robot_team.contracts.floor` and
:mod:`robot_team.contracts.names`.
"""

from __future__ import annotations

from pathlib import Path

from robot_team.contracts.config import ConfigError, Scenario, load_staff_seed
from robot_team.directory import StaffDirectory
from robot_team.contracts.floor import load_floor
from robot_team.contracts.names import HOSPITAL_SYSTEMS, MOTION_SIM, OPERATOR, SUPERVISOR, Role, role_name

TEAM = [SUPERVISOR, OPERATOR, Role.NAVIGATION.value, Role.INFO_COLLECTION.value, Role.DISPLAY.value,
        Role.MANAGER.value]
"""The team's nodes with one robot per role (their ``node_started`` events, with the simulator's, gate the
start of sim time); :func:`team_nodes` gives a fleet's."""


def team_nodes(scenario: Scenario) -> list[str]:
    """Return the team's nodes for ``scenario``: supervisor, operator, every robot of its fleet, manager."""
    return [SUPERVISOR, OPERATOR, *scenario.robots, Role.MANAGER.value]


def hospital_readers(scenario: Scenario) -> dict[str, int]:
    """Return ``hospital_systems``' reader counts for ``scenario``'s team, as its ROS parameters.

    ``arrival_readers``: the nodes that read ``ed/patient_arrivals`` (the manager and the
    supervisor); ``badge_scan_readers``: those that read ``ed/badge_scans`` (every info-collection
    robot of the fleet); ``display_readers``: those that read ``ed/display/content`` (every display
    robot). Each such message holds sim time until they all have it (:mod:`robot_team.contracts.delivery`).
    """
    nodes = team_nodes(scenario)

    def robots_of(role: Role) -> int:
        return sum(role_name(r) == role.value for r in scenario.robots)
    return {'arrival_readers': len({SUPERVISOR, Role.MANAGER.value} & set(nodes)),
            'badge_scan_readers': robots_of(Role.INFO_COLLECTION), 'display_readers': robots_of(Role.DISPLAY)}


SIM_NODES = [HOSPITAL_SYSTEMS, MOTION_SIM]
"""The embedded simulator's nodes: the hospital's systems, and robot motion (the clock source)."""


def prepare(scenario: Scenario, out_dir: Path) -> dict:
    """Check the scenario's inputs and create the run's staff directory.

    Returns the paths the nodes need: ``floor`` (the floor description), ``world`` (SDFormat, for
    Gazebo), ``staff_db``, ``scenario`` (a resolved copy), ``escalation_db`` (the supervisor's
    escalation record, removed if a previous run left one), ``manager_db``, ``hospital_state``,
    ``fhir_db`` (the FHIR gateway's record of Encounters received); the last four start empty.

    ``staff_db`` is built in ``out_dir`` from the scenario's YAML seed; a scenario whose staff
    directory is a SQLite database (a deployment's, :attr:`robot_team.contracts.config.Scenario.staff_database`)
    uses that database in place: its check-ins are the hospital's, kept across runs.

    Raises
    ------
    ConfigError
        If the floor or staff file cannot be used, or the scenario names a room the floor lacks
        (the message names the file and the problem).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    floor = load_floor(scenario.floor_path)
    for room in [*(case.room for case in scenario.cases), *scenario.blocked_doors,
                 *(change.room for change in scenario.door_changes)]:
        floor.room(room)
    seed = None
    if scenario.staff_database:   # the hospital's directory, used in place
        with StaffDirectory(scenario.staff_path) as directory:
            known = {s.hcw_id for s in directory.staff()}
        staff_db = scenario.staff_path.resolve()
    else:
        seed = load_staff_seed(scenario.staff_path)
        known = {s.hcw_id for s in seed.staff}
        staff_db = out_dir / 'staff.sqlite'
    first = [scenario.patient.assigned_hcw_id] if scenario.patient is not None else []
    for hcw in [*first, *scenario.staff_overrides]:
        if hcw not in known:
            raise ConfigError(f"scenario '{scenario.name}': HCW #{hcw} is not in the staff directory "
                              f'{scenario.staff_path}')
    if seed is not None:   # a fresh directory for the run (one left by a previous run is replaced)
        StaffDirectory.create(staff_db, seed)
    escalation_db = out_dir / 'escalations.sqlite'   # a new run starts a new escalation record
    manager_db = out_dir / 'manager.sqlite'          # and a new manager record (a restart takes it up)
    hospital_state = out_dir / 'hospital_state.pickle'   # and a new floor (hospital systems' checkpoint)
    fhir_db = out_dir / 'fhir_gateway.sqlite'        # and a new record of the Encounters received
    for db in (escalation_db, manager_db, hospital_state, fhir_db):
        for suffix in ('', '-journal', '-wal', '-shm'):
            Path(f'{db}{suffix}').unlink(missing_ok=True)
    resolved = scenario.model_copy(update={'world': str(scenario.world_path), 'floor': str(scenario.floor_path),
                                           'staff_directory': str(scenario.staff_path)})
    scenario_file = out_dir / 'scenario.json'
    scenario_file.write_text(resolved.model_dump_json(indent=2))
    return {'floor': str(scenario.floor_path), 'world': str(scenario.world_path), 'staff_db': str(staff_db),
            'scenario': str(scenario_file), 'escalation_db': str(escalation_db), 'manager_db': str(manager_db),
            'hospital_state': str(hospital_state), 'fhir_db': str(fhir_db)}


def node_parameters(name: str, scenario: Scenario, paths: dict, brain: str,
                    brain_options: dict | None = None) -> dict:
    """Return the ROS parameters of team node ``name``.

    ``brain_options`` (str/bool/int/float values) become parameters of the manager and the
    robots, e.g. ``{'kb': True}`` for LLM brains.
    """
    params: dict = {'use_sim_time': True}
    if name in (SUPERVISOR, OPERATOR):
        params['scenario'] = paths['scenario']
        if name == SUPERVISOR:   # escalations persist beside the run's record; reassigns checked against staff
            params.update(escalation_db=paths['escalation_db'], staff_db=paths['staff_db'])
        return params
    if name == Role.MANAGER.value:
        params.update(brain=brain, issue_handling=scenario.manager.issue_handling, state_db=paths['manager_db'],
                      cases=0 if scenario.open_ended else len(scenario.cases),   # 0: serve until stopped
                      cases_at_once=scenario.cases_at_once, robots=scenario.robots)
    else:
        params.update(brain=brain, floor=paths['floor'], staff_db=paths['staff_db'])
    params.update(brain_options or {})
    return params
