"""An episode's lifecycle: nothing outlives it, signals stop a run with its report, exit codes say the outcome.

- Two in-process episodes back to back, the first ending with an LLM request in flight: after
  it, no thread it started is alive and no request is in flight (client and server side), and
  the second episode runs clean (no callback on a destroyed node), its record and report on disk
  before its executor and nodes are destroyed.
- ``robot-team run`` (a subprocess) stopped by SIGTERM while the manager waits on its LLM, and
  by Ctrl-C (SIGINT to the process group) with one process per node: it stops within seconds,
  exits 128 + the signal, and writes ``report.json`` (outcome ``interrupted``) and the record.
- Exit codes: 0 for the scenario's expected outcome, 1 for another, 2 for bad input.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llm_scripts import use_llm_server
from ros_helpers import wait_for
from robot_team.contracts.config import load_scenario
from robot_team.llm import scripted
from robot_team.llm.fakeserver import Fault, ScriptedServer
from robot_team.llm.inflight import in_flight
from robot_team.recorder import read_jsonl

pytest.importorskip('rclpy')
pytest.importorskip('robot_team.sim.motion_node')

ROOT = Path(__file__).resolve().parent.parent
STOP_WITHIN_S = 10.0
"""Wall seconds a signalled run may take to stop and write its report (the goal: a few seconds)."""


def hanging_manager(server, n=50, delay_s=120.0):
    """Make every manager request hang for ``delay_s`` (longer than any test)."""
    server.add_fault('manager', *[Fault(status=500, delay_s=delay_s) for _ in range(n)])


def test_two_in_process_episodes_back_to_back_leave_nothing_running(tmp_path, domain_id, monkeypatch, capfd):
    from robot_team.run.episode import Episode, run_episode
    with ScriptedServer(scripted.ideal_policies()) as server:
        use_llm_server(monkeypatch, server)
        monkeypatch.setenv('ROBOT_TEAM_LLM_TIMEOUT_S', '100')
        hanging_manager(server)
        before = set(threading.enumerate())
        # Ends at its time limit before the decision deadline (120 s), 5.5 s of wall time after the
        # patient's arrival: long enough for the manager's first request to reach the server.
        short = load_scenario('onboarding').model_copy(update={'time_limit_s': 110.0})
        first = run_episode(short, tmp_path / 'first', brain='openai', domain_id=domain_id,
                            brain_options={'kb': False}, real_time_factor=20.0, clock='wall')
        # Episode 1 ended at its time limit with the manager's request in flight; it was cancelled.
        assert first.report['outcome'] == 'timeout'
        cancelled = [e for e in first.events if e.kind == 'llm_error' and e.data.get('cancelled')]
        assert [e.data['robot'] for e in cancelled] == ['manager']
        assert first.report['teardown'] == {'clean': True, 'nodes_not_stopped': [], 'callbacks_finished': True,
                                            'threads_left': [], 'llm_requests_in_flight': 0}
        assert in_flight() == 0
        assert len(server.requests_of('manager')) == 1     # it reached the server and hung there...
        assert wait_for(lambda: server.in_flight == 0, timeout=2.0)
        assert server.abandoned == 1                       # ...until the client went away
        left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
        assert left == []
        capfd.readouterr()
        server.faults.clear()
        # The record and the report are on disk before the executor and the nodes are destroyed
        # (a native crash there must not lose them); the report says so until the teardown ended.
        on_disk = {}
        destroy = Episode._destroy

        def destroy_seen(episode, *args):
            on_disk['report'] = json.loads((episode.out_dir / 'report.json').read_text())
            on_disk['events'] = len(read_jsonl(episode.out_dir / 'events.jsonl'))
            return destroy(episode, *args)
        monkeypatch.setattr(Episode, '_destroy', destroy_seen)
        # (the follow clock: its decisions do not depend on how busy the machine is)
        second = run_episode('onboarding', tmp_path / 'second', brain='openai', domain_id=domain_id,
                             brain_options={'kb': False})
        assert second.report['outcome'] == 'success' and second.report['teardown']['clean']
        assert on_disk['events'] == len(second.events) and on_disk['report']['outcome'] == 'success'
        assert on_disk['report']['teardown']['clean'] is False and 'pending' in on_disk['report']['teardown']
        assert json.loads((tmp_path / 'second' / 'report.json').read_text())['teardown'] == second.report['teardown']
        assert not [e for e in second.events if e.kind == 'llm_error']
        assert second.report['events']['complete']
        err = capfd.readouterr().err
        assert 'InvalidHandle' not in err and 'Traceback' not in err and 'destroyed' not in err
        assert [t.name for t in threading.enumerate() if t not in before and t.is_alive()] == []


def start_cli(args, out, env, **popen):
    """Start ``robot-team run`` (this tree's CLI) as a subprocess writing to ``out``."""
    env = dict(env, PYTHONPATH=str(ROOT) + os.pathsep + env.get('PYTHONPATH', ''),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    return subprocess.Popen([sys.executable, '-m', 'robot_team.cli', 'run', '--out', str(out), '--quiet', *args],
                            env=env, cwd=out.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


def finish(proc, timeout_s):
    """Return ``(returncode, output, seconds)`` of ``proc``, killing it if it does not end in ``timeout_s``."""
    start = time.monotonic()
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f'robot-team run did not stop within {timeout_s} s:\n{output[-3000:]}')
    return proc.returncode, output, time.monotonic() - start


def test_sigterm_stops_a_run_waiting_on_its_llm_and_writes_the_report(tmp_path, domain_id):
    out = tmp_path / 'run'
    with ScriptedServer(scripted.ideal_policies()) as server:
        hanging_manager(server)
        env = dict(os.environ, ROBOT_TEAM_LLM_BASE_URL=server.base_url, ROBOT_TEAM_LLM_API_KEY='test-key',
                   ROBOT_TEAM_LLM_TIMEOUT_S='100', ROBOT_TEAM_LLM_FALLBACK='fail')
        proc = start_cli(['--brain', 'openai', '--no-kb', '--domain-id', str(domain_id)], out, env,
                         start_new_session=True)
        try:
            assert wait_for(lambda: server.in_flight or proc.poll() is not None, timeout=90.0)
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            code, output, took = finish(proc, STOP_WITHIN_S)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert wait_for(lambda: server.in_flight == 0, timeout=2.0) and server.abandoned == 1
    assert code == 128 + signal.SIGTERM, output[-3000:]
    report = json.loads((out / 'report.json').read_text())
    assert (report['outcome'], report['interrupted_by']) == ('interrupted', 'SIGTERM')
    assert report['teardown']['clean'] and report['teardown']['llm_requests_in_flight'] == 0
    events = read_jsonl(out / 'events.jsonl')
    assert [e.data['robot'] for e in events if e.kind == 'llm_error' and e.data.get('cancelled')] == ['manager']
    [finished] = [e for e in events if e.kind == 'episode_finished']
    assert finished.data['outcome'] == 'interrupted' and finished.actor == 'runner'
    assert 'interrupted' in output and 'SIGTERM' in output


def test_ctrl_c_stops_a_run_with_one_process_per_node(tmp_path, domain_id):
    out = tmp_path / 'run'
    proc = start_cli(['--processes', '--domain-id', str(domain_id), '--real-time-factor', '2', '--log-level',
                      'info'], out, dict(os.environ), start_new_session=True)   # its own group, as a terminal's job
    sim_log = out / 'logs' / 'hospital_systems.log'

    def team_at_work():
        return proc.poll() is not None or (sim_log.exists() and 'arrived in ER-12' in sim_log.read_text())
    try:
        assert wait_for(team_at_work, timeout=90.0)
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)                   # Ctrl-C: the whole group
        code, output, took = finish(proc, STOP_WITHIN_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 128 + signal.SIGINT, output[-3000:]
    report = json.loads((out / 'report.json').read_text())
    assert (report['outcome'], report['interrupted_by'], report['mode']) == ('interrupted', 'SIGINT', 'processes')
    events = read_jsonl(out / 'events.jsonl')
    assert {e.actor for e in events if e.kind == 'node_started'} >= {'manager', 'supervisor', 'navigation_robot'}
    assert [e for e in events if e.actor == 'hospital_systems' and e.kind == 'sim']   # the floor ran: the record so far
    assert not [e for e in events if e.kind in ('node_crashed', 'node_restarted')]   # Ctrl-C: nothing restarts
    assert report['restarts']['restarts'] == {}
    with pytest.raises(ProcessLookupError):                  # no node of the run is left
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            os.killpg(proc.pid, 0)
            time.sleep(0.1)


def test_sigint_while_a_robot_waits_on_a_page_stops_at_once_in_process(tmp_path, domain_id):
    """The simulator holds the page in sim time; the stop releases it (it once hung the executor's shutdown)."""
    from robot_team.run.episode import run_episode
    paging, sent = threading.Event(), []

    def on_event(event):
        if event.kind == 'tool_call' and event.target == 'page_staff':
            paging.set()

    def interrupt():
        if paging.wait(90.0):
            time.sleep(0.5)                                  # the page is waiting for HCW #80 (30 s of sim time)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)              # delivered to the main thread: the run's handler
    helper = threading.Thread(target=interrupt, daemon=True)
    helper.start()
    result = run_episode('onboarding', tmp_path, domain_id=domain_id, real_time_factor=2.0, on_event=on_event,
                         clock='wall')
    stopped = time.monotonic()
    helper.join(timeout=5)
    assert sent, 'the page was never sent'
    report = result.report
    assert (report['outcome'], report['interrupted_by']) == ('interrupted', 'SIGINT')
    assert stopped - sent[0] < 5.0 and report['teardown']['clean'], report['teardown']
    interrupted = next(e for e in result.events if e.kind == 'episode_finished')
    page = [e for e in result.events if e.kind == 'tool_result' and e.target == 'page_staff']
    assert page and page[0].stamp_s >= interrupted.stamp_s and not page[0].data['ok']   # released, recorded
    assert [e for e in result.events if e.kind == 'task_report' and e.data['task_id'] == 'nav-1']


def test_exit_code_says_whether_the_outcome_was_the_expected_one(tmp_path, domain_id):
    from robot_team.cli import app
    expected = CliRunner().invoke(app, ['run', '--scenario', 'all_available', '--out', str(tmp_path / 'ok'),
                                        '--domain-id', str(domain_id), '--quiet', '--real-time-factor', '80'])
    assert expected.exit_code == 0, expected.output
    scenario = load_scenario('all_available').model_copy(update={'name': 'expects_escalation',
                                                                 'expected_outcome': 'escalated'})
    path = tmp_path / 'expects_escalation.yaml'
    path.write_text(json.dumps(scenario.model_dump(mode='json')))   # JSON is YAML
    unexpected = CliRunner().invoke(app, ['run', '--scenario', str(path), '--out', str(tmp_path / 'no'),
                                          '--domain-id', str(domain_id), '--quiet', '--real-time-factor', '80'])
    assert unexpected.exit_code == 1, unexpected.output
    assert 'expected escalated' in unexpected.output and 'success' in unexpected.output
    bad = CliRunner().invoke(app, ['run', '--scenario', str(tmp_path / 'missing.yaml'), '--out', str(tmp_path / 'x')])
    assert bad.exit_code == 2
