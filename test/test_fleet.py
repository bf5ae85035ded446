"""A fleet: several robots per role (issue 27, item 3), named and placed as one.

A fleet's robots are ``<role>_1``, ``<role>_2``... (nav2_bringup's multi-robot naming), each its
own node in its own namespace, docked at its own dock. Their role is what ownership checks; their
name is what the gate, the liveness watch, the hold's cancels and the simulator use. The cores'
behaviour with a fleet is in ``test_cases_at_once``; a real graph in ``test_second_patient``.
"""

import json

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from robot_team.agents.supervisor_node import hold_cancels
from robot_team.catalog import role_of
from robot_team.cli import app
from robot_team.contracts.config import load_scenario
from robot_team.contracts.floor import FloorError, load_floor
from robot_team.run.lifecycle import EXIT_BAD_INPUT
from robot_team.contracts.liveness import watched
from robot_team.brains.protocol import protocol_robot_brain
from robot_team.contracts.names import (
    OPERATIONAL_ROLES, Role, fleet_robots, parse_fleet, role_name, validate_robots)
from robot_team.core.robot import RobotCore
from robot_team.tools.base import Toolbox
from robot_team.nodes_plan import team_nodes
from robot_team.run.episode import Episode
from robot_team.sim.motion import MotionEngine
from robot_team.sim.world import load_world

FLEETS = st.fixed_dictionaries({role: st.integers(1, 12) for role in OPERATIONAL_ROLES})


@settings(max_examples=40, deadline=None)
@given(FLEETS)
def test_a_fleets_robots_are_named_after_their_role_and_parse_back(fleet):
    robots = [r for role, n in fleet.items() for r in fleet_robots(role, n)]
    assert validate_robots(robots) == robots and len(set(robots)) == sum(fleet.values())
    assert {r: role_name(r) for r in robots} == {r: role for role, n in fleet.items() for r in fleet_robots(role, n)}
    assert all(role_of(r).role.value == role_name(r) for r in robots)
    assert parse_fleet(','.join(f'{role}={n}' for role, n in fleet.items())) == fleet
    assert fleet_robots('display_robot', 1) == ['display_robot']   # one robot: the role's own name


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(list(Role)), st.integers(2, 12))
def test_a_role_is_its_name_wherever_a_name_goes(role, n):
    # A Role member in an f-string, str() or JSON is its value: a fleet's name built from the
    # member, a log line, a node name never read 'Role.NAVIGATION'.
    assert f'{role}_{n}' == f'{role.value}_{n}' and str(role) == role.value
    assert json.loads(json.dumps({'role': role})) == {'role': role.value}
    assert Role(str(role)) is role
    assert role_name(f'{role}_{n}') == (role if role in OPERATIONAL_ROLES else f'{role}_{n}')


def test_a_robot_core_keeps_its_role_as_a_role_and_refuses_an_unknown_one():
    brain = protocol_robot_brain('display_robot')
    core = RobotCore('display_robot', brain, Toolbox('display_robot_2'), emit=lambda *a, **k: None,
                     now=lambda: 0.0, robot='display_robot_2')
    assert core.role is Role.DISPLAY and core.robot == 'display_robot_2'
    with pytest.raises(ValueError, match="unknown robot role 'vacuum_robot'"):
        RobotCore('vacuum_robot', brain, Toolbox('vacuum_robot'), emit=lambda *a, **k: None, now=lambda: 0.0)


@pytest.mark.parametrize('name', ['manager', 'navigation_robot_0', 'navigation_robot_x', 'vacuum_robot_2',
                                  'navigation_robot_1_2'])
def test_a_name_outside_every_role_keeps_its_own_role_name(name):
    assert role_name(name) == name
    with pytest.raises(KeyError):
        role_of(name)


@pytest.mark.parametrize('text, why', [('nav=2', "'nav=2'"), ('navigation_robot=0', 'at least 1'),
                                       ('navigation_robot', 'expected <role>=<count>'), ('manager=2', "'manager=2'")])
def test_bad_fleet_text_names_the_part_and_what_was_expected(text, why):
    with pytest.raises(ValueError, match='--fleet part') as raised:
        parse_fleet(text, '--fleet')
    assert why in str(raised.value)


