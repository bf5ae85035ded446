"""The LLM robot brain: an operational robot reasons with an LLM and acts by function calling.

:class:`LLMRobotBrain` runs a function-calling loop over the robot's own tools (its
:class:`~robot_team.tools.base.Toolbox`, nothing else) and ends with ``submit_report``, whose
arguments are validated with pydantic: an invalid report goes back to the model with the
validation error, at most ``max_report_retries`` times; the LLM then leaves the task non-compliant
(a ``brain_error``) and the robot reports ``failure`` with a non-compliance issue. A valid failure
report without grounds (no call of the task failed, no result is a negative finding, requests
remain: :func:`~robot_team.rules.grounding.failure_refusal`) is refused as well (``report_rejected``,
category ``ungrounded_failure``, not counted as invalid) and the robot keeps working; on the
task's last request a failure is always accepted. When non-compliant tasks reach
``robot_takeover_after`` (default 1), the protocol brain takes over the robot's role for the rest
of the episode, starting by carrying out the task the LLM left (a ``takeover``; its work and
report ``source: fallback``): the patient does not wait on a model that cannot do the job. Tool
errors and refused calls (``ToolAccessError``) go back to the model as tool messages. When the
endpoint stays down, the robot falls back to its protocol brain (``fallback='protocol'``) or
reports failure. Tool calls of one reply run in order; after a failed or refused call the rest of
that reply is skipped (the model is told), so a plan such as "drive to the HCW, then to the room"
never continues past a failed step. A call's arguments may name an earlier call's output of the
same reply (``"$1.badge_id"``, :mod:`robot_team.llm.references`), so a plan whose steps depend on
each other fits in one request.

The brain does not touch ROS; what the model reads of the world is data, never instructions
(:mod:`robot_team.llm.transcript`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import ValidationError

from robot_team.brains.base import BrainReport, ProgressFn, RobotBrain, TaskSpec
from robot_team.brains.protocol import protocol_robot_brain
from robot_team.catalog import REPORT_TOOL
from robot_team.contracts.decisions import DecisionSource
from robot_team.contracts.errors import ToolAccessError
from robot_team.contracts.events import EventKind, invalid_call
from robot_team.contracts.names import Role
from robot_team.contracts.reports import TaskStatus, explain_validation_error
from robot_team.llm.client import ChatClient, Emit, LLMCancelled, LLMUnavailable, no_emit
from robot_team.llm.decoding import next_step, robot_offer
from robot_team.llm.kb import kb_for, load_profiles
from robot_team.llm.references import CallReferenceError, resolve
from robot_team.llm.settings import LLMSettings
from robot_team.llm.toolschema import SubmitReport
from robot_team.llm.transcript import DATA_RULE, compact, tool_result_text, without_echo
from robot_team.rules.grounding import failure_refusal
from robot_team.tools.base import Toolbox

ROBOT_RULES = ('Calls run in order and stop at a failure; "$N.key" in an argument is that field of call N\'s '
               'result in this reply. End with submit_report, true to the results; it may go with your last '
               'calls. ' + DATA_RULE)
"""The rules of a robot's system prompt, after its profile."""

UNUSED_CONTEXT = {Role.NAVIGATION.value: {'patient_id', 'presentation'},
                  Role.INFO_COLLECTION.value: {'patient_id', 'presentation', 'required_specialty'},
                  Role.DISPLAY.value: {'patient_id', 'presentation', 'required_specialty'}}
"""Task context keys a robot's decisions never use (its tools take the room and the HCW, not the
patient; only the navigation robot looks for alternatives of the required specialty): not sent."""


