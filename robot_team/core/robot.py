"""An operational robot's task loop: brain, tools, grounding check, report (no rclpy).

:class:`RobotCore` runs one delegated task: the brain works with the robot's own
:class:`~robot_team.tools.base.Toolbox`, its claim is checked against the tool journal's ground
truth for the task's room and HCW and against what the world shows (the role's
:class:`~robot_team.catalog.WorldFact`, observed through the robot's own tools: a contradicted
success becomes a failure with a ``false completion`` issue) and the journal and the observations
are attached as evidence. The robot node (``robot_team.agents.robot_node``) wraps it in
an ExecuteTask action server; offline harnesses call it directly.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, Callable, Mapping

from robot_team.brains.base import BrainReport, ProgressFn, RobotBrain, TaskSpec
from robot_team.contracts.events import EventKind
from robot_team.contracts.names import NO_ROBOT, RobotId, Role
from robot_team.rules.grounding import contradictions, success_problems, world_problems
from robot_team.contracts.reports import TaskReportModel, TaskStatus
from robot_team.catalog import ROLE_TASK, TaskFacts, WorldFact, operational_role, role_of
from robot_team.tools.base import Toolbox

Emit = Callable[..., object]
"""``emit(kind, summary, *, target='', reason='', **data)``, as :meth:`EventEmitter.emit`."""

Observe = Callable[[WorldFact, TaskFacts, Callable[[Mapping[str, Any]], bool]], dict]
"""``observe(fact, task, until)``: what the robot's tools see of ``fact`` for ``task`` (JSON-ready), waiting
(ROS time, at most :data:`~robot_team.catalog.OBSERVE_WAIT_S`) until ``until`` holds of it; each role's tools
class implements it for the facts its role declares (:attr:`~robot_team.catalog.RoleDecl.world`)."""

_log = logging.getLogger(__name__)


class RobotCore:
    """One operational robot's decision loop around its brain and toolbox.

    Parameters
    ----------
    role
        Its :class:`~robot_team.contracts.names.Role` (or the role's name): kept as the member.
    brain
        The robot's brain.
    toolbox
        The tools the robot owns (its journal is the report's evidence).
    emit
        Event sink (``task_started``, ``false_completion``, ``task_report``).
    now
        Returns ROS time, s (stamps the report).
    observe
        What the world shows (:data:`Observe`), asked when the brain claims success; ``None``:
        nothing can be observed, so no success can be accepted.
    robot
        This robot's name (its reports' ``robot``): ``<role>_<n>`` in a fleet
        (:func:`robot_team.contracts.names.fleet_robots`); default ``role``.

    Raises
    ------
    ValueError
        If ``role`` is not an operational robot.
    """

    def __init__(self, role: Role | str, brain: RobotBrain, toolbox: Toolbox, emit: Emit, now: Callable[[], float],
                 observe: Observe | None = None, *, robot: RobotId = NO_ROBOT):
        self.role = operational_role(role)
        self.robot = robot or RobotId(self.role.value)
        self.task_type = ROLE_TASK[self.role]
        self.brain = brain
        self.toolbox = toolbox
        self._emit = emit
        self._now = now
        self._observe = observe
        toolbox.decision_source = lambda: self.brain.decision_source

    def accepts(self, task_type: str) -> bool:
        """Return whether this robot executes tasks of ``task_type``."""
        return task_type == self.task_type.value

    def cancel(self, task_id: str) -> None:
        """Refuse further tool calls for ``task_id`` and ask the brain to stop."""
        self.toolbox.cancel(task_id)
        self.brain.cancel()

    def run(self, task: TaskSpec, progress: ProgressFn, held_by: str = '') -> TaskReportModel:
        """Execute ``task`` and return the grounded report (never raises for task-level problems).

        With ``held_by`` (the escalations holding the team) the task is not started: the report
        is a ``failure`` saying so, and the brain is not asked.

        A brain that raises becomes a ``failure`` report naming the exception; a success claim
        the tool journal or the world contradicts (:func:`~robot_team.rules.grounding.success_problems`,
        for the task's room and HCW) becomes a ``failure`` with a ``false completion`` issue (and a
        ``false_completion`` event). The report's evidence holds the journal (``tool_journal``),
        what the world showed (``world``, by fact) and what the task was about (``task``).
        """
        self._emit(EventKind.TASK_STARTED, f'{self.robot} started {task.task_id}', target=task.task_id,
                   task_id=task.task_id, task_type=task.task_type.value, room=task.room, hcw_id=task.hcw_id)
        facts = TaskFacts(task.room, task.hcw_id, self._now())
        self.toolbox.begin_task(task.task_id, room=task.room, hcw_id=task.hcw_id)   # its calls stay in its room
        try:
            claim = BrainReport(status=TaskStatus.FAILURE, issue=f'not started: the team is held by {held_by}') \
                if held_by else self.brain.execute(task, self.toolbox, progress)
        except Exception as exc:  # noqa: BLE001 - a brain crash is a recorded failure, not a dead robot
            _log.error('%s brain crashed:\n%s', self.role, traceback.format_exc())
            claim = BrainReport(status=TaskStatus.FAILURE, issue=f'robot brain crashed: {type(exc).__name__}: {exc}')
        journal = self.toolbox.journal(task.task_id)
        self.toolbox.end_task(task.task_id)   # the report carries the journal from here on
        world = self._world(claim, journal, facts)
        problems = success_problems(self.task_type, claim, journal, facts, world)
        if problems:
            self._emit(EventKind.FALSE_COMPLETION, f'{self.robot} claimed success on {task.task_id}',
                       target=task.task_id, reason='; '.join(problems), task_id=task.task_id,
                       claim=claim.model_dump(mode='json'), source=self.brain.decision_source)
            claim = BrainReport(status=TaskStatus.FAILURE, issue='false completion: ' + '; '.join(problems),
                                summary=claim.summary, data=claim.data)
        report = TaskReportModel(
            task_id=task.task_id, task_type=self.task_type, robot=self.robot, status=claim.status,
            issue=claim.issue, summary=claim.summary, data=claim.data,
            evidence={'tool_journal': [r.as_dict() for r in journal], 'world': world, 'task': facts._asdict()},
            stamp_s=self._now())
        self._emit(EventKind.TASK_REPORT, f'{self.robot} reports {report.status.value} on {task.task_id}',
                   target=task.task_id, reason=report.issue, source=self.brain.decision_source,
                   **report.model_dump(mode='json'))
        return report

    def _world(self, claim: BrainReport, journal: list, task: TaskFacts) -> dict:
        """Return what the world shows of a success ``claim`` on ``task``, by fact (empty for any other claim).

        Observed only when the journal supports the claim (a claim it contradicts is refused
        anyway), through the robot's own tools, each fact waiting until it shows the success or
        its time is up. An observation that fails is recorded as that fact's ``error`` (the
        success is then refused: nothing shows it).
        """
        if claim.status is not TaskStatus.SUCCESS or contradictions(self.task_type, claim, journal, task):
            return {}
        seen: dict = {}
        for fact in role_of(self.role).world:
            if self._observe is None:
                seen[fact.value] = {}
                continue
            try:
                shows = (lambda found, fact=fact: not world_problems(fact, task, found))
                seen[fact.value] = self._observe(fact, task, shows)
            except Exception as exc:  # noqa: BLE001 - an observation that fails shows nothing; recorded
                _log.error('%s could not observe %s:\n%s', self.role, fact.value, traceback.format_exc())
                seen[fact.value] = {'error': f'{type(exc).__name__}: {exc}'}
        return seen
