"""Run one ED episode: the whole team on the embedded simulator, then the record and report.

Two modes share everything but process layout:

- in-process (default): every node in this process, one multi-threaded executor
  (:class:`robot_team.ros.executor.TeamExecutor`);
- ``processes=True``: each node in its own process (``python -m <module> --ros-args ...``),
  exactly as ``ros2 run``/``ros2 launch`` would start them; this process only records. A
  node that dies is recorded as ``node_crashed`` with its exit code and last log lines and, once
  the team has started, started again as launch's ``respawn`` does: the same command line,
  parameters and environment after ``restart_delay_s`` (0.5 wall s), at most ``max_restarts``
  times per node (3), each recorded as ``node_restarted`` (:mod:`robot_team.restarts`). The node
  processes get the team's Fast DDS profile (participant lease 3 s), so a killed node leaves the
  ROS graph within seconds rather than Fast DDS's default 20 s.

The simulator's two nodes (``hospital_systems`` and ``motion_sim``, the clock source) start with
the team; ``motion_sim`` starts paused and holds sim time at 0 until every node is up and has
matched ``/clock`` (its ``paused`` and ``min_clock_subscribers`` parameters), so sim time (and
the patient's arrival) starts when the team is ready.

Everything the episode starts ends with it (:mod:`robot_team.lifecycle`): the team's work is
stopped while the executor still spins (brain threads, LLM requests in flight, tasks, the
simulator's waits), then the executor and the nodes; ``report.json``'s ``teardown`` names any
thread that outlived the episode. SIGINT and SIGTERM end the episode with outcome
``interrupted``; its report and record are written all the same.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import rclpy
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

import robot_team
from robot_team.agents.fhir_gateway_node import FhirGatewayNode
from robot_team.agents.manager_node import ManagerNode
from robot_team.agents.operator_node import ScriptedOperatorNode
from robot_team.agents.robot_node import RobotNode
from robot_team.agents.supervisor_node import SupervisorNode
from robot_team.contracts.clock_sync import DEFAULT_MAX_STEP_SIZE_S, check_clock_mode
from robot_team.contracts.config import ConfigError, Scenario, load_scenario
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.lifecycle import Interrupt, shutdown_executor, stop_nodes, threads_left
from robot_team.llm.chance import ChanceServer, check_seed
from robot_team.llm.factory import LLM_BRAINS, check_endpoint
from robot_team.llm.inflight import in_flight
from robot_team.llm.local import LocalServer, check_model, resolve_model
from robot_team.llm.lockstep import check_llm_clock, llm_clock_under
from robot_team.llm.settings import LLMSettings
from robot_team.contracts.names import (
    FHIR_GATEWAY, HOSPITAL_SYSTEMS, MOTION_SIM, OPERATOR, SUPERVISOR, Role, clock_remap, join, role_name,
    validate_namespace)
from robot_team.nodes_plan import SIM_NODES, node_parameters, prepare, team_nodes
from robot_team.recorder import TeamRecorder, write_record
from robot_team.run_report import OpenRecord, build_report, time_limit_outcome
from robot_team.restarts import DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_DELAY_S, RestartPolicy, dds_environment
from robot_team.ros.emitter import EventEmitter
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.stamps import now_s
from robot_team.contracts.scene import SceneState
from robot_team.scene_foxglove import FoxgloveServer
from robot_team.sim.hospital_node import HospitalSystemsNode
from robot_team.sim.motion_node import MotionSimNode

BRAINS = ('protocol', *LLM_BRAINS)
"""Brain kinds of a run: the deterministic protocol brain, or an LLM brain (``random``: the chance endpoint)."""

LOCKSTEP_WALL_ALLOWANCE_S = 3600.0
"""Wall seconds an episode under the lockstep LLM clock may spend beyond its sim limit's wall time
(the time brains waited on their LLM while sim time stood still)."""

NOT_RESTARTABLE = frozenset({MOTION_SIM})
"""Nodes never restarted: ``motion_sim`` is the world and the clock source; started again it would
begin sim time at 0, paused, with every robot back at its dock (Gazebo is not respawned either)."""


@dataclass
class RunResult:
    """What a run produced: the report (as written to report.json), its folder and events."""

    report: dict
    out_dir: Path
    events: list[TeamEventModel] = field(default_factory=list)


def check_brain(brain: str, what: str = 'brain') -> str:
    """Return ``brain`` if it is a brain kind (:data:`BRAINS`).

    Raises
    ------
    ValueError
        If it is not, naming ``what`` (e.g. ``'--brain'``), the value and the kinds.
    """
    if brain not in BRAINS:
        raise ValueError(f"{what} '{brain}' is not a brain: expected one of {', '.join(BRAINS)}")
    return brain


def ensure_localhost_dds() -> None:
    """Keep DDS discovery on this machine unless the user explicitly chose otherwise."""
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')


class Episode:
    """One episode's graph and record; use :func:`run_episode` unless you need the pieces."""

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
        # --brain random: the chance endpoint's seed (checked by run(): a bad one is recorded as bad input)
        self.seed = seed
        self.chance: ChanceServer | None = None
        # processes mode: crashed node processes start again (RestartError, a ValueError, if out of range)
        self.restarts = RestartPolicy(max_restarts, restart_delay_s, NOT_RESTARTABLE)
        self.local_model = local_model
        self.clock = check_clock_mode(clock, 'clock (--clock)')
        # The follow clock holds while a brain waits on its LLM: the brains announce their waits.
        self.llm_clock = llm_clock_under(self.clock, llm_clock)
        # --brain local: the embedded endpoint (robot_team.llm.local.LocalServer); one given is not stopped here
        self.local_llm, self._own_local_llm = local_llm, local_llm is None
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
        self._children: dict[str, subprocess.Popen] = {}
        self._commands: dict[str, tuple[list[str], dict]] = {}   # node -> (argv, env) it was started with
        self._interrupt: Interrupt | None = None
        self._crashed: set[str] = set()
        """Nodes whose process ended and has not been started again (yet)."""
        self._down: set[str] = set()
        """Nodes that stay down for the rest of the episode (not restartable, or restarts exhausted)."""
        self._node_memory: dict[str, float | None] = {}   # peak resident memory per node process, MiB
        self._team_started = False
        self._dds_env: dict = {}
        self.dds_profile: dict | None = None
        """The Fast DDS profile the node processes got (processes mode; see :func:`dds_environment`)."""
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
            self._check_llm()
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
        self.events = EventEmitter(recorder, 'runner')
        nodes = self.nodes = [recorder]
        executor.add_node(recorder)
        spin = threading.Thread(target=executor.spin, name='episode-executor', daemon=True)
        spin.start()
        start_error: RuntimeError | None = None
        with Interrupt() as interrupt:
            try:
                self._run_team(context, paths, executor, recorder, nodes, interrupt)
            except RuntimeError as exc:   # the team did not come up: recorded, reported, then raised
                start_error = exc
                self.events.emit(EventKind.EPISODE_FINISHED, 'episode stopped: the team did not start',
                                 reason=str(exc), outcome='start_error')
            finally:
                events, teardown = self._teardown(executor, spin, recorder, nodes, context, threads_before)
                if self.foxglove is not None:
                    self.foxglove.stop()
        wall_time = time.monotonic() - wall_start
        if self.open_record is not None:   # the whole record, in order, replaces the journal
            self.open_record.close()
        files = write_record(events, self.out_dir, join(self.namespace, 'team/events'), recorder.samples())
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
        report.update(self._llm_report(events))
        if report['outcome'] == 'interrupted':
            report['interrupted_by'] = interrupt.signal_name
        report['files'] = {'report': str(self.out_dir / 'report.json'), **files,
                           'staff_db': paths['staff_db'], 'scenario': paths['scenario']}
        if self.open_record is not None:
            report['files']['cases'] = dict(self.open_record.reports)
        (self.out_dir / 'report.json').write_text(json.dumps(report, indent=2, default=str))
        if start_error is not None:
            raise start_error
        return RunResult(report=report, out_dir=self.out_dir, events=events)

    def _on_event(self, event: TeamEventModel) -> None:
        """Pass one recorded event to the live Foxglove server (if any) and to the caller's ``on_event``.

        Open-ended (a deployment's scenario): the event also goes to :attr:`open_record` (the journal,
        the cases it closes).
        """
        if self.open_record is not None:
            self.open_record.add(event)
        if self.foxglove is not None:
            self.foxglove.log_event(event)
        if self.on_event is not None:
            self.on_event(event)

    def _run_team(self, context, paths: dict, executor, recorder: TeamRecorder, nodes: list,
                  interrupt: Interrupt) -> None:
        """Start the team and the simulator, and wait for the episode's end, its time limit or a signal."""
        self._interrupt = interrupt
        finished = None
        self._start_local_llm()
        if self.processes:
            self._start_processes(paths)
        else:
            for node in self._make_nodes(context, paths):
                nodes.append(node)
                executor.add_node(node)
        resume_clock = self._clock_resumer(recorder)
        if self._wait_started(recorder, timeout_s=60.0, interrupt=interrupt):
            self._team_started = True   # from now on a node that dies is started again
            resume_clock()
            finished = self._wait_finished(recorder, interrupt)
            if finished is None and not interrupt.is_set() and self.scenario.open_ended:
                outcome, why = time_limit_outcome(recorder.events())
                self.events.emit(EventKind.EPISODE_FINISHED, f'run stopped: the manager stays down ({outcome})',
                                 reason=f'nobody serves the patients any more: {why}', outcome=outcome)
            elif finished is None and not interrupt.is_set():
                outcome, why = time_limit_outcome(recorder.events())
                self.events.emit(EventKind.EPISODE_FINISHED, f'episode stopped: time limit reached ({outcome})',
                                 reason=f'no episode end within {self.scenario.time_limit_s:.0f} s of sim time: {why}',
                                 outcome=outcome)
        if finished is None and interrupt.is_set():
            self.events.emit(EventKind.EPISODE_FINISHED, f'episode stopped: {interrupt.signal_name} received',
                             reason=f'{interrupt.signal_name}: the run was interrupted; the record so far is kept',
                             outcome='interrupted', signal=interrupt.signal_name)

    def _teardown(self, executor, spin: threading.Thread, recorder: TeamRecorder, nodes: list, context,
                  threads_before: set) -> tuple[list[TeamEventModel], dict]:
        """End everything the episode started; return its events and what did not end cleanly.

        The team's work stops first, while the executor spins (what it records on its way out
        reaches the record), then the node processes, the executor, the nodes, the context.
        """
        not_stopped = stop_nodes(nodes)
        self._node_memory = self._peak_memory()
        self._stop_processes()
        self._stop_local_llm()
        time.sleep(0.2)   # let the last events arrive
        events = recorder.events()
        for node in reversed(nodes):
            executor.remove_node(node)
        # Let callbacks already queued in the executor's thread pool finish before its guard
        # condition is destroyed (else rclpy reports "exception was never retrieved").
        time.sleep(0.3)
        callbacks_finished = shutdown_executor(executor, spin, timeout_s=5.0)
        for node in reversed(nodes):
            node.destroy_node()
        context.try_shutdown()
        left = threads_left(threads_before)
        return events, {'clean': not (not_stopped or left or not callbacks_finished or in_flight()),
                        'nodes_not_stopped': not_stopped, 'callbacks_finished': callbacks_finished,
                        'threads_left': left, 'llm_requests_in_flight': in_flight()}

    # -- LLM endpoint and clock (robot_team.llm.factory, robot_team.llm.local, robot_team.llm.lockstep) --

    def _check_llm(self) -> None:
        """Raise ConfigError for a bad brain, seed or LLM clock, --brain openai without an endpoint, a bad local model.

        An endpoint error names the local one; a local model error names what to install.
        """
        try:
            check_brain(self.brain)
            if self.brain == 'random':
                check_seed(0 if self.seed is None else self.seed, 'seed (--seed)')
            elif self.seed is not None:
                raise ValueError(f"seed (--seed) {self.seed!r} is the random chooser's: use it with brain 'random' "
                                 f"(not '{self.brain}')")
            check_llm_clock(self.llm_clock, 'LLM clock (--llm-clock)')
            if self.brain == 'openai':
                check_endpoint(LLMSettings())
            if self.brain == 'local' and self.local_llm is None:
                check_model(resolve_model(self.local_model))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _start_local_llm(self) -> None:
        """For ``--brain local`` or ``random``: start the endpoint, give the nodes its URL and model.

        (Node parameters ``llm_base_url`` and ``llm_model``.) ``random``: the chance endpoint of this
        episode's seed (:class:`robot_team.llm.chance.ChanceServer`, model ``chance-seed-<seed>``).
        """
        if self.brain in LLM_BRAINS:
            self.brain_options.setdefault('llm_clock', self.llm_clock)
        if self.brain == 'random':
            self.chance = ChanceServer(0 if self.seed is None else self.seed).start()
            self.brain_options['llm_base_url'] = self.chance.base_url
            self.brain_options['llm_model'] = self.chance.model
            return
        if self.brain != 'local':
            return
        if self.local_llm is None:
            self.local_llm = LocalServer(model=self.local_model).start()
        self.brain_options['llm_base_url'] = self.local_llm.base_url
        self.brain_options['llm_model'] = self.local_llm.model

    def _stop_local_llm(self) -> None:
        if self.local_llm is not None and self._own_local_llm:
            self.local_llm.stop()
        if self.chance is not None:
            self.chance.stop()

    def _llm_report(self, events: list[TeamEventModel]) -> dict:
        """Return the report's LLM clock (mode, expired holds) and the endpoint of ``--brain local`` or ``random``.

        ``random``: ``chance_llm`` with the seed, the model name and the replies per caller.
        """
        expired = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_hold_expired']
        lost = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_follower_lost']
        out: dict = {'llm_clock': {'mode': self.llm_clock, 'holds_expired': len(expired)},
                     'clock': {'mode': self.clock, 'real_time_factor': self.real_time_factor,
                               'followers_lost': sorted({e.data.get('follower', '') for e in lost})}}
        if self.clock == 'follow':
            jumps = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_jump']
            # as the clock source took it (a speed cap turns it off)
            jump_ahead = next((bool(e.data.get('jump_ahead')) for e in events if e.actor == MOTION_SIM
                               and e.kind == EventKind.NODE_STARTED.value), self.jump_ahead)
            out['clock'].update(max_step_size=DEFAULT_MAX_STEP_SIZE_S, jump_ahead=jump_ahead, jumps=len(jumps),
                                jumped_s=round(sum(e.data['to_s'] - e.data['from_s'] for e in jumps), 3))
        if self.llm_clock == 'lockstep':
            out['llm_clock']['step_s'] = LLMSettings().lockstep_step_s   # as the clock source read it
        if self.local_llm is not None:
            out['local_llm'] = {'model': self.local_llm.model, 'base_url': self.local_llm.base_url,
                                'startup_s': round(self.local_llm.startup_s, 3),
                                'threads': self.local_llm.settings.threads}
        if self.chance is not None:
            out['chance_llm'] = {'model': self.chance.model, 'seed': self.chance.seed,
                                 'base_url': self.chance.base_url, 'replies': self.chance.replies()}
        return out

    def _namespace_args(self, node: str | None = None) -> list[str]:
        """Return the ``--ros-args`` remaps that put the team (or one ``node`` of it) in its namespace.

        Team nodes go to the team namespace, each robot to ``<team>/<robot>``; a namespaced team
        also gets its own clock topic (:func:`robot_team.contracts.names.clock_remap`). Without ``node``:
        node-specific rules for every robot first, then the team-wide one (rcl uses the first match).
        """
        clock = clock_remap(self.namespace) if self.namespace != '/' else []
        if node is not None and node in self.scenario.robots and node != role_name(node):   # a fleet's robot
            return ['-r', f'__node:={node}', '-r', f'__ns:={join(self.namespace, node)}', *clock]
        if self.namespace == '/':
            return []
        robots = self.scenario.robots
        if node is not None:
            ns = join(self.namespace, node) if node in robots else self.namespace
            return ['-r', f'__ns:={ns}', *clock_remap(self.namespace)]
        args = []
        for robot in robots:
            args += ['-r', f'{robot}:__ns:={join(self.namespace, robot)}']
        return args + ['-r', f'__ns:={self.namespace}', *clock_remap(self.namespace)]

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
        (self.out_dir / 'report.json').write_text(json.dumps(report, indent=2, default=str))

    # -- in-process --

    def _make_nodes(self, context, paths: dict) -> list:

        def overrides(name):
            params = node_parameters(name, self.scenario, paths, self.brain, self.brain_options)
            params.pop('scenario', None)
            # no manager record in one process: it cannot die and restart alone (as hospital systems' state_file)
            params.pop('state_db', None)
            return [Parameter(k, value=v) for k, v in params.items()]
        nodes = [SupervisorNode(self.scenario, context=context, parameter_overrides=overrides(SUPERVISOR)),
                 ScriptedOperatorNode(self.scenario, context=context, parameter_overrides=overrides(OPERATOR))]
        for robot in self.scenario.robots:
            nodes.append(RobotNode(role_name(robot), robot=robot, context=context,
                                   parameter_overrides=overrides(robot)))
        nodes.append(ManagerNode(context=context, parameter_overrides=overrides(Role.MANAGER.value)))
        if self.fhir_port:
            nodes.append(FhirGatewayNode(context=context, parameter_overrides=[
                Parameter(k, value=v) for k, v in self._gateway_parameters(paths).items()]))
        sim = {name: [Parameter(k, value=v) for k, v in self._sim_parameters(name, paths).items() if k != 'scenario']
               for name in SIM_NODES}
        nodes.append(HospitalSystemsNode(self.scenario, context=context, parameter_overrides=sim[HOSPITAL_SYSTEMS]))
        nodes.append(MotionSimNode(self.scenario, context=context, parameter_overrides=sim[MOTION_SIM]))
        return nodes

    def _gateway_parameters(self, paths: dict) -> dict:
        """Return the ROS parameters of the FHIR gateway (``fhir_gateway``): address, floor, staff directory, record."""
        return {'use_sim_time': True, 'fhir_port': self.fhir_port, 'fhir_host': self.fhir_host,
                'floor': paths['floor'], 'staff_db': paths['staff_db'], 'state_db': paths['fhir_db']}

    def _gateways(self) -> list[str]:
        """Return the optional nodes of this episode that must start with the team ([``fhir_gateway``] or none)."""
        return [FHIR_GATEWAY] if self.fhir_port else []

    def _sim_parameters(self, name: str, paths: dict) -> dict:
        """Return the ROS parameters of simulator node ``name`` (``hospital_systems`` or ``motion_sim``).

        ``motion_sim`` starts paused and waits for a ``/clock`` subscription from every node that
        runs on sim time (the team, the recorder, ``hospital_systems``); :meth:`_clock_resumer`
        lets it go once they are all up.
        """
        if name == HOSPITAL_SYSTEMS:   # a checkpoint of the floor where its process may die and restart
            return {'scenario': paths['scenario'], 'use_sim_time': True, 'robots': self.scenario.robots,
                    'state_file': paths['hospital_state'] if self.processes else ''}
        return {'scenario': paths['scenario'], 'real_time_factor': float(self.real_time_factor), 'paused': True,
                'robots': self.scenario.robots,
                'min_clock_subscribers': len(team_nodes(self.scenario)) + 2, 'llm_clock': self.llm_clock,
                'clock_mode': self.clock, 'jump_ahead': self.jump_ahead}

    def _clock_resumer(self, recorder) -> Callable[[], object]:
        """Return a function that unpauses ``motion_sim`` (sets its ``paused`` parameter false): sim time starts.

        With one process per node, the parameter client is made now, so that DDS discovers
        ``motion_sim``'s parameter services while the team starts.
        """
        paused = [Parameter('paused', value=False)]
        motion = next((n for n in self.nodes if n.get_name() == MOTION_SIM), None)
        if motion is not None:
            return lambda: motion.set_parameters(paused)
        client = AsyncParameterClient(recorder, MOTION_SIM)   # its service clients live with the recorder

        def resume() -> None:
            deadline = time.monotonic() + 30.0
            while not client.services_are_ready():     # (its wait_for_services sleeps 0.25 s per check)
                if time.monotonic() >= deadline:
                    raise RuntimeError(f'{MOTION_SIM} offers no parameter services; see {self.out_dir / "logs"}')
                time.sleep(0.002)
            future = client.set_parameters(paused)
            deadline = time.monotonic() + 30.0
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.002)
            if not future.done() or not all(r.successful for r in future.result().results):
                raise RuntimeError(f'{MOTION_SIM} did not resume its clock; see {self.out_dir / "logs"}')
        return resume

    # -- processes --

    def _start_processes(self, paths: dict) -> None:
        """Start every node in its own process, each with the team's DDS profile (unless the user set one).

        Raises
        ------
        ConfigError, FileNotFoundError
            If the team's Fast DDS profile is needed and cannot be found.
        """
        self._dds_env, self.dds_profile = dds_environment(os.environ)
        modules = {SUPERVISOR: ['robot_team.agents.supervisor_node'], OPERATOR: ['robot_team.agents.operator_node'],
                   Role.MANAGER.value: ['robot_team.agents.manager_node']}
        for name in team_nodes(self.scenario):
            argv = modules.get(name, ['robot_team.agents.robot_node', role_name(name)])
            self._start_process(name, [sys.executable, '-m', *argv],
                                node_parameters(name, self.scenario, paths, self.brain, self.brain_options))
        sim_modules = {HOSPITAL_SYSTEMS: 'robot_team.sim.hospital_node', MOTION_SIM: 'robot_team.sim.motion_node'}
        for name in SIM_NODES:
            self._start_process(name, [sys.executable, '-m', sim_modules[name]], self._sim_parameters(name, paths))
        if self.fhir_port:   # the bearer token reaches it through the environment, never a parameter
            self._start_process(FHIR_GATEWAY, [sys.executable, '-m', 'robot_team.agents.fhir_gateway_node'],
                                self._gateway_parameters(paths))

    def _start_process(self, name: str, argv: list[str], params: dict) -> None:
        args = list(argv) + ['--ros-args', '--log-level', self.log_level, *self._namespace_args(name)]
        for key, value in params.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            args += ['-p', f'{key}:={text}']
        # PYTHONFAULTHANDLER: a native crash (SIGSEGV, SIGABRT...) leaves the node's Python stacks in its log
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain_id), PYTHONUNBUFFERED='1', PYTHONFAULTHANDLER='1',
                   **self._dds_env)
        source_root = str(Path(robot_team.__path__[0]).parent)
        env['PYTHONPATH'] = source_root + (os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
        self._commands[name] = (args, env)
        self._spawn(name, 'w')

    def _spawn(self, name: str, mode: str) -> subprocess.Popen:
        """Start node ``name``'s process with its recorded command and environment; log to ``logs/<name>.log``.

        ``mode`` 'w' starts the log, 'a' appends to it (a restart keeps the crashed run's log).
        """
        args, env = self._commands[name]
        logs = self.out_dir / 'logs'
        logs.mkdir(exist_ok=True)
        with open(logs / f'{name}.log', mode) as log:
            if mode == 'a':
                log.write(f'\n--- robot_team runner: {name} restarted (attempt {self.restarts.attempts.get(name, 0)}'
                          f' of {self.restarts.max_restarts}) ---\n')
                log.flush()
            proc = self._children[name] = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                           cwd=self.out_dir)
        return proc

    def pid_of(self, name: str) -> int | None:
        """Return the process ID of team node ``name`` (one process per node), None if it runs no process now."""
        proc = self._children.get(name)
        return proc.pid if proc is not None and proc.poll() is None else None

    def _check_children(self) -> None:
        """Record each node process that ended; once the team started, schedule its restart (or say it stays down).

        Nothing is recorded or restarted after a SIGINT/SIGTERM (the nodes stop as asked).
        """
        if self._interrupt is not None and self._interrupt.is_set():
            return   # a Ctrl-C reaches the whole process group: the nodes stop on their own, as asked
        for name, proc in self._children.items():
            code = proc.poll()
            if code is None or name in self._crashed:
                continue
            self._crashed.add(name)
            log = self.out_dir / 'logs' / f'{name}.log'
            tail = log.read_text(errors='replace').splitlines()[-15:] if log.exists() else []
            # the same policy during start-up as later (_wait_started fails only on a node that stays down)
            decision = self.restarts.crashed(name, time.monotonic())
            if not decision.restart:
                self._down.add(name)
            restart = {'restart': decision.restart, 'restart_attempt': decision.attempt,
                       'max_restarts': self.restarts.max_restarts,
                       'restart_delay_s': self.restarts.delay_s if decision.restart else None,
                       'stays_down': decision.reason or None, 'during_start_up': not self._team_started}
            self.events.emit(EventKind.NODE_CRASHED, f'node {name} exited with code {code}'
                             + (f"; stays down ({restart['stays_down']})" if restart.get('stays_down') else ''),
                             target=name, reason='process ended before the episode did', returncode=code,
                             pid=proc.pid, log_tail=tail, **restart)

    def _restart_due(self) -> None:
        """Start again each crashed node whose restart delay has passed; record ``node_restarted``."""
        if self._interrupt is not None and self._interrupt.is_set():
            self.restarts.cancel()
            return
        for decision in self.restarts.due(time.monotonic()):
            name = decision.node
            returncode = self._children[name].returncode
            try:
                proc = self._spawn(name, 'a')
            except OSError as exc:   # the interpreter or the run folder went away: it stays down
                self._down.add(name)
                self.events.emit(EventKind.NODE_CRASHED, f'node {name} could not be restarted: {exc}', target=name,
                                 reason='restart failed', returncode=returncode, restart=False,
                                 restart_attempt=decision.attempt, stays_down='restart_failed')
                continue
            self._crashed.discard(name)
            self.events.emit(EventKind.NODE_RESTARTED,
                             f'node {name} restarted (attempt {decision.attempt} of {self.restarts.max_restarts})',
                             target=name, reason=f'its process exited with code {returncode}', node=name,
                             attempt=decision.attempt, returncode=returncode, pid=proc.pid,
                             max_restarts=self.restarts.max_restarts)

    def _peak_memory(self) -> dict[str, float | None]:
        """Return each node process's peak resident memory (Linux ``VmHWM``), MiB; None where unreadable.

        Read while the processes still run, at the end of the episode: the peak of the process
        running then (a restarted node's earlier processes are not counted).
        """
        peaks: dict[str, float | None] = {}
        for name, proc in self._children.items():
            peaks[name] = None
            try:
                for line in Path(f'/proc/{proc.pid}/status').read_text().splitlines():
                    if line.startswith('VmHWM:'):
                        peaks[name] = round(int(line.split()[1]) / 1024.0, 1)   # kB -> MiB
            except (OSError, ValueError, IndexError):
                pass   # not Linux, or the process is gone: no figure
        return peaks

    def _stop_processes(self, timeout_s: float = 5.0) -> None:
        for proc in self._children.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout_s
        for proc in self._children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # -- waiting --

    def _wait_started(self, recorder: TeamRecorder, timeout_s: float, interrupt: Interrupt) -> bool:
        """Wait until every team node started; return False if interrupted first.

        A node process that ends during start-up is restarted by the same policy as later
        (``node_crashed`` with ``during_start_up``, then ``node_restarted``; its log keeps the
        crashed run, with its native stack if it crashed natively: ``PYTHONFAULTHANDLER``).

        Raises
        ------
        RuntimeError
            If a node crashed and stays down (not restartable, restarts disabled or used up) or
            the team did not start within ``timeout_s`` (wall).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if interrupt.is_set():
                return False
            started = {e.actor for e in recorder.events() if e.kind == EventKind.NODE_STARTED.value}
            if set(team_nodes(self.scenario) + SIM_NODES + self._gateways()) <= started:
                return True
            self._check_children()
            if self._down:
                raise RuntimeError(f"team node(s) {', '.join(sorted(self._down))} crashed at start-up and stay "
                                   f"down; see {self.out_dir / 'logs'}")
            self._restart_due()
            time.sleep(0.02)
        missing = set(team_nodes(self.scenario) + SIM_NODES + self._gateways()) - {
            e.actor for e in recorder.events() if e.kind == EventKind.NODE_STARTED.value}
        raise RuntimeError(f"team node(s) {', '.join(sorted(missing))} did not start within {timeout_s:.0f} s")

    def _wait_finished(self, recorder: TeamRecorder, interrupt: Interrupt) -> TeamEventModel | None:
        if self.open_record is not None:   # a deployment's: until stopped (SIGINT/SIGTERM), a report per case
            try:
                while not interrupt.is_set():
                    recorder.wait_for(lambda e: False, 0.2)
                    self.open_record.write_reports(recorder.events, self.events.emit)
                    self._check_children()
                    self._restart_due()
                    if Role.MANAGER.value in self._down:   # nobody serves the patients any more
                        return None
                return None
            finally:
                self.open_record.write_reports(recorder.events, self.events.emit)
        limit = self.scenario.time_limit_s
        # lockstep: sim time stands still while brains wait on their LLM, so wall time is not bounded
        # by the sim limit; each hold is (max_hold_s), and this bounds the whole episode.
        held = LOCKSTEP_WALL_ALLOWANCE_S if self.llm_clock == 'lockstep' else 0.0
        # follow: sim time runs as fast as the team keeps up; assume at least real time (else the cap's pace).
        pace = self.real_time_factor if self.real_time_factor > 0 else 1.0
        wall_deadline = time.monotonic() + limit / pace * 3.0 + 60.0 + held
        while time.monotonic() < wall_deadline and not interrupt.is_set():
            found = recorder.wait_for(lambda e: e.kind == EventKind.EPISODE_FINISHED.value, 0.1)
            if found is not None:
                return found
            if now_s(recorder) > limit:
                return None
            self._check_children()
            self._restart_due()
            if Role.MANAGER.value in self._down:   # the manager is gone for good: nobody can end the episode
                return None
        return None


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
