"""Guards at decode time: each request offers only what the team's guards would accept now.

With ``decoding: constrained`` (the default) every request's tools are derived from the current
state and from the same declarations the guards enforce, so a small model cannot write what a
guard would refuse anyway (in ``json_schema`` mode the schema constrains decoding itself; in
native mode it is what the model is shown). ``decoding: free`` offers today's full schemas, as
the published free-running team had.

**The line: narrow only by what a guard would refuse.** Every choice a guard would accept stays
open to the model.

- A robot is offered the tools whose evidence its task still lacks (a tool the catalog marks
  ``once`` is withdrawn after it succeeded: the Toolbox refuses the same successful call again) and
  whose prerequisites hold (catalog ``requires``: the Toolbox does not run a Nav2 goal before the
  page was acknowledged), plus ``submit_report``. Arguments the task closes become one-value
  enums (:class:`~robot_team.catalog.ClosedSet`: the task's room and HCW, which the Toolbox
  refuses any other of, :func:`~robot_team.catalog.outside_task`). A success report is offered
  only once the catalog's proofs hold (the false-completion guard turns any other success claim
  into a failure), with the keys it must agree on fixed to the tools' output
  (``Proof.claim_keys``); a failure report needs its issue, and grounds (a failed call, a
  negative finding of the catalog, or the task's last request: the LLM robot refuses any other
  failure report, :func:`~robot_team.rules.grounding.failure_refusal`); while neither
  status is accepted ``submit_report`` is withheld and the request says why. Status (where both are
  accepted), issue, summary and every other field stay the model's.
- The manager is offered ``delegate_task`` only for the task types the supervisor's gate accepts now
  (:func:`~robot_team.rules.workflow.rules.delegation_refusal`), each with its one owner, and HCW IDs from the
  staff directory less those a rule refuses (the same HCW after failed attempts, unless a human
  decided ``retry``; for info collection and display, any HCW but the one navigation escorted);
  ``escalate_to_supervisor`` (about a task of the record, or the episode; not a succeeded task
  while a failure waits to be handled) unless its own escalation is open, with the human decisions
  as options, and ``submit_reflection`` when the gate's reflection rule holds
  (:func:`~robot_team.llm.toolschema.manager_tool_names`). Which HCW of which specialty,
  reassigning or escalating, and the reflection's content stay the model's.

Each request records its :class:`Offer` (``offered`` in the ``llm_request`` event): the tools and
the values of every closed argument, and :attr:`Offer.choices`, the number of distinct
(tool, closed values) choices, which the evaluation averages per decision.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from pydantic import ValidationError

from robot_team.brains.base import BrainReport, ManagerObservation, TaskSpec
from robot_team.catalog import (
    REPORT_TOOL, TASK_OWNER, TOOLS_BY_NAME, ClosedSet, ManagerTool, TaskFacts, missing_prerequisites, role_of,
    task_closes, tools_for)
from robot_team.contracts.escalation_model import closing_abort
from robot_team.rules.grounding import UNGROUNDED_FAILURE, contradictions, failure_refusal, proof_call, unmet_proofs
from robot_team.rules.guards import all_lost_refusal, lost_robot_refusal
from robot_team.contracts.names import role_robots
from robot_team.llm.toolschema import (
    MANAGER_TOOL_MODELS, function_schema, manager_tool_names, report_schema, robot_tools)
from robot_team.contracts.reports import OPERATIONAL_TASKS, IssueCode, TaskStatus, TaskType
from robot_team.tools.base import Toolbox, ToolResult
from robot_team.rules.workflow.rules import (
    StaffFacts, TaskOutline, delegation_refusal, failed_since_success, manager_may_escalate, open_escalation_of,
    people_chose, task_hcw_refusal)

Decoding = Literal['constrained', 'free']
"""``constrained``: each request offers only what the guards accept now; ``free``: the full schemas."""

DECODINGS: tuple[str, ...] = ('constrained', 'free')

MAX_SAME_FAILURES: dict[str, int] = {TaskType.NAVIGATION.value: 1, TaskType.INFO_COLLECTION.value: 2,
                                     TaskType.DISPLAY.value: 2}
"""Failures of one attempt (task type and HCW) after which the LLM manager may not delegate it again
unless a human decided ``retry``. A navigation failure is handled by another HCW or an escalation,
never by the same HCW again (the published issue-handling metric, Bai, Ding, Taylor, Table II); a
robot's failed info collection or display may be tried once more with the same HCW, unless a
``final`` tool's answer grounds the failure (then no attempt is left: :func:`attempts_refusal`)."""


