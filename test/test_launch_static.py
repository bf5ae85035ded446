"""Launch files, checked without ROS 2's ``launch``: every package, executable and file they reference exists.

The launch files are thin: they declare their arguments and hand them to
``robot_team.bringup.plan`` (plan_floor, plan_robot, plan_team), whose plans are checked here for
every mode. Our executables must be installed by CMakeLists.txt (``_nodes``); every other ROS
package must be an exec_depend in package.xml; every file a plan names must exist. Bad input is
refused before anything starts, with a message naming it.
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from robot_team.bringup import plan as plans
from robot_team.bringup.platform import MOBILE_ROBOTS
from robot_team.contracts.config import ConfigError
from robot_team.contracts.floor import FloorError

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / 'launch'
LAUNCH_FILES = {'ed_floor.launch.py': 'plan_floor', 'robot.launch.py': 'plan_robot', 'team.launch.py': 'plan_team'}


def cmake_executables() -> set[str]:
    """The node executables CMakeLists.txt installs in lib/robot_team."""
    text = (ROOT / 'CMakeLists.txt').read_text()
    block = re.search(r'set\(_nodes(.*?)\)', text, re.S).group(1)
    return set(re.findall(r'"([a-z_]+)=', block))


def exec_depends() -> set[str]:
    """The packages package.xml declares for running (depend + exec_depend)."""
    root = ET.parse(ROOT / 'package.xml').getroot()
    return {e.text for tag in ('depend', 'exec_depend') for e in root.iter(tag)}


def _declared(path: Path) -> dict:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == 'ARGUMENTS':
            return {name: (default, choices) for name, default, _, choices in ast.literal_eval(node.value)}
    raise AssertionError(f'{path.name} declares no ARGUMENTS')


def _all_plans(tmp_path):
    yield 'ed_floor sim:=embedded', plans.plan_floor(sim='embedded', out_dir=str(tmp_path / 'e'))
    yield 'ed_floor sim:=gazebo', plans.plan_floor(sim='gazebo', scenario='no_path', out_dir=str(tmp_path / 'g'))
    for robot in MOBILE_ROBOTS:
        yield f'robot {robot}', plans.plan_robot(robot=robot, nav2='true', staff_db=str(tmp_path / 's.sqlite'))
    yield 'team', plans.plan_team(out_dir=str(tmp_path / 't'))
    yield 'team operator:=none', plans.plan_team(out_dir=str(tmp_path / 'u'), operator='none',
                                                 end_with_episode='false')
    yield "team scenario:=''", plans.plan_team(scenario='', out_dir=str(tmp_path / 'd'), fhir_port='8080')
    yield "ed_floor scenario:=''", plans.plan_floor(scenario='', out_dir=str(tmp_path / 'f'))
    yield "ed_floor sim:=gazebo scenario:=''", plans.plan_floor(sim='gazebo', scenario='', out_dir=str(tmp_path / 'h'))


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def test_launch_files_are_thin_and_use_the_plans():
    for name, function in LAUNCH_FILES.items():
        source = (LAUNCH / name).read_text()
        tree = ast.parse(source)
        imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert imports <= {'launch', 'launch.actions', 'launch.substitutions', 'robot_team.bringup.plan',
                           'robot_team.bringup.launch_actions'}, imports
        assert f'{function}(' in source and 'generate_launch_description' in source


def test_declared_arguments_match_the_plans_choices():
    floor = _declared(LAUNCH / 'ed_floor.launch.py')
    assert floor['sim'][1] == plans.SIM_CHOICES and floor['brain'][1] == plans.BRAIN_CHOICES
    assert floor['kb'][1] == plans.BOOL_CHOICES
    assert {'sim', 'brain', 'kb', 'scenario', 'out_dir'} <= set(floor)
    assert floor['discovery_range'][0] == 'LOCALHOST', 'multi-host must stay an explicit opt-in'
    robot = _declared(LAUNCH / 'robot.launch.py')
    assert robot['robot'][1] is None and robot['use_sim_time'][0] == 'false'   # a role, or a fleet's <role>_<n>
    team = _declared(LAUNCH / 'team.launch.py')
    assert team['operator'][1] == plans.OPERATOR_CHOICES
    assert floor['fleet'][0] == team['fleet'][0] == ''


def test_every_package_executable_and_file_referenced_exists(tmp_path):
    ours = cmake_executables()
    depends = exec_depends()
    for label, plan in _all_plans(tmp_path):
        for node in plan.nodes():
            if node.package == plans.PACKAGE:
                assert node.executable in ours, f'{label}: executable {node.executable} is not installed by CMake'
            else:
                assert node.package in depends, f'{label}: package {node.package} is not an exec_depend'
        for include in plan.includes():
            assert include.package in depends, f'{label}: package {include.package} is not an exec_depend'
        assert set(plan.packages) <= depends
        for node in plan.nodes():
            for text in _strings([node.parameters, node.arguments]):
                if text.endswith(('.yaml', '.sdf', '.json', '.sqlite')) and '<' not in text:
                    assert Path(text).exists() or text.endswith('.sqlite'), f'{label}: {text} does not exist'
        for include in plan.includes():
            for _, value in include.arguments:
                for word in value.split():
                    if word.endswith(('.yaml', '.sdf')):
                        assert Path(word).exists(), f'{label}: {word} does not exist'
    assert set(plans.EMBEDDED_SIM) <= ours and set(plans.HOSPITAL_SYSTEMS) <= ours


def test_embedded_floor_plan(tmp_path):
    plan = plans.plan_floor(sim='embedded', out_dir=str(tmp_path))
    assert [n.executable for n in plan.after_team] == ['motion_sim']     # the clock, once the team is up
    hospital = [n for n in plan.first if n.executable == 'hospital_systems']
    assert len(hospital) == 1 and hospital[0].parameters[0]['use_sim_time'] is True
    assert 'hospital_systems' in plan.team_ready.parameters[0]['nodes']
    assert plan.recorder.executable == 'episode_recorder' and plan.team_ready.executable == 'team_ready'
    robots = {n.name: n for n in plan.first if n.name in MOBILE_ROBOTS}
    assert {n.namespace for n in robots.values()} == {f'/{r}' for r in MOBILE_ROBOTS}
    assert all(dict(n.remappings)['/tf'] == 'tf' for n in robots.values())
    assert robots['navigation_robot'].parameters[0]['pose_source'] == 'amcl_pose'
    assert (tmp_path / 'staff.sqlite').exists() and (tmp_path / 'scenario.json').exists()
    assert plan.after_team[0].parameters[0]['clock_mode'] == 'wall'
    follow = plans.plan_floor(sim='embedded', brain='openai', clock='follow', out_dir=str(tmp_path / 'f'))
    motion = follow.after_team[0].parameters[0]
    assert motion['clock_mode'] == 'follow' and 'real_time_factor' not in motion   # no cap, no LLM pace
    # every node team_ready waits for follows the clock: none may be jumped past before it is heard
    assert motion['min_clock_followers'] == len(follow.team_ready.parameters[0]['nodes']) == 7
    assert 'min_clock_followers' not in plan.after_team[0].parameters[0]   # the wall clock follows nobody
    brains = [n.parameters[0] for n in follow.first if n.parameters and n.parameters[0].get('brain') == 'openai']
    assert len(brains) == 4 and all(p['llm_clock'] == 'lockstep' for p in brains)   # they announce LLM waits


def test_gazebo_floor_plan_spawns_each_robot_at_its_dock(tmp_path):
    from robot_team.contracts.floor import load_floor
    floor = load_floor(ROOT / 'config' / 'floors' / 'ed_floor.yaml')
    plan = plans.plan_floor(sim='gazebo', out_dir=str(tmp_path))
    spawns = {n.namespace: n.arguments for n in plan.nodes() if n.executable == 'create'}
    for robot in MOBILE_ROBOTS:
        args = spawns[f'/{robot}']
        dock = floor.dock(robot).pose
        get = dict(zip(args[::2], args[1::2]))
        assert get['-name'] == robot and get['-world'] == floor.name
        assert (float(get['-x']), float(get['-y']), float(get['-Y'])) == pytest.approx((dock.x, dock.y, dock.yaw))
    navs = [dict(i.arguments) for i in plan.includes() if i.package == 'nav2_bringup']
    assert sorted(n['namespace'] for n in navs) == sorted(MOBILE_ROBOTS)
    assert all(n['params_file'].endswith(f"config/nav2/{n['namespace']}.yaml") for n in navs)
    assert 'sensors' not in plan.paths and Path(plan.paths['map']).exists()


def test_a_fleet_starts_every_robot_under_its_own_name_namespace_and_dock(tmp_path):
    from robot_team.contracts.floor import load_floor
    floor = load_floor(ROOT / 'config' / 'floors' / 'ed_floor.yaml')
    fleet = ('navigation_robot_1', 'navigation_robot_2')
    embedded = plans.plan_floor(sim='embedded', out_dir=str(tmp_path / 'e'), fleet='navigation_robot=2')
    robots = {n.name: n for n in embedded.nodes() if n.package == plans.PACKAGE and n.executable in MOBILE_ROBOTS}
    assert sorted(robots) == sorted([*fleet, 'info_collection_robot', 'display_robot'])
    for robot in fleet:   # the role's executable under the robot's own name, in its own namespace
        assert (robots[robot].executable, robots[robot].namespace) == ('navigation_robot', f'/{robot}')
    ready = next(n for n in embedded.nodes() if n.name == 'team_ready').parameters[0]['nodes']
    assert set(fleet) <= set(ready) and 'navigation_robot' not in ready
    manager = next(n for n in embedded.nodes() if n.name == 'manager').parameters[0]
    assert manager['robots'][:2] == list(fleet)
    gazebo = plans.plan_floor(sim='gazebo', out_dir=str(tmp_path / 'g'), fleet='navigation_robot=2')
    spawns = {n.namespace: dict(zip(n.arguments[::2], n.arguments[1::2])) for n in gazebo.nodes()
              if n.executable == 'create'}
    navs = {dict(i.arguments)['namespace']: dict(i.arguments) for i in gazebo.includes()
            if i.package == 'nav2_bringup'}
    bridges = {n.namespace: n.parameters[0]['config_file'] for n in gazebo.nodes() if n.name == 'gz_bridge'}
    for robot in fleet:   # its own model, bridge and Nav2 parameters, written into the run folder
        dock = floor.dock(robot).pose
        get = spawns[f'/{robot}']
        assert get['-name'] == robot and Path(get['-file']).is_relative_to(tmp_path / 'g' / 'gazebo')
        assert (float(get['-x']), float(get['-y'])) == pytest.approx((dock.x, dock.y))
        assert f'/model/{robot}/cmd_vel' in Path(bridges[f'/{robot}']).read_text()
        amcl = yaml.safe_load(Path(navs[robot]['params_file']).read_text())['amcl']['ros__parameters']
        assert (amcl['initial_pose']['x'], amcl['initial_pose']['y']) == pytest.approx((dock.x, dock.y))
    team = plans.plan_team(out_dir=str(tmp_path / 't'), fleet='navigation_robot=2')
    assert next(n for n in team.nodes() if n.name == 'manager').parameters[0]['robots'][:2] == list(fleet)
    one = plans.plan_robot(robot='navigation_robot_2', staff_db=str(tmp_path / 's.sqlite'))
    [node] = one.nodes()
    assert (node.executable, node.name, node.namespace) == ('navigation_robot', 'navigation_robot_2',
                                                            '/navigation_robot_2')
    with pytest.raises(plans.PlanError, match='gen_gazebo_nav2.py --robot navigation_robot_2'):
        plans.plan_robot(robot='navigation_robot_2', nav2='true')
    with pytest.raises(plans.PlanError, match='launch argument fleet part'):
        plans.plan_floor(out_dir=str(tmp_path / 'x'), fleet='navigation_robots=2')
    with pytest.raises(plans.PlanError, match='or a fleet robot'):
        plans.plan_robot(robot='vacuum_robot_2')


@pytest.mark.parametrize('kwargs, message', [
    ({'sim': 'webots'}, "sim:='webots' is not valid: expected one of embedded, gazebo"),
    ({'brain': 'gpt'}, "brain:='gpt' is not valid: expected one of protocol, openai, local"),
    ({'kb': 'maybe'}, "kb:='maybe' is not valid: expected one of true, false"),
    ({'real_time_factor': '-3'}, 'real_time_factor'),
    ({'clock': 'fast'}, "clock:='fast' is not valid: expected one of follow, wall"),
    ({'sim': 'gazebo', 'clock': 'follow'}, "clock:='follow' is the embedded simulator's clock"),
    ({'scenario': 'nonexistent'}, "unknown scenario 'nonexistent'"),
])
def test_bad_floor_arguments_are_named(tmp_path, kwargs, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        plans.plan_floor(out_dir=str(tmp_path), **kwargs)


def _scenario(tmp_path, **changes):
    import yaml
    data = yaml.safe_load((ROOT / 'config' / 'scenarios' / 'onboarding.yaml').read_text())
    data.update(changes)
    path = tmp_path / 'scenario.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_missing_world_is_named(tmp_path):
    scenario = _scenario(tmp_path, world=str(tmp_path / 'nowhere.sdf'))
    with pytest.raises(ConfigError, match=r'world file .*nowhere\.sdf does not exist'):
        plans.plan_floor(sim='gazebo', scenario=scenario, out_dir=str(tmp_path / 'run'))


def test_robot_without_dock_is_named(tmp_path):
    import yaml
    floor = yaml.safe_load((ROOT / 'config' / 'floors' / 'ed_floor.yaml').read_text())
    floor['docks'] = [d for d in floor['docks'] if d['robot'] != 'info_collection_robot']
    (tmp_path / 'floor.yaml').write_text(yaml.safe_dump(floor))
    scenario = _scenario(tmp_path, floor=str(tmp_path / 'floor.yaml'))
    with pytest.raises(FloorError, match="no dock for robot 'info_collection_robot'"):
        plans.plan_floor(scenario=scenario, out_dir=str(tmp_path / 'run'))
    with pytest.raises(FloorError, match="no dock for robot 'info_collection_robot'"):
        plans.plan_robot(robot='navigation_robot', floor=str(tmp_path / 'floor.yaml'))


def test_missing_model_and_params_files_are_named(tmp_path):
    share = tmp_path / 'share'
    shutil.copytree(ROOT / 'config', share / 'config')
    shutil.copytree(ROOT / 'models', share / 'models')
    (share / 'models' / 'display_robot' / 'model.sdf').unlink()
    with pytest.raises(ConfigError, match=r'model of display_robot .*model\.sdf does not exist'):
        plans.plan_floor(sim='gazebo', out_dir=str(tmp_path / 'run'), share=share)
    shutil.copy(ROOT / 'models' / 'display_robot' / 'model.sdf', share / 'models' / 'display_robot' / 'model.sdf')
    (share / 'config' / 'nav2' / 'navigation_robot.yaml').unlink()
    with pytest.raises(ConfigError, match=r'Nav2 params of navigation_robot .*navigation_robot\.yaml does not exist'):
        plans.plan_floor(sim='gazebo', out_dir=str(tmp_path / 'run'), share=share)
    with pytest.raises(ConfigError, match=r'Nav2 params .*navigation_robot\.yaml does not exist'):
        plans.plan_robot(robot='navigation_robot', nav2='true', share=share, map_yaml=str(ROOT / 'maps/ed_floor.yaml'))


def test_map_that_disagrees_with_the_world_is_refused(tmp_path):
    from robot_team.bringup.nav2 import write_map
    from robot_team.contracts.floor import load_floor
    floor = load_floor(ROOT / 'config' / 'floors' / 'ed_floor.yaml')
    wrong = write_map(floor, tmp_path / 'wrong.yaml', closed_doors=['ER-5'])   # the world has that door open
    with pytest.raises(plans.PlanError, match=r'map .*wrong\.yaml disagrees with world .*ed_floor\.sdf in \d+ cells'):
        plans.plan_floor(sim='gazebo', map_yaml=str(wrong), out_dir=str(tmp_path / 'run'))
    with pytest.raises(plans.PlanError, match=r'map .*missing\.yaml does not exist'):
        plans.plan_floor(sim='gazebo', map_yaml=str(tmp_path / 'missing.yaml'), out_dir=str(tmp_path / 'run'))


def test_bad_robot_and_team_arguments_are_named(tmp_path):
    with pytest.raises(ConfigError, match="robot:='manager' is not valid"):
        plans.plan_robot(robot='manager')
    with pytest.raises(ConfigError, match='team_namespace'):
        plans.plan_robot(robot='display_robot', team_namespace='9floor')
    with pytest.raises(ConfigError, match="operator:='human' is not valid"):
        plans.plan_team(operator='human', out_dir=str(tmp_path))


def test_robot_plan_for_a_physical_robot(tmp_path):
    plan = plans.plan_robot(robot='navigation_robot', team_namespace='/floor2', nav2='true')
    (node,) = plan.nodes()
    assert node.namespace == '/floor2/navigation_robot' and node.parameters[0]['use_sim_time'] is False
    assert node.parameters[0]['team_namespace'] == '/floor2'
    (nav2,) = plan.includes()
    assert dict(nav2.arguments)['namespace'] == 'floor2/navigation_robot'
    assert dict(nav2.arguments)['use_sim_time'] == 'False'
    assert plans.plan_robot(robot='display_robot').includes() == []


def test_team_nodes_respawn_and_what_cannot_resume_does_not(tmp_path):
    from robot_team.run.restarts import DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_DELAY_S, FASTDDS_PROFILES_VARIABLE
    from robot_team.nodes_plan import TEAM
    team = {*TEAM, *plans.HOSPITAL_SYSTEMS, 'fhir_gateway'}   # (the gateway respawns as the team does)
    for label, plan in _all_plans(tmp_path):
        nodes = plan.nodes()
        ours = [n for n in nodes if n.package == plans.PACKAGE]
        for node in ours:
            if node.name in team:
                assert (node.respawn, node.respawn_delay, node.respawn_max_retries) == (
                    True, DEFAULT_RESTART_DELAY_S, DEFAULT_MAX_RESTARTS), f'{label}: {node.name} does not respawn'
            else:   # the clock source, the team gate, the recorders: named with the reason
                assert not node.respawn and node.executable in plans.NOT_RESPAWNED, f'{label}: {node.name}'
        assert not any(n.respawn for n in nodes if n.package != plans.PACKAGE), label   # Gazebo, bridges: theirs
        profile = Path(plan.environment_defaults[FASTDDS_PROFILES_VARIABLE])
        assert profile.is_file() and profile.name == 'team_liveness.xml', label
    embedded = plans.plan_floor(sim='embedded', out_dir=str(tmp_path / 'r'))
    assert embedded.recorder.parameters[0]['restart_grace_s'] == plans.RECORDER_RESTART_GRACE_S > 0
    assert {n.name for n in embedded.nodes() if n.respawn} == {*TEAM, 'hospital_systems'}


def test_a_missing_dds_profile_is_named(tmp_path):
    share = tmp_path / 'share'
    share.mkdir()
    with pytest.raises(ConfigError, match='Fast DDS profile .*team_liveness.xml does not exist'):
        plans.plan_robot(robot='display_robot', share=share)


def test_doors_that_change_during_the_run_need_the_embedded_simulator(tmp_path):
    import yaml
    scenario = yaml.safe_load((ROOT / 'config' / 'scenarios' / 'onboarding.yaml').read_text())
    scenario['door_changes'] = [{'at_s': 60.0, 'room': 'ER-5', 'state': 'closed'}]
    path = tmp_path / 'doors.yaml'
    path.write_text(yaml.safe_dump(scenario))
    with pytest.raises(plans.PlanError, match='door_changes .*sim:=embedded'):
        plans.plan_floor(sim='gazebo', scenario=str(path), out_dir=str(tmp_path / 'run'))
    plan = plans.plan_floor(sim='embedded', scenario=str(path), out_dir=str(tmp_path / 'run'))
    assert plan.first


def test_fhir_gateway_is_planned_only_with_a_port_and_off_loopback_only_with_a_token(tmp_path, monkeypatch):
    monkeypatch.delenv('ROBOT_TEAM_FHIR_TOKEN', raising=False)
    assert not [n for n in plans.plan_team(out_dir=str(tmp_path / 'off')).first if n.name == 'fhir_gateway']
    team = plans.plan_team(out_dir=str(tmp_path / 'team'), fhir_port='8089')
    gateway = [n for n in team.first if n.name == 'fhir_gateway']
    assert len(gateway) == 1 and gateway[0].executable == 'fhir_gateway' and gateway[0].respawn
    params = gateway[0].parameters[0]
    assert params['fhir_port'] == 8089 and params['fhir_host'] == '127.0.0.1'
    assert params['staff_db'] == str(tmp_path / 'team' / 'staff.sqlite') and Path(params['floor']).exists()
    assert not any('token' in key.lower() for key in params)     # the token travels in the environment only
    floor = plans.plan_floor(out_dir=str(tmp_path / 'floor'), fhir_port='8090')
    assert [n.parameters[0]['fhir_port'] for n in floor.first if n.name == 'fhir_gateway'] == [8090]
    with pytest.raises(plans.PlanError, match='ROBOT_TEAM_FHIR_TOKEN'):
        plans.plan_team(out_dir=str(tmp_path / 'open'), fhir_port='8089', fhir_host='0.0.0.0')
    with pytest.raises(plans.PlanError, match='fhir_port'):
        plans.plan_team(out_dir=str(tmp_path / 'bad'), fhir_port='http')
    monkeypatch.setenv('ROBOT_TEAM_FHIR_TOKEN', 'not-in-any-plan')
    open_plan = plans.plan_team(out_dir=str(tmp_path / 'tok'), fhir_port='8089', fhir_host='0.0.0.0')
    assert 'not-in-any-plan' not in repr(open_plan)
    declared = _declared(LAUNCH / 'team.launch.py'), _declared(LAUNCH / 'ed_floor.launch.py')
    assert all(d['fhir_port'][0] == '0' and d['fhir_host'][0] == '127.0.0.1' for d in declared)


PHYSICAL_ROBOT = '''
import json, sys
from robot_team.bringup.plan import plan_robot
from robot_team.bringup.platform import MOBILE_ROBOTS
arguments = json.loads(sys.argv[1])
for robot in MOBILE_ROBOTS:   # robot.launch.py's _robot: its arguments, map as map_yaml, discovery_range its own
    plan_robot(**{**arguments, 'robot': robot, 'staff_db': sys.argv[2]})
print(json.dumps(sorted(m for m in sys.modules if m.startswith('robot_team'))))
'''


def test_a_physical_robots_plan_loads_neither_the_simulator_nor_the_runner(tmp_path):
    """robot.launch.py's plan, in a fresh interpreter: no module of the simulator, the runner or a node is loaded."""
    declared = _declared(LAUNCH / 'robot.launch.py')
    arguments = {{'map': 'map_yaml'}.get(name, name): default for name, (default, _) in declared.items()
                 if name != 'discovery_range'}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])))
    run = subprocess.run([sys.executable, '-c', PHYSICAL_ROBOT, json.dumps(arguments), str(tmp_path / 's.sqlite')],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.splitlines()[-1])
    assert 'robot_team.bringup.plan' in loaded and 'robot_team.nodes_plan' in loaded
    assert [m for m in loaded if m.split('.')[:2] in (['robot_team', 'sim'], ['robot_team', 'runner'],
                                                      ['robot_team', 'agents'])] == []


