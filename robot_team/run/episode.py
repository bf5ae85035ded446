"""Run one ED episode: the whole team on the embedded simulator, then the record and report.

Two modes share everything but process layout (:class:`Episode`, :func:`run_episode`):

- in-process (default): every node in this process, one multi-threaded executor
  (:class:`robot_team.ros.executor.TeamExecutor`); an exception that ends its spin (a callback's,
  or one raised building its wait set) is recorded as ``node_crashed`` (target ``executor``) and
  the executor spun again, at most ``max_restarts`` times, after which the team is down
  (:class:`robot_team.ros.spin.SpinThread`);
- ``processes=True``: each node in its own process, exactly as ``ros2 run``/``ros2 launch`` would
  start them; this process only records. A node that dies is recorded and, once the team has
  started, started again as launch's ``respawn`` does (:mod:`robot_team.run.processes`,
  :mod:`robot_team.run.restarts`: ``restart_delay_s`` 0.5 wall s, ``max_restarts`` 3 per node),
  sim time held until the team has it back (:mod:`robot_team.run.restart_holds`).

The simulator's two nodes (``hospital_systems`` and ``motion_sim``, the clock source) start with
the team; ``motion_sim`` starts paused and holds sim time at 0 until every node is up and has
matched ``/clock`` (its ``paused`` and ``min_clock_subscribers`` parameters), so sim time (and
the patient's arrival) starts when the team is ready (:mod:`robot_team.run.clock`).

Everything the episode starts ends with it (:mod:`robot_team.run.lifecycle`): the team's work is
stopped while the executor still spins (brain threads, LLM requests in flight, tasks, the
simulator's waits), then the executor and the nodes; ``report.json``'s ``teardown`` names any
thread that outlived the episode. SIGINT and SIGTERM end the episode with outcome
``interrupted``; its report and record are written all the same. The record and ``report.json``
are written once the team's work has stopped and before the executor, the nodes and the context are
destroyed, so that a native crash there (rclpy's) loses neither; ``report.json`` is written again
after, with the teardown's figures (until then ``teardown`` says ``pending``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import rclpy
from rclpy.parameter import Parameter

from robot_team.contracts.clock_sync import check_clock_mode
from robot_team.contracts.config import ConfigError, Scenario, load_scenario
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.files import write_atomically
from robot_team.contracts.liveness import watched
from robot_team.contracts.names import join, validate_namespace
from robot_team.contracts.scene import SceneState
from robot_team.llm.inflight import in_flight
from robot_team.llm.lockstep import NODE_RESTART, ClockHoldPublisher, llm_clock_under
from robot_team.nodes_plan import prepare
from robot_team.recorder import TeamRecorder, write_record
from robot_team.ros.emitter import EventEmitter, emitters_of
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.spin import SpinThread
from robot_team.run.clock import ClockControl, clock_report, wall_budget_s
from robot_team.run.dds import ensure_localhost_dds, namespace_args
from robot_team.run.lifecycle import Interrupt, shutdown_executor, stop_nodes, threads_left
from robot_team.run.llm_endpoint import EpisodeLLM
from robot_team.run.nodes import EpisodeNodes
from robot_team.run.processes import NOT_RESTARTABLE, NodeProcesses
from robot_team.run.restart_holds import RestartHolds
from robot_team.run.restarts import DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_DELAY_S, RestartPolicy
from robot_team.run.waits import wait_finished, wait_started
from robot_team.run_report import OpenRecord, build_report, time_limit_outcome
from robot_team.scene_foxglove import FoxgloveServer


EXECUTOR = 'executor'
"""``target`` of the ``node_crashed`` event that records an exception ending the executor's spin."""