MAX_FAILED_IN_A_ROW: dict[str, int] = {TaskType.NAVIGATION.value: 2, TaskType.INFO_COLLECTION.value: 2,
                                       TaskType.DISPLAY.value: 2}
"""Failed attempts of one task type in a row (any HCW, since its last success or human decision) after
which the LLM manager may not delegate it again: a further attempt is a person's call (escalate).
The assigned HCW and one alternative, then the charge nurse: a failure that recurs with another HCW
(no path to the room, an unreadable badge, no care team) is not the HCW's, and more HCWs only delay
the human who can act. A robot lost while it ran is not counted (:func:`failed_in_a_row`)."""


REFLECTION_TEXT_MAX_CHARS = 120
REFLECTION_MAX_ITEMS = 2
"""Bounds of a constrained reflection's free text (each summary, recovery attempt and lesson; the
number of recovery attempts and lessons): about 1,000 characters in all, so the whole reply ends
within a small model's ``max_tokens`` (384 for the built-in one; a reply cut there is refused)."""


@dataclass
class Offer:
    """What one request offers the model: tool definitions, and the closed values of their arguments.

    Attributes
    ----------
    tools
        The OpenAI tool definitions sent (native ``tools``, or the ``json_schema`` union).
    enums
        ``'<tool>.<argument>'`` -> the values offered for that argument.
    decoding
        ``'constrained'`` or ``'free'``.
    withheld
        Why ``submit_report`` is not offered (``''``: it is, or decoding is free): neither status
        would be accepted now (:func:`withheld_report`).
    nothing_else
        A robot has nothing else to try: the task's last request, or no tool but ``submit_report``
        offered; a failure report is then accepted without grounds
        (:func:`~robot_team.rules.grounding.failure_refusal`).
    """

    tools: list[dict]
    enums: dict[str, list[Any]] = field(default_factory=dict)
    decoding: str = 'constrained'
    withheld: str = ''
    nothing_else: bool = False

    @property
    def names(self) -> list[str]:
        """The offered tool names, in order."""
        return [t['function']['name'] for t in self.tools]

    @property
    def choices(self) -> int:
        """Distinct choices: per tool, the product of the sizes of its closed arguments' value sets."""
        total = 0
        for name in self.names:
            sizes = [len(v) for k, v in self.enums.items() if k.split('.', 1)[0] == name]
            total += math.prod(sizes) if sizes else 1
        return total

    def record(self) -> dict:
        """Return the offered set as recorded in an ``llm_request`` event."""
        record = {'decoding': self.decoding, 'tools': self.names, 'enums': self.enums, 'choices': self.choices}
        return {**record, 'withheld': self.withheld} if self.withheld else record


def _enums_of(name: str, schema: Any, path: str = '') -> dict[str, list[Any]]:
    """Return every enum of a parameters schema as ``'<name>.<path>'`` -> values."""
    found: dict[str, list[Any]] = {}
    if isinstance(schema, dict):
        if 'enum' in schema and path:
            found[f'{name}.{path}'] = list(schema['enum'])
        if 'const' in schema and path:
            found[f'{name}.{path}'] = [schema['const']]
        for key, value in (schema.get('properties') or {}).items():
            found.update(_enums_of(name, value, f'{path}.{key}' if path else key))
        for key in ('items',):
            if key in schema:
                found.update(_enums_of(name, schema[key], f'{path}[]' if path else '[]'))
        for variant in schema.get('anyOf') or []:
            for k, v in _enums_of(name, variant, path).items():
                found[k] = list(dict.fromkeys([*found.get(k, []), *v]))
    return found


def _offer(tools: list[dict], decoding: str) -> Offer:
    enums: dict[str, list[Any]] = {}
    for tool in tools:
        enums.update(_enums_of(tool['function']['name'], tool['function'].get('parameters') or {}))
    return Offer(tools=tools, enums=enums, decoding=decoding)


def _close(schema: dict, argument: str, values: list[str]) -> None:
    """Make ``argument`` of a parameters ``schema`` an enum of ``values`` (nothing if it has none)."""
    prop = (schema.get('properties') or {}).get(argument)
    if prop is not None and values:
        prop.clear()
        prop.update({'type': 'string', 'enum': list(dict.fromkeys(values))})


def _task_values(toolbox: Toolbox, task: TaskSpec) -> dict[ClosedSet, str]:
    """Return what ``task`` closes arguments to now: its room and HCW, then its calls' (the Toolbox's values)."""
    return {**task_closes(task.room, task.hcw_id), **toolbox.task_values(task.task_id)}


def _closed_args(decl, values: dict[ClosedSet, str]) -> dict[str, str]:
    """Return ``decl``'s closed arguments that ``values`` close now, each to its one value."""
    return {argument: values[closed] for argument, closed in decl.closed if values.get(closed)}