def test_without_a_scenario_a_deployment_runs_until_stopped_with_the_hospitals_directory(tmp_path):
    from robot_team.contracts.config import load_staff_seed, share_dir
    from robot_team.directory import StaffDirectory
    hospital_db = tmp_path / 'hospital.sqlite'
    StaffDirectory.create(hospital_db, load_staff_seed(share_dir() / 'config' / 'staff.yaml')).close()
    plan = plans.plan_team(scenario='', staff=str(hospital_db), out_dir=str(tmp_path / 't'), end_with_episode='true')
    assert plan.paths['staff_db'] == str(hospital_db)     # used in place: its check-ins are the hospital's
    scenario = json.loads(Path(plan.paths['scenario']).read_text())
    assert scenario['patient'] is None and scenario['arrivals'] == [] and scenario['cases_at_once'] == 0
    manager = next(spec for spec in plan.nodes() if spec.name == 'manager')
    assert manager.parameters[0]['cases'] == 0            # no episode end: every arrival is served
    assert plan.recorder.executable == 'episode_recorder'  # records until stopped, a report per case
    floor = plans.plan_floor(scenario='', floor='ed_floor.yaml', out_dir=str(tmp_path / 'f'))
    assert json.loads(Path(floor.paths['scenario']).read_text())['patient'] is None
    with pytest.raises(ConfigError, match='staff: .*does not exist'):
        plans.plan_team(scenario='', staff=str(tmp_path / 'nowhere.sqlite'), out_dir=str(tmp_path / 'x'))
    with pytest.raises(ConfigError, match='floor: .*does not exist'):
        plans.plan_floor(scenario='', floor='no_such_floor.yaml', out_dir=str(tmp_path / 'y'))
    broken = tmp_path / 'broken.sqlite'
    broken.write_text('not a database')
    with pytest.raises(ConfigError, match='broken.sqlite'):
        plans.plan_team(scenario='', staff=str(broken), out_dir=str(tmp_path / 'z'))


def test_a_scenario_without_a_patient_is_refused_unless_it_is_open_ended(tmp_path):
    from robot_team.contracts.config import Scenario, deployment_scenario
    with pytest.raises(ValueError, match='patient: missing.*open_ended: true'):
        Scenario.model_validate({'name': 'forgot'})
    with pytest.raises(ValueError, match='arrivals without a patient'):
        Scenario.model_validate({'name': 'x', 'open_ended': True,
                                 'arrivals': [{'room': 'ER-1', 'assigned_hcw_id': '80'}]})
    assert deployment_scenario().open_ended and deployment_scenario().cases == []
