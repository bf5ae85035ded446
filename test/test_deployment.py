"""A deployment without a scenario (issue 28, item 4): the launch plan run as launch runs it.

``plan_floor(scenario='')`` (``ed_floor.launch.py scenario:=''``) with the hospital's own SQLite
staff directory (HCWs and rooms unlike the shipped scenarios') and the FHIR gateway: every node
of the plan runs as its own process, started from the executables CMakeLists.txt installs with
the plan's parameters in a parameter file read by rcl's own parser, the simulator once
``team_ready`` exits 0 (what ``robot_team.bringup.launch_actions`` asks of ``launch``; real
``launch`` runs the same plan in test/test_launch.py where it is installed). A real HTTP client
posts an emergency Encounter built with ``fhir.resources``; the team serves the case; the
recorder writes ``cases/<patient>.json`` as the case closes while it goes on recording, the
check-in lands in the hospital's directory (used in place), and a stop (SIGINT, as Ctrl-C)
ends the record with ``report.json``.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from fhir_samples import encounter, free_port, listening, notification, post
from robot_team.bringup.plan import NodeSpec, plan_floor
from robot_team.contracts.config import StaffMember, StaffSeed
from robot_team.directory import StaffDirectory
from robot_team.evaluation.truth import audit, load_truth

ROOT = Path(__file__).resolve().parent.parent

STAFF = StaffSeed(staff=[
    StaffMember(hcw_id='314', badge_id='H-0314', name='Dr. Ines Duarte', specialty='Physician', area='ER-5'),
    StaffMember(hcw_id='27', badge_id='H-0027', name='Kofi Mensah', specialty='Nurse', area='Nurses station'),
    StaffMember(hcw_id='508', badge_id='H-0508', name='Dr. Aiko Sato', specialty='Physician', area='Resuscitation',
                availability='busy'),
])


def _targets() -> dict[str, str]:
    """Executable -> 'module:function', from CMakeLists.txt (the one list of node executables)."""
    block = re.search(r'set\(_nodes(.*?)\)', (ROOT / 'CMakeLists.txt').read_text(), re.S).group(1)
    return {name: target if ':' in target else f'{target}:main'
            for name, target in re.findall(r'"([a-z_]+)=([^"]+)"', block)}


class PlanProcesses:
    """Start a plan's nodes as processes, one each, as ``launch_ros`` would (name, namespace, parameter file)."""

    def __init__(self, out_dir: Path, env: dict):
        self.out_dir, self.env, self.procs = out_dir, env, {}
        self.targets = _targets()
        (out_dir / 'logs').mkdir(exist_ok=True)

    def start(self, spec: NodeSpec) -> subprocess.Popen:
        module, function = self.targets[spec.executable].split(':')
        params: dict = {}
        for part in spec.parameters:
            params.update(part)
        params_file = self.out_dir / 'logs' / f'{spec.name}.params.yaml'
        params_file.write_text(yaml.safe_dump({'/**': {'ros__parameters': params}}))
        argv = [sys.executable, '-c', f'import sys; from {module} import {function}; sys.exit({function}())',
                '--ros-args', '-r', f'__node:={spec.name}', '--params-file', str(params_file)]
        if spec.namespace:
            argv += ['-r', f'__ns:={spec.namespace}']
        for remap in spec.remappings:
            argv += ['-r', f'{remap[0]}:={remap[1]}']
        with open(self.out_dir / 'logs' / f'{spec.name}.log', 'w') as log:
            self.procs[spec.name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        return self.procs[spec.name]

    def log(self, name: str) -> str:
        return (self.out_dir / 'logs' / f'{name}.log').read_text()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f'{what} did not happen within {timeout_s:.0f} s')