def _answered(toolbox: Toolbox, spec, decl, closed: dict[str, str], task_id: str) -> bool:
    """Return whether the Toolbox would answer every call the offer leaves open from its journal.

    Only for a ``final`` tool whose every argument is closed (one call left open) and that call
    already answered in the task (:meth:`~robot_team.tools.base.Toolbox.repeated`, the same rule).
    """
    if not decl.final or set(spec.input_model.model_fields) - set(closed):
        return False
    try:
        parsed = spec.input_model.model_validate(closed)
    except ValidationError:
        return False
    return toolbox.repeated(spec, parsed, task_id) is not None


def _proven_claim(task_type: TaskType, journal: list[ToolResult]) -> tuple[BrainReport, dict[str, Any]]:
    """Return a success claim holding the values the proofs fix (``claim_keys``), and those values."""
    fixed: dict[str, Any] = {}
    for decl in tools_for(task_type):
        if decl.proof is None or not decl.proof.claim_keys:
            continue
        ok = next((r for r in reversed(journal) if r.tool == decl.name and r.ok), None)
        if ok is not None:
            fixed.update({k: ok.output.get(k) for k in decl.proof.claim_keys if ok.output.get(k) is not None})
    return BrainReport(status=TaskStatus.SUCCESS, data=dict(fixed)), fixed


def report_tool(task_type: TaskType, journal: list[ToolResult], variants: bool = True,
                failure: bool = True, task: TaskFacts | None = None) -> dict | None:
    """Return the ``submit_report`` definition the report guards would accept now (None: neither status).

    A success variant only when the catalog's proofs hold for ``journal``
    (:func:`~robot_team.rules.grounding.contradictions` of a success claim), its ``data`` fixing the
    keys the proofs compare with the tools' output (``task``: what the task is about, its room and
    HCW, as the robot's grounding checks it); a failure variant (its issue required) when
    ``failure`` (:func:`~robot_team.rules.grounding.failure_refusal` accepts one now). While a success is
    not provable, the description says what it still needs.
    Without ``variants`` (native tool calls: a function's parameters must be one object) only the
    status is closed.
    """
    tool = report_schema(TASK_OWNER[task_type])
    params = tool['function']['parameters']
    claim, fixed = _proven_claim(task_type, journal)
    missing = contradictions(task_type, claim, journal, task)
    if missing and not failure:
        return None
    if missing:   # say what a success still needs, so the next step can be chosen (or the failure reported)
        needs = '; '.join(missing)
        tool['function']['description'] = f"{tool['function']['description']} Success not provable yet: {needs}."
    if not variants:
        statuses = ([] if missing else [TaskStatus.SUCCESS.value]) + ([TaskStatus.FAILURE.value] if failure else [])
        params['properties']['status'] = {'type': 'string', 'enum': statuses}
        return tool
    failure_variant = copy.deepcopy(params)
    failure_variant['properties']['status'] = {'type': 'string', 'enum': [TaskStatus.FAILURE.value]}
    failure_variant['properties']['issue'] = {'type': 'string', 'minLength': 1, 'description': 'What went wrong'}
    failure_variant['required'] = sorted({*failure_variant.get('required', []), 'status', 'issue'})
    if missing:
        tool['function']['parameters'] = failure_variant
        return tool
    success = copy.deepcopy(params)
    success['properties']['status'] = {'type': 'string', 'enum': [TaskStatus.SUCCESS.value]}
    if fixed:
        described = (params['properties'].get('data') or {}).get('properties') or {}
        success['properties']['data'] = {
            'type': 'object', 'additionalProperties': False, 'required': sorted(fixed),
            'properties': {**described, **{k: {'type': 'string', 'enum': [str(v)]} for k, v in fixed.items()}}}
        success['required'] = sorted({*success.get('required', []), 'status', 'data'})
    tool['function']['parameters'] = {'anyOf': [success, failure_variant]} if failure else success
    return tool


def withheld_report(task_type: TaskType, journal: list[ToolResult], task: TaskFacts | None = None) -> str:
    """Return, in one line, why ``submit_report`` is not offered now: what each status still needs.

    The report guards' own reasons (the unmet proofs of a success claim, the failure rule), as the
    model would have read them refused; said in both knowledge-base conditions.
    """
    claim, _ = _proven_claim(task_type, journal)
    needs = '; '.join(contradictions(task_type, claim, journal, task))
    return (f'{REPORT_TOOL} is not available yet. Success not provable: {needs}. Failure not grounded: '
            f'{UNGROUNDED_FAILURE}.')