class _RunnerEvents:
    """The runner's event emitter: each event published, and stored directly once nothing spins the recorder."""

    def __init__(self, emitter: EventEmitter, recorder: TeamRecorder, spin: SpinThread):
        self._emitter, self._recorder, self._spin = emitter, recorder, spin

    def emit(self, kind, summary: str, /, **data) -> TeamEventModel:
        """Emit as :meth:`robot_team.ros.emitter.EventEmitter.emit`; return the event."""
        event = self._emitter.emit(kind, summary, **data)
        if self._spin.gave_up:   # the recorder's subscription is never taken again
            self._recorder.add(event)
        return event


@dataclass
class RunResult:
    """What a run produced: the report (as written to report.json), its folder and events."""

    report: dict
    out_dir: Path
    events: list[TeamEventModel] = field(default_factory=list)


class Episode(NodeProcesses):
    """One episode's graph and record; use :func:`run_episode` unless you need the pieces.

    Its parts: the LLM endpoint (:class:`robot_team.run.llm_endpoint.EpisodeLLM`, :attr:`llm`), the
    node plan (:class:`robot_team.run.nodes.EpisodeNodes`, :attr:`team`) and, with ``processes``,
    the node processes (its base :class:`robot_team.run.processes.NodeProcesses`).
    """

    def __init__(self, scenario: Scenario, out_dir: Path, *, brain: str = 'protocol', processes: bool = False,
                 domain_id: int | None = None, real_time_factor: float | None = None,
                 on_event: Callable[[TeamEventModel], None] | None = None, brain_options: dict | None = None,
                 log_level: str = 'info', namespace: str = '/', llm_clock: str = 'realtime', local_llm=None,
                 local_model: str | None = None, clock: str = 'follow', max_restarts: int = DEFAULT_MAX_RESTARTS,
                 restart_delay_s: float = DEFAULT_RESTART_DELAY_S, seed: int | None = None, fhir_port: int = 0,
                 fhir_host: str = '127.0.0.1', foxglove_port: int | None = None, foxglove_host: str = '127.0.0.1',
                 jump_ahead: bool = True):
        self.scenario = scenario
        self.jump_ahead = bool(jump_ahead)   # the follow clock jumps across quiet time (contracts.clock_sync)
        # The live scene for Foxglove (robot_team.scene_foxglove.FoxgloveServer); None: no server, 0: any free port
        self.foxglove_port, self.foxglove_host = foxglove_port, foxglove_host
        self.foxglove: FoxgloveServer | None = None
        # FHIR Encounter notifications in (robot_team.agents.fhir_gateway_node); 0: no gateway
        self.fhir_port, self.fhir_host = int(fhir_port), fhir_host
        # processes mode: crashed node processes start again (RestartError, a ValueError, if out of range)
        self.restarts = RestartPolicy(max_restarts, restart_delay_s, NOT_RESTARTABLE)
        self.clock = check_clock_mode(clock, 'clock (--clock)')
        # The follow clock holds while a brain waits on its LLM: the brains announce their waits.
        self.llm_clock = llm_clock_under(self.clock, llm_clock)
        # --brain local: the embedded endpoint (robot_team.llm.local.LocalServer); one given is not stopped here.
        # --brain random: the chance endpoint's seed (checked by run(): a bad one is recorded as bad input)
        self.llm = EpisodeLLM(brain, self.llm_clock, seed=seed, local_llm=local_llm, local_model=local_model)
        self.namespace_error = ''
        try:
            self.namespace = validate_namespace(namespace, 'team namespace (--namespace)')
        except ValueError as exc:   # recorded by run() like any other bad input
            self.namespace, self.namespace_error = '/', str(exc)
        self.log_level = log_level
        self.brain_options = dict(brain_options or {})
        self.out_dir = Path(out_dir)
        self.brain = brain
        self.processes = processes
        self.domain_id = domain_id if domain_id is not None else int(os.environ.get('ROS_DOMAIN_ID', '0'))
        # wall: the pace (default the scenario's); follow: a cap (default none, 0).
        self.real_time_factor = real_time_factor or (0.0 if clock == 'follow' else scenario.real_time_factor)
        self.on_event = on_event
        self.team = EpisodeNodes(scenario, brain, self.brain_options, processes=processes,
                                 real_time_factor=self.real_time_factor, llm_clock=self.llm_clock, clock=self.clock,
                                 jump_ahead=self.jump_ahead, fhir_port=self.fhir_port, fhir_host=self.fhir_host)
        self._interrupt: Interrupt | None = None
        self._team_started = False
        self._spin: SpinThread | None = None   # spins this process's executor (run())
        self._init_processes()
        self.nodes: list = []
        """The nodes this process ran (in-process mode; kept after the run for inspection)."""
        self.open_record: OpenRecord | None = None
        """An open-ended run's record as it goes: the journal and each case's report (:class:`OpenRecord`)."""

    def run(self) -> RunResult:
        """Run the episode to its end (or time limit) and write the record and report."""
        ensure_localhost_dds()
        wall_start = time.monotonic()
        try:
            if self.namespace_error:
                raise ConfigError(self.namespace_error)
            paths = prepare(self.scenario, self.out_dir)
            self.llm.check()
        except ConfigError as exc:
            self._record_input_error(exc, time.monotonic() - wall_start)
            raise
        if self.foxglove_port is not None:   # before the team: a port in use stops the run here (RuntimeError)
            self.foxglove = FoxgloveServer(SceneState(), self.foxglove_port, self.foxglove_host,
                                           prefix=self.namespace.rstrip('/') + '/')
        if self.scenario.open_ended:   # a new record, written as it arrives (a crash loses nothing written)
            self.open_record = OpenRecord(self.out_dir, scenario=self.scenario.name, brain=self.brain,
                                          mode='processes' if self.processes else 'in-process',
                                          expected=self.scenario.expected_outcomes)
        threads_before = set(threading.enumerate())
        context = rclpy.Context()
        rclpy.init(args=['--ros-args', '--log-level', self.log_level, *self._namespace_args()], context=context,
                   domain_id=self.domain_id)
        executor = TeamExecutor(num_threads=8, context=context)
        sim_time = [Parameter('use_sim_time', value=True)]
        recorder = TeamRecorder(context=context, parameter_overrides=sim_time, on_event=self._on_event)
        if self.foxglove is not None:
            self.foxglove.live.scene = recorder.scene
        # an exception that ends the executor's spin is recorded and spun past (_check_team)
        spin = self._spin = SpinThread(executor, 'episode-executor', self.restarts.max_restarts)
        self.events = _RunnerEvents(EventEmitter(recorder, 'runner'), recorder, spin)
        if self.processes:   # sim time held while a node restarts (robot_team.run.restart_holds)
            holds = ClockHoldPublisher(recorder, 'runner', NODE_RESTART)
            self._restart_holds = RestartHolds(holds.begin, holds.end, watched(self.scenario.robots))
        nodes = self.nodes = [recorder]
        executor.add_node(recorder)
        spin.start()
        start_error: RuntimeError | None = None
        with Interrupt() as interrupt:
            try:
                self._run_team(context, paths, executor, recorder, nodes, interrupt)
            except RuntimeError as exc:   # the team did not come up: recorded, reported, then raised
                start_error = exc
                self.events.emit(EventKind.EPISODE_FINISHED, 'episode stopped: the team did not start',
                                 reason=str(exc), outcome='start_error')
            except BaseException:   # anything else: end what the episode started, then let it go on
                self._stop_team(recorder, nodes)
                self._destroy(executor, spin, nodes, context, threads_before, [])
                raise
            events, not_stopped = self._stop_team(recorder, nodes)
            # The record and the report before the executor, the nodes and the context are destroyed:
            # a native crash there (rclpy's) must not lose them. The report is written again after,
            # with how the teardown went.
            try:
                files = self._write_record(events, recorder)
                self._write_report(events, files, paths, time.monotonic() - wall_start, interrupt,
                                   teardown={'clean': False, 'pending': 'executor and nodes being destroyed'})
            finally:
                teardown = self._destroy(executor, spin, nodes, context, threads_before, not_stopped)
        report = self._write_report(events, files, paths, time.monotonic() - wall_start, interrupt, teardown)
        if start_error is not None:
            raise start_error
        return RunResult(report=report, out_dir=self.out_dir, events=events)

    def _write_record(self, events: list[TeamEventModel], recorder: TeamRecorder) -> dict:
        """Write the episode's record (``events.jsonl``, ``events.mcap``...); return its files."""
        if self.open_record is not None:   # the whole record, in order, replaces the journal
            self.open_record.close()
        return write_record(events, self.out_dir, join(self.namespace, 'team/events'), recorder.samples())

    def _write_report(self, events: list[TeamEventModel], files: dict, paths: dict, wall_time: float,
                      interrupt: Interrupt, teardown: dict) -> dict:
        """Build ``report.json`` from the record and write it (atomically); return it."""
        report = build_report(events, scenario=self.scenario.name, brain=self.brain,
                              mode='processes' if self.processes else 'in-process',
                              expected_outcome=self.scenario.expected_outcome, wall_time_s=wall_time, files=files,
                              case_expected=self.scenario.expected_outcomes)
        report['namespace'] = self.namespace
        if self.foxglove is not None:
            report['foxglove'] = {'host': self.foxglove_host, 'port': self.foxglove.port}
        report['domain_id'] = self.domain_id
        report['teardown'] = teardown
        if self.processes:
            report['dds_profile'] = self.dds_profile
            report['restarts'] = self.restarts.summary(self._down)
            report['node_memory_mib'] = self._node_memory
        report['llm_clock'] = self.llm.clock_report(events)
        report['clock'] = clock_report(events, self.clock, self.real_time_factor, self.jump_ahead)
        report.update(self.llm.endpoint_report())
        if report['outcome'] == 'interrupted':
            report['interrupted_by'] = interrupt.signal_name
        report['files'] = {'report': str(self.out_dir / 'report.json'), **files,
                           'staff_db': paths['staff_db'], 'scenario': paths['scenario']}
        if self.open_record is not None:
            report['files']['cases'] = dict(self.open_record.reports)
        write_atomically(self.out_dir / 'report.json', json.dumps(report, indent=2, default=str))
        return report

    def _on_event(self, event: TeamEventModel) -> None:
        """Pass one recorded event to the live Foxglove server (if any) and to the caller's ``on_event``.

        Open-ended (a deployment's scenario): the event also goes to :attr:`open_record` (the journal,
        the cases it closes).
        """
        if self.open_record is not None:
            self.open_record.add(event)
        if self.foxglove is not None:
            self.foxglove.log_event(event)
        if self._restart_holds is not None:
            for ended in self._restart_holds.observe(event):
                self._record_hold_ended(ended)
        if self.on_event is not None:
            self.on_event(event)

    def _run_team(self, context, paths: dict, executor, recorder: TeamRecorder, nodes: list,
                  interrupt: Interrupt) -> None:
        """Start the team and the simulator, and wait for the episode's end, its time limit or a signal."""
        self._interrupt = interrupt
        finished = None
        self.llm.start(self.brain_options)
        if self.processes:
            self._start_processes(self.team.commands(paths))
        else:
            for node in self.team.make(context, paths):
                nodes.append(node)
                executor.add_node(node)
        self._clock_control = ClockControl(self.nodes, recorder, self.out_dir / 'logs')
        if self._wait_started(recorder, timeout_s=60.0, interrupt=interrupt):
            self._team_started = True   # from now on a node that dies is started again
            self._clock_control.resume()
            finished = wait_finished(
                recorder, interrupt, time_limit_s=self.scenario.time_limit_s, open_record=self.open_record,
                wall_budget_s=wall_budget_s(self.scenario.time_limit_s, self.real_time_factor, self.llm_clock),
                emit=self.events.emit, check_children=self._check_team, restart_due=self._restart_due,
                down=self._down)
            if finished is None and not interrupt.is_set() and self.scenario.open_ended:
                outcome, why = time_limit_outcome(recorder.events())
                self.events.emit(EventKind.EPISODE_FINISHED, f'run stopped: the manager stays down ({outcome})',
                                 reason=f'nobody serves the patients any more: {why}', outcome=outcome)
            elif finished is None and not interrupt.is_set() and self._spin.gave_up and not self.processes:
                outcome, why = time_limit_outcome(recorder.events())
                self.events.emit(EventKind.EPISODE_FINISHED,
                                 f"episode stopped: the team's executor stopped ({outcome})",
                                 reason=f'every node of the team stopped with it: {why}', outcome=outcome)
            elif finished is None and not interrupt.is_set():
                outcome, why = time_limit_outcome(recorder.events())
                self.events.emit(EventKind.EPISODE_FINISHED, f'episode stopped: time limit reached ({outcome})',
                                 reason=f'no episode end within {self.scenario.time_limit_s:.0f} s of sim time: {why}',
                                 outcome=outcome)
        if finished is None and interrupt.is_set():
            self.events.emit(EventKind.EPISODE_FINISHED, f'episode stopped: {interrupt.signal_name} received',
                             reason=f'{interrupt.signal_name}: the run was interrupted; the record so far is kept',
                             outcome='interrupted', signal=interrupt.signal_name)

    def _stop_team(self, recorder: TeamRecorder, nodes: list) -> tuple[list[TeamEventModel], list[str]]:
        """Stop the team's work while the executor spins; return the episode's events and the nodes not stopped.

        What the nodes record on their way out reaches the record; then the node processes and the
        LLM endpoint end.
        """
        if self._restart_holds is not None:
            for ended in self._restart_holds.end_all():
                self._record_hold_ended(ended)
        not_stopped = stop_nodes(nodes)
        self._node_memory = self._peak_memory()
        self._stop_processes()
        self.llm.stop()
        if self.processes:
            time.sleep(0.2)   # let the last events of the nodes' processes arrive
        else:   # this process's nodes: until their last events arrived (each emitter knows its last)
            recorder.recorded_all(emitters_of(recorder.context), timeout_s=1.0)
        return recorder.events(), not_stopped

    def _destroy(self, executor, spin: threading.Thread, nodes: list, context, threads_before: set,
                 not_stopped: list[str]) -> dict:
        """End the executor, the nodes, the context and the live scene server; return what did not end cleanly."""
        for node in reversed(nodes):
            executor.remove_node(node)
        # Let callbacks already queued in the executor's thread pool finish before its guard
        # condition is destroyed (else rclpy reports "exception was never retrieved").
        executor.wait_idle(0.3)
        callbacks_finished = shutdown_executor(executor, spin, timeout_s=5.0)
        for node in reversed(nodes):
            node.destroy_node()
        context.try_shutdown()
        if self.foxglove is not None:
            self.foxglove.stop()
        left = threads_left(threads_before)
        return {'clean': not (not_stopped or left or not callbacks_finished or in_flight()),
                'nodes_not_stopped': not_stopped, 'callbacks_finished': callbacks_finished,
                'threads_left': left, 'llm_requests_in_flight': in_flight()}

    def _wait_started(self, recorder: TeamRecorder, timeout_s: float, interrupt: Interrupt) -> bool:
        """Wait until every node of the episode started; return False if interrupted first.

        Raises RuntimeError as :func:`robot_team.run.waits.wait_started`: a node crashed at start-up
        and stays down, or the team did not start within ``timeout_s`` (wall).
        """
        return wait_started(recorder, self.team.expected(), timeout_s, interrupt,
                            check_children=self._check_team, restart_due=self._restart_due, down=self._down,
                            logs=self.out_dir / 'logs')

    def _check_team(self) -> None:
        """Record each node process that ended (:meth:`_check_children`) and each exception that stopped the executor.

        The executor (:class:`~robot_team.ros.spin.SpinThread`) spins again after such an
        exception, up to ``max_restarts`` times; after that, in-process, every node of the team is
        down (the waits end) and the runner's events are stored without it.
        """
        self._check_children()
        if self._restart_holds is not None:
            for ended in self._restart_holds.overdue():
                self._record_hold_ended(ended)
        if self._spin is None:   # nothing spins yet (run() not started)
            return
        for failure in self._spin.take_failures():
            then = 'spun again' if failure.spun_again else 'not spun again: its nodes stay down'
            self.events.emit(EventKind.NODE_CRASHED, f"the team's executor stopped on {failure.error}; {then}",
                             target=EXECUTOR, reason='an exception ended the executor\'s spin()',
                             error=failure.error, log_tail=failure.traceback_tail, restart=failure.spun_again,
                             restart_attempt=failure.attempt, max_restarts=self.restarts.max_restarts,
                             nodes=sorted(node.get_name() for node in self.nodes))
        if self._spin.gave_up and not self.processes:
            self._down.update(self.team.expected())

    def _namespace_args(self, node: str | None = None) -> list[str]:
        """Return the ``--ros-args`` remaps that put the team (or one ``node`` of it) in its namespace.

        See :func:`robot_team.run.dds.namespace_args`.
        """
        return namespace_args(self.namespace, self.scenario.robots, node)

    def _record_input_error(self, exc: ConfigError, wall_time: float) -> None:
        """Write the record and report of a run stopped by bad input, before any node started."""
        event = TeamEventModel(stamp_s=0.0, wall_time=time.time(), seq=1, actor='runner',
                               kind=EventKind.INPUT_ERROR.value, target=self.scenario.name,
                               summary='the run could not start: bad input', reason=str(exc),
                               data={'error': str(exc), 'type': type(exc).__name__})
        self.out_dir.mkdir(parents=True, exist_ok=True)
        files = write_record([event], self.out_dir)
        report = build_report([event], scenario=self.scenario.name, brain=self.brain,
                              mode='processes' if self.processes else 'in-process',
                              expected_outcome=self.scenario.expected_outcome, wall_time_s=wall_time, files=files)
        report.update(outcome='input_error', error=str(exc),
                      files={'report': str(self.out_dir / 'report.json'), **files})
        write_atomically(self.out_dir / 'report.json', json.dumps(report, indent=2, default=str))


