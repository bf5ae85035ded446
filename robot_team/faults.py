"""Fault injection: kill one team node mid-episode and measure how the team notices and recovers.

Each :class:`Fault` names a node of a ``robot-team run --processes`` episode and the moment to
``kill -9`` its process: the ``nth`` team event of a kind (and actor, target), e.g. the navigation
robot's second ``navigate_to_pose`` call of the onboarding (the escort). :func:`run_fault` runs the
episode, kills the node at that event (the runner restarts it: ``node_restarted``) and reads the
record back: :class:`FaultResult` gives the time to notice (the supervisor's ``robot_lost``; for
the supervisor itself, the runner seeing its process end), the time to recover (the task it held
delegated again, or the node back), the outcome, and whether every event recorded before the fault
is still in ``events.jsonl`` and ``events.mcap``. ``robot-team faults`` runs them as a table;
``test/test_faults.py`` asserts them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from robot_team.catalog import Tool
from robot_team.contracts.config import Scenario, load_scenario
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import HOSPITAL_SYSTEMS, SUPERVISOR, Role
from robot_team.recorder import read_jsonl, read_mcap_events
from robot_team.run.episode import Episode

NOTICE_BOUND_S = 5.0
"""A loss must be noticed within this many wall seconds (issue 19; the liveliness lease is 2 s)."""


class Fault(BaseModel):
    """Kill ``node``'s process at the ``nth`` event of ``kind`` (by ``actor``, about ``target``)."""

    name: str = Field(description='What the fault is, e.g. navigation_robot mid-escort.')
    node: str
    kind: str
    actor: str = ''
    target: str = ''
    nth: int = Field(1, ge=1)

    def matches(self, event: TeamEventModel) -> bool:
        """Return whether ``event`` is of this fault's trigger (kind, actor, target)."""
        return (event.kind == self.kind and (not self.actor or event.actor == self.actor)
                and (not self.target or event.target == self.target))


NAV, INFO, DISPLAY, MANAGER = (Role.NAVIGATION.value, Role.INFO_COLLECTION.value, Role.DISPLAY.value,
                               Role.MANAGER.value)

ESCORT = dict(kind=EventKind.TOOL_CALL.value, actor=NAV, target=Tool.NAVIGATE_TO_POSE.value, nth=2)
"""The navigation robot's second Nav2 goal of a task that went its whole way: the escort (HCW following)."""
AUTHORIZED = EventKind.DELEGATION_AUTHORIZED.value
"""From its authorization on, a task is the robot's (the workflow counts it as running on that robot)."""

FAULTS: dict[str, Fault] = {f.node: f for f in (
    Fault(name='navigation robot killed mid-escort', node=NAV, **ESCORT),
    Fault(name='info-collection robot killed as its task starts', node=INFO, kind=AUTHORIZED, target=INFO),
    Fault(name='display robot killed as its task starts', node=DISPLAY, kind=AUTHORIZED, target=DISPLAY),
    Fault(name='manager killed while the navigation robot escorts', node=MANAGER, **ESCORT),
    Fault(name='supervisor killed while the navigation robot escorts', node=SUPERVISOR, **ESCORT),
    Fault(name='hospital systems killed while the navigation robot escorts', node=HOSPITAL_SYSTEMS, **ESCORT),
)}
"""One fault per killable node kind, each at a moment it holds work (the onboarding's IDs are not used)."""


class FaultResult(BaseModel):
    """What one fault did to one episode (wall s from the kill)."""

    fault: str
    node: str
    killed: bool = Field(description='Whether the trigger came and the process was killed.')
    killed_sim_s: float | None = None
    noticed_s: float | None = Field(None, description='Wall s from the kill to the loss on the record.')
    noticed_by: str = ''
    restarted_s: float | None = Field(None, description="Wall s from the kill to the runner's node_restarted.")
    back_s: float | None = Field(None, description="Wall s from the kill to the supervisor's robot_back.")
    lost_task: str = Field('', description='The task the supervisor closed as robot_lost.')
    recovered_s: float | None = Field(None, description='Wall s from the kill to the delegation that took up the '
                                      'lost task (robots), or to the node back (other nodes).')
    outcome: str = ''
    expected_outcome: str = ''
    events_before: int = 0
    missing_jsonl: int = Field(0, description='Events recorded before the kill missing from events.jsonl.')
    missing_mcap: int = Field(0, description='Events recorded before the kill missing from events.mcap.')
    sequence_gaps: dict[str, list[int]] = Field(default_factory=dict, description="The record's gaps per actor "
                                                "(and incarnation: robot_team.contracts.events.sequence_gaps).")
    wall_s: float = 0.0
    out_dir: str = ''