def robot_offer(toolbox: Toolbox, task: TaskSpec, decoding: str = 'constrained', variants: bool = True,
                last: bool = False, one_call: bool = False) -> Offer:
    """Return what ``toolbox``'s robot is offered for its next request on ``task`` (see the module docstring).

    ``variants``: alternatives as ``anyOf`` (``json_schema`` mode); native tool calls get one object each.
    ``last``: the task's last request (``max_steps``): only ``submit_report`` is offered, since a
    task left without a valid report is not accepted (the robot is taken over); a failure is then
    always accepted. Before that, ``submit_report`` offers failure only with grounds
    (:func:`~robot_team.rules.grounding.failure_refusal`) and is withheld while neither status would be
    accepted (:attr:`Offer.withheld` says why).
    ``one_call``: the reply holds one call (``calls_per_request: 1``): a tool is offered only once
    its prerequisites succeeded. Otherwise also when they are offered too, since calls run in
    order and a plan may hold the prerequisite first (the Toolbox checks each call as it runs).

    Raises
    ------
    KeyError
        If the toolbox's owner is not an operational robot.
    """
    if decoding == 'free':
        offer = _offer(robot_tools(toolbox), decoding)
        offer.nothing_else = last
        return offer
    task_type = role_of(toolbox.owner).task_type
    journal = toolbox.journal(task.task_id)
    done = toolbox.succeeded(task.task_id)
    facts = TaskFacts(task.room, task.hcw_id)
    tools, may_succeed, values = [], set(done), _task_values(toolbox, task)
    for spec in ([] if last else toolbox.specs()):   # catalog order: prerequisites first
        decl = TOOLS_BY_NAME.get(spec.name)
        if decl is not None and decl.once and _complete(decl, journal, facts, done):
            continue
        if missing_prerequisites(spec.name, done if one_call else may_succeed):   # the Toolbox would not run it
            continue
        closed = _closed_args(decl, values) if decl is not None else {}
        if decl is not None and _answered(toolbox, spec, decl, closed, task.task_id):   # a final answer stands
            continue
        may_succeed.add(spec.name)
        tool = function_schema(spec.name, spec.description, spec.input_model)
        for argument, value in closed.items():
            _close(tool['function']['parameters'], argument, [value])
        tools.append(tool)
    nothing_else = last or not tools
    report = report_tool(task_type, journal, variants,
                         failure=not failure_refusal(task.hcw_id, journal, nothing_else=nothing_else), task=facts)
    offer = _offer(tools if report is None else [*tools, report], decoding)
    offer.nothing_else = nothing_else
    if report is None:   # neither status would be accepted: the robot keeps working, and is told why
        offer.withheld = withheld_report(task_type, journal, facts)
    return offer


def _complete(decl, journal: list[ToolResult], task: TaskFacts, done: set[str]) -> bool:
    """Return whether a ``once`` tool's evidence is complete in ``journal``: its proof's call, else any success.

    A call that succeeded without being about the task (the RTLS asked about others, a screen
    showing other entries than the care team fetched) leaves the tool offered.
    """
    return proof_call(decl, journal, task) is not None if decl.proof is not None else decl.name in done


def _tool_for(decl, journal: list[ToolResult], task: TaskFacts) -> str:
    """Return the tool that meets ``decl``'s unmet proof: itself until its proof's call exists, then its related goal.

    Its proof's call (:func:`~robot_team.rules.grounding.proof_call`): a successful one, about the
    task's HCW where the proof says so.
    """
    if proof_call(decl, journal, task) is None:
        return decl.name
    related = decl.proof.visited_by or decl.proof.goal_of
    return related.value if related is not None else decl.name


