"""The episode's start and end under ``ros2 launch``: the team-ready gate and the episode recorder.

``robot-team run`` starts the simulator once every team node is up, stops at the episode's end
(or its time limit) and writes ``report.json``. Under ``ros2 launch`` two small nodes do the
same from the ROS graph alone, so that it works with the nodes on any host:

- ``team_ready`` (:class:`TeamReady`) exits 0 once every team node has announced itself
  (``node_started`` on ``team/events``, transient local), 1 after ``timeout_s`` naming the
  missing ones; the launch file starts the simulator when it exits 0.
- ``episode_recorder`` (:class:`EpisodeRecorder`, the team recorder) records ``team/events``;
  at ``episode_finished``, at the scenario's time limit (sim time; it then records the timeout
  as ``robot-team run`` does) or when the manager's node is gone, it writes ``events.jsonl``,
  ``events.mcap`` and ``report.json`` (:func:`robot_team.run_report.build_report`, mode ``launch``)
  into ``out_dir`` and exits; the launch file then shuts everything down. A team node that
  announced itself and later leaves the graph is recorded as ``node_crashed``; one that announces
  itself again (launch respawned it) as ``node_restarted``. A lost manager ends the episode once
  it has not come back within ``restart_grace_s``. Interrupted (Ctrl-C), it writes what it has.

  With an open-ended scenario (a deployment's, ``open_ended`` in :class:`robot_team.contracts.config.Scenario`)
  there is no episode end and no time limit: it
  records until stopped, appending each event to ``events.jsonl`` as it arrives (a killed
  recorder loses nothing written), and writes ``cases/<case>.json``
  (:func:`robot_team.run_report.case_report`) as each case closes (the manager's ``case_closed``);
  a lost manager is recorded and waited for (launch respawns it), never the end of the record.
  Stopped, its ``report.json`` has outcome ``interrupted``.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from robot_team.contracts import names
from robot_team.contracts.config import ConfigError, Scenario, load_scenario
from robot_team.contracts.events import EventKind
from robot_team.contracts.files import write_atomically
from robot_team.msg import TeamEvent
from robot_team.contracts.names import team_name
from robot_team.nodes_plan import TEAM
from robot_team.recorder import TeamRecorder, write_record
from robot_team.run_report import OpenRecord, build_report, time_limit_outcome
from robot_team.ros.emitter import EventEmitter
from robot_team.ros.messages import event_from_msg, events_qos
from robot_team.ros.stamps import now_s

TEAM_NODES = tuple(TEAM)
"""Nodes that announce themselves before the simulator starts (:data:`robot_team.nodes_plan.TEAM`)."""

ACTOR = 'runner'
"""Actor of the events the recorder adds (timeout, crashed node), as ``robot-team run`` records them."""


def _reconnections(events: list, node: str) -> int:
    """Return how many times the supervisor recorded ``node`` back as the same incarnation (``robot_back``)."""
    return sum(1 for e in events if e.kind == EventKind.ROBOT_BACK.value and e.data.get('node') == node
               and not e.data.get('restarted'))


class EpisodeRecorder(TeamRecorder):
    """The team recorder that ends the episode and writes ``report.json``.

    Parameters (ROS)
    ----------------
    out_dir
        Folder of the record and report.
    scenario
        The scenario (name, YAML path or the resolved ``scenario.json`` the launch file wrote).
    brain
        The robots' brain (for the report).
    time_limit_s
        Sim seconds before the episode is stopped (default: the scenario's).
    watch_nodes
        Team nodes whose disappearance is recorded (default :data:`TEAM_NODES`).
    restart_grace_s
        Wall seconds a lost manager has to come back (launch respawns it) before the episode
        ends (default 0: at once, for a manager that does not respawn).

    ``ending`` is set when the episode is over (the caller spins a little longer for the last
    events, then calls :meth:`finish`); ``finished`` once the record and report are written.
    An open-ended scenario's record (a deployment's) goes on until stopped; see the module docstring.
    """

    def __init__(self, **kwargs):
        chained = kwargs.pop('on_event', None)
        self.open_record: OpenRecord | None = None   # set below for an open-ended scenario
        super().__init__(on_event=lambda event: self._recorded(event, chained), **kwargs)
        self.declare_parameter('scenario', 'onboarding')
        self.declare_parameter('brain', 'protocol')
        self.declare_parameter('time_limit_s', 0.0)
        self.declare_parameter('watch_nodes', list(TEAM_NODES))
        self.restart_grace_s = float(self.declare_parameter('restart_grace_s', 0.0).value)
        self._scenario = self._load_scenario(str(self.get_parameter('scenario').value))
        limit = float(self.get_parameter('time_limit_s').value)
        self.time_limit_s = limit if limit > 0 else self._scenario.time_limit_s
        self._watch = set(self.get_parameter('watch_nodes').value)
        self._seen: set[str] = set()
        self._missing: dict[str, int] = {}
        self._back: dict[str, int] = {}          # checks in a row a node that left the graph is in it again
        self._reconnections_when_lost: dict[str, int] = {}   # node -> its robot_back count when it left the graph
        self._crashed: set[str] = set()
        self._lost_at: dict[str, float] = {}     # node -> wall (monotonic) s it was recorded lost
        self._starts: dict[str, int] = {}        # node -> node_started events seen
        self._emitter = EventEmitter(self, ACTOR)
        self._wall_start = time.monotonic()
        self._done = threading.Lock()
        self.ending = threading.Event()
        self.finished = threading.Event()
        self.report: dict | None = None
        self.open_ended = self._scenario.open_ended
        self.out_dir = Path(self.get_parameter('out_dir').value or '.')
        # a deployment's record as it goes: the journal, each case's report (robot_team.run_report.OpenRecord)
        self.open_record = OpenRecord(self.out_dir, scenario=self._scenario.name,
                                      brain=str(self.get_parameter('brain').value), mode='launch',
                                      expected=self._scenario.expected_outcomes) if self.open_ended else None
        self._timer = self.create_timer(0.5, self.check_callback)

    def _recorded(self, event, chained) -> None:
        """Add ``event`` to the open-ended record (if any), then pass it on to ``chained``."""
        if self.open_record is not None:
            self.open_record.add(event)
        if chained is not None:
            chained(event)

    @staticmethod
    def _load_scenario(text: str):
        path = Path(text)
        if path.suffix == '.json':
            return Scenario.model_validate_json(path.read_text(encoding='utf-8'))
        return load_scenario(text)

    def check_callback(self) -> None:
        """Finish at the episode's end, its time limit or the manager's loss; record vanished nodes."""
        if self.ending.is_set():
            return
        if self.open_record is not None:
            self.open_record.write_reports(self.events, self._emitter.emit)
        events = self.events()
        if any(e.kind == EventKind.EPISODE_FINISHED.value for e in events):
            self.ending.set()
            return
        if not self.open_ended and now_s(self) > self.time_limit_s:
            outcome, why = time_limit_outcome(events)
            self._emitter.emit(EventKind.EPISODE_FINISHED, f'episode stopped: time limit reached ({outcome})',
                               reason=f'no episode end within {self.time_limit_s:.0f} s of sim time: {why}',
                               outcome=outcome)
            return      # finished at the next check, once the event is recorded
        starts: dict[str, int] = {}
        for e in events:
            if e.kind == EventKind.NODE_STARTED.value:
                starts[e.actor] = starts.get(e.actor, 0) + 1
        self._notice_restarts(starts)
        started = set(starts)
        present = {name for name, _ in self.get_node_names_and_namespaces()}
        for node in sorted(self._crashed):
            # the same incarnation back (restarts were noticed above): the supervisor's robot_back (its
            # liveliness; rmw_fastrtps's graph does not list a participant's nodes again once its lease
            # expired), or in the graph again for two checks
            self._back[node] = self._back.get(node, 0) + 1 if node in present else 0
            seen_back = _reconnections(events, node) > self._reconnections_when_lost.get(node, 0)
            if self._back[node] < 2 and not seen_back:
                continue
            self._crashed.discard(node)
            self._back.pop(node)
            self._reconnections_when_lost.pop(node, None)
            if node in present:
                self._seen.add(node)
            else:   # not listed by the graph: its absence says nothing until the graph lists it again
                self._seen.discard(node)
            gone = time.monotonic() - self._lost_at.pop(node, time.monotonic())
            self._emitter.emit(EventKind.NODE_RETURNED, f'node {node} is back (not restarted)', target=node,
                               reason='it left the graph without exiting: its host was cut off the network, or '
                               'discovery lost it', node=node, gone_for_s=round(gone, 3),
                               noticed_by='robot_back' if seen_back else 'graph')
        for node in (self._watch & started) - self._crashed:
            if node in present:
                self._seen.add(node)
                self._missing.pop(node, None)
            elif node in self._seen:
                self._missing[node] = self._missing.get(node, 0) + 1
                if self._missing[node] >= 2:   # gone for two checks (a second): not a discovery hiccup
                    self._crashed.add(node)
                    self._lost_at[node] = time.monotonic()
                    self._reconnections_when_lost[node] = _reconnections(events, node)
                    self._emitter.emit(EventKind.NODE_CRASHED, f'node {node} left the graph', target=node,
                                       reason='its node disappeared from the graph before the episode ended '
                                              '(it exited, or its host was cut off the network)')
        manager = names.Role.MANAGER.value
        if (not self.open_ended and manager in self._crashed
                and time.monotonic() - self._lost_at[manager] >= self.restart_grace_s):
            self.ending.set()   # nobody can end the episode any more

    def _notice_restarts(self, starts: dict[str, int]) -> None:
        """Record ``node_restarted`` for each watched node that announced itself again (launch respawned it)."""
        for node, count in starts.items():
            before = self._starts.get(node, 0)
            self._starts[node] = count
            if node not in self._watch or count <= max(before, 1):   # (restarted before the first look, too)
                continue
            self._crashed.discard(node)
            self._back.pop(node, None)
            self._missing.pop(node, None)
            lost = self._lost_at.pop(node, None)
            self._emitter.emit(EventKind.NODE_RESTARTED, f'node {node} is back (start {count})', target=node,
                               reason='it announced itself again (respawned)', node=node, attempt=count - 1,
                               noticed_by='node_started',
                               down_s=round(time.monotonic() - lost, 3) if lost is not None else None)

    def finish(self) -> dict:
        """Write the record (``events.jsonl``, ``scene.jsonl``, ``events.mcap``) and ``report.json`` once; return it."""
        with self._done:
            if self.report is not None:
                return self.report
            out_dir = self.out_dir
            if self.open_record is not None:   # the last cases' reports; the whole record replaces the journal
                self.open_record.write_reports(self.events, self._emitter.emit)
                self.open_record.close()
            events = self.events()
            files = write_record(events, out_dir, self.resolve_topic_name(names.TEAM_EVENTS), self.samples())
            report = build_report(events, scenario=self._scenario.name, brain=str(self.get_parameter('brain').value),
                                  mode='launch', expected_outcome=self._scenario.expected_outcome,
                                  wall_time_s=time.monotonic() - self._wall_start, files=files,
                                  case_expected=self._scenario.expected_outcomes)
            report['namespace'] = self.get_namespace()
            report['files'] = {'report': str(out_dir / 'report.json'), **files,
                               'cases': dict(self.open_record.reports) if self.open_record is not None else {}}
            if self.open_ended and report['outcome'] == 'timeout':   # no episode end: stopped by a person
                report['outcome'] = 'interrupted'
            write_atomically(out_dir / 'report.json', json.dumps(report, indent=2, default=str))
            self.report = report
            self.finished.set()
            return report


class TeamReady:
    """Wait for every team node's ``node_started`` event (a node, spun by :func:`main_team_ready`).

    Parameters (ROS): ``nodes`` (default :data:`TEAM_NODES`), ``timeout_s`` (wall s, default 60).
    """

    def __init__(self):

        self.node = Node('team_ready')
        self.expected = set(self.node.declare_parameter('nodes', list(TEAM_NODES)).value)
        self.timeout_s = float(self.node.declare_parameter('timeout_s', 60.0).value)
        self.started: set[str] = set()
        self.node.create_subscription(
            TeamEvent, team_name(self.node, names.TEAM_EVENTS),
            lambda msg: self.started.add(event_from_msg(msg).actor)
            if msg.kind == EventKind.NODE_STARTED.value else None, events_qos())


def main_team_ready(args=None) -> int:
    """Exit 0 once every team node has started, 1 (naming the missing ones) after ``timeout_s``."""
    rclpy.init(args=args)
    gate = TeamReady()
    deadline = time.monotonic() + gate.timeout_s
    try:
        while time.monotonic() < deadline and not gate.expected <= gate.started:
            rclpy.spin_once(gate.node, timeout_sec=0.1)
    except KeyboardInterrupt:
        return 130
    finally:
        missing = sorted(gate.expected - gate.started)
        gate.node.destroy_node()
        rclpy.try_shutdown()
    if missing:
        print(f"team_ready: team node(s) {', '.join(missing)} did not start within {gate.timeout_s:.0f} s")
        return 1
    print('team_ready: every team node has started')
    return 0


def main_recorder(args=None) -> int:
    """Record the episode until it ends (or Ctrl-C), write the record and report.json, exit 0."""
    rclpy.init(args=args)
    try:
        node = EpisodeRecorder()
    except ConfigError as exc:
        print(f'episode_recorder: {exc}')
        rclpy.try_shutdown()
        return 2
    executor = SingleThreadedExecutor()   # one thread: event callbacks and the periodic check
    executor.add_node(node)
    try:
        while rclpy.ok() and not node.ending.is_set():
            executor.spin_once(timeout_sec=0.1)
        grace = time.monotonic() + 0.3     # the last events (reflection, crash records) still arrive
        while rclpy.ok() and time.monotonic() < grace:
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        report = node.finish()
        print(f"episode_recorder: outcome {report['outcome']}; wrote {report['files']['report']}")
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
