"""Restart of a node that dies (issue 19): the policy, the runner's bookkeeping, DDS liveliness, a real kill.

- :class:`robot_team.run.restarts.RestartPolicy` without ROS: delay, attempts, exhaustion, never;
- the runner's wiring without ROS: a node process that always exits nonzero is restarted
  ``max_restarts`` times with the same command line, its log appended, then stays down
  (recorded); a node that dies during start-up is still a start error, never restarted;
- the team's Fast DDS profile: a ``kill -9``'d process's node leaves the graph (and its action
  server stops being ready) within 5 s, where Fast DDS's default lease keeps it for 20 s;
- a real episode with one process per node: the display robot killed with SIGKILL is recorded
  as crashed, restarted (another pid) and announces itself again, and sim time stands still
  meanwhile (the runner's hold, :mod:`robot_team.run.restart_holds`). The episode's outcome is not
  asserted here (recovering the lost robot's task is the workflow's part of issue 19).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from robot_team.contracts.clock_sync import DEFAULT_MAX_STEP_SIZE_S
from robot_team.contracts.config import load_scenario
from robot_team.contracts.events import EventKind
from robot_team.run.restarts import (FASTDDS_PROFILES_VARIABLE, RestartError, RestartPolicy, dds_environment,
                                     liveness_profile)
from robot_team.run.episode import Episode

from ros_helpers import wait_for


# -- the policy, no ROS --

def test_a_crash_is_restarted_after_the_delay_until_the_most_restarts():
    policy = RestartPolicy(max_restarts=2, delay_s=0.5)
    first = policy.crashed('display_robot', now_s=10.0)
    assert (first.restart, first.attempt, first.due_s) == (True, 1, 10.5)
    assert policy.pending('display_robot') and policy.due(10.4) == []     # not before the delay
    assert [d.node for d in policy.due(10.5)] == ['display_robot'] and not policy.pending()
    assert policy.attempts == {'display_robot': 1} and policy.can_restart('display_robot')
    assert policy.crashed('display_robot', 20.0).attempt == 2 and policy.due(21.0)[0].attempt == 2
    last = policy.crashed('display_robot', 30.0)
    assert (last.restart, last.reason, last.attempt) == (False, 'exhausted', 2)
    assert not policy.can_restart('display_robot') and policy.due(99.0) == []
    assert policy.crashed('manager', 31.0).restart        # attempts are per node
    assert policy.summary({'display_robot'})['down'] == ['display_robot']


def test_never_restarted_nodes_and_zero_restarts():
    policy = RestartPolicy(max_restarts=3, delay_s=0.0, not_restartable={'motion_sim'})
    assert policy.crashed('motion_sim', 0.0).reason == 'not_restartable' and not policy.pending()
    assert RestartPolicy(max_restarts=0).crashed('manager', 0.0).reason == 'disabled'
    policy.crashed('manager', 0.0)
    assert policy.cancel() == ['manager'] and policy.due(5.0) == []


@pytest.mark.parametrize('kwargs', [{'max_restarts': -1}, {'max_restarts': 1.5}, {'max_restarts': True},
                                    {'delay_s': -0.1}, {'delay_s': float('nan')}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(RestartError):
        RestartPolicy(**kwargs)


def test_the_dds_profile_has_a_short_lease_and_a_users_profile_is_kept():
    root = ET.parse(liveness_profile()).getroot()
    ns = {'d': 'http://www.eprosima.com'}
    participant = root.find('d:profiles/d:participant', ns)
    assert participant.get('is_default_profile') == 'true'
    discovery = participant.find('d:rtps/d:builtin/d:discovery_config', ns)
    assert discovery.findtext('d:leaseDuration/d:sec', namespaces=ns) == '3'
    assert discovery.findtext('d:leaseAnnouncement/d:sec', namespaces=ns) == '1'
    writer = root.find('d:profiles/d:data_writer', ns)   # acknowledgements and repairs within 50 ms (test_delivery)
    assert writer.get('is_default_profile') == 'true'
    assert writer.findtext('d:times/d:heartbeat_period/d:nanosec', namespaces=ns) == '50000000'
    env, record = dds_environment({})
    assert env == {FASTDDS_PROFILES_VARIABLE: str(liveness_profile())} and record['set_by'] == 'robot_team'
    env, record = dds_environment({FASTDDS_PROFILES_VARIABLE: '/etc/mine.xml'})
    assert env == {} and record == {'variable': FASTDDS_PROFILES_VARIABLE, 'file': '/etc/mine.xml', 'set_by': 'user'}


# -- the runner's bookkeeping with real processes, no ROS graph --

class _Events:
    """Stands in for the runner's EventEmitter: keeps (kind, summary, data)."""

    def __init__(self):
        self.emitted = []

    def emit(self, kind, summary, /, *, target='', reason='', **data):
        self.emitted.append((kind, summary, data))

    def kinds(self):
        return [k.value for k, _, _ in self.emitted]


