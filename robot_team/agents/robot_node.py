"""An operational robot of the ED team (navigation, info collection or display) as a ROS 2 node.

The node serves ``execute_task`` (robot_team/action/ExecuteTask) in its namespace. For each
accepted goal it runs :class:`~robot_team.core.robot.RobotCore` (the brain with the robot's own
:class:`~robot_team.tools.base.Toolbox`, the claim checked against the tool journal's ground
truth, the journal attached as evidence), submits the report to the supervisor
(``team/supervisor/submit_report``, the one place reports are recorded) and then returns it as
the action result, so the supervisor has the report before the manager sees it.

:meth:`RobotNode.stop` ends the robot's work with the episode: no new goal is accepted, the
running task is cancelled (its brain's LLM request in flight too, its motion stopped) and the
execute callback is waited for, while the executor still spins; :meth:`RobotNode.destroy_node`
stops first, then releases the brain.
"""

from __future__ import annotations

import json
import sys
import threading

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.logging import LoggingSeverity
from rclpy.node import Node

from robot_team.contracts import names
from robot_team.action import ExecuteTask
from robot_team.brains.base import RobotBrain, TaskSpec
from robot_team.brains.protocol import protocol_robot_brain
from robot_team.catalog import ROLE_TASK, operational_role, role_of
from robot_team.contracts.config import ConfigError
from robot_team.core.robot import RobotCore
from robot_team.contracts.errors import ToolError
from robot_team.contracts.events import EventKind
from robot_team.agents.discovery import DiscoveryHold
from robot_team.llm.factory import LLM_BRAINS, clock_hold, llm_robot_brain
from robot_team.msg import TeamHold
from robot_team.contracts.names import NO_ROBOT, RobotId, Role, team_name
from robot_team.contracts.reports import TaskReportModel
from robot_team.contracts.clock_sync import BUSY, NOTHING_SCHEDULED
from robot_team.ros.clock import ScheduledWaits, follow_clock
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.liveness import announce_alive
from robot_team.ros.emitter import EventEmitter, log_line
from robot_team.ros.messages import reliable_qos, report_to_msg
from robot_team.ros.stamps import now_s
from robot_team.ros.util import SERVER_WAIT_S, spin_node, submit_report, wait_clock_started
from robot_team.srv import SubmitReport
from robot_team.tools.base import Toolbox
from robot_team.tools.roles import implementation_class


def make_brain(role: Role, brain: str, *, events=None, kb: bool = True, base_url: str = '',
               hold=None, model: str = '', decoding: str = '') -> RobotBrain:
    """Return robot ``role``'s brain of kind ``brain`` ('protocol', or an LLM brain: 'openai', 'local', 'random').

    ``events`` (the node's EventEmitter) records the LLM brain's requests and replies; ``kb``
    gives an LLM brain its knowledge-base sections. LLM settings come from
    :class:`robot_team.llm.settings.LLMSettings` (environment and ``config/llm.yaml``);
    ``base_url`` (the ``llm_base_url`` parameter), ``model`` (``llm_model``: the local endpoint's
    model), ``decoding`` (``llm_decoding``) and ``hold`` (lockstep clock) as in :mod:`robot_team.llm.factory`.

    Raises
    ------
    ValueError
        If the kind is unknown.
    """
    if brain == 'protocol':
        return protocol_robot_brain(role)
    if brain in LLM_BRAINS:
        return llm_robot_brain(role, brain, emit=events.emit if events is not None else None, kb=kb,
                               base_url=base_url, hold=hold, model=model, decoding=decoding)
    raise ValueError(f"unknown brain '{brain}' for {role}: expected {', '.join(('protocol', *LLM_BRAINS))}")


SUBMIT_ATTEMPTS = 3
"""Times a robot asks the supervisor to record a report before it gives up (each waits ``service_timeout_s``):
a request in flight when the supervisor died is lost with it, the restarted supervisor gets the next one."""


