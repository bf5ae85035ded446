"""The manager robot as a ROS 2 node: it delegates and judges, never operates.

The manager observes environment cues (``/ed/patient_arrivals``), robot reports (ExecuteTask
results), escalations and human decisions, and asks its brain what to do. It can only:

- delegate a task: the supervisor's ``authorize_task`` gate first (workflow order, right
  robot, no unexplained repeats), then an ExecuteTask goal to that robot;
- escalate a problem through the supervisor's ``request_escalation``;
- write the reflection (authorized as the last workflow step, refused if incomplete).

It owns no robot tool and no client to the floor's infrastructure. Every decision, refusal
and judgment is an event on ``/team/events``.

Threading model: subscriptions and client callbacks run on a ``MultiThreadedExecutor``; the
brain runs on a dedicated worker thread that is woken when the observation changes, so a slow
brain (an LLM) never blocks ROS callbacks. The worker waits on futures the executor completes.
"""

from __future__ import annotations

import json
import threading
import traceback

from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from robot_team import names
from robot_team.brains.base import (
    Delegate, Escalate, EscalationRecord, Finish, ManagerBrain, ManagerObservation, PatientInfo, Reflect,
    TaskRecord)
from robot_team.events import EventEmitter, EventKind, reliable_qos
from robot_team.guards import (
    prefetched_results, reflection_contradictions, report_contradictions, strip_prefetched)
from robot_team.reports import OPERATIONAL_TASKS, TASK_OWNER, ReportError, TaskReportModel, TaskType
from robot_team.rosutil import ros_now_s, spin_node, wait_for_server, wait_future
from robot_team.tools.base import ToolError

ROBOTS = [TASK_OWNER[t] for t in OPERATIONAL_TASKS]


def make_manager_brain(kind: str, issue_handling: str = 'propose_alternative', *, events=None,
                       kb: bool = True) -> ManagerBrain:
    """Return the manager brain of kind ``kind`` ('protocol' or 'openai').

    ``events`` (the node's EventEmitter) records the LLM brain's requests, replies and refused
    tool calls; ``kb`` gives an LLM brain its knowledge-base sections.

    Raises
    ------
    ValueError
        If the kind is unknown.
    """
    if kind == 'protocol':
        from robot_team.brains.protocol import ManagerProtocolBrain
        return ManagerProtocolBrain(issue_handling=issue_handling)
    if kind == 'openai':
        from robot_team.brains.protocol import ManagerProtocolBrain
        from robot_team.llm.brains import LLMManagerBrain
        return LLMManagerBrain(emit=events.emit if events is not None else None, kb=kb,
                               fallback_brain=lambda: ManagerProtocolBrain(issue_handling=issue_handling))
    raise ValueError(f"unknown brain '{kind}' for the manager: expected 'protocol' or 'openai'")


