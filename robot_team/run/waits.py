"""Waiting on a running episode: for its team to start, then for its end, its time limit or a signal.

Both waits watch the node processes as they go (``check_children`` records one that ended,
``restart_due`` starts again those whose restart delay passed; ``down`` names the nodes that stay
down: :class:`robot_team.run.processes.NodeProcesses`) and give up on a SIGINT/SIGTERM
(:class:`robot_team.run.lifecycle.Interrupt`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import Role
from robot_team.recorder import TeamRecorder
from robot_team.ros.stamps import now_s
from robot_team.run.lifecycle import Interrupt
from robot_team.run_report import OpenRecord


def wait_started(recorder: TeamRecorder, expected: set[str], timeout_s: float, interrupt: Interrupt, *,
                 check_children: Callable[[], None], restart_due: Callable[[], None], down: set[str],
                 logs: Path) -> bool:
    """Wait until every node of ``expected`` started (``node_started`` recorded); return False if interrupted first.

    A node process that ends during start-up is restarted by the same policy as later
    (``node_crashed`` with ``during_start_up``, then ``node_restarted``; its log in ``logs`` keeps
    the crashed run, with its native stack if it crashed natively: ``PYTHONFAULTHANDLER``).

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
        if expected <= started:
            return True
        check_children()
        if down:
            raise RuntimeError(f"team node(s) {', '.join(sorted(down))} crashed at start-up and stay "
                               f"down; see {logs}")
        restart_due()
        time.sleep(0.02)
    missing = expected - {e.actor for e in recorder.events() if e.kind == EventKind.NODE_STARTED.value}
    raise RuntimeError(f"team node(s) {', '.join(sorted(missing))} did not start within {timeout_s:.0f} s")


def wait_finished(recorder: TeamRecorder, interrupt: Interrupt, *, time_limit_s: float, wall_budget_s: float,
                  open_record: OpenRecord | None, emit: Callable, check_children: Callable[[], None],
                  restart_due: Callable[[], None], down: set[str]) -> TeamEventModel | None:
    """Wait for the episode's ``episode_finished`` event and return it; None at its limit, a signal, or no manager.

    The limit: ``time_limit_s`` of sim time, or ``wall_budget_s`` wall seconds
    (:func:`robot_team.run.clock.wall_budget_s`). With an ``open_record`` (a deployment's
    open-ended run) there is no limit: it waits until stopped, writing each closed case's report
    (``emit`` records what that writes). Either way it gives up once the manager stays down
    (nobody can serve the patients or end the episode).
    """
    if open_record is not None:   # a deployment's: until stopped (SIGINT/SIGTERM), a report per case
        try:
            while not interrupt.is_set():
                recorder.wait_for(lambda e: False, 0.2)
                open_record.write_reports(recorder.events, emit)
                check_children()
                restart_due()
                if Role.MANAGER.value in down:   # nobody serves the patients any more
                    return None
            return None
        finally:
            open_record.write_reports(recorder.events, emit)
    wall_deadline = time.monotonic() + wall_budget_s
    while time.monotonic() < wall_deadline and not interrupt.is_set():
        found = recorder.wait_for(lambda e: e.kind == EventKind.EPISODE_FINISHED.value, 0.1)
        if found is not None:
            return found
        if now_s(recorder) > time_limit_s:
            return None
        check_children()
        restart_due()
        if Role.MANAGER.value in down:   # the manager is gone for good: nobody can end the episode
            return None
    return None