class RobotNode(Node):
    """One operational robot: its tools, its brain, its ExecuteTask action server.

    Parameters
    ----------
    role
        ``'navigation_robot'``, ``'info_collection_robot'`` or ``'display_robot'`` (node name
        and namespace of its interfaces).
    brain
        The brain to use; default: the ``brain`` parameter's kind ('protocol').
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameters: ``floor`` (floor description: a path or
        a file name in ``config/floors/``; navigation robot), ``staff_db`` (SQLite file),
        ``brain``, ``kb`` (LLM brains: knowledge base on/off),
        ``use_sim_time``, ``team_namespace`` (default: the parent of the robot's namespace),
        ``service_timeout_s`` (wall s to wait for the supervisor); navigation robot: ``pose_source``
        (``auto``: TF ``map`` -> ``base_frame`` where tf2_ros is installed, else ``pose_topic``;
        ``tf``; ``amcl_pose``), ``pose_topic`` (default ``amcl_pose``), ``base_frame`` (``base_link``),
        ``navigator`` (``auto``: nav2_simple_commander's BasicNavigator where installed, else the
        built-in client with the same calls; ``basic_navigator``; ``builtin``).
    robot
        The robot's name (node name), default ``role``: ``<role>_<n>`` in a fleet
        (:func:`robot_team.contracts.names.fleet_robots`); a ``__node`` remap names it as well.
    namespace
        The robot's namespace (default ``/<robot>``; in a team namespace ``T``, ``T/<robot>``).

    Raises
    ------
    ValueError
        If ``role`` is not an operational robot.
    """

    def __init__(self, role: Role | str, brain: RobotBrain | None = None, *, robot: RobotId = NO_ROBOT,
                 namespace: str | None = None, context=None, parameter_overrides=None):
        role = operational_role(role)
        robot = robot or RobotId(role.value)
        # The robot's own namespace (default /<robot>); a command-line ``-r __ns:=...`` overrides it.
        super().__init__(robot, namespace=namespace or f'/{robot}', context=context,
                         parameter_overrides=parameter_overrides or [])
        self.role = role
        self.robot = self.get_name()   # the node's name, remapped or not (``-r __node:=navigation_robot_2``)
        self.task_type = ROLE_TASK[role]
        team_ns = self.declare_parameter('team_namespace', '').value
        self.team_namespace = (names.validate_namespace(team_ns, 'parameter team_namespace') if team_ns
                               else names.team_namespace_of(self.get_namespace()))
        self.declare_parameter('brain', 'protocol')
        self.declare_parameter('floor', 'ed_floor.yaml')
        self.declare_parameter('staff_db', '')
        self.declare_parameter('kb', True)
        self.declare_parameter('service_timeout_s', 15.0)
        self._timeout = float(self.get_parameter('service_timeout_s').value)
        self.events = EventEmitter(self, self.robot)
        self.toolbox = Toolbox(role, self.events, clock=lambda: now_s(self))
        self._group = ReentrantCallbackGroup()
        self._busy = threading.Lock()
        self._accepted: set[str] = set()   # task IDs of goals accepted whose execution has not begun
        self._stopping = False
        self._running_task = ''
        # its tools' waits for a server DDS has not discovered yet hold sim time (robot_team.ros.util.wait_for_server)
        self.discovery_hold = DiscoveryHold(self, self.robot, self.events.emit)
        # its tools' waits on what the simulator schedules (a Nav2 goal driven) let the clock jump (ros.clock)
        self.scheduled_waits = ScheduledWaits()
        self._add_tools()
        if brain is None:   # LLM brains: endpoint and LLM clock (robot_team.llm.factory, robot_team.llm.lockstep)
            llm_clock = self.declare_parameter('llm_clock', 'realtime').value
            brain = make_brain(role, self.get_parameter('brain').value, events=self.events,
                               kb=bool(self.get_parameter('kb').value),
                               base_url=self.declare_parameter('llm_base_url', '').value,
                               model=self.declare_parameter('llm_model', '').value,
                               decoding=self.declare_parameter('llm_decoding', '').value,
                               hold=clock_hold(self, self.robot, llm_clock))
        self.core = RobotCore(role, brain, self.toolbox, self.events.emit, lambda: now_s(self), self._observe,
                              robot=self.robot)
        self._submit = self.create_client(SubmitReport, team_name(self, names.SUBMIT_REPORT),
                                          callback_group=self._group)
        self._held_by = ''   # escalation IDs holding the team ('' when not held)
        self.create_subscription(TeamHold, team_name(self, names.TEAM_HOLD), self.hold_callback,
                                 reliable_qos(depth=1), callback_group=self._group)
        self._server = ActionServer(
            self, ExecuteTask, names.EXECUTE_TASK,
            execute_callback=self.execute_callback, goal_callback=self.goal_callback,
            cancel_callback=self.cancel_callback, callback_group=self._group)
        # the follow clock waits for this node, and jumps ahead only while it runs no task (ros.clock)
        self._clock_follower = follow_clock(self, self._next_event, activity=lambda: self.events.count)
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)
        self.events.emit(EventKind.NODE_STARTED, f'{self.robot} ready with tools {", ".join(self.toolbox.names())}',
                         tools=self.toolbox.names(), brain=type(brain).__name__, **self._started_data)

    def _next_event(self) -> float:
        """Return when this robot next has work, for the follow clock (ROS time, s; see robot_team.ros.clock).

        Nothing scheduled while it runs no task and none is accepted; while its task only waits on
        a goal the simulator drives (:class:`~robot_team.ros.clock.ScheduledWaits`), that wait's
        deadline; else work now.
        """
        if self._accepted:
            return BUSY
        if not self._busy.locked():
            return NOTHING_SCHEDULED
        waiting = self.scheduled_waits.earliest()
        return BUSY if waiting is None else waiting

    @property
    def brain(self) -> RobotBrain:
        """The robot's brain."""
        return self.core.brain

    def _add_tools(self) -> None:
        """Bind this role's tool implementation (:mod:`robot_team.tools.roles`) to the node."""
        try:
            tools = implementation_class(role_of(self.role)).from_node(self, self._group)
        except ValueError as exc:   # a parameter out of its set: a recorded, clear start-up error
            self.events.emit(EventKind.INPUT_ERROR, f'{self.robot} cannot start', reason=str(exc))
            raise ConfigError(f'{self.robot} parameters: {exc}') from exc
        tools.register(self.toolbox)
        self._observe = tools.observe   # what the world shows of a success claim (catalog.WorldFact)
        self._cancel_hooks = [tools.cancel]
        self._started_data: dict = dict(tools.started_data)

    def goal_callback(self, goal) -> GoalResponse:
        """Accept a task of this robot's type when idle; reject (and record) anything else.

        A task that was cancelled or stopped but is still ending (e.g. its navigate_to_pose result
        awaited from a server that was out of reach) does not make the robot busy: the new task is
        accepted and starts once the old one has ended.
        """
        if self._stopping:
            self.events.emit(EventKind.DELEGATION_REFUSED, f'{self.robot} rejected {goal.task_id}: stopping',
                             target=goal.task_id, reason='the robot is stopping with the episode',
                             task_id=goal.task_id)
            return GoalResponse.REJECT
        if not self.core.accepts(goal.task_type):
            self.events.emit(EventKind.DELEGATION_REFUSED, f'{self.robot} rejected a {goal.task_type} task',
                             target=goal.task_id, reason=f'{self.robot} executes only {self.task_type.value} tasks',
                             task_id=goal.task_id, task_type=goal.task_type)
            return GoalResponse.REJECT
        if self._busy.locked() and not (self._running_task and self.toolbox.cancelled(self._running_task)):
            self.events.emit(EventKind.DELEGATION_REFUSED, f'{self.robot} rejected {goal.task_id}: busy',
                             target=goal.task_id, reason='a task is already running', task_id=goal.task_id)
            return GoalResponse.REJECT
        self._accepted.add(goal.task_id)   # runs from now on (execute_callback): the clock does not jump meanwhile
        return GoalResponse.ACCEPT

    def hold_callback(self, msg) -> None:
        """Follow the team hold: while held, a task is not started and a running one is stopped.

        The supervisor also cancels every goal when the hold begins; this covers a delegation it
        authorised just before the hold whose goal reaches the robot just after.
        """
        self._held_by = (', '.join(msg.escalation_ids) or 'the supervisor') if msg.active else ''
        running = self._running_task
        if self._held_by and running:
            self.events.emit(EventKind.OBSERVATION, f'{self.robot} stops {running}: the team is held',
                             target=running, reason=f'held by {self._held_by}', cue='hold', task_id=running)
            self._stop_task(running)

    def cancel_callback(self, goal_handle) -> CancelResponse:
        """Accept cancellation: ask the brain to stop and cancel the robot's motion in progress."""
        self.events.emit(EventKind.OBSERVATION, f'{self.robot} asked to cancel {goal_handle.request.task_id}',
                         target=goal_handle.request.task_id, cue='cancel', task_id=goal_handle.request.task_id)
        self._stop_task(goal_handle.request.task_id)
        return CancelResponse.ACCEPT

    def _stop_task(self, task_id: str) -> None:
        """Stop ``task_id``: no further tool calls, the brain asked to stop, the robot's motion cancelled."""
        self.core.cancel(task_id)
        for hook in self._cancel_hooks:
            hook()

    def execute_callback(self, goal_handle):
        """Run the brain on the task, verify its claim, publish and return the report."""
        goal = goal_handle.request
        with self._busy:
            self._accepted.discard(goal.task_id)
            self._running_task = goal.task_id
            try:
                report = self._run(goal, goal_handle)
            finally:
                self._running_task = ''
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        result = ExecuteTask.Result()
        result.report = report_to_msg(report)
        return result

    def _run(self, goal, goal_handle) -> TaskReportModel:
        try:
            context = json.loads(goal.context_json) if goal.context_json else {}
        except json.JSONDecodeError:
            context = {'raw': goal.context_json}
        task = TaskSpec(task_id=goal.task_id, task_type=self.task_type, room=goal.room, hcw_id=goal.hcw_id,
                        instructions=goal.instructions, context=context if isinstance(context, dict) else {})

        def progress(stage: str, detail: str, fraction: float) -> None:
            goal_handle.publish_feedback(ExecuteTask.Feedback(stage=stage, detail=detail, progress=float(fraction)))

        # a robot restarted mid-episode gets its task before its first /clock: its work would be
        # stamped at t = 0, before the task began, and its success refused by the manager
        if not wait_clock_started(self, SERVER_WAIT_S):
            self.events.emit(EventKind.OBSERVATION, f'{self.robot} runs {task.task_id} with no ROS time yet',
                             target=task.task_id, reason=f'no /clock within {SERVER_WAIT_S:g} s (wall): its stamps '
                             'read 0', cue='no_clock', task_id=task.task_id)
        report = self.core.run(task, progress, held_by=self._held_by)
        if self._stopping:   # the episode ended: the supervisor may be gone; the report is in the record
            self.events.emit(EventKind.OBSERVATION, f'{self.robot} did not submit its report on {task.task_id}: '
                             'stopping', target=task.task_id, cue='stopping', task_id=task.task_id)
            return report
        for attempt in range(1, SUBMIT_ATTEMPTS + 1):
            try:
                answer = submit_report(self, self._submit, report, self._timeout, self.discovery_hold)
            except ToolError as exc:
                if attempt < SUBMIT_ATTEMPTS and not self._stopping:
                    # a supervisor that died with the request is restarted: ask the new one
                    self.events.emit(EventKind.OBSERVATION, f'{self.robot} submits its report on {task.task_id} '
                                     f'again (attempt {attempt + 1} of {SUBMIT_ATTEMPTS})', target=task.task_id,
                                     reason=str(exc), cue='submit_retry', task_id=task.task_id, attempt=attempt + 1)
                    continue
                # the supervisor's task deadline will escalate the missing report
                self.events.emit(EventKind.REPORT_REJECTED, f'{self.robot} could not submit its report on '
                                 f'{task.task_id}', target=task.task_id, reason=str(exc), error=str(exc),
                                 task_id=task.task_id, attempts=attempt)
            else:
                if not answer.accepted:
                    log_line(self.get_logger(), LoggingSeverity.WARN,
                             f'supervisor did not record {task.task_id}: {answer.explanation}')
            break
        return report

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Stop working with the episode: refuse new goals, cancel the running task; return whether it ended.

        Waits up to ``timeout_s`` (wall) for the execute callback; call it while the executor
        still spins. Idempotent.
        """
        self._stopping = True
        task_id = self._running_task
        if task_id:
            self.events.emit(EventKind.OBSERVATION, f'{self.robot} stops {task_id}: the episode ended',
                             target=task_id, cue='stopping', task_id=task_id)
            self.core.cancel(task_id)
            for hook in self._cancel_hooks:
                hook()
        if not self._busy.acquire(timeout=timeout_s):
            log_line(self.get_logger(), LoggingSeverity.ERROR,
                     f'{self.robot}: task {task_id} still running {timeout_s:g} s after stop')
            return False
        self._busy.release()
        return True

    def destroy_node(self) -> None:
        """Stop (cancel the running task), release the brain (its LLM client), then destroy the node."""
        if self.stop():
            self.core.brain.close()
        super().destroy_node()


def _main(role: Role, args=None) -> int:
    # Multi-threaded: the brain blocks in the action's execute callback while other threads
    # deliver service responses, Nav2 feedback and results to its tools.
    return spin_node(role, lambda: RobotNode(role), lambda: TeamExecutor(num_threads=4), args)


def main_navigation(args=None) -> int:
    """Run the navigation robot (``ros2 run robot_team navigation_robot``)."""
    return _main(Role.NAVIGATION, args)


def main_info_collection(args=None) -> int:
    """Run the info-collection robot (``ros2 run robot_team info_collection_robot``)."""
    return _main(Role.INFO_COLLECTION, args)


def main_display(args=None) -> int:
    """Run the display robot (``ros2 run robot_team display_robot``)."""
    return _main(Role.DISPLAY, args)


def main(args=None) -> int:
    """Run the robot named by the first command-line argument (``python -m ... ROLE``)."""
    argv = sys.argv if args is None else args
    user = [a for a in argv[1:] if not a.startswith('-')][:1]
    if not user or user[0] not in ROLE_TASK:
        print(f"usage: python -m robot_team.agents.robot_node {{{'|'.join(ROLE_TASK)}}} [--ros-args ...]")
        return 2
    return _main(user[0], args)


if __name__ == '__main__':
    raise SystemExit(main())