class ManagerNode(Node):
    """The manager robot.

    Parameters
    ----------
    brain
        Its brain; default from the ``brain`` and ``issue_handling`` parameters.
    context, parameter_overrides
        As for :class:`rclpy.node.Node`.

    Attributes
    ----------
    finished : threading.Event
        Set when the brain finishes the episode; ``outcome`` then holds its outcome.
    """

    def __init__(self, brain: ManagerBrain | None = None, *, context=None, parameter_overrides=None):
        super().__init__('manager', context=context, parameter_overrides=parameter_overrides or [])
        self.declare_parameter('brain', 'protocol')
        self.declare_parameter('issue_handling', 'propose_alternative')
        self.declare_parameter('service_timeout_s', 15.0)
        self.declare_parameter('kb', True)
        self.events = EventEmitter(self, 'manager')
        self.brain = brain or make_manager_brain(self.get_parameter('brain').value,
                                                 self.get_parameter('issue_handling').value, events=self.events,
                                                 kb=bool(self.get_parameter('kb').value))
        self._timeout = float(self.get_parameter('service_timeout_s').value)
        self._group = ReentrantCallbackGroup()
        self._lock = threading.Lock()
        self._obs = ManagerObservation()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.finished = threading.Event()
        self.outcome = ''

        from robot_team.action import ExecuteTask
        from robot_team.msg import Escalation, HumanDecision, PatientArrival, TaskReport
        from robot_team.srv import AuthorizeTask, RequestEscalation
        qos = reliable_qos()
        self.create_subscription(PatientArrival, names.PATIENT_ARRIVALS, self.arrival_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(Escalation, names.ESCALATIONS, self.escalation_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(HumanDecision, names.HUMAN_DECISIONS, self.decision_callback, qos,
                                 callback_group=self._group)
        self._reports = self.create_publisher(TaskReport, names.TASK_REPORTS, qos)
        self._authorize = self.create_client(AuthorizeTask, names.AUTHORIZE_TASK, callback_group=self._group)
        self._escalate = self.create_client(RequestEscalation, names.REQUEST_ESCALATION,
                                            callback_group=self._group)
        self._robots = {robot: ActionClient(self, ExecuteTask, names.robot_name(robot, names.EXECUTE_TASK),
                                            callback_group=self._group) for robot in ROBOTS}
        self._worker = threading.Thread(target=self._run, name='manager-brain', daemon=True)
        self._worker.start()
        self.events.emit(EventKind.NODE_STARTED, f'manager ready with brain {type(self.brain).__name__}',
                         brain=type(self.brain).__name__, tools=['delegate_task', 'escalate_to_supervisor',
                                                                 'submit_reflection'])

    # -- observation (executor threads) --

    def _update(self, cue: str, change) -> None:
        with self._lock:
            change(self._obs)
            if cue:
                self._obs.new.append(cue)
        self._wake.set()

    def arrival_callback(self, msg) -> None:
        """Record the patient-arrival cue."""
        patient = PatientInfo(patient_id=msg.patient_id, room=msg.room, presentation=msg.presentation,
                              esi_level=msg.esi_level, assigned_hcw_id=msg.assigned_hcw_id,
                              required_specialty=msg.required_specialty)
        if self._obs.patient is not None and self._obs.patient.patient_id == patient.patient_id:
            return
        self.events.emit(EventKind.OBSERVATION, f'patient {msg.patient_id} arrived in {msg.room}; '
                         f'HCW #{msg.assigned_hcw_id} assigned', target=msg.room, cue='patient_arrival',
                         **patient.model_dump())
        self._update(f'Patient {msg.patient_id} arrived in {msg.room} ({msg.presentation}); '
                     f'HCW #{msg.assigned_hcw_id} assigned.', lambda o: setattr(o, 'patient', patient))

    def escalation_callback(self, msg) -> None:
        """Track escalations (the manager's own and the supervisor's)."""
        def change(obs):
            if not any(e.escalation_id == msg.escalation_id for e in obs.escalations):
                obs.escalations.append(EscalationRecord(
                    escalation_id=msg.escalation_id, task_id=msg.task_id, task_type=msg.task_type,
                    raised_by=msg.raised_by, reason=msg.reason))
        self._update(f'Escalation {msg.escalation_id} ({msg.raised_by}): {msg.reason}', change)

    def decision_callback(self, msg) -> None:
        """Record a human decision on an escalation."""
        def change(obs):
            record = next((e for e in obs.escalations if e.escalation_id == msg.escalation_id), None)
            if record is None:
                record = EscalationRecord(escalation_id=msg.escalation_id)
                obs.escalations.append(record)
            record.decision, record.hcw_id = msg.decision, msg.hcw_id
            record.note, record.operator_id = msg.note, msg.operator_id
        self.events.emit(EventKind.OBSERVATION, f'human decision on {msg.escalation_id}: {msg.decision}',
                         target=msg.escalation_id, cue='human_decision', decision=msg.decision,
                         hcw_id=msg.hcw_id, operator_id=msg.operator_id)
        self._update(f'Human decision on {msg.escalation_id}: {msg.decision} {msg.hcw_id}'.strip(), change)

    # -- brain loop (worker thread) --

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._wake.wait(0.05):
                continue
            self._wake.clear()
            with self._lock:
                snapshot = self._obs.model_copy(deep=True)
                self._obs.new.clear()
                self._obs.feedback.clear()
            try:
                actions = self.brain.decide(snapshot)
            except Exception as exc:  # noqa: BLE001 - a brain failure is recorded; the supervisor's deadlines still run
                self.get_logger().error(traceback.format_exc())
                self.events.emit(EventKind.BRAIN_ERROR, 'manager brain failed to decide',
                                 reason=f'{type(exc).__name__}: {exc}', error=str(exc))
                continue
            for action in actions:
                try:
                    self._execute(action)
                except ToolError as exc:
                    self.events.emit(EventKind.DELEGATION_REFUSED, f'{action.action} failed', reason=str(exc),
                                     action=action.model_dump(mode='json'))
                    self._feedback(f'{action.action} failed: {exc}')
                if self.finished.is_set():
                    return

    def _feedback(self, text: str) -> None:
        self._update('', lambda o: o.feedback.append(text))

    def _execute(self, action) -> None:
        if isinstance(action, Delegate):
            self._delegate(action)
        elif isinstance(action, Escalate):
            self._request_escalation(action)
        elif isinstance(action, Reflect):
            self._reflect(action)
        elif isinstance(action, Finish):
            self.outcome = action.outcome
            self.events.emit(EventKind.EPISODE_FINISHED, f'episode finished: {action.outcome}',
                             reason=action.reason, outcome=action.outcome)
            self.finished.set()

    def _authorize_call(self, task_type: str, robot: str, reason: str):
        """Ask the supervisor's gate; retry briefly while it has not yet seen the last report.

        The manager learns a task's end from the action result, the supervisor from
        /team/task_reports; the two can arrive in either order, so a refusal because a task is
        'still running' is retried for up to 2 s (wall) before it stands.
        """
        import time

        from robot_team.srv import AuthorizeTask
        wait_for_server(self._authorize, self._timeout, f'service {names.AUTHORIZE_TASK}')
        request = AuthorizeTask.Request(task_type=task_type, robot=robot, reason=reason, requested_by='manager')
        for _ in range(20):
            response = wait_future(self._authorize.call_async(request), self._timeout,
                                   f'response of {names.AUTHORIZE_TASK}')
            if response.approved or 'still running' not in response.explanation:
                return response
            time.sleep(0.1)
        return response

    def _delegate(self, act: Delegate) -> None:
        from robot_team.action import ExecuteTask
        self.events.emit(EventKind.DELEGATION_REQUESTED, f'manager asks to delegate {act.task_type.value} '
                         f'to {act.robot}', target=act.robot, reason=act.reason,
                         **act.model_dump(mode='json', exclude={'reason'}))
        found = prefetched_results(act)
        if found:   # role misalignment: the manager did (part of) the robot's work
            self.events.emit(EventKind.WORKFLOW_VIOLATION, f'manager put results into a {act.task_type.value} '
                             f'delegation to {act.robot}', target=act.robot, reason='role misalignment',
                             who='manager', found=found, delegation=act.model_dump(mode='json'))
            act = strip_prefetched(act)
            self._feedback('Role misalignment: the delegation carried results (' + '; '.join(found)
                           + '); they were removed: the robot does its own work.')
        client = self._robots.get(act.robot)
        if client is None:
            why = f"no robot '{act.robot}' in the team: expected one of {', '.join(self._robots)}"
            self.events.emit(EventKind.DELEGATION_REFUSED, f'cannot delegate to {act.robot}', target=act.robot,
                             reason=why, task_type=act.task_type.value, robot=act.robot)
            self._feedback(why)
            return
        auth = self._authorize_call(act.task_type.value, act.robot, act.reason)
        if not auth.approved:
            # The supervisor records the refusal itself; the manager records what it learnt.
            self.events.emit(EventKind.OBSERVATION, f'supervisor refused {act.task_type.value} for {act.robot}',
                             target=act.robot, reason=auth.explanation, cue='refusal',
                             task_type=act.task_type.value, robot=act.robot)
            self._feedback(f'Delegation refused: {auth.explanation}')
            return
        record = TaskRecord(task_id=auth.task_id, task_type=act.task_type, robot=act.robot, hcw_id=act.hcw_id,
                            room=act.room)

        def add(obs):
            obs.tasks.append(record)
            if act.handles_task_id:
                obs.handled_failures.append(act.handles_task_id)
        self._update('', add)
        if act.handles_task_id:
            self.events.emit(EventKind.ALTERNATIVE_PROPOSED, f'manager handles {act.handles_task_id} with '
                             f'{auth.task_id}', target=act.handles_task_id, reason=act.reason,
                             task_id=act.handles_task_id, new_task_id=auth.task_id, hcw_id=act.hcw_id)
        goal = ExecuteTask.Goal(task_id=auth.task_id, task_type=act.task_type.value, room=act.room,
                                hcw_id=act.hcw_id, instructions=act.instructions,
                                context_json=json.dumps(act.context, default=str))
        wait_for_server(client, self._timeout, f'action server of {act.robot}')
        self.events.emit(EventKind.DELEGATION, f'manager delegated {auth.task_id} ({act.task_type.value}) to '
                         f'{act.robot}', target=act.robot, reason=act.reason, task_id=auth.task_id,
                         task_type=act.task_type.value, robot=act.robot, hcw_id=act.hcw_id, room=act.room,
                         instructions=act.instructions, handles_task_id=act.handles_task_id)
        future = client.send_goal_async(goal)
        future.add_done_callback(lambda f: self._goal_response(record, f))

    def _goal_response(self, record: TaskRecord, future) -> None:
        handle = future.result()
        if not handle.accepted:
            self._finish_task(record, None, f'{record.robot} rejected goal {record.task_id}')
            return
        handle.get_result_async().add_done_callback(lambda f: self._finish_task(record, f.result().result, ''))

    def _finish_task(self, record: TaskRecord, result, error: str) -> None:
        report = None
        if result is not None:
            try:
                report = TaskReportModel.from_msg(result.report)
                if report.task_id != record.task_id or report.robot != record.robot:
                    raise ReportError(f'report for {report.task_id} from {report.robot} does not match '
                                      f'{record.task_id} delegated to {record.robot}')
                ungrounded = report_contradictions(report)
                if ungrounded:   # a success the attached ground truth does not support
                    raise ReportError(f'success on {report.task_id} not supported by its evidence: '
                                      + '; '.join(ungrounded))
            except ReportError as exc:
                error = str(exc)
                self.events.emit(EventKind.REPORT_REJECTED, f'manager rejected the report on {record.task_id}',
                                 target=record.task_id, reason=error, task_id=record.task_id,
                                 raw={'status': result.report.status, 'issue': result.report.issue,
                                      'robot': result.report.robot})

        def change(obs):
            rec = next(t for t in obs.tasks if t.task_id == record.task_id)
            if report is None:
                rec.state, rec.issue = 'failure', error
            else:
                rec.state, rec.issue = report.status.value, report.issue
                rec.summary, rec.data = report.summary, report.data
            status, why = self.brain.judge(rec)
            self.events.emit(EventKind.JUDGMENT, f'manager judged {rec.task_id} a {status.value}',
                             target=rec.task_id, reason=why, task_id=rec.task_id, task_type=rec.task_type.value,
                             robot=rec.robot, reported_status=rec.state, judged_status=status.value,
                             issue=rec.issue)
        self._update(f'{record.robot} finished {record.task_id}', change)

    def _request_escalation(self, act: Escalate) -> None:
        from robot_team.srv import RequestEscalation
        self.events.emit(EventKind.ESCALATION_REQUESTED, f'manager escalates {act.task_id}', target=act.task_id,
                         reason=act.reason, task_id=act.task_id, options=act.options)
        wait_for_server(self._escalate, self._timeout, f'service {names.REQUEST_ESCALATION}')
        response = wait_future(self._escalate.call_async(RequestEscalation.Request(
            task_id=act.task_id, reason=act.reason, options=act.options)), self._timeout,
            f'response of {names.REQUEST_ESCALATION}')
        if not response.accepted:
            self._feedback(f'Escalation refused: {response.message}')
            return

        def change(obs):
            obs.handled_failures.append(act.task_id)
            if not any(e.escalation_id == response.escalation_id for e in obs.escalations):
                obs.escalations.append(EscalationRecord(escalation_id=response.escalation_id, task_id=act.task_id,
                                                        raised_by='manager', reason=act.reason))
        self._update('', change)

    def _reflect(self, act: Reflect) -> None:
        missing = act.reflection.missing_parts()
        if missing:
            self.events.emit(EventKind.REFLECTION_REJECTED, 'reflection incomplete', reason='; '.join(missing),
                             missing=missing, reflection=act.reflection.model_dump(mode='json'))
            self._feedback('Reflection refused, incomplete: ' + '; '.join(missing))
            return
        with self._lock:
            tasks = [t.model_copy() for t in self._obs.tasks]
        wrong = reflection_contradictions(act.reflection, tasks)
        if wrong:
            self.events.emit(EventKind.REFLECTION_REJECTED, 'reflection contradicts the record',
                             reason='; '.join(wrong), contradictions=wrong,
                             reflection=act.reflection.model_dump(mode='json'))
            self._feedback('Reflection refused, it contradicts the record: ' + '; '.join(wrong))
            return
        auth = self._authorize_call(TaskType.REFLECTION.value, 'manager', 'all workflow steps are done')
        if not auth.approved:
            self.events.emit(EventKind.REFLECTION_REJECTED, 'supervisor refused the reflection now',
                             reason=auth.explanation)
            self._feedback(f'Reflection refused: {auth.explanation}')
            return
        self.events.emit(EventKind.REFLECTION, 'manager wrote the reflection', target=auth.task_id,
                         task_id=auth.task_id, **act.reflection.model_dump(mode='json'))
        # Close the reflection step at the supervisor like any other task.
        report = TaskReportModel(task_id=auth.task_id, task_type=TaskType.REFLECTION, robot='manager',
                                 status='success', summary='reflection written', stamp_s=ros_now_s(self),
                                 data=act.reflection.model_dump(mode='json'))
        self._reports.publish(report.to_msg())
        self._update('Reflection accepted.', lambda o: setattr(o, 'reflection_done', True))

    def destroy_node(self) -> None:
        """Stop the brain thread, then destroy the node."""
        self._stop.set()
        self._worker.join(timeout=5.0)
        super().destroy_node()


def main(args=None) -> int:
    """Run the manager (``ros2 run robot_team manager``)."""
    # Multi-threaded: report results, escalations and human decisions arrive while the brain
    # thread waits on service futures.
    return spin_node('manager', ManagerNode, lambda: MultiThreadedExecutor(num_threads=4), args)


if __name__ == '__main__':
    raise SystemExit(main())