@pytest.mark.parametrize('robots, why', [
    (['navigation_robot', 'info_collection_robot'], 'no robot for'),
    (['navigation_robot', 'navigation_robot', 'info_collection_robot', 'display_robot'], 'repeated'),
    (['navigation_robot', 'info_collection_robot', 'display_robot', 'manager'], 'not robots of a role'),
])
def test_a_robots_parameter_needs_every_role_once(robots, why):
    with pytest.raises(ValueError, match='manager parameter robots') as raised:
        validate_robots(robots, 'manager parameter robots')
    assert why in str(raised.value)


def test_a_scenario_fleet_gives_the_robots_and_a_bad_one_is_refused():
    base = load_scenario('onboarding')
    assert base.robots == list(OPERATIONAL_ROLES)
    fleet = base.model_validate({**base.model_dump(), 'fleet': {'navigation_robot': 2, 'display_robot': 1}})
    assert fleet.robots == ['navigation_robot_1', 'navigation_robot_2', 'info_collection_robot', 'display_robot']
    with pytest.raises(ValidationError, match='scenario fleet part'):
        base.model_validate({**base.model_dump(), 'fleet': {'nurse_robot': 2}})


def test_each_robot_of_a_fleet_of_two_per_role_has_its_own_dock_in_the_robot_bay():
    floor = load_floor('ed_floor.yaml')
    robots = [r for role in OPERATIONAL_ROLES for r in fleet_robots(role, 2)]
    docks = {r: floor.dock(r).pose for r in robots}
    assert len({(p.x, p.y) for p in docks.values()}) == len(robots)
    bay = floor.room('Robot bay')
    assert all(bay.contains(p.x, p.y) for p in docks.values()), docks
    assert floor.dock('navigation_robot_1') == floor.dock('navigation_robot')   # the first uses the role's
    with pytest.raises(FloorError, match='navigation_robot_3'):
        floor.dock('navigation_robot_3')
    # the embedded simulator starts each robot at its own dock
    scenario = load_scenario('onboarding')
    engine = MotionEngine(load_world(scenario.floor_path), robots=robots)
    assert {r: (engine.robot_pose(r).x, engine.robot_pose(r).y) for r in robots} == {
        r: (p.x, p.y) for r, p in docks.items()}


def test_the_supervisor_watches_and_the_hold_stops_every_robot_of_the_fleet():
    robots = [*fleet_robots('navigation_robot', 2), 'info_collection_robot', 'display_robot']
    cancels = hold_cancels(robots)
    for robot in robots:
        assert f'{robot}/execute_task' in cancels
    for robot in robots[:2]:
        assert {f'{robot}/navigate_to_pose', f'{robot}/follow_path'} <= set(cancels)
    assert not [c for c in cancels if c.startswith(('info_collection_robot/navigate', 'navigation_robot/'))]
    assert set(robots) <= set(watched(robots)) and 'navigation_robot' not in watched(robots)
    assert {'manager', 'hospital_systems', 'motion_sim'} <= set(watched(robots))


def test_the_runner_starts_every_robot_of_the_fleet_as_its_own_node_in_its_own_namespace(tmp_path):
    base = load_scenario('onboarding')
    scenario = base.model_copy(update={'fleet': {'navigation_robot': 2}})
    assert team_nodes(scenario) == ['supervisor', 'scripted_operator', 'navigation_robot_1', 'navigation_robot_2',
                                    'info_collection_robot', 'display_robot', 'manager']
    alone = Episode(scenario, tmp_path)
    # one process per node: `-m robot_team.agents.robot_node navigation_robot` renamed and moved
    assert alone._namespace_args('navigation_robot_2') == ['-r', '__node:=navigation_robot_2',
                                                           '-r', '__ns:=/navigation_robot_2']
    assert alone._namespace_args('display_robot') == []
    floor2 = Episode(scenario, tmp_path, namespace='floor2')
    assert floor2._namespace_args('navigation_robot_1')[:4] == ['-r', '__node:=navigation_robot_1',
                                                                '-r', '__ns:=/floor2/navigation_robot_1']


