"""Multi-host: the robots on one host, the manager, supervisor and simulator on another; onboarding completes.

Two network namespaces made by the test stand for the two hosts, joined by a veth pair with the
test's own addresses (10.213.N.1 and .2): DDS discovery range SUBNET (multi-host is an explicit
opt-in, here the test's), UDP only (``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``: no shared memory across
the hosts), so everything between the robots and the team crosses the link. Skipped where
network namespaces cannot be made (no root / CAP_NET_ADMIN, no ``ip``).

Each node runs as its own process, started from the executables CMakeLists.txt installs
(``_nodes``: name -> module:function), and the run ends with the episode recorder
(``robot_team.bringup.episode``), exactly as under ``team.launch.py`` + ``robot.launch.py``.
The same run on one host (LOCALHOST) is timed side by side; the figures are printed.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from robot_team.agents.supervisor_node import _back_pause
from robot_team.bringup.episode import TEAM_NODES
from robot_team.bringup.plan import EMBEDDED_SIM, RECORDER_RESTART_GRACE_S
from robot_team.bringup.platform import MOBILE_ROBOTS
from robot_team.contracts.config import load_scenario
from robot_team.contracts.names import HOSPITAL_SYSTEMS as HOSPITAL
from robot_team.contracts.names import RECORDER
from robot_team.nodes_plan import node_parameters as _node_parameters, prepare
from robot_team.run.restarts import RestartPolicy, dds_environment

ROOT = Path(__file__).resolve().parent.parent
RTF = 40.0


def _targets() -> dict[str, str]:
    """Executable -> 'module:function', from CMakeLists.txt (the one list of node executables)."""
    block = re.search(r'set\(_nodes(.*?)\)', (ROOT / 'CMakeLists.txt').read_text(), re.S).group(1)
    targets = {}
    for name, target in re.findall(r'"([a-z_]+)=([^"]+)"', block):
        targets[name] = target if ':' in target else f'{target}:main'
    return targets


def _ip(*args, check=True):
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check)


class Hosts:
    """Two network namespaces joined by a veth pair: ``robots`` (10.213.N.1) and ``team`` (10.213.N.2)."""

    def __init__(self):
        tag = os.getpid() % 10000
        self.robots, self.team = f'rt{tag}_robots', f'rt{tag}_team'
        self.links = {self.robots: f'rt{tag}r', self.team: f'rt{tag}t'}
        net = 1 + os.getpid() % 250
        self.addresses = {self.robots: f'10.213.{net}.1', self.team: f'10.213.{net}.2'}

    def make(self) -> None:
        for ns in (self.robots, self.team):
            _ip('netns', 'add', ns)
        _ip('link', 'add', self.links[self.robots], 'type', 'veth', 'peer', 'name', self.links[self.team])
        for ns, link in self.links.items():
            _ip('link', 'set', link, 'netns', ns)
            for args in (('addr', 'add', f'{self.addresses[ns]}/24', 'dev', link), ('link', 'set', link, 'up'),
                         ('link', 'set', 'lo', 'up'), ('route', 'add', '224.0.0.0/4', 'dev', link)):
                _ip('-n', ns, *args)

    def remove(self) -> None:
        for ns in (self.robots, self.team):
            _ip('netns', 'delete', ns, check=False)

    def packets(self, ns: str) -> int:
        stats = Path('/sys/class/net') / self.links[ns] / 'statistics'
        out = subprocess.run(['ip', 'netns', 'exec', ns, 'cat', str(stats / 'rx_packets'), str(stats / 'tx_packets')],
                             capture_output=True, text=True, check=True).stdout.split()
        return sum(int(v) for v in out)


@pytest.fixture
def hosts():
    if shutil.which('ip') is None:
        pytest.skip("no 'ip' command (iproute2): network namespaces cannot be made here")
    made = Hosts()
    try:
        made.make()
    except subprocess.CalledProcessError as exc:
        made.remove()
        pytest.skip(f'network namespaces cannot be made here (root / CAP_NET_ADMIN needed): {exc.stderr.strip()}')
    try:
        yield made
    finally:
        made.remove()


def _run_team(out_dir: Path, domain_id: int, placement: dict[str, str | None], env_extra: dict,
              sim_extra: dict | None = None, during: Callable[[Path, dict], None] | None = None) -> tuple[dict, float]:
    """Run onboarding with each node in its own process, in the netns ``placement[node]`` (None: here).

    ``sim_extra``: more parameters of the simulator's nodes (e.g. ``clock_mode``). ``during(logs,
    env)`` runs once sim time has started, while the team works (a fault). As under the launch
    files (:func:`robot_team.bringup.plan.respawning`): the team's nodes and the hospital's
    systems are started again when they end before the run does (the runner's
    :class:`~robot_team.run.restarts.RestartPolicy` with its defaults), the simulator and the
    recorder are not, the recorder waits ``RECORDER_RESTART_GRACE_S`` for a lost manager, and every process gets the
    team's Fast DDS profile (:func:`robot_team.run.restarts.dds_environment`: a dead node leaves the
    graph within its 3 s lease, so a respawned one is seen back). Each node runs with
    ``PYTHONFAULTHANDLER=1``, as the runner's do. The report gets ``node_exits``: the exit codes of
    each node's processes that ended before the run did (a native crash: a negative signal
    number, its stacks in ``logs/<node>.log``).
    """
    scenario = load_scenario('onboarding')
    paths = prepare(scenario, out_dir)
    targets = _targets()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), PYTHONPATH=str(ROOT), PYTHONUNBUFFERED='1',
               PYTHONFAULTHANDLER='1', **dds_environment(os.environ)[0], **env_extra)
    logs = out_dir / 'logs'
    logs.mkdir(exist_ok=True)
    procs: dict[str, subprocess.Popen] = {}
    argvs: dict[str, list[str]] = {}
    exits: dict[str, list[int]] = {}
    respawned = (*TEAM_NODES, HOSPITAL)
    stopping = threading.Event()

    def start(name, executable, params):
        module, function = targets[executable].split(':')
        argv = [sys.executable, '-c', f'import sys; from {module} import {function}; sys.exit({function}())',
                '--ros-args']
        for key, value in params.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            argv += ['-p', f'{key}:={text}']
        ns = placement.get(name)
        argvs[name] = ['ip', 'netns', 'exec', ns, *argv] if ns else argv
        launch(name, 'w')

    def launch(name, mode):
        with open(logs / f'{name}.log', mode) as log:
            procs[name] = subprocess.Popen(argvs[name], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=out_dir)

    def respawn():   # launch's respawn, for the nodes it respawns, counted as the runner counts restarts
        policy, down = RestartPolicy(), set()
        while not stopping.wait(0.1):
            now = time.monotonic()
            for name in respawned:
                proc = procs.get(name)
                if proc is None or proc.poll() is None or policy.pending(name) or name in down:
                    continue
                exits.setdefault(name, []).append(proc.returncode)
                if not policy.crashed(name, now).restart:
                    down.add(name)
            for decision in policy.due(now):
                launch(decision.node, 'a')
    respawner = threading.Thread(target=respawn, name='respawn', daemon=True)

    wall_start = time.monotonic()
    try:
        for name in TEAM_NODES:
            params = _node_parameters(name, scenario, paths, 'protocol')
            if name == 'navigation_robot':
                params['pose_source'] = 'amcl_pose'
            start(name, name, params)
        start(RECORDER, 'episode_recorder', {'use_sim_time': True, 'out_dir': str(out_dir),
                                             'scenario': paths['scenario'],
                                             'restart_grace_s': RECORDER_RESTART_GRACE_S})
        start(HOSPITAL, HOSPITAL, {'scenario': paths['scenario'], 'use_sim_time': True})
        respawner.start()
        start('team_ready', 'team_ready', {'timeout_s': 90.0, 'nodes': [*TEAM_NODES, HOSPITAL]})
        assert procs['team_ready'].wait(timeout=120) == 0, (logs / 'team_ready.log').read_text()
        for exe in EMBEDDED_SIM:
            if exe != HOSPITAL:
                start(exe, exe, {'scenario': paths['scenario'], 'real_time_factor': RTF, **(sim_extra or {})})
        if during is not None:
            during(logs, env)
        procs[RECORDER].wait(timeout=scenario.time_limit_s / RTF * 3 + 60)
        wall = time.monotonic() - wall_start
    finally:
        stopping.set()
        if respawner.is_alive():
            respawner.join()
        for name, proc in procs.items():
            if name not in respawned and name not in (RECORDER, 'team_ready') and proc.poll() is not None:
                exits.setdefault(name, []).append(proc.returncode)   # ended before the run did, not respawned
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    report = json.loads((out_dir / 'report.json').read_text())
    report['node_exits'] = exits
    return report, wall


@pytest.mark.timeout(600)
def test_robots_on_one_host_team_on_another_complete_onboarding(hosts, domain_id, tmp_path):
    placement = {name: (hosts.robots if name in MOBILE_ROBOTS else hosts.team)
                 for name in [*TEAM_NODES, RECORDER, 'team_ready', *EMBEDDED_SIM]}
    before = hosts.packets(hosts.robots)
    multi, multi_wall = _run_team(tmp_path / 'multi', domain_id,
                                  placement, {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET',
                                              'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'})
    crossed = hosts.packets(hosts.robots) - before
    assert multi['outcome'] == 'success' and multi['outcome_as_expected'], (multi['outcome'], multi['node_exits'])
    assert multi['events']['complete']
    assert {t['name'] for t in multi['tasks']} == {'navigation', 'info_collection', 'display'}
    assert crossed > 100, f'only {crossed} packets crossed the link'
    single, single_wall = _run_team(tmp_path / 'single', domain_id, {}, {
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'})
    assert single['outcome'] == 'success', (single['outcome'], single['node_exits'])
    figures = {'multi_host_wall_s': round(multi_wall, 2), 'single_host_wall_s': round(single_wall, 2),
               'ratio': round(multi_wall / single_wall, 3), 'packets_over_link': crossed,
               'multi_sim_time_s': multi['sim_time_s'], 'single_sim_time_s': single['sim_time_s'],
               'node_exits': {'multi': multi['node_exits'], 'single': single['node_exits']}}
    (tmp_path / 'multihost.json').write_text(json.dumps(figures))
    print(f'\nmulti-host vs single-host (one process per node, UDPv4, clock {RTF:g}x): {figures}')


_WATCH = """
import json, sys, rclpy
from robot_team.msg import TeamEvent
from robot_team.contracts.names import TEAM_EVENTS
from robot_team.ros.messages import events_qos
rclpy.init()
node = rclpy.create_node('cut_trigger')
hit = []
def seen(msg):
    if msg.kind == 'tool_result' and msg.actor == sys.argv[1] and msg.target == sys.argv[2] and \\
            json.loads(msg.data_json or '{}').get('ok'):
        hit.append(msg.stamp.sec + msg.stamp.nanosec * 1e-9)