def run_episode(scenario: Scenario | str, out_dir: Path | str, *, brain: str = 'protocol', processes: bool = False,
                domain_id: int | None = None, real_time_factor: float | None = None,
                on_event: Callable[[TeamEventModel], None] | None = None,
                brain_options: dict | None = None, log_level: str = 'info', namespace: str = '/',
                llm_clock: str = 'realtime', local_llm=None, local_model: str | None = None,
                clock: str = 'follow', max_restarts: int = DEFAULT_MAX_RESTARTS,
                restart_delay_s: float = DEFAULT_RESTART_DELAY_S, seed: int | None = None, fhir_port: int = 0,
                fhir_host: str = '127.0.0.1', foxglove_port: int | None = None,
                foxglove_host: str = '127.0.0.1', jump_ahead: bool = True) -> RunResult:
    """Run one episode of ``scenario`` (a :class:`Scenario`, name or path) and write its record.

    Writes ``out_dir/report.json``, ``events.jsonl``, ``events.mcap``, ``staff.sqlite``,
    ``scenario.json`` (and ``logs/`` with ``processes=True``). ``brain_options`` are passed to
    the manager and robots as ROS parameters (see :func:`robot_team.nodes_plan.node_parameters`). ``log_level``
    ('debug', 'info', 'warn', 'error') sets the nodes' console logging; the event record is
    complete whatever it is. ``namespace`` runs the whole team under that ROS namespace (robots
    in ``<namespace>/<robot>``, its own clock topic), so that two teams can share one domain.
    ``brain`` 'local' runs every brain on the built-in local endpoint (``local_llm``, a started
    :class:`robot_team.llm.local.LocalServer` to share across episodes; by default the run starts
    and stops its own, serving ``local_model``: a shipped model's name or alias, or a path to a
    ``.gguf``, default the LLM settings' ``local.model``; see :func:`robot_team.llm.local.resolve_model`).
    ``brain`` 'random' runs every brain on the chance endpoint (:mod:`robot_team.llm.chance`: each
    reply drawn at random within its request's schema), started and stopped by the episode with
    ``seed`` (an integer >= 0, default 0; only with 'random'), recorded in ``report.json``'s
    ``chance_llm`` and as the model name ``chance-seed-<seed>``.
    ``fhir_port`` (1-65535; 0: none) also runs the FHIR gateway (:mod:`robot_team.agents.fhir_gateway_node`)
    on ``fhir_host`` (default 127.0.0.1; elsewhere the bearer token in ``ROBOT_TEAM_FHIR_TOKEN`` is
    required): the hospital's emergency Encounters open cases beside the scenario's patients, and
    one finished or cancelled ends its case.
    ``foxglove_port`` (None: none; 0: any free port) serves the live scene and events to Foxglove
    (:class:`robot_team.scene_foxglove.FoxgloveServer`, WebSocket) on ``foxglove_host`` (default
    loopback) for the run's duration; a port in use raises RuntimeError before the team starts.
    ``clock`` 'follow' (default) advances sim time as fast as every node of the team keeps up
    (:mod:`robot_team.contracts.clock_sync`), 'wall' at ``real_time_factor`` x wall time (default the
    scenario's); in 'follow' a ``real_time_factor`` caps the speed (default: no cap), and
    ``jump_ahead`` (default true; not with a cap) lets it jump across time where the team only waits
    for a scheduled event (``clock_jump`` events; ``report.json``'s ``clock.jumps``, ``jumped_s``).
    ``llm_clock`` 'lockstep' holds sim time while a brain waits on its LLM
    (:mod:`robot_team.llm.lockstep`); 'realtime' (default) does not (the follow clock always holds).
    With ``processes=True`` a node process that exits after the team started is started again
    ``restart_delay_s`` wall seconds later, at most ``max_restarts`` times per node (0: never;
    ``motion_sim``, the clock source, never), each recorded as ``node_restarted``; ``report.json``
    has ``restarts`` and ``dds_profile`` (the Fast DDS profile the node processes got).

    Raises
    ------
    ConfigError
        If the scenario, floor or staff directory cannot be used, ``brain`` is unknown, ``seed`` is
        not an integer >= 0 or is given with another brain than 'random', or (``brain`` 'local')
        the model is unknown or not installed.
    RestartError
        (a ValueError) If ``max_restarts`` is negative or ``restart_delay_s`` negative.
    RuntimeError
        If the team's nodes do not come up (a node that crashes during start-up is not restarted).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(str(scenario))
    return Episode(scenario, Path(out_dir), brain=brain, processes=processes, domain_id=domain_id,
                   real_time_factor=real_time_factor, on_event=on_event, brain_options=brain_options,
                   log_level=log_level, namespace=namespace, llm_clock=llm_clock, local_llm=local_llm,
                   local_model=local_model, clock=clock, max_restarts=max_restarts,
                   restart_delay_s=restart_delay_s, seed=seed, fhir_port=fhir_port, fhir_host=fhir_host,
                   foxglove_port=foxglove_port, foxglove_host=foxglove_host, jump_ahead=jump_ahead).run()