def test_a_deployment_serves_an_encounter_reports_its_case_as_it_closes_and_records_until_stopped(
        tmp_path, domain_id):
    hospital_db = tmp_path / 'hospital' / 'staff.sqlite'
    hospital_db.parent.mkdir()
    StaffDirectory.create(hospital_db, STAFF).close()
    port = free_port()
    out = tmp_path / 'run'
    plan = plan_floor(scenario='', staff=str(hospital_db), out_dir=str(out), fhir_port=str(port),
                      clock='follow')   # sim time follows the team: the same decisions on a loaded machine
    assert plan.paths['staff_db'] == str(hospital_db)          # the hospital's directory, used in place
    assert json.loads(Path(plan.paths['scenario']).read_text())['patient'] is None
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED='1')
    env.update({k: v for k, v in plan.environment_defaults.items() if not os.environ.get(k)})
    nodes = PlanProcesses(out, env)
    try:
        for spec in [*plan.first, plan.recorder]:
            nodes.start(spec)
        assert nodes.start(plan.team_ready).wait(timeout=120) == 0, nodes.log('team_ready')
        for spec in plan.after_team:
            nodes.start(spec)
        _wait_for(lambda: listening(port), 30, 'the FHIR gateway listening')
        body = notification(encounter('enc-dep-1', patient='P-9100', room='ER-9', hcw='314', esi=3))
        assert post(port, body, timeout_s=15)[0] == 200
        case_file = out / 'cases' / 'P-9100.json'
        _wait_for(case_file.exists, 180, "the case's report")
        case = json.loads(case_file.read_text())
        assert case['case_id'] == 'P-9100' and case['outcome'] == 'success', case
        assert case['case']['room'] == 'ER-9' and case['case']['esi_level'] == 3
        assert case['case']['door_to_provider_s'] is not None
        assert {t['name'] for t in case['tasks'] if t['judged_status'] == 'success'} >= {
            'navigation', 'info_collection', 'display'}
        assert nodes.procs['team_recorder'].poll() is None       # recording goes on: no episode end
        journal = [json.loads(line) for line in (out / 'events.jsonl').read_text().splitlines()]
        assert any(e['kind'] == 'case_closed' and e['data'].get('case_id') == 'P-9100' for e in journal)
        with StaffDirectory(hospital_db) as directory:           # the check-in is the hospital's
            assert [(c.room, c.hcw_id) for c in directory.check_ins()] == [('ER-9', '314')]
    finally:
        nodes.stop()
    report = json.loads((out / 'report.json').read_text())
    assert report['outcome'] == 'interrupted' and report['scenario'] == 'deployment'
    assert report['files']['cases'] == {'P-9100': str(case_file)}
    assert [c['patient_id'] for c in report['cases']] == ['P-9100'] and report['events']['complete']
    found = audit(out)   # the world audit reads a deployment's record too (the hospital's directory in place)
    assert found.false_successes == [] and not found.unanswered_tool_calls and not found.unanswered_requests
    assert load_truth(out).patient.patient_id == 'P-9100'


def test_robot_team_run_without_a_scenario_serves_until_interrupted(tmp_path, domain_id):
    """``robot-team run --scenario ''`` (no launch needed): the same deployment in one process, ended by SIGINT."""
    port, out = free_port(), tmp_path / 'run'
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               PYTHONPATH=str(ROOT))
    run = subprocess.Popen([sys.executable, '-m', 'robot_team.cli', 'run', '--scenario', '', '--fhir-port', str(port),
                            '--out', str(out), '--domain-id', str(domain_id), '--quiet'],
                           env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(lambda: listening(port) or run.poll() is not None, 90, 'the FHIR gateway listening')
        body = notification(encounter('enc-cli-1', patient='P-9200', room='ER-2', hcw='41', esi=4))
        assert post(port, body, timeout_s=15)[0] == 200
        case_file = out / 'cases' / 'P-9200.json'
        _wait_for(case_file.exists, 180, "the case's report")
        assert json.loads(case_file.read_text())['outcome'] == 'success'
        assert run.poll() is None      # no episode end: it serves until stopped
    finally:
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=60)
    assert run.returncode == 130, output[-3000:]
    report = json.loads((out / 'report.json').read_text())
    assert report['outcome'] == 'interrupted' and report['files']['cases'] == {'P-9200': str(case_file)}
    assert [c['patient_id'] for c in report['cases']] == ['P-9200'] and report['events']['complete']