class _NoInterrupt:
    signal_name = ''

    def is_set(self):
        return False


def _episode(tmp_path, **kwargs) -> Episode:
    episode = Episode(load_scenario('onboarding'), tmp_path, processes=True, **kwargs)
    episode.events = _Events()
    episode._interrupt = _NoInterrupt()
    return episode


def test_a_node_that_always_crashes_is_restarted_n_times_then_stays_down(tmp_path):
    episode = _episode(tmp_path, max_restarts=2, restart_delay_s=0.05)
    crash = [sys.executable, '-c', 'import os, sys; print("run", os.getpid()); sys.exit(7)']
    episode._commands['hospital_systems'] = (crash, dict(os.environ))
    first = episode._spawn('hospital_systems', 'w').pid
    episode._team_started = True

    def settled():
        episode._check_children()
        episode._restart_due()
        return 'hospital_systems' in episode._down
    assert wait_for(settled, timeout=20.0)
    kinds = episode.events.kinds()
    assert kinds == ['node_crashed', 'node_restarted', 'node_crashed', 'node_restarted', 'node_crashed']
    restarted = [d for k, _, d in episode.events.emitted if k == EventKind.NODE_RESTARTED]
    assert [(d['attempt'], d['returncode'], d['max_restarts']) for d in restarted] == [(1, 7, 2), (2, 7, 2)]
    assert len({first, *(d['pid'] for d in restarted)}) == 3                 # a new process each time
    last = episode.events.emitted[-1]
    assert last[2]['stays_down'] == 'exhausted' and 'stays down' in last[1] and last[2]['restart'] is False
    log = (tmp_path / 'logs' / 'hospital_systems.log').read_text()
    assert log.count('run ') == 3 and log.count('restarted (attempt') == 2    # appended, not truncated
    assert episode.restarts.summary(episode._down)['restarts'] == {'hospital_systems': 2}


def test_the_clock_source_and_zero_restarts_stay_down(tmp_path):
    episode = _episode(tmp_path, max_restarts=0)
    crash = [sys.executable, '-c', 'raise SystemExit(1)']
    for name in ('motion_sim', 'manager'):
        episode._commands[name] = (crash, dict(os.environ))
        episode._spawn(name, 'w')
    episode._team_started = True
    assert wait_for(lambda: episode._check_children() or episode._down == {'motion_sim', 'manager'}, timeout=20.0)
    reasons = {d['stays_down'] for _, _, d in episode.events.emitted}
    assert reasons == {'not_restartable', 'disabled'} and EventKind.NODE_RESTARTED.value not in episode.events.kinds()


