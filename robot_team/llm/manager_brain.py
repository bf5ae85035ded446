"""The LLM manager brain: the manager decides with an LLM, by function calling, turn by turn.

:class:`LLMManagerBrain` keeps a conversation: each :meth:`~LLMManagerBrain.decide` appends the
new cues, task updates and guard feedback as one user message and turns the model's tool
calls into Delegate / Escalate / Reflect actions (Finish is bookkeeping, once the reflection
was accepted). It is offered the tools the workflow can accept now
(:func:`~robot_team.llm.decoding.manager_offer`: guards at decode time); a call to one not offered is still handled,
so the supervisor's gate refuses it with its explanation. A call to any other tool (an
operational tool such as ``navigate_to_pose``) is refused, recorded as ``tool_refused`` and
the refusal goes back to the model. A reflection that does not validate or is refused
(incomplete, contradicting the record) more than ``max_report_retries`` times ends the episode
as a failure with a non-compliance reason. A decision that yields nothing usable (text after the
nudge, only invalid calls) while only the manager can act is a ``brain_error``; after
``manager_takeover_after`` (default 1) of them the protocol brain takes over the manager's role
(a ``takeover``), before the supervisor's decision deadline would have to page a human.

Each update the model reads is written by :class:`~robot_team.llm.manager_updates.ManagerUpdates`
(what is new, then the record); this module holds when to ask, what a tool call becomes and who
takes over. The brain does not touch ROS; what the model reads of the world is data, never
instructions (:mod:`robot_team.llm.transcript`).
"""

from __future__ import annotations

from typing import Callable

from pydantic import ValidationError

from robot_team.brains.base import (
    Delegate,
    Escalate,
    FeedbackKind,
    Finish,
    ManagerAction,
    ManagerBrain,
    ManagerObservation,
    Reflect,
)
from robot_team.brains.protocol import ManagerProtocolBrain
from robot_team.catalog import TOOL_OWNERS, ManagerTool
from robot_team.contracts.decisions import DecisionSource
from robot_team.contracts.escalation_model import closing_abort
from robot_team.contracts.events import EventKind, category_of, invalid_call
from robot_team.contracts.names import Role
from robot_team.contracts.reports import OPERATIONAL_TASKS, TaskType, explain_validation_error
from robot_team.llm.client import ChatClient, Emit, LLMCancelled, LLMUnavailable, no_emit
from robot_team.llm.decoding import failed_attempts, hcw_refusal, manager_next_step, manager_offer
from robot_team.llm.kb import kb_for, load_profiles
from robot_team.llm.manager_updates import ManagerUpdates
from robot_team.llm.settings import LLMSettings
from robot_team.llm.toolschema import MANAGER_TOOL_MODELS, DelegateTaskArgs, EscalateArgs, SubmitReflectionArgs
from robot_team.llm.transcript import DATA_RULE

BAD_REFLECTION = frozenset({FeedbackKind.REFLECTION_INCOMPLETE, FeedbackKind.REFLECTION_CONTRADICTS})
"""Guard feedback that counts as an invalid reflection (towards ``max_report_retries``)."""

MANAGER_RULES = ('Never operate: delegate navigation, info_collection, display in order, each to its '
                 '<task_type>_robot, then reflect. After a failure act at once: delegate an alternative '
                 '(handles_task_id) or escalate. ' + DATA_RULE)
"""The rules of the manager's system prompt, after its profile."""