def next_step(toolbox: Toolbox, task: TaskSpec, offer: Offer) -> str:
    """Return where ``task`` stands in its procedure, in one line, for the knowledge base's worked example.

    From the same declarations as the offer: the catalog's proofs (:class:`~robot_team.catalog.Proof`)
    a success claim does not meet yet, in the catalog's order, each mapped to the tool that meets
    it (its own tool until its proof's call succeeded, then the goal it relates to: ``visited_by``,
    ``goal_of``); the first one offered (or its prerequisite) is the next step, a related goal with
    the proof's reason (which names the pose). Once every proof
    holds, the success report; after a failed call, a failure report with that call's error as
    its issue, quoted (a small model copies a quoted issue; told to use "its error", the 0.5B wrote
    that phrase as the issue), unless another way is tried. Names no argument values beyond the
    proofs' own reasons and that error: the model still chooses the call and its arguments.
    """
    task_type = role_of(toolbox.owner).task_type
    journal = toolbox.journal(task.task_id)
    claim, _ = _proven_claim(task_type, journal)
    facts = TaskFacts(task.room, task.hcw_id)
    unmet = unmet_proofs(task_type, claim, journal, facts)
    if not unmet:
        return f'Next step: {REPORT_TOOL} success, with data from the results.'
    if journal and not journal[-1].ok:
        failed = journal[-1]
        error = failed.error or 'no error given'
        issue = error if error.startswith(failed.tool) else f'{failed.tool} failed: {error}'
        return f'Next step: {REPORT_TOOL} failure with issue {json.dumps(issue, ensure_ascii=False)}, or try ' \
               f'another way.'
    done = toolbox.succeeded(task.task_id)
    for decl, problems in unmet:
        tool = _tool_for(decl, journal, facts)
        # a goal a proof relates to says which (its reason holds the pose); a first call needs no reason
        why = f" ({'; '.join(problems)})" if tool != decl.name else ''
        if tool in offer.names:
            return f'Next step: call {tool}{why}.'
        first = next(iter(missing_prerequisites(tool, done)), None)   # what must succeed before it
        if first in offer.names:
            return f'Next step: call {first} (then {tool}).'
    return f"A success report still needs: {'; '.join(p for _, problems in unmet for p in problems)}."


def _offered_task_types(offer: Offer) -> set[str]:
    """Return the task types ``offer``'s ``delegate_task`` may name (empty: not offered)."""
    tool = next((t for t in offer.tools if t['function']['name'] == ManagerTool.DELEGATE_TASK.value), None)
    if tool is None:
        return set()
    params = tool['function']['parameters']
    variants = params.get('anyOf', [params])
    return {kind for v in variants for kind in v.get('properties', {}).get('task_type', {}).get('enum', [])}


def manager_next_step(obs: ManagerObservation, offer: Offer) -> str:
    """Return what the manager's knowledge base says to do next in ``obs``, in one line ('' when nothing waits).

    Only for a failed task nothing handles yet (:func:`failures_waiting`, the latest): the ways
    ``offer`` leaves open to handle it, delegating its task type again (``handles_task_id``) and
    escalating it, or the one left (with why, e.g. :func:`attempts_refusal`). Names no HCW: which
    one, and which way, stays the model's choice. The manager's counterpart of :func:`next_step`.
    """
    waiting = failures_waiting(obs)
    if not waiting:
        return ''
    task = next(t for t in obs.tasks if t.task_id == waiting[-1])
    kind = task.task_type.value
    ways = []
    if kind in _offered_task_types(offer):
        ways.append(f'{ManagerTool.DELEGATE_TASK.value} {kind} again (handles_task_id: {task.task_id})')
    if ManagerTool.ESCALATE_TO_SUPERVISOR.value in offer.names:
        ways.append(f'{ManagerTool.ESCALATE_TO_SUPERVISOR.value} {task.task_id}')
    if not ways:
        return ''
    why = '' if len(ways) > 1 else f' ({attempts_refusal(kind, obs) or "the only way the rules leave"})'
    return f"Next step: handle {task.task_id}: {' or '.join(ways)}{why}."


def gate_hcw_refusal(task_type: str, hcw_id: str, obs: ManagerObservation) -> str | None:
    """Return why the supervisor's gate refuses ``hcw_id`` for ``task_type`` in ``obs`` (rule 9), else None.

    :func:`~robot_team.rules.workflow.rules.task_hcw_refusal` with what the manager knows: the patient cue
    (required specialty, the hospital's assignment), people's ``reassign`` decisions, and the
    staff board (``team/staff``; before it arrives no staff view, so only the gate checks).
    """
    try:
        kind = TaskType(task_type)
    except ValueError:
        return None   # the gate's task-type rule speaks first
    patient = obs.patient
    staff = {s.hcw_id: StaffFacts(s.specialty, s.availability) for s in obs.staff} if obs.staff else None
    refusal = task_hcw_refusal(kind, hcw_id, _outlines(obs),
                               required_specialty=patient.required_specialty if patient else '',
                               chosen=people_chose(patient.assigned_hcw_id if patient else '', obs.escalations),
                               staff=staff, engaged=obs.engaged_hcws)
    return None if refusal is None else refusal[1]


def failed_attempts(task_type: str, hcw_id: str, obs: ManagerObservation) -> list[str]:
    """Return the IDs of the failed tasks of ``task_type`` with HCW ``hcw_id``, in record order."""
    return [t.task_id for t in obs.tasks if t.task_type.value == task_type and t.state == 'failure'
            and t.hcw_id == hcw_id]