def run_fault(fault: Fault, out_dir: Path | str, scenario: Scenario | str = 'onboarding', *,
              domain_id: int | None = None, log_level: str = 'warn') -> FaultResult:
    """Run ``scenario`` with one node per process and ``fault`` injected; return what happened.

    Raises
    ------
    ConfigError, RuntimeError
        As :func:`robot_team.run.episode.run_episode`.
    """
    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(str(scenario))
    out = Path(out_dir)
    episode = Episode(scenario, out, processes=True, domain_id=domain_id, log_level=log_level)
    seen: list[TeamEventModel] = []
    state: dict = {'count': 0, 'wall': None, 'sim': None}
    lock = threading.Lock()

    def on_event(event: TeamEventModel) -> None:
        with lock:
            seen.append(event)
            if state['wall'] is not None or not fault.matches(event):
                return
            state['count'] += 1
            if state['count'] < fault.nth:
                return
            pid = episode.pid_of(fault.node)
            if pid is None:
                return
            state['wall'], state['sim'] = time.time(), event.stamp_s
            os.kill(pid, signal.SIGKILL)
    episode.on_event = on_event
    start = time.monotonic()
    result = episode.run()
    wall = time.monotonic() - start
    with lock:
        killed_wall = state['wall']
        before = [e for e in seen if killed_wall is not None and e.wall_time < killed_wall]
    return _measure(fault, result.report, result.events, before, killed_wall, state['sim'], out, wall)


def _measure(fault: Fault, report: dict, events: list[TeamEventModel], before: list[TeamEventModel],
             killed_wall: float | None, killed_sim: float | None, out: Path, wall: float) -> FaultResult:
    result = FaultResult(fault=fault.name, node=fault.node, killed=killed_wall is not None, killed_sim_s=killed_sim,
                         outcome=report.get('outcome', ''), expected_outcome=report.get('expected_outcome') or '',
                         events_before=len(before), wall_s=round(wall, 3), out_dir=str(out),
                         sequence_gaps=report.get('events', {}).get('sequence_gaps', {}))
    if killed_wall is None:
        return result
    after = [e for e in events if e.wall_time >= killed_wall]

    def first(predicate) -> TeamEventModel | None:
        return next((e for e in sorted(after, key=lambda e: e.wall_time) if predicate(e)), None)

    def since(event: TeamEventModel | None) -> float | None:
        return None if event is None else round(event.wall_time - killed_wall, 3)
    lost = first(lambda e: e.kind == EventKind.ROBOT_LOST.value and e.data.get('node') == fault.node)
    crashed = first(lambda e: e.kind == EventKind.NODE_CRASHED.value and e.target == fault.node)
    noticed = lost or (crashed if fault.node == SUPERVISOR else None)   # nobody watches the watcher but the runner
    result.noticed_s = since(noticed)
    result.noticed_by = (f"supervisor ({lost.data.get('noticed_by')})" if lost is not None
                         else 'runner (process exit)' if noticed is not None else '')
    result.restarted_s = since(first(lambda e: e.kind == EventKind.NODE_RESTARTED.value and e.target == fault.node))
    back = first(lambda e: e.kind == EventKind.ROBOT_BACK.value and e.data.get('node') == fault.node)
    result.back_s = since(back)
    result.lost_task = (lost.data.get('task_id') or '') if lost is not None else ''
    if result.lost_task:
        retry = first(lambda e: e.kind == EventKind.DELEGATION.value
                      and e.data.get('handles_task_id') == result.lost_task)
        result.recovered_s = since(retry)
    else:
        started = first(lambda e: e.kind == EventKind.NODE_STARTED.value and e.actor == fault.node)
        result.recovered_s = result.back_s if result.back_s is not None else since(started)
    key = lambda e: (e.actor, e.seq, round(e.wall_time, 6))  # noqa: E731
    jsonl = out / 'events.jsonl'
    in_jsonl = {key(e) for e in read_jsonl(jsonl)} if jsonl.exists() else set()
    result.missing_jsonl = sum(key(e) not in in_jsonl for e in before)
    mcap = out / 'events.mcap'
    in_mcap = {key(e) for e in read_mcap_events(mcap)} if mcap.exists() else set()
    result.missing_mcap = sum(key(e) not in in_mcap for e in before)
    return result