def test_a_node_that_dies_during_start_up_is_restarted_and_one_that_stays_down_is_a_start_error(tmp_path):
    class Recorder:
        def __init__(self, path=None):
            self.path = path

        def events(self):   # the node "started" once its second run wrote its line
            if self.path is not None and self.path.exists() and 'second' in self.path.read_text():
                from robot_team.nodes_plan import SIM_NODES, team_nodes
                return [SimpleNamespace(actor=name, kind=EventKind.NODE_STARTED.value)
                        for name in team_nodes(episode.scenario) + SIM_NODES]
            return []
    # once: the first run dies natively (SIGSEGV), the second starts
    flag = tmp_path / 'crashed-once'
    once = textwrap.dedent(f"""
        import ctypes, os, pathlib
        flag = pathlib.Path({str(flag)!r})
        if not flag.exists():
            flag.write_text('x'); print('first', flush=True); ctypes.string_at(0)
        print('second', flush=True)
        """)
    episode = _episode(tmp_path, restart_delay_s=0.0)
    env = dict(os.environ, PYTHONFAULTHANDLER='1')
    episode._commands['supervisor'] = ([sys.executable, '-c', once], env)
    episode._spawn('supervisor', 'w')
    assert episode._wait_started(Recorder(tmp_path / 'logs' / 'supervisor.log'), timeout_s=20.0,
                                 interrupt=_NoInterrupt())
    assert episode.events.kinds() == ['node_crashed', 'node_restarted']
    crashed = episode.events.emitted[0][2]
    assert crashed['during_start_up'] is True and crashed['returncode'] == -signal.SIGSEGV and crashed['restart']
    log = (tmp_path / 'logs' / 'supervisor.log').read_text()
    assert 'Fatal Python error: Segmentation fault' in log and 'second' in log   # its native stack, then the rerun
    # always: restarted up to the most restarts, then it stays down: a start error naming it
    (tmp_path / 'always').mkdir()
    episode = _episode(tmp_path / 'always', max_restarts=1, restart_delay_s=0.0)
    episode._commands['supervisor'] = ([sys.executable, '-c', 'raise SystemExit(2)'], dict(os.environ))
    episode._spawn('supervisor', 'w')
    with pytest.raises(RuntimeError, match='supervisor crashed at start-up and stay down'):
        episode._wait_started(Recorder(), timeout_s=20.0, interrupt=_NoInterrupt())
    assert episode.events.kinds() == ['node_crashed', 'node_restarted', 'node_crashed']
    assert episode.events.emitted[-1][2]['stays_down'] == 'exhausted'


# -- DDS: a killed process leaves the graph within seconds with the team's profile --

VICTIM = textwrap.dedent('''
    import rclpy
    from rclpy.action import ActionServer
    from robot_team.action import ExecuteTask
    rclpy.init()
    node = rclpy.create_node('restart_victim')
    ActionServer(node, ExecuteTask, 'execute_task', lambda goal: ExecuteTask.Result())
    print('ready', flush=True)
    rclpy.spin(node)
''')


@pytest.mark.timeout(90)
def test_a_killed_node_leaves_the_graph_within_5_s(ros_context, domain_id):
    import rclpy
    from rclpy.action import ActionClient

    from robot_team.action import ExecuteTask
    env_add, _ = dds_environment({})
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), **env_add)
    env.pop('ROS_DISCOVERY_SERVER', None)
    observer = rclpy.create_node('restart_observer', context=ros_context)
    client = ActionClient(observer, ExecuteTask, 'execute_task')
    proc = subprocess.Popen([sys.executable, '-c', VICTIM], env=env, stdout=subprocess.PIPE, text=True)
    try:
        def present():   # the graph and server_is_ready need no spinning
            return 'restart_victim' in observer.get_node_names() and client.server_is_ready()
        assert wait_for(present, timeout=30.0), 'the victim never appeared'
        time.sleep(1.0)   # matched a while, as a running node is
        killed = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait()

        def gone():
            return 'restart_victim' not in observer.get_node_names() and not client.server_is_ready()
        assert wait_for(gone, timeout=15.0), 'the killed node is still in the graph after 15 s'
        left_s = time.monotonic() - killed
        print(f'killed node left the graph after {left_s:.2f} s')
        assert left_s < 5.0, f'the killed node left the graph after {left_s:.1f} s (lease 3 s)'
    finally:
        if proc.poll() is None:
            proc.kill()
        client.destroy()
        observer.destroy_node()