def refused_hcws(task_type: str, obs: ManagerObservation, staff: Iterable[str] = ()) -> set[str]:
    """Return the HCW IDs a delegation of ``task_type`` may not name now (the manager's HCW rules).

    - **Repeat rule:** an HCW whose attempts of ``task_type`` failed :data:`MAX_SAME_FAILURES`
      times, unless a human decided ``retry`` on the last of them.
    - **The gate's HCW rule** (rule 9, :func:`gate_hcw_refusal`): a navigation's HCW of the
      patient's specialty and on shift unless a person chose them; the tasks after navigation
      (info collection, display) are about the HCW the latest navigation escorted: every other
      HCW of ``staff`` is refused.
    """
    failed_by_hcw: dict[str, list[str]] = {}
    for t in obs.tasks:   # a task the supervisor closed (lost robot, task deadline) says nothing of the HCW
        if t.task_type.value == task_type and t.state == 'failure' and t.issue_code is IssueCode.NONE:
            failed_by_hcw.setdefault(t.hcw_id, []).append(t.task_id)
    retried = {e.task_id for e in obs.escalations if e.decision == 'retry'}
    refused = {hcw for hcw, failed in failed_by_hcw.items()
               if len(failed) >= MAX_SAME_FAILURES.get(task_type, 1) and failed[-1] not in retried}
    refused |= {h for h in staff if gate_hcw_refusal(task_type, h, obs) is not None}
    return refused


def failed_in_a_row(task_type: str, obs: ManagerObservation) -> list[str]:
    """Return the IDs of ``task_type``'s failed tasks since its last success or human decision, in order.

    A human decision (``retry``, ``reassign``...) on one of them starts the count again after it; a
    task the supervisor closed (``robot_lost``, ``task_deadline``) says nothing about the task and is
    not counted.
    """
    decided = {e.task_id for e in obs.escalations if e.resolved}
    run: list[str] = []
    for t in obs.tasks:
        if t.task_type.value != task_type:
            continue
        if t.state == 'success' or t.task_id in decided:
            run = []
        elif t.state == 'failure' and t.issue_code is IssueCode.NONE:
            run.append(t.task_id)
    return run


def _outlines(obs: ManagerObservation) -> list[TaskOutline]:
    """Return ``obs``'s tasks as the gate's rules see them (:class:`~robot_team.rules.workflow.rules.TaskOutline`)."""
    return obs.outlines()


def attempts_refusal(task_type: str, obs: ManagerObservation) -> str | None:
    """Return why the LLM manager may not delegate ``task_type`` again now (None: it may).

    Another attempt of a task type is a person's call, for any HCW, once its failed attempts in a
    row (:func:`failed_in_a_row`) number :data:`MAX_FAILED_IN_A_ROW`, or the last of them is
    grounded by a ``final`` tool's answer (``TaskRecord.final_failure``: the staff directory does
    not know the badge the escorted HCW wears; no attempt by the team changes that record, and
    whether to have it fixed or to reassign the patient is the human's decision): escalate the
    last of them. A step that succeeded is repeated only to recover a later step that failed
    since (the gate's repeat rule, :func:`robot_team.rules.workflow.rules.delegation_refusal`); when every
    such later step is a person's call, the repeat is another attempt at it in disguise and is
    refused too (the 0.5B manager escorted the HCW again after a failed badge check, until the
    issue-handling deadline passed). The one rule behind the constrained offer (no
    ``delegate_task`` variant for ``task_type``) and the manager's guard (:func:`hcw_refusal`).
    """
    def persons_call(kind: str) -> tuple[str, str]:
        """Return (why another attempt of ``kind`` is a person's call, the failure to escalate); ('', '') if not."""
        run = failed_in_a_row(kind, obs)
        if len(run) >= MAX_FAILED_IN_A_ROW.get(kind, 2):
            return f"{', '.join(run)} failed in a row", run[-1]
        last = next((t for t in obs.tasks if t.task_id == run[-1]), None) if run else None
        if last is not None and last.final_failure:
            return f'{last.task_id} failed on an answer no attempt changes ({last.final_failure})', last.task_id
        return '', ''
    why, failed = persons_call(task_type)
    if why:
        return f"{why}: another {task_type} attempt is a person's call: escalate {failed}"
    if task_type not in {k.value for k in OPERATIONAL_TASKS}:
        return None
    outlines = _outlines(obs)
    recovers = failed_since_success(TaskType(task_type), outlines)
    calls = [persons_call(t.task_type.value) for t in recovers]
    if not recovers or not all(why for why, _ in calls):
        return None
    latest = obs.latest(TaskType(task_type))
    why, failed = calls[-1]
    return (f"{task_type} succeeded ({latest.task_id}); repeating it would only retry "
            f"{', '.join(t.task_type.value for t in recovers)}, and {why}: "
            f"a person's call: escalate {failed}")