node.create_subscription(TeamEvent, TEAM_EVENTS, seen, events_qos())
while not hit:
    rclpy.spin_once(node, timeout_sec=0.1)
print(hit[0], flush=True)
"""
"""A team-host process: waits for a robot's successful call of a tool (on ``team/events``), prints its sim time."""

CUT_S = 30.0
"""How long the robots' host is cut off the network, wall s (issue 19)."""


@pytest.mark.timeout(600)
def test_a_robot_host_cut_off_the_network_for_30_s_mid_escort_is_noticed_and_recovered(hosts, domain_id, tmp_path):
    """The robots' veth link goes down for 30 s right after HCW #90 acknowledged the page, then up.

    On the follow clock (the default of runs): the loss is noticed within 5 s (wall, and sim: the
    clock holds at the time the robots stopped answering), the escort is closed as ``robot_lost``
    and HCW #90 told to wait; while the robots are away sim time runs at most at real time, so no
    deadline passes that a physical team would meet; once back, the stale escort is cancelled
    before the manager hears of it, the same escort is delegated again and the onboarding ends in
    ``success``. Every event, also those the robots wrote while cut off, is in the record.
    """
    placement = {name: (hosts.robots if name in MOBILE_ROBOTS else hosts.team)
                 for name in [*TEAM_NODES, RECORDER, 'team_ready', *EMBEDDED_SIM]}
    cut = {}
    robot_link = hosts.links[hosts.robots]

    def cut_after_page(logs, env):
        watcher = subprocess.run(['ip', 'netns', 'exec', hosts.team, sys.executable, '-c', _WATCH,
                                  'navigation_robot', 'page_staff'], env=env, capture_output=True, text=True,
                                 timeout=300)
        assert watcher.returncode == 0, watcher.stderr
        cut['down'] = time.time()
        _ip('-n', hosts.robots, 'link', 'set', robot_link, 'down')
        time.sleep(CUT_S)
        _ip('-n', hosts.robots, 'link', 'set', robot_link, 'up')
        _ip('-n', hosts.robots, 'route', 'add', '224.0.0.0/4', 'dev', robot_link, check=False)  # gone with the link
        cut['up'] = time.time()

    report, wall = _run_team(tmp_path / 'cut', domain_id, placement,
                             {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET', 'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'},
                             sim_extra={'clock_mode': 'follow', 'min_clock_followers': len(TEAM_NODES) + 1},
                             during=cut_after_page)
    events = [json.loads(line) for line in (tmp_path / 'cut' / 'events.jsonl').read_text().splitlines()]

    def first(kind, **match):
        return next(e for e in events if e['kind'] == kind and all(e['data'].get(k) == v for k, v in match.items()))
    nav = 'navigation_robot'
    lost, back = first('robot_lost', node=nav), first('robot_back', node=nav)
    held = first('sim', what='clock_follower_lost', follower=f'/{nav}/{nav}')   # the sim time the robots stopped at
    closed = next(e for e in events if e['kind'] == 'task_report' and e['data'].get('issue_code') == 'robot_lost')
    figures = {'notice_wall_s': round(lost['wall_time'] - cut['down'], 2),
               'notice_sim_s': round(lost['stamp_s'] - held['stamp_s'], 2),
               'back_after_link_up_wall_s': round(back['wall_time'] - cut['up'], 2),
               'sim_s_while_cut': round(first('sim', what='clock_follower_back', follower=held['data']['follower'])
                                        ['stamp_s'] - held['stamp_s'], 1),
               'outcome': report['outcome'], 'wall_s': round(wall, 1)}
    print(f'\nnetwork cut of the robots\' host for {CUT_S:g} s mid-escort: {figures}')
    assert 0 <= figures['notice_wall_s'] <= 5.0 and figures['notice_sim_s'] <= 5.0, figures
    assert lost['data']['task_id'] == closed['target'] and back['data']['restarted'] is False
    assert first('sim', what='hcw_waiting', robot=nav)['stamp_s'] == lost['stamp_s']   # the HCW told to wait
    # at most real time while the robots were away (30 s cut, the first 10 s of which the clock waited for them)
    assert figures['sim_s_while_cut'] <= CUT_S + 2.0, figures
    escort = first('delegation', task_id=closed['target'])
    again = first('delegation', handles_task_id=closed['target'])   # the same escort, once the robot is back
    assert again['stamp_s'] >= back['stamp_s'] and again['data']['hcw_id'] == escort['data']['hcw_id']
    assert report['outcome'] == 'success' and report['outcome_as_expected'], (report['outcome'], report['node_exits'])
    assert report['escalations'] == []      # recovered by the workflow's rules, not by a human
    # while the supervisor withheld the robot's return (its cancels first), no deadline ran
    # the robots on that host come back in either order, apart or within one overlapping pause
    postponed = [e for e in events if e['kind'] == 'deadlines_postponed']
    nav_pauses = {_back_pause(nav, change) for change in range(1, 20)}   # (the change that brought it back)
    paused = next((e for e in postponed if nav_pauses & set(e['data']['why'])), None)
    assert paused is not None, postponed
    assert paused['stamp_s'] >= back['stamp_s'] and paused['data']['paused_for_s'] >= 0
    assert {e['target'] for e in events if e['kind'] == 'node_returned'} >= {nav}
    assert report['events']['complete'] and report['events']['sequence_gaps'] == {}
    # the stale escort the robot ended once back is refused (the task was closed) and on the record
    stale = first('report_rejected')
    assert stale['target'] == closed['target'] and stale['wall_time'] > cut['up']