class LLMManagerBrain(ManagerBrain):
    """The manager's brain on an OpenAI-compatible endpoint.

    Parameters
    ----------
    settings, emit, kb
        As for :class:`~robot_team.llm.robot_brain.LLMRobotBrain`.

    Attributes
    ----------
    messages : list[dict]
        The whole conversation (user updates, assistant tool calls, tool messages). Each request
        sends the system prompt and the last ``settings.history_turns`` turns; every update
        restates the task record, so nothing the decision needs is lost.
    """

    def __init__(self, settings: LLMSettings | None = None, emit: Emit | None = None, *, kb: bool = True,
                 client: ChatClient | None = None, fallback_brain: Callable[[], ManagerBrain] | None = None):
        self.settings = settings or LLMSettings()
        self._emit = emit or no_emit
        self.client = client or ChatClient(self.settings, Role.MANAGER.value, emit)
        self.kb = kb
        self.messages: list[dict] = []
        self._turn_starts: list[int] = []
        self._updates = ManagerUpdates()   # what the model was told (the lost robots across cases)
        self._started = False
        self._kb_now = True
        self._bad_reflections = 0
        self._unusable_decisions = 0   # idle decisions with nothing usable (manager_takeover_after)
        self._fallback: ManagerBrain | None = None
        self._make_fallback = fallback_brain

    @property
    def decision_source(self) -> str:
        """'llm', or 'fallback' once the protocol brain stands in for the endpoint."""
        return 'fallback' if self._fallback is not None else 'llm'

    def cancel(self) -> None:
        """Cancel the request in flight and every later one: this brain decides no more (any thread)."""
        self.client.cancel()

    def new_case(self) -> None:
        """Start the next case's conversation afresh (the lost robots and a fallback that took over stay)."""
        self.messages, self._turn_starts = [], []
        self._updates.new_case()
        self._started, self._kb_now = False, True
        self._bad_reflections = self._unusable_decisions = 0

    def close(self) -> None:
        """Release the LLM client (its HTTP connections and event loop)."""
        self.client.close()

    def system_prompt(self, with_kb: bool = True) -> str:
        """Return the system prompt (profile, workflow rules, KB sections if enabled and ``with_kb``)."""
        text = f"{load_profiles()[Role.MANAGER.value].prompt()}\n{MANAGER_RULES}"
        if self.kb and with_kb:
            text += '\nKnowledge base:\n' + kb_for(Role.MANAGER.value)
        return text

    # -- observation -> words --

    def update_text(self, obs: ManagerObservation) -> str:
        """Return what is new in ``obs`` and the task record, compactly (the next user message).

        Written by :class:`~robot_team.llm.manager_updates.ManagerUpdates`; the earlier cases'
        lessons go with a case's first update when the brain has its knowledge base.
        """
        return self._updates.text(obs, first=not self._started, lessons=self.kb)

    # -- decisions --

    def decide(self, observation: ManagerObservation) -> list[ManagerAction]:
        """Ask the model what to do about the new cues; return its valid actions (maybe none).

        Calls the model only when something is new (a cue, a finished task, an escalation
        change or guard feedback that needs a decision: a note on an action that went ahead
        amended is told with the next request), and only when the workflow accepts one of its tools now
        (:func:`~robot_team.llm.decoding.manager_offer` not empty; e.g. while its escalation waits
        on a human with every HCW refused, there is nothing to ask). After the reflection was
        accepted, returns Finish with the outcome of the record, without a request.
        """
        if self._fallback is not None:
            return self._fallback.decide(observation)
        if observation.reflection_done:
            return [Finish(outcome=self._outcome(observation), reason='reflection accepted')]
        if observation.patient is None:
            return []
        if self._started and not observation.new and not any(f.kind.needs_decision for f in observation.feedback):
            self._updates.note(f.text for f in observation.feedback)   # told with the next request, not asked
            return []
        # The KB goes with the first update and with any that needs judgment (a failure, an
        # escalation, guard feedback); routine progress updates do not repeat it.
        self._kb_now = not self._started or bool(observation.feedback) or self._updates.needs_judgment(observation)
        self._bad_reflections += sum(1 for f in observation.feedback if f.kind in BAD_REFLECTION)
        if self._bad_reflections > self.settings.max_report_retries:
            return self._non_compliant_reflection()
        update = self.update_text(observation)
        offer = manager_offer(observation, observation.staff_ids, self.settings.decoding,
                              self.client.resolved.tool_calls == 'json_schema')
        step = manager_next_step(observation, offer) if self.kb else ''   # the KB's worked example, applied
        self._started = True
        self._turn_starts.append(len(self.messages))
        self.messages.append({'role': 'user', 'content': '\n'.join(filter(None, [update, step]))})
        if not offer.tools:   # nothing the workflow accepts now: no request (its reply could only be text)
            if self._idle(observation):
                return self._unusable(observation, 'nothing the workflow accepts while nothing runs')
            return []   # a task runs or a human decides: the update stays in the history for the next turn
        nudged = False
        for _ in range(self.settings.max_steps):
            try:
                reply = self.client.chat(self._window(), offer.tools, offered=offer.record())
            except LLMCancelled:
                return []
            except LLMUnavailable as exc:
                return self._endpoint_down(observation, exc)
            self.messages.append(reply.message)
            if not reply.tool_calls:
                if not self._idle(observation):
                    return []   # waiting is right (a task runs, a human decides)
                if nudged:
                    return self._unusable(observation, 'answered without a tool call again after the nudge')
                nudged = True   # nothing runs and nobody else will act: ask once for an action
                self.messages.append({'role': 'user', 'content': 'Nothing is running: act now with your tools.'})
                continue
            actions, retry = [], False
            for call in reply.tool_calls:
                action, content = self._action(call, observation)
                self.messages.append({'role': 'tool', 'tool_call_id': call['id'], 'content': content})
                if action is None:
                    retry = True
                else:
                    actions.append(action)
            if actions or not retry:
                return actions
            if self._bad_reflections > self.settings.max_report_retries:
                return self._non_compliant_reflection()
        if self._idle(observation):
            return self._unusable(observation, f'no valid action within {self.settings.max_steps} LLM requests')
        return []

    def _unusable(self, obs: ManagerObservation, why: str) -> list[ManagerAction]:
        """Record a decision with nothing usable while only the manager could act; maybe hand over.

        After ``manager_takeover_after`` such decisions the protocol brain takes over the manager's
        role for the rest of the episode (``takeover``, source fallback) and decides now; before
        that, or with 0, nothing is returned and the supervisor's deadline runs.
        """
        self._unusable_decisions += 1
        self._emit(EventKind.BRAIN_ERROR, 'manager: no usable decision while only the manager could act',
                   target=Role.MANAGER.value, reason=why, error=why, attempt=self._unusable_decisions)
        after = self.settings.manager_takeover_after
        if not after or self._unusable_decisions < after:
            return []
        self._fallback = self._new_fallback()
        self._emit(EventKind.TAKEOVER, f'the protocol brain takes over from {type(self).__name__} for the rest of '
                   'the episode', target=Role.MANAGER.value, role=Role.MANAGER.value, previous=type(self).__name__,
                   brain=type(self._fallback).__name__, source=DecisionSource.FALLBACK.value,
                   reason=f'{self._unusable_decisions} decision(s) with nothing usable while the team waited on '
                          f'the manager (manager_takeover_after: {after}): {why}')
        return self._fallback.decide(obs)

    def _new_fallback(self) -> ManagerBrain:
        """Return the brain that stands in for the LLM (the node's protocol brain, else the default one)."""
        if self._make_fallback is not None:
            return self._make_fallback()
        return ManagerProtocolBrain()

    def _non_compliant_reflection(self) -> list[ManagerAction]:
        why = (f'non-compliance: the reflection was refused or invalid {self._bad_reflections} times '
               f'(limit {self.settings.max_report_retries + 1})')
        self._emit(EventKind.BRAIN_ERROR, 'manager: no valid reflection, episode ends as a failure',
                   target=ManagerTool.SUBMIT_REFLECTION.value, reason=why, error=why)
        return [Finish(outcome='failure', reason=why)]

    @staticmethod
    def _idle(obs: ManagerObservation) -> bool:
        """Return whether no task runs and no escalation awaits a human (only the manager can act)."""
        return not any(t.state == 'running' for t in obs.tasks) and not any(
            not e.resolved for e in obs.escalations)

    def _window(self) -> list[dict]:
        start = self._turn_starts[-min(self.settings.history_turns, len(self._turn_starts))]
        return [{'role': 'system', 'content': self.system_prompt(self._kb_now)}, *self.messages[start:]]

    def _action(self, call: dict, obs: ManagerObservation) -> tuple[ManagerAction | None, str]:
        name, raw = call['function']['name'], call['function']['arguments'] or '{}'
        if name not in MANAGER_TOOL_MODELS:
            owner = TOOL_OWNERS.get(name)
            why = (f"the manager does not own '{name}'" + (f' (owned by {owner})' if owner else ' (no such tool)')
                   + f'; the manager delegates and never operates: use {ManagerTool.DELEGATE_TASK.value}')
            self._emit(EventKind.TOOL_REFUSED, f'refused manager calling {name}', target=name, reason=why,
                       caller=Role.MANAGER.value, owner=owner, args=raw[:500], tool=name)
            return None, f'refused: {why}'
        try:
            args = MANAGER_TOOL_MODELS[name].model_validate_json(raw)
        except ValidationError as exc:
            why = explain_validation_error(exc)
            if name == ManagerTool.SUBMIT_REFLECTION.value:
                self._bad_reflections += 1
                self._emit(EventKind.REFLECTION_REJECTED, 'manager sent a reflection that does not validate',
                           target=name, reason=why, raw=raw[:500], attempt=self._bad_reflections)
            else:
                invalid_call(self._emit, Role.MANAGER.value, name, category_of(exc), why, raw)
            return None, f'invalid arguments: {why}'
        try:
            if isinstance(args, DelegateTaskArgs):
                running = next((t for t in obs.tasks if t.task_type.value == args.task_type
                                and t.state == 'running'), None)
                if running is not None:   # a duplicate while that task runs: never forwarded
                    why = f'{args.task_type} {running.task_id} is still running; wait for its report'
                    self._emit(EventKind.DELEGATION_REFUSED, f'manager repeated a running {args.task_type} task',
                               target=args.robot, reason=why, task_type=args.task_type, robot=args.robot)
                    return None, f'refused: {why}'
                why = hcw_refusal(args.task_type, args.hcw_id, obs)
                if why is not None:   # what failed again, a failure too many in a row, or not the escorted HCW
                    failed = failed_attempts(args.task_type, args.hcw_id, obs)
                    self._emit(EventKind.DELEGATION_REFUSED, f'manager named HCW #{args.hcw_id or "-"} for '
                               f'{args.task_type}, which its delegation rules refuse', target=args.robot, reason=why,
                               task_type=args.task_type, robot=args.robot, hcw_id=args.hcw_id, failed=failed)
                    return None, f'refused: {why}'
                return self._delegate(args, obs), 'sent to the supervisor for authorization; result in next update'
            if isinstance(args, EscalateArgs):
                return Escalate(task_id=args.task_id, reason=args.reason, options=args.options), \
                    'escalation requested; the human decision comes in an update'
            assert isinstance(args, SubmitReflectionArgs)
            return Reflect(reflection=args), 'reflection submitted for checks'
        except (ValidationError, ValueError) as exc:
            why = explain_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            self._emit(EventKind.BRAIN_ERROR, f'manager sent invalid {name} arguments', target=name,
                       reason=why, error=why, raw=raw[:500], source='llm')
            return None, f'invalid arguments: {why}'

    @staticmethod
    def _delegate(args: DelegateTaskArgs, obs: ManagerObservation) -> Delegate:
        try:
            task_type = TaskType(args.task_type)
        except ValueError:
            raise ValueError(f"unknown task_type '{args.task_type}': expected navigation, info_collection "
                             f'or display') from None
        p = obs.patient
        return Delegate(task_type=task_type, robot=args.robot, room=p.room, hcw_id=args.hcw_id,
                        instructions=args.instructions, reason=args.reason, handles_task_id=args.handles_task_id,
                        context={'patient_id': p.patient_id, 'presentation': p.presentation,
                                 'required_specialty': p.required_specialty})

    def _endpoint_down(self, obs: ManagerObservation, exc: Exception) -> list[ManagerAction]:
        if self.settings.fallback == 'protocol':
            self._fallback = self._new_fallback()
            self._emit(EventKind.BRAIN_ERROR, 'manager: LLM unavailable, falling back to the protocol brain',
                       reason=str(exc), fallback='protocol', error=str(exc))
            return self._fallback.decide(obs)
        self._emit(EventKind.BRAIN_ERROR, 'manager: LLM unavailable, no action (the supervisor\'s deadlines run)',
                   reason=str(exc), fallback='fail', error=str(exc))
        return []

    @staticmethod
    def _outcome(obs: ManagerObservation) -> str:
        if closing_abort(obs.escalations):
            return 'escalated'
        finals = [obs.latest(t) for t in OPERATIONAL_TASKS]
        return 'success' if all(f is not None and f.state == 'success' for f in finals) else 'failure'