def hcw_refusal(task_type: str, hcw_id: str, obs: ManagerObservation) -> str | None:
    """Return why the manager's HCW rules refuse delegating ``task_type`` with ``hcw_id`` now (None: accepted).

    The same rules as :func:`refused_hcws` (the guard behind the constrained offer), with the reason,
    after the attempts rule (:func:`attempts_refusal`), which refuses every HCW. The gate's HCW rule
    speaks only for a task type the gate would accept now (:func:`delegable`): a delegation out of
    workflow order goes to the supervisor's gate, whose refusal is on the record
    as the workflow violation it is.
    """
    limited = attempts_refusal(task_type, obs)
    if limited is not None:
        return limited
    gate = gate_hcw_refusal(task_type, hcw_id, obs)
    if gate is not None and task_type in {k.value for k in delegable(obs)}:
        return gate
    if hcw_id in refused_hcws(task_type, obs):
        failed = failed_attempts(task_type, hcw_id, obs)
        return (f"{', '.join(failed)} failed with HCW #{hcw_id or '-'}: delegate with another HCW or "
                f'escalate {failed[-1]}')
    return None


def failures_waiting(obs: ManagerObservation) -> list[str]:
    """Return the IDs of the failed tasks nothing handles yet.

    The latest of their type, neither re-delegated (``handles_task_id``) nor escalated: what the
    supervisor's issue-handling deadline waits for.
    """
    escalated = {e.task_id for e in obs.escalations}
    latest = [obs.latest(kind) for kind in OPERATIONAL_TASKS]
    return [t.task_id for t in latest if t is not None and t.state == 'failure'
            and t.task_id not in obs.handled_failures and t.task_id not in escalated]


def delegable(obs: ManagerObservation) -> list[TaskType]:
    """Return the operational task types the manager may delegate now.

    Those the supervisor's gate would authorise (its order and running rules) whose robot is not
    lost (the manager's guard, :func:`robot_team.rules.guards.lost_robot_refusal`).
    """
    if closing_abort(obs.escalations):
        return []
    outlines = _outlines(obs)
    return [kind for kind in OPERATIONAL_TASKS if delegation_refusal(kind, outlines) is None
            and not all_lost_refusal(TASK_OWNER[kind], obs.robots, obs.lost_robots)]


def _delegate_variant(base: dict, kind: TaskType, obs: ManagerObservation, staff: Iterable[str]) -> dict | None:
    """Return ``delegate_task``'s parameters for ``kind``; None when the HCW rules refuse every HCW of ``staff``.

    Also None when the attempts rule refuses ``kind`` (:func:`attempts_refusal`).
    """
    if attempts_refusal(kind.value, obs) is not None:   # a person's call now: escalating is what is left
        return None
    variant = copy.deepcopy(base)
    props = variant['properties']
    props['task_type'] = {'type': 'string', 'enum': [kind.value]}
    role = TASK_OWNER[kind]   # the role (the manager sends it to its nearest idle robot), or one of its robots
    fleet = [r for r in role_robots(role, obs.robots) if r != role and not lost_robot_refusal(r, obs.lost_robots)]
    props['robot'] = {'type': 'string', 'enum': [role, *fleet]}
    staff = list(staff)
    allowed = [h for h in staff if h not in refused_hcws(kind.value, obs, staff)]
    if staff and not allowed:   # every HCW refused: escalating is what is left
        return None
    if allowed:
        props['hcw_id'] = {'type': 'string', 'enum': allowed,
                           'description': props.get('hcw_id', {}).get('description', '')}
    failed = [t.task_id for t in obs.tasks if t.task_type is kind and t.state == 'failure']
    if 'handles_task_id' in props:   # a failed task of the record, or none
        props['handles_task_id'] = {'type': 'string', 'enum': ['', *failed]}
    return variant


