"""An episode's sim clock: letting it start, bounding the episode's wall time, reporting it.

The clock source (``motion_sim``) starts paused and holds sim time at 0 until every node is up
and has matched ``/clock``; :class:`ClockControl` unpauses it once the team started (its
``paused`` parameter, in this process or over ROS) and names the nodes that died and stay down
(``followers_gone``), for which the follow clock then stops waiting at once. :func:`wall_budget_s`
bounds an episode's wall time from its sim limit; :func:`clock_report` is ``report.json``'s ``clock``.
"""

from __future__ import annotations

import time
from pathlib import Path

from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from robot_team.contracts.clock_sync import DEFAULT_MAX_STEP_SIZE_S
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import MOTION_SIM

LOCKSTEP_WALL_ALLOWANCE_S = 3600.0
"""Wall seconds an episode under the lockstep LLM clock may spend beyond its sim limit's wall time
(the time brains waited on their LLM while sim time stood still)."""


def wall_budget_s(time_limit_s: float, real_time_factor: float, llm_clock: str) -> float:
    """Return the wall seconds an episode of ``time_limit_s`` sim seconds may run before it is cut off.

    Follow clock (``real_time_factor`` 0): sim time runs as fast as the team keeps up; at least
    real time is assumed (else the cap's or the wall clock's pace). Three times that, plus 60 s,
    plus :data:`LOCKSTEP_WALL_ALLOWANCE_S` under the lockstep LLM clock (sim time stands still
    while brains wait on their LLM, so wall time is not bounded by the sim limit).
    """
    held = LOCKSTEP_WALL_ALLOWANCE_S if llm_clock == 'lockstep' else 0.0
    pace = real_time_factor if real_time_factor > 0 else 1.0
    return time_limit_s / pace * 3.0 + 60.0 + held


class ClockControl:
    """The runner's hand on the clock source's (``motion_sim``'s) parameters.

    ``nodes``: the nodes of this process; ``motion_sim`` among them (in-process), its parameters
    are set directly. Else (one process per node) a parameter client is made now, on ``recorder``,
    so that DDS discovers ``motion_sim``'s parameter services while the team starts.
    """

    def __init__(self, nodes: list, recorder, logs: Path):
        self._motion = next((n for n in nodes if n.get_name() == MOTION_SIM), None)
        # its service clients live with the recorder
        self._client = None if self._motion is not None else AsyncParameterClient(recorder, MOTION_SIM)
        self._logs = logs
        self._gone: list[str] = []

    def resume(self) -> None:
        """Unpause ``motion_sim`` (set its ``paused`` parameter false): sim time starts.

        Raises
        ------
        RuntimeError
            Naming the logs folder, if (one process per node) ``motion_sim``'s parameter services
            never appear or the clock does not resume within 30 wall s each.
        """
        paused = [Parameter('paused', value=False)]
        if self._motion is not None:
            self._motion.set_parameters(paused)
            return
        deadline = time.monotonic() + 30.0
        while not self._client.services_are_ready():     # (its wait_for_services sleeps 0.25 s per check)
            if time.monotonic() >= deadline:
                raise RuntimeError(f'{MOTION_SIM} offers no parameter services; see {self._logs}')
            time.sleep(0.002)
        future = self._client.set_parameters(paused)
        deadline = time.monotonic() + 30.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.002)
        if not future.done() or not all(r.successful for r in future.result().results):
            raise RuntimeError(f'{MOTION_SIM} did not resume its clock; see {self._logs}')

    def follower_gone(self, node: str) -> None:
        """Tell the clock source that ``node`` died and stays down (its ``followers_gone`` parameter).

        Nothing waits for the answer: a clock source that does not take it still stops waiting for
        the node after its ``follower_timeout_s`` (:mod:`robot_team.contracts.clock_sync`).
        """
        self._gone.append(node)
        gone = [Parameter('followers_gone', value=list(self._gone))]
        if self._motion is not None:
            self._motion.set_parameters(gone)
        elif self._client.services_are_ready():
            self._client.set_parameters(gone)


def clock_report(events: list[TeamEventModel], clock: str, real_time_factor: float, jump_ahead: bool) -> dict:
    """Return the report's ``clock``: mode, speed, followers lost; with the follow clock, its jumps.

    ``jump_ahead`` is reported as the clock source took it (a speed cap turns it off), the
    episode's setting where it did not say.
    """
    lost = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_follower_lost']
    out = {'mode': clock, 'real_time_factor': real_time_factor,
           'followers_lost': sorted({e.data.get('follower', '') for e in lost})}
    if clock == 'follow':
        jumps = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_jump']
        jump_ahead = next((bool(e.data.get('jump_ahead')) for e in events if e.actor == MOTION_SIM
                           and e.kind == EventKind.NODE_STARTED.value), jump_ahead)
        out.update(max_step_size=DEFAULT_MAX_STEP_SIZE_S, jump_ahead=jump_ahead, jumps=len(jumps),
                   jumped_s=round(sum(e.data['to_s'] - e.data['from_s'] for e in jumps), 3))
    return out