def test_the_hospital_waits_for_the_manager_the_supervisor_and_every_info_and_display_robot(tmp_path):
    from robot_team.nodes_plan import hospital_readers
    base = load_scenario('onboarding')
    assert hospital_readers(base) == {'arrival_readers': 2, 'badge_scan_readers': 1, 'display_readers': 1}
    fleet = base.model_copy(update={'fleet': {'info_collection_robot': 3, 'navigation_robot': 2, 'display_robot': 2}})
    assert hospital_readers(fleet) == {'arrival_readers': 2, 'badge_scan_readers': 3, 'display_readers': 2}
    # what the runner gives hospital_systems (one process per node, or in one process)
    params = Episode(fleet, tmp_path, processes=True).team.sim_parameters('hospital_systems', {
        'scenario': 'x', 'hospital_state': 'y'})
    assert (params['arrival_readers'], params['badge_scan_readers'], params['display_readers']) == (2, 3, 2)


def test_the_commands_refuse_a_bad_fleet_as_bad_input(tmp_path):
    result = CliRunner().invoke(app, ['run', '--fleet', 'navigation_robot=two', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == EXIT_BAD_INPUT and '--fleet part' in result.output, result.output


def test_the_protocol_manager_waits_only_when_every_robot_of_the_role_is_lost():
    from robot_team.brains.base import Delegate, ManagerObservation, PatientInfo
    from robot_team.brains.protocol import ManagerProtocolBrain
    fleet = [*fleet_robots('navigation_robot', 2), 'info_collection_robot', 'display_robot']
    obs = ManagerObservation(patient=PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='80'),
                             staff_ids=['80'], robots=fleet, lost_robots=['navigation_robot_1'])
    [step] = ManagerProtocolBrain().decide(obs)
    assert isinstance(step, Delegate) and step.robot == 'navigation_robot'   # the manager picks its robot
    assert ManagerProtocolBrain().decide(obs.model_copy(update={'lost_robots': fleet[:2]})) == []


def _event(t, actor, kind, **data):
    from robot_team.contracts.events import TeamEventModel
    return TeamEventModel(stamp_s=t, wall_time=0.0, seq=1, actor=actor, kind=kind, data=data)


@pytest.mark.parametrize('second_robot_idle', [False, True])
def test_a_shift_record_shows_each_wait_beside_an_idle_robot_and_a_robot_given_to_a_less_urgent_case(
        second_robot_idle):
    from robot_team.evaluation.shift_run import robot_spans, robot_waits
    fleet = [*fleet_robots('navigation_robot', 2), 'info_collection_robot', 'display_robot']
    events = [_event(0, 'manager', 'delegation', task_id='A/nav-1', robot='navigation_robot_1', case_id='A'),
              _event(5, 'manager', 'observation', cue='waiting_for_robot', robot='navigation_robot', case_id='B'),
              _event(9, 'navigation_robot_1', 'task_report', task_id='A/nav-1'),
              _event(10, 'manager', 'judgment', task_id='A/nav-1'),
              _event(10, 'manager', 'delegation', task_id='C/nav-1', robot='navigation_robot_1', case_id='C'),
              _event(20, 'manager', 'judgment', task_id='C/nav-1'),
              _event(20, 'manager', 'delegation', task_id='B/nav-1', robot='navigation_robot_1', case_id='B'),
              _event(30, 'manager', 'judgment', task_id='B/nav-1')]
    if not second_robot_idle:   # the other robot escorts for case D all along
        events[:0] = [_event(0, 'manager', 'delegation', task_id='D/nav-1', robot='navigation_robot_2', case_id='D')]
        events.append(_event(40, 'manager', 'judgment', task_id='D/nav-1'))
    spans = robot_spans(events)
    assert spans['navigation_robot_1'] == [(0, 10, 'A'), (10, 20, 'C'), (20, 30, 'B')]   # until judged
    waits = robot_waits(events, spans, fleet, {'A': 3, 'B': 2, 'C': 5, 'D': 3})
    assert waits['waits'] == 1
    assert waits['beside_an_idle_robot'] == ([{'patient_id': 'B', 'robot': 'navigation_robot_2', 'idle_s': 15.0}]
                                             if second_robot_idle else [])
    assert robot_waits(events, spans, fleet, {}, step_s=15.0)['beside_an_idle_robot'] == []   # within a clock step
    assert waits['behind_less_urgent'] == [{'patient_id': 'B', 'given_to': 'C', 'robot': 'navigation_robot_1',
                                            'at_s': 10}]