# -- a real episode, one process per node: kill -9 of the display robot --

@pytest.mark.timeout(300)
def test_a_killed_robot_process_is_restarted_and_announces_itself_again(tmp_path, domain_id):
    scenario = load_scenario('onboarding').model_copy(update={'time_limit_s': 150.0})   # bounds the wall time
    victim = 'display_robot'
    killed: dict = {}
    lock = threading.Lock()
    episode: Episode | None = None

    def on_event(event):
        with lock:
            if event.kind == EventKind.DELEGATION.value and not killed and episode is not None:
                pid = episode.pid_of(victim)
                killed.update(pid=pid, stamp_s=event.stamp_s)
                os.kill(pid, signal.SIGKILL)

    episode = Episode(scenario, tmp_path, processes=True, domain_id=domain_id, on_event=on_event,
                      log_level='warn', max_restarts=3)
    result = episode.run()
    events = result.events
    assert killed, 'no delegation: nothing was killed'
    mine = [e for e in events if victim in (e.actor, e.target)]
    kinds = [e.kind for e in mine]
    crashed = next(e for e in mine if e.kind == EventKind.NODE_CRASHED.value)
    assert crashed.data['returncode'] == -signal.SIGKILL and crashed.data['pid'] == killed['pid']
    assert crashed.data['restart'] is True and crashed.data['restart_attempt'] == 1
    restarted = next(e for e in mine if e.kind == EventKind.NODE_RESTARTED.value)
    assert kinds.index('node_crashed') < kinds.index('node_restarted')
    assert restarted.data['node'] == victim and restarted.data['attempt'] == 1
    assert restarted.data['max_restarts'] == 3 and restarted.data['pid'] != killed['pid']
    starts = [e for e in events if e.actor == victim and e.kind == EventKind.NODE_STARTED.value]
    assert len(starts) == 2 and starts[1].wall_time > restarted.wall_time   # it announced itself again
    report = result.report
    assert report['restarts']['restarts'][victim] == 1 and report['restarts']['down'] == []
    # Any other restart is a node that crashed on its own (rmw_fastrtps' multi-threaded wait can
    # segfault: ros2/rmw_fastrtps#728), restarted by the same policy and recorded with its signal.
    others = {e.target: e.data['returncode'] for e in events if e.kind == EventKind.NODE_CRASHED.value
              and e.target != victim}
    assert set(report['restarts']['restarts']) - {victim} == set(others)
    assert all(code < 0 and code != -signal.SIGKILL for code in others.values()), others
    assert report['dds_profile']['set_by'] in ('robot_team', 'user')
    log = (tmp_path / 'logs' / f'{victim}.log').read_text()
    assert 'restarted (attempt 1 of 3)' in log
    # sim time stood still from the crash until the supervisor saw the robot back (restart_holds):
    # the restart's wall seconds are tens of sim seconds on the follow clock otherwise. A robot killed
    # before the supervisor heard it is never lost for it: it is heard (robot_seen) once restarted (CI).
    assert crashed.data['clock_hold']
    [held] = [e for e in events if e.kind == EventKind.OBSERVATION.value and e.data.get('cue') == 'restart_hold']
    assert held.data['node'] == victim and held.data['released_by'] in ('robot_back', 'robot_seen'), held
    back = next(e for e in events if e.kind == held.data['released_by'] and e.data['node'] == victim
                and e.wall_time >= crashed.wall_time)
    assert back.stamp_s - crashed.stamp_s <= 3 * DEFAULT_MAX_STEP_SIZE_S, (crashed.stamp_s, back.stamp_s)