def reflection_tool(obs: ManagerObservation) -> dict:
    """Return the ``submit_reflection`` definition the reflection guards would accept now.

    One outcome per operational task type, in workflow order (the completeness check), each with
    its owner and the status the record gives it (the contradiction check: ``success`` only if a
    task of that type succeeded, never ``failure`` when the latest one succeeded); non-empty
    summaries, recovery attempts and at least one lesson, bounded so the reply fits its token limit
    (:data:`REFLECTION_TEXT_MAX_CHARS`, :data:`REFLECTION_MAX_ITEMS`). The content stays the model's.
    """
    name = ManagerTool.SUBMIT_REFLECTION.value
    tool = function_schema(name, MANAGER_TOOL_MODELS[name].__doc__, MANAGER_TOOL_MODELS[name])
    params = tool['function']['parameters']
    outcomes = []
    for kind in OPERATIONAL_TASKS:
        of_type = [t for t in obs.tasks if t.task_type is kind]
        if of_type and of_type[-1].state == 'success':
            statuses = [TaskStatus.SUCCESS.value]
        elif any(t.state == 'success' for t in of_type):
            statuses = [TaskStatus.SUCCESS.value, TaskStatus.FAILURE.value]
        else:
            statuses = [TaskStatus.FAILURE.value]
        outcomes.append({'type': 'object', 'properties': {
            'task_type': {'type': 'string', 'enum': [kind.value]},
            'status': {'type': 'string', 'enum': statuses},
            'robot': {'type': 'string', 'enum': [TASK_OWNER[kind]]},
            'summary': {'type': 'string', 'minLength': 1, 'maxLength': REFLECTION_TEXT_MAX_CHARS}},
            'required': ['task_type', 'status', 'robot', 'summary']})
    text = {'type': 'string', 'minLength': 1, 'maxLength': REFLECTION_TEXT_MAX_CHARS}
    params['properties']['task_outcomes'] = {'type': 'array', 'prefixItems': outcomes,
                                             'minItems': len(outcomes), 'maxItems': len(outcomes)}
    params['properties']['recovery_attempts'] = {'type': 'array', 'items': text, 'maxItems': REFLECTION_MAX_ITEMS}
    params['properties']['lessons_learned'] = {'type': 'array', 'items': text, 'minItems': 1,
                                               'maxItems': REFLECTION_MAX_ITEMS}
    params['required'] = sorted({*params.get('required', []), 'task_outcomes', 'recovery_attempts',
                                 'lessons_learned'})
    return tool


def manager_offer(obs: ManagerObservation, staff: Iterable[str] = (), decoding: str = 'constrained',
                  variants: bool = True) -> Offer:
    """Return what the manager is offered for its next request in state ``obs`` (see the module docstring).

    ``staff`` are the staff directory's HCW IDs (empty: HCW IDs stay open). ``variants``: one
    ``delegate_task`` alternative per task type as ``anyOf`` (``json_schema`` mode); native tool
    calls get one object whose enums are the union. The task type of a failure waiting for
    handling (:func:`failures_waiting`) comes first, then the workflow's order: a small model
    tends to take the first one listed (the 0.5B redid a succeeded navigation after an info
    collection failure, listed first by workflow order); every type stays offered.
    """
    names = manager_tool_names(obs)
    tools = [function_schema(n, MANAGER_TOOL_MODELS[n].__doc__, MANAGER_TOOL_MODELS[n]) for n in names]
    if decoding == 'free':
        return _offer(tools, decoding)
    staff = list(dict.fromkeys(staff))
    out = []
    for tool in tools:
        if tool['function']['name'] == ManagerTool.SUBMIT_REFLECTION.value and variants:
            tool = reflection_tool(obs)
        if tool['function']['name'] == ManagerTool.ESCALATE_TO_SUPERVISOR.value:
            if open_escalation_of(obs.escalations) is not None:   # one at a time: the supervisor refuses a second
                continue
            waits = bool(failures_waiting(obs))
            _close(tool['function']['parameters'], 'task_id',
                   ['', *reversed([t.task_id for t in obs.tasks if manager_may_escalate(t.state, waits)])])
        if tool['function']['name'] == ManagerTool.DELEGATE_TASK.value:
            kinds = delegable(obs)
            if not kinds:
                continue
            waiting = {t.task_type for t in obs.tasks if t.task_id in failures_waiting(obs)}
            kinds.sort(key=lambda kind: kind not in waiting)   # a failure that waits for handling first
            base = tool['function']['parameters']
            options = [v for v in (_delegate_variant(base, kind, obs, staff) for kind in kinds) if v is not None]
            if not options:
                continue
            if len(options) == 1:
                tool['function']['parameters'] = options[0]
            elif variants:
                tool['function']['parameters'] = {'anyOf': options}
            else:
                merged = copy.deepcopy(options[0])
                for key in ('task_type', 'robot', 'hcw_id', 'handles_task_id'):
                    values = [v for o in options for v in o['properties'].get(key, {}).get('enum', [])]
                    if values and all('enum' in o['properties'].get(key, {}) for o in options):
                        merged['properties'][key]['enum'] = list(dict.fromkeys(values))
                tool['function']['parameters'] = merged
        out.append(tool)
    return _offer(out, decoding)