class LLMRobotBrain(RobotBrain):
    """An operational robot's brain on an OpenAI-compatible endpoint.

    Parameters
    ----------
    role
        The robot (namespace), e.g. ``'navigation_robot'``.
    settings
        LLM settings (endpoint, model, retries, fallback, report retries).
    emit
        Event emitter of the robot node (``None``: record nothing).
    kb
        Give the robot its knowledge-base sections.

    Attributes
    ----------
    bridge_s : list[float]
        Per tool call, wall seconds from the model's tool call (reply received) to the tool
        message it will see, minus the tool's own work (the robot's physical action).
    """

    def __init__(self, role: Role | str, settings: LLMSettings | None = None, emit: Emit | None = None, *,
                 kb: bool = True, client: ChatClient | None = None):
        self.role = Role(role)
        self.settings = settings or LLMSettings()
        self._emit = emit or no_emit
        self.client = client or ChatClient(self.settings, role, emit)
        self.kb = kb
        self.bridge_s: list[float] = []
        self._cancelled = False
        self._source = 'llm'
        self.non_compliant_tasks = 0   # tasks that ended without a valid report (robot_takeover_after)
        self.taken_over = False

    def system_prompt(self, first: bool = True) -> str:
        """Return the system prompt (profile, rules; the KB sections in the task's first request)."""
        text = f'{load_profiles()[self.role].prompt()}\n{ROBOT_RULES}'
        if self.kb and first:
            text += '\nKnowledge base:\n' + kb_for(self.role)
        return text

    def cancel(self) -> None:
        """Stop now: the request in flight is cancelled (any thread)."""
        self._cancelled = True
        self.client.cancel()

    def close(self) -> None:
        """Release the LLM client (its HTTP connections and event loop)."""
        self.client.close()

    @property
    def decision_source(self) -> str:
        """'llm', or 'fallback' once the protocol brain stands in for the endpoint on this task."""
        return self._source

    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Run the function-calling loop on ``task`` with ``tools``; return the claim.

        Never raises for task-level problems: an endpoint that stays down becomes the protocol
        brain's report (fallback) or a failure; a report that keeps failing validation becomes
        a failure with a non-compliance issue.
        """
        self._cancelled = False
        self._source = 'llm'
        if self.taken_over:
            return self._taken_over(task, tools, progress)
        self.client.reset()
        llm_s = 0.0   # wall s spent waiting on the LLM in this task (the tools' physical work is not counted)
        variants = self.client.resolved.tool_calls == 'json_schema'
        spec = task.model_dump(mode='json', exclude={'task_type'})
        spec['context'] = {k: v for k, v in spec['context'].items() if k not in UNUSED_CONTEXT.get(self.role, ())}
        task_msg = {'role': 'user', 'content': 'Task: ' + compact(spec)}
        messages: list[dict] = [task_msg]
        invalid = 0
        for step in range(self.settings.max_steps):
            if self._cancelled:
                return BrainReport(status=TaskStatus.FAILURE, issue='task cancelled')
            # Wall seconds are a budget only where sim time runs on while the model thinks (the realtime
            # LLM clock). On the lockstep clock, where sim time waits for it, the task's budget is its
            # requests (max_steps) and their tokens (max_tokens each): a busy machine changes no decision.
            if not self.client.holds_sim_time and llm_s > self.settings.task_budget_s:
                return self._non_compliant(task, tools, progress, f'no valid report within its budget of '
                                           f'{self.settings.task_budget_s:g} s (wall) of LLM time')
            try:
                offer = robot_offer(tools, task, self.settings.decoding, variants,
                                    last=step == self.settings.max_steps - 1,
                                    one_call=self.client.resolved.calls_per_request == 1)
                system = {'role': 'system', 'content': self.system_prompt(first=step == 0)}
                # where the task stands, last (read right before the decision); not kept in the history
                now = [{'role': 'user', 'content': next_step(tools, task, offer)}] if self.kb and step > 0 else []
                if offer.withheld:   # the report guards' reasons, in both knowledge-base conditions
                    now = [{'role': 'user', 'content': ' '.join([offer.withheld, *(m['content'] for m in now)])}]
                asked = time.monotonic()
                try:
                    reply = self.client.chat([system, *messages, *now], offer.tools, offered=offer.record())
                finally:
                    llm_s += time.monotonic() - asked
            except LLMCancelled:
                return BrainReport(status=TaskStatus.FAILURE, issue='task cancelled while the LLM was answering')
            except LLMUnavailable as exc:
                return self._endpoint_down(task, tools, progress, exc)
            messages.append(reply.message)
            if not reply.tool_calls:
                invalid += 1
                if invalid > self.settings.max_report_retries:
                    return self._non_compliant(task, tools, progress, 'replied without a tool call or report')
                messages.append({'role': 'user', 'content': 'Call your tools or submit_report.'})
                continue
            report, failed, answers = None, [], {}
            outputs: dict[int, Any] = {}   # call number in the reply (from 1) -> output, for $N references
            names = {n: c['function']['name'] for n, c in enumerate(reply.tool_calls, 1)}
            calls = sorted(enumerate(reply.tool_calls, 1), key=lambda nc: nc[1]['function']['name'] == REPORT_TOOL)
            for n, call in calls:   # the robot's tools first, then its report (same turn allowed)
                name, raw_args = call['function']['name'], call['function']['arguments']
                if name != REPORT_TOOL:
                    if failed:   # calls run in order; after a failure the rest of the turn is skipped
                        answers[call['id']] = compact({'ok': False, 'skipped': f'{failed[0]} failed'})
                        failed.append(name)
                        continue
                    progress(name, f'{self.role} calls {name}', min(0.95, 0.1 + 0.1 * step))
                    answers[call['id']], ok, output = self._run_tool(task, tools, name, raw_args, outputs, names)
                    if ok:
                        outputs[n] = output
                    else:
                        failed.append(name)
                    continue
                try:
                    candidate = self._report_of(raw_args, outputs, names)
                except (ValidationError, CallReferenceError) as exc:
                    invalid += 1
                    why = explain_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
                    self._emit(EventKind.REPORT_REJECTED, f'{self.role} sent an invalid report on '
                               f'{task.task_id}', target=task.task_id, reason=why, task_id=task.task_id,
                               raw=raw_args[:500], attempt=invalid)
                    if invalid > self.settings.max_report_retries:
                        return self._non_compliant(task, tools, progress,
                                                   f'report failed validation {invalid} times: {why}')
                    answers[call['id']] = f'invalid report: {why}. Call submit_report again.'
                    continue
                if failed:   # a report sent with tool calls stands only if they all succeeded
                    answers[call['id']] = f'report not accepted: {failed[0]} failed'
                    continue
                refusal = '' if candidate.status is not TaskStatus.FAILURE else failure_refusal(
                    task.hcw_id, tools.journal(task.task_id), nothing_else=offer.nothing_else)
                if refusal:   # an ungrounded failure: the robot keeps working (bounded by max_steps)
                    self._emit(EventKind.REPORT_REJECTED, f'{self.role} reported failure on {task.task_id} '
                               f'without grounds', target=task.task_id, reason=refusal, task_id=task.task_id,
                               raw=raw_args[:500], category='ungrounded_failure')
                    answers[call['id']] = f'report not accepted: {refusal}'
                    continue
                report, answers[call['id']] = candidate, 'report received'
            messages.extend({'role': 'tool', 'tool_call_id': c['id'], 'content': answers[c['id']]}
                            for c in reply.tool_calls)
            if report is not None:
                return BrainReport(**report.model_dump())
        return self._non_compliant(task, tools, progress,
                                   f'no valid report within {self.settings.max_steps} LLM requests')

    @staticmethod
    def _report_of(raw_args: str, outputs: dict[int, Any], names: dict[int, str]) -> SubmitReport:
        """Validate a submit_report call, its ``$N`` references resolved (ValidationError, CallReferenceError)."""
        try:
            parsed = json.loads(raw_args or '{}')
        except ValueError:
            return SubmitReport.model_validate_json(raw_args or '{}')   # raises, explaining the JSON error
        return SubmitReport.model_validate(resolve(parsed, outputs, names))

    def _run_tool(self, task: TaskSpec, tools: Toolbox, name: str, raw_args: str, outputs: dict[int, Any],
                  names: dict[int, str]) -> tuple[str, bool, Any]:
        """Run one tool call; return (the tool message for the model, ok, the tool's output)."""
        start = time.perf_counter()
        try:
            args = json.loads(raw_args or '{}')
            if not isinstance(args, dict):
                raise ValueError('arguments must be a JSON object')
        except ValueError as exc:
            invalid_call(self._emit, self.role, name, 'unparsable_arguments', f'arguments are not a JSON object: {exc}',
                         raw_args, task_id=task.task_id)
            self.bridge_s.append(time.perf_counter() - start)
            return compact({'ok': False, 'error': f'arguments are not valid JSON: {exc}'}), False, None
        try:
            args = resolve(args, outputs, names)
        except CallReferenceError as exc:
            invalid_call(self._emit, self.role, name, 'unresolved_reference', str(exc), raw_args, task_id=task.task_id)
            self.bridge_s.append(time.perf_counter() - start)
            return compact({'ok': False, 'error': str(exc)}), False, None
        args.pop('task_id', None)
        args.pop('caller', None)
        work, ok, result = 0.0, False, None
        try:
            result = tools.call(name, task_id=task.task_id, **args)
            work, ok = result.wall_duration_s, result.ok
            content = tool_result_text(result.output, args) if result.ok \
                else compact({'ok': False, 'error': result.error, 'result': without_echo(result.output, args)})
            if result.repeat_of is not None:   # not run again: say so, so the next step changes
                content = (f'Already done in this task with these arguments (not run again); take the next step '
                           f'or {REPORT_TOOL}. Result: {content}')
        except ToolAccessError as exc:
            content = compact({'ok': False, 'refused': str(exc)})
        except TypeError as exc:
            content = compact({'ok': False, 'error': f'bad arguments: {exc}'})
        self.bridge_s.append(max(0.0, time.perf_counter() - start - work))
        return content, ok, result.output if result is not None else None

    def _endpoint_down(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn, exc: Exception) -> BrainReport:
        if self.settings.fallback == 'protocol':
            self._source = 'fallback'
            self._emit(EventKind.BRAIN_ERROR, f'{self.role}: LLM unavailable, falling back to the protocol brain',
                       target=task.task_id, reason=str(exc), task_id=task.task_id, fallback='protocol',
                       error=str(exc))
            report = protocol_robot_brain(self.role).execute(task, tools, progress)
            report.data = {**report.data, 'brain': 'protocol (LLM fallback)'}
            return report
        self._emit(EventKind.BRAIN_ERROR, f'{self.role}: LLM unavailable, reporting failure', target=task.task_id,
                   reason=str(exc), task_id=task.task_id, fallback='fail', error=str(exc))
        return BrainReport(status=TaskStatus.FAILURE, issue=f'LLM endpoint unavailable: {exc}',
                           summary='The robot could not reason: its LLM endpoint did not answer.')

    def _taken_over(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Run ``task`` with the protocol brain: the LLM left too many tasks without a valid report."""
        self._source = 'fallback'
        if not self.taken_over:
            self.taken_over = True
            self._emit(EventKind.TAKEOVER, f'the protocol brain takes over from {type(self).__name__} for the rest '
                       'of the episode', target=self.role, task_id=task.task_id,
                       reason=f'{self.non_compliant_tasks} task(s) ended without a valid report from the LLM '
                              f'(robot_takeover_after: {self.settings.robot_takeover_after})',
                       role=self.role, previous=type(self).__name__, brain='protocol',
                       source=DecisionSource.FALLBACK.value)
        report = protocol_robot_brain(self.role).execute(task, tools, progress)
        report.data = {**report.data, 'brain': 'protocol (takeover)'}
        return report

    def _non_compliant(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn, why: str) -> BrainReport:
        """Record that the LLM left ``task`` without a valid report; fail it, or hand it to the protocol brain."""
        self.non_compliant_tasks += 1
        self._emit(EventKind.BRAIN_ERROR, f'{self.role}: LLM non-compliant on {task.task_id}', target=task.task_id,
                   reason=why, task_id=task.task_id, error=why)
        after = self.settings.robot_takeover_after
        if after and self.non_compliant_tasks >= after and not self._cancelled:
            return self._taken_over(task, tools, progress)
        return BrainReport(status=TaskStatus.FAILURE, issue=f'non-compliance: {why}',
                           summary='The robot did not produce a valid report.')
