"""One process per node: start each node's process, notice one that ends, restart it, stop them all.

:class:`NodeProcesses` is the process side of an episode run with ``processes=True``
(:class:`robot_team.run.episode.Episode` holds it as a base): each node runs as
``python -m <module> --ros-args ...``, exactly as ``ros2 run``/``ros2 launch`` would start it,
logging to ``logs/<node>.log``. A node whose process ends is recorded as ``node_crashed`` with its
exit code and last log lines and started again by the episode's
:class:`robot_team.run.restarts.RestartPolicy` (the same command line, parameters and environment
after its delay; ``node_restarted``), or stays down; once the team started, sim time is held
from the exit until the team has the node back (:mod:`robot_team.run.restart_holds`); the
clock source hears of a node that stays down at once (``followers_gone``). The
processes get the team's Fast DDS profile (:func:`robot_team.run.restarts.dds_environment`), so a
killed node leaves the graph within seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import robot_team
from robot_team.contracts.events import EventKind
from robot_team.contracts.names import MOTION_SIM
from robot_team.run.lifecycle import Interrupt
from robot_team.run.restart_holds import HoldEnded, RestartHolds
from robot_team.run.restarts import RestartPolicy, dds_environment

NOT_RESTARTABLE = frozenset({MOTION_SIM})
"""Nodes never restarted: ``motion_sim`` is the world and the clock source; started again it would
begin sim time at 0, paused, with every robot back at its dock (Gazebo is not respawned either)."""


class NodeProcesses:
    """The node processes of an episode: started, watched, restarted, measured and stopped.

    A base of the episode, which provides what the processes are started with and recorded by:
    ``out_dir`` (the run folder: the processes' working directory, ``logs/``), ``domain_id``,
    ``log_level``, ``_namespace_args(node)`` (a node's namespace remaps), ``restarts`` (the
    :class:`RestartPolicy`), ``events`` (the emitter of ``node_crashed``/``node_restarted``),
    ``_interrupt`` (the episode's :class:`robot_team.run.lifecycle.Interrupt`, None before it
    runs) and ``_team_started`` (True once every node started). :meth:`_init_processes` sets up
    the bookkeeping.
    """

    out_dir: Path
    domain_id: int
    log_level: str
    restarts: RestartPolicy
    events: object
    _interrupt: Interrupt | None
    _team_started: bool

    def _init_processes(self) -> None:
        self._children: dict[str, subprocess.Popen] = {}
        self._commands: dict[str, tuple[list[str], dict]] = {}   # node -> (argv, env) it was started with
        self._crashed: set[str] = set()
        """Nodes whose process ended and has not been started again (yet)."""
        self._down: set[str] = set()
        """Nodes that stay down for the rest of the episode (not restartable, or restarts exhausted)."""
        self._node_memory: dict[str, float | None] = {}   # peak resident memory per node process, MiB
        self._dds_env: dict = {}
        self.dds_profile: dict | None = None
        """The Fast DDS profile the node processes got (processes mode; see :func:`dds_environment`)."""
        self._restart_holds: RestartHolds | None = None
        """Sim time held over each restart (set by the episode once its runner node exists)."""
        self._clock_control = None
        """The clock source's parameters (:class:`robot_team.run.clock.ClockControl`; set by the episode)."""

    def _start_processes(self, commands: list[tuple[str, list[str], dict]]) -> None:
        """Start every node in its own process, each with the team's DDS profile (unless the user set one).

        ``commands``: ``(node, argv, parameters)`` of each, in start order
        (:meth:`robot_team.run.nodes.EpisodeNodes.commands`).

        Raises
        ------
        ConfigError, FileNotFoundError
            If the team's Fast DDS profile is needed and cannot be found.
        """
        self._dds_env, self.dds_profile = dds_environment(os.environ)
        for name, argv, params in commands:
            self._start_process(name, argv, params)

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
            hold = self._hold_restart(name, decision.restart)
            if not decision.restart and self._team_started and self._clock_control is not None:
                self._clock_control.follower_gone(name)   # the follow clock no longer waits for it
            restart = {'restart': decision.restart, 'restart_attempt': decision.attempt,
                       'max_restarts': self.restarts.max_restarts,
                       'restart_delay_s': self.restarts.delay_s if decision.restart else None,
                       'stays_down': decision.reason or None, 'during_start_up': not self._team_started,
                       'clock_hold': hold or None}
            self.events.emit(EventKind.NODE_CRASHED, f'node {name} exited with code {code}'
                             + (f"; stays down ({restart['stays_down']})" if restart.get('stays_down') else ''),
                             target=name, reason='process ended before the episode did', returncode=code,
                             pid=proc.pid, log_tail=tail, **restart)

    def _hold_restart(self, name: str, restart: bool) -> str:
        """Hold sim time over ``name``'s restart (or end the hold: it stays down); return the new hold's ID or ''.

        Nothing before the team started: the clock has not started either.
        """
        if self._restart_holds is None or not self._team_started:
            return ''
        outcome = self._restart_holds.crashed(name, restart)
        if isinstance(outcome, HoldEnded):
            self._record_hold_ended(outcome)
            return ''
        return outcome or ''

    def _record_hold_ended(self, ended: HoldEnded) -> None:
        """Record that sim time no longer waits for ``ended.node``'s restart (``observation``, cue ``restart_hold``)."""
        why = {'robot_back': 'the supervisor saw it back and the record has its start',
               'robot_seen': 'the supervisor, which never heard it before its crash, heard it, and the record has '
                             'its start',
               'node_started': 'it started again',
               'not_seen_back': 'it started, but the supervisor did not see it back in time',
               'not_recorded': 'the supervisor saw it back, but its start did not reach the record in time',
               'stays_down': 'it stays down', 'episode_end': 'the episode ended'}[ended.released_by]
        self.events.emit(EventKind.OBSERVATION,
                         f'sim time held {ended.held_wall_s:.1f} wall s while {ended.node} restarted: {why}',
                         target=ended.node, reason='a restart costs wall time, not sim time', cue='restart_hold',
                         node=ended.node, hold_id=ended.hold_id, released_by=ended.released_by,
                         held_wall_s=ended.held_wall_s)

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
