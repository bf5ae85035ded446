"""The launch files against ROS 2's real ``launch``/``launch_ros``, where they are installed (skipped elsewhere).

Every description builds with its defaults; a bad argument stops the launch before any process
starts; ``ed_floor.launch.py sim:=embedded`` completes the onboarding case, ends by itself and
writes report.json. The launch runs in a child process (``launch.LaunchService``, as ``ros2
launch`` does) with this environment's prefix on AMENT_PREFIX_PATH, where ``scripts/setup.sh``
installs the node executables (``lib/robot_team``).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Our own launch/ folder is importable as a namespace package named 'launch' from the source
# tree: require the real ROS 2 launch API, not just the name.
if not hasattr(pytest.importorskip('launch'), 'LaunchDescription'):
    pytest.skip('ROS 2 launch is not installed', allow_module_level=True)
pytest.importorskip('launch_ros')

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / 'launch'

RUNNER = textwrap.dedent('''
    import sys
    from launch import LaunchDescription, LaunchService
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    path, args = sys.argv[1], [a.split(':=', 1) for a in sys.argv[2:]]
    service = LaunchService()
    service.include_launch_description(LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(path), launch_arguments=args)]))
    sys.exit(service.run())
''')


def _env(domain_id):
    """This checkout first, then the PYTHONPATH of a sourced ROS 2 install (where launch lives there)."""
    def prepend(first, variable):
        return os.pathsep.join(filter(None, [first, os.environ.get(variable)]))
    return dict(os.environ, AMENT_PREFIX_PATH=prepend(sys.prefix, 'AMENT_PREFIX_PATH'),
                ROS_DOMAIN_ID=str(domain_id), PYTHONPATH=prepend(str(ROOT), 'PYTHONPATH'), PYTHONUNBUFFERED='1')


def _launch(name, args, domain_id, timeout, cwd):
    """Run the launch file as ``ros2 launch`` does, in a child process started outside the checkout.

    ``python -c`` puts its working directory first on sys.path; in the repository root our
    ``launch/`` folder would be found there, so the child runs in ``cwd`` (a test's tmp_path).
    """
    return subprocess.run([sys.executable, '-c', RUNNER, str(LAUNCH / name), *args], env=_env(domain_id),
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _load(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name.replace('.', '_'), LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


@pytest.mark.parametrize('name', ['ed_floor.launch.py', 'robot.launch.py', 'team.launch.py'])
def test_description_builds_and_declares_its_arguments(name):
    from launch.actions import DeclareLaunchArgument
    description = _load(name)
    declared = {a.name for a in description.entities if isinstance(a, DeclareLaunchArgument)}
    assert 'discovery_range' in declared and len(declared) >= 8


@pytest.mark.parametrize('name, opaque', [('ed_floor.launch.py', {}), ('robot.launch.py', {'nav2': 'true'}),
                                          ('team.launch.py', {})])
def test_opaque_functions_return_real_actions(tmp_path, name, opaque):
    """Evaluate each description's OpaqueFunction in a LaunchContext: real Node/Include actions come back."""
    from launch import LaunchContext
    from launch.actions import OpaqueFunction
    from launch_ros.actions import Node
    description = _load(name)
    context = LaunchContext()
    for entity in description.entities:
        if not isinstance(entity, OpaqueFunction):
            entity.visit(context)
    context.launch_configurations.update(out_dir=str(tmp_path), **opaque)
    function = next(e for e in description.entities if isinstance(e, OpaqueFunction))
    if name == 'robot.launch.py':
        pytest.importorskip('ament_index_python')
        from robot_team.bringup.plan import PlanError
        try:
            actions = function.execute(context)
        except PlanError as exc:        # no nav2_bringup here: named, before anything starts
            assert 'nav2_bringup' in str(exc)
            return
    else:
        actions = function.execute(context)
    assert any(isinstance(a, Node) for a in actions)


ROBOT_LAUNCH = textwrap.dedent('''
    import json, runpy, sys
    from launch import LaunchContext
    from launch.actions import OpaqueFunction
    from launch_ros.actions import Node
    description = runpy.run_path(sys.argv[1])['generate_launch_description']()
    context = LaunchContext()
    for entity in description.entities:
        if not isinstance(entity, OpaqueFunction):
            entity.visit(context)
    context.launch_configurations.update(staff_db=sys.argv[2])
    actions = next(e for e in description.entities if isinstance(e, OpaqueFunction)).execute(context)
    assert any(isinstance(a, Node) for a in actions), actions
    print(json.dumps(sorted(m for m in sys.modules if m.startswith('robot_team'))))
''')


def test_a_physical_robots_launch_loads_neither_the_simulator_nor_the_runner(tmp_path, domain_id):
    """robot.launch.py evaluated as ``ros2 launch`` does, in a fresh interpreter: its Node actions, no simulator."""
    run = subprocess.run([sys.executable, '-c', ROBOT_LAUNCH, str(LAUNCH / 'robot.launch.py'),
                          str(tmp_path / 's.sqlite')], env=_env(domain_id), capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.splitlines()[-1])
    assert 'robot_team.bringup.launch_actions' in loaded
    assert [m for m in loaded if m.split('.')[:2] in (['robot_team', 'sim'], ['robot_team', 'runner'],
                                                      ['robot_team', 'agents'])] == []


def test_team_nodes_respawn_and_get_the_dds_profile_unless_one_is_set(tmp_path, monkeypatch):
    """The real launch_ros Node takes respawn, respawn_delay and respawn_max_retries (launch >= Iron)."""
    from launch.actions import SetEnvironmentVariable
    from launch_ros.actions import Node

    from robot_team.bringup.launch_actions import plan_actions
    from robot_team.bringup.plan import plan_team
    from robot_team.run.restarts import FASTDDS_PROFILES_VARIABLE
    monkeypatch.delenv(FASTDDS_PROFILES_VARIABLE, raising=False)
    actions = plan_actions(plan_team(out_dir=str(tmp_path / 'a')))
    assert len([a for a in actions if isinstance(a, SetEnvironmentVariable)]) == 1
    nodes = [a for a in actions if isinstance(a, Node)]
    retries = [getattr(n, '_ExecuteLocal__respawn_max_retries') for n in nodes]
    assert sorted(retries) == [-1, 3, 3, 3]      # supervisor, operator, manager respawn; the recorder does not
    monkeypatch.setenv(FASTDDS_PROFILES_VARIABLE, '/etc/mine.xml')   # the user's profile is kept
    actions = plan_actions(plan_team(out_dir=str(tmp_path / 'b')))
    assert not [a for a in actions if isinstance(a, SetEnvironmentVariable)]


@pytest.mark.timeout(120)
def test_bad_argument_stops_before_anything_starts(tmp_path, domain_id):
    result = _launch('ed_floor.launch.py', ['sim:=webots', f'out_dir:={tmp_path}'], domain_id, 90, tmp_path)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'sim' in text and 'webots' in text and 'embedded' in text
    assert 'process started' not in text and not (tmp_path / 'staff.sqlite').exists()


@pytest.mark.timeout(300)
def test_ed_floor_embedded_completes_onboarding_and_ends_by_itself(tmp_path, domain_id):
    result = _launch('ed_floor.launch.py', ['sim:=embedded', 'scenario:=onboarding', f'out_dir:={tmp_path}'],
                     domain_id, 240, tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    report = json.loads((tmp_path / 'report.json').read_text())
    assert report['outcome'] == 'success' and report['outcome_as_expected'], report
    assert report['mode'] == 'launch' and report['events']['complete']
    assert {t['name'] for t in report['tasks']} == {'navigation', 'info_collection', 'display'}
    assert (tmp_path / 'events.mcap').exists() and (tmp_path / 'events.jsonl').exists()


@pytest.mark.timeout(300)
def test_ed_floor_without_a_scenario_serves_an_encounter_and_records_until_stopped(tmp_path, domain_id):
    import signal
    import time
    from fhir_samples import encounter, free_port, listening, notification, post
    port = free_port()
    out = tmp_path / 'run'
    launch = subprocess.Popen([sys.executable, '-c', RUNNER, str(LAUNCH / 'ed_floor.launch.py'), 'scenario:=',
                               f'fhir_port:={port}', f'out_dir:={out}'], env=_env(domain_id), cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.5)
        body = notification(encounter('enc-l', patient='P-6200', room='ER-10', hcw='80', esi=2))
        assert post(port, body, timeout_s=15)[0] == 200
        case_file = out / 'cases' / 'P-6200.json'
        deadline = time.monotonic() + 150
        while not case_file.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert json.loads(case_file.read_text())['outcome'] == 'success'
        assert launch.poll() is None      # no episode end: the launch records until stopped
    finally:
        launch.send_signal(signal.SIGINT)
        output, _ = launch.communicate(timeout=60)
    report = json.loads((out / 'report.json').read_text())
    assert report['outcome'] == 'interrupted', output[-3000:]
    assert [c['patient_id'] for c in report['cases']] == ['P-6200']
