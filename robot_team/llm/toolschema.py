"""OpenAI function schemas generated from pydantic models: exactly the caller's own tools.

A robot is offered the tools of its :class:`~robot_team.tools.base.Toolbox` (name, description
and the JSON schema of each tool's pydantic input model) plus ``submit_report`` (its claim,
:class:`SubmitReport`, a :class:`~robot_team.brains.base.BrainReport`). The manager's tools are
the three :class:`~robot_team.catalog.ManagerTool` tools, nothing else, each
offered when the workflow can accept it (:func:`manager_tool_names`). Schemas
are compacted (no titles, no repeated model docstrings) to keep prompts short.

Closed sets are enums, derived from their one declaration: a delegation's ``task_type`` (the
operational tasks, ``reports.OPERATIONAL_TASKS``) and ``robot`` (the owners of the tool catalog,
``robot_team.catalog.TOOLS``), an escalation's ``options`` (the human decisions,
``workflow.state.DECISIONS``), a report's ``status`` (``reports.TaskStatus``). A value outside one is
a validation error naming the allowed values, recorded as an ``invalid_call`` (``closed_set``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from robot_team.brains.base import BrainReport, ManagerObservation
from robot_team.catalog import REPORT_TOOL, ROLES_BY_NAME, TOOLS, ManagerTool
from robot_team.contracts.escalation_model import closing_abort
from robot_team.contracts.names import Role
from robot_team.contracts.reports import OPERATIONAL_TASKS, Reflection, TaskStatus
from robot_team.tools.base import Toolbox
from robot_team.rules.workflow.rules import TaskOutline, reflection_wait
from robot_team.rules.workflow.state import DECISIONS

OperationalTask = Literal[tuple(t.value for t in OPERATIONAL_TASKS)]
"""The task types a manager may delegate (the closed set of the delegation's ``task_type``)."""

OperationalRobot = Literal[tuple(dict.fromkeys(t.owner for t in TOOLS))]
"""The robots a manager may delegate to: the owners of the tool catalog, in declaration order."""

Decision = Literal[DECISIONS]
"""The decisions a human may take on an escalation (``workflow.state.DECISIONS``)."""


class SubmitReport(BrainReport):
    """Your task report, once, last."""

    status: TaskStatus
    issue: str = Field('', description='Required for failure')
    summary: str = ''
    data: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode='after')
    def _failure_names_issue(self) -> 'SubmitReport':
        if self.status is TaskStatus.FAILURE and not self.issue.strip():
            raise ValueError("a 'failure' report must name its issue (field 'issue' is empty)")
        return self


def _hcw_id_required(schema: dict[str, Any]) -> None:
    schema['required'] = [*schema.get('required', []), 'hcw_id']


class DelegateTaskArgs(BaseModel):
    """Delegate a task to its robot."""

    # The schema asks every model for hcw_id (a constrained decoder then always writes it); the
    # validator still accepts a missing one except for navigation, so a guard, not a parse error,
    # answers a skipped or misordered step.
    model_config = ConfigDict(json_schema_extra=_hcw_id_required)

    task_type: OperationalTask
    robot: OperationalRobot
    hcw_id: str = Field('', description='HCW number, e.g. 80: whom to escort; whose badge or care team')
    reason: str
    handles_task_id: str = Field('', description='Failed task it recovers')
    instructions: str = ''

    @model_validator(mode='after')
    def _navigation_names_hcw(self) -> 'DelegateTaskArgs':
        if self.task_type == 'navigation' and not self.hcw_id.strip().lstrip('#'):
            raise ValueError(f"a navigation task must name the HCW to escort in 'hcw_id' (got {self.hcw_id!r})")
        return self


class EscalateArgs(BaseModel):
    """Escalate a failed task to a human."""

    task_id: str
    reason: str = Field(min_length=1)
    options: list[Decision] = Field(default_factory=list, description='Decisions the human may take')


class SubmitReflectionArgs(Reflection):
    """Last step: reflect on every task."""


MANAGER_TOOL_MODELS: dict[str, type[BaseModel]] = {
    ManagerTool.DELEGATE_TASK.value: DelegateTaskArgs,
    ManagerTool.ESCALATE_TO_SUPERVISOR.value: EscalateArgs,
    ManagerTool.SUBMIT_REFLECTION.value: SubmitReflectionArgs,
}
"""The manager's only tools (:class:`~robot_team.catalog.ManagerTool`)."""


def _strip(node: Any, top: bool = True) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == 'title' and isinstance(value, str):
                continue
            if key == 'description' and top:
                continue   # the model docstring: it is the tool's description already
            if key == 'properties' and isinstance(value, dict):
                out[key] = {name: _strip(spec, False) for name, spec in value.items()}
            elif key == '$defs' and isinstance(value, dict):
                out[key] = {name: _strip(spec, True) for name, spec in value.items()}
            else:
                out[key] = _strip(value, False)
        if out.get('default') in ('', [], {}) or ('default' in out and out['default'] is None):
            out.pop('default')
        if 'anyOf' in out and len(out['anyOf']) == 2 and {'type': 'null'} in out['anyOf']:
            other = next(x for x in out.pop('anyOf') if x != {'type': 'null'})
            out.update(other)
        return out
    if isinstance(node, list):
        return [_strip(x, False) for x in node]
    return node


DROPPED_KEYWORDS = ('exclusiveMinimum', 'exclusiveMaximum', 'minimum', 'maximum', 'minLength', 'maxLength',
                    'minItems', 'additionalProperties')
"""Constraints left out of the prompt: pydantic still enforces them and explains a violation."""


def _inline(node: Any, defs: dict) -> Any:
    if isinstance(node, dict):
        if '$ref' in node:
            target = _inline(defs[node['$ref'].split('/')[-1]], defs)
            return {**target, **{k: _inline(v, defs) for k, v in node.items() if k != '$ref'}}
        return {k: _inline(v, defs) for k, v in node.items() if k not in DROPPED_KEYWORDS}
    if isinstance(node, list):
        return [_inline(x, defs) for x in node]
    return node


DEPLOYMENT_FIELDS = frozenset({'timeout_s', 'max_age_s'})
"""Tool fields with defaults that are deployment knobs, not decisions: not offered to the model
(the tool still applies its default; a model that sends one anyway is validated as usual)."""


def parameters_schema(model: type[BaseModel]) -> dict:
    """Return the compact JSON schema of ``model``'s fields (for a function's ``parameters``).

    Titles, the model's docstring and the prompt-irrelevant constraints are removed and
    ``$ref`` definitions are inlined (the models are not recursive).
    """
    schema = _strip(model.model_json_schema())
    defs = schema.pop('$defs', {})
    for name in DEPLOYMENT_FIELDS & set(schema.get('properties', {})):
        if name not in schema.get('required', []):
            del schema['properties'][name]
    return _inline(schema, defs)


def function_schema(name: str, description: str, model: type[BaseModel]) -> dict:
    """Return one OpenAI tool definition: ``{'type': 'function', 'function': {name, description, parameters}}``."""
    return {'type': 'function', 'function': {'name': name, 'description': (description or '').strip(),
                                             'parameters': parameters_schema(model)}}


REPORT_ITEM_TEXT_MAX_CHARS = 200
REPORT_ITEM_ENTRY_MAX_CHARS = 40
REPORT_ITEM_MAX_ENTRIES = 6
_ENTRY = {'anyOf': [{'type': 'number'}, {'type': 'string', 'maxLength': REPORT_ITEM_ENTRY_MAX_CHARS}]}
REPORT_ITEM: dict[str, Any] = {'anyOf': [
    {'type': 'string', 'maxLength': REPORT_ITEM_TEXT_MAX_CHARS}, {'type': 'number'},
    {'type': 'array', 'items': _ENTRY, 'maxItems': REPORT_ITEM_MAX_ENTRIES},
    {'type': 'object', 'additionalProperties': _ENTRY, 'maxProperties': REPORT_ITEM_MAX_ENTRIES}]}
"""What one declared report item may be: a text, a number, or one level of a few numbers and short
texts (an HCW's area and x, y; a path's length; the members' names). Tight enough that a report of
every item and its free texts ends within a small model's ``max_tokens`` (384 for the built-in one):
a model that looped inside a waypoint list had its report cut there, and was taken over."""


def report_schema(role: Role | str) -> dict:
    """Return role ``role``'s ``submit_report`` definition: its ``data`` described by the role's ``report_data``.

    The items are optional properties (:data:`REPORT_ITEM` values) with their descriptions
    (:attr:`~robot_team.catalog.RoleDecl.report_data`), and the only keys: a reply must end within
    its ``max_tokens`` (a reply cut there is refused), and a small model that loops adds key after
    key to an open object (the JSON schema decoder bounds an object's keys only by listing them).
    Other findings go into the summary. A name without a role declaration gets the bare schema.
    """
    tool = function_schema(REPORT_TOOL, SubmitReport.__doc__, SubmitReport)
    decl = ROLES_BY_NAME.get(role)
    if decl is not None and decl.report_data:
        tool['function']['parameters']['properties']['data'] = {
            'type': 'object', 'additionalProperties': False,
            'properties': {key: {**REPORT_ITEM, 'description': what} for key, what in decl.report_data}}
    return tool


def robot_tools(toolbox: Toolbox) -> list[dict]:
    """Return the tool definitions of ``toolbox``'s robot: its own tools, then ``submit_report``."""
    tools = [function_schema(s.name, s.description, s.input_model) for s in toolbox.specs()]
    tools.append(report_schema(toolbox.owner))
    return tools


def manager_tool_names(obs: ManagerObservation | None = None) -> list[str]:
    """Return the manager tools the workflow can accept in the state ``obs`` (all without ``obs``).

    - ``ManagerTool.DELEGATE_TASK``: always;
    - ``ManagerTool.ESCALATE_TO_SUPERVISOR``: when the latest task of an operational type failed, or a guard
      refused something since the last decision, unless a human's ``abort`` closed the episode
      (:func:`~robot_team.contracts.escalation_model.closing_abort`);
    - ``ManagerTool.SUBMIT_REFLECTION``: when no task runs and either the latest task of every operational
      type succeeded or a human decided ``abort`` (:func:`~robot_team.rules.workflow.rules.reflection_wait`, the gate's
      rule 8).

    Offering only these is the gate's rule shown in advance: a call to a tool not offered is
    still handled and refused by the gate with its explanation.
    """
    if obs is None:
        return list(MANAGER_TOOL_MODELS)
    names = [ManagerTool.DELEGATE_TASK.value]
    latest = [obs.latest(kind) for kind in OPERATIONAL_TASKS]
    closed = bool(closing_abort(obs.escalations))   # the human decided: nothing left to escalate
    if not closed and (obs.feedback or any(t is not None and t.state == 'failure' for t in latest)):
        names.append(ManagerTool.ESCALATE_TO_SUPERVISOR.value)
    why = reflection_wait([TaskOutline(t.task_id, t.task_type, t.state, t.issue) for t in obs.tasks], closed=closed)
    if why is None:
        names.append(ManagerTool.SUBMIT_REFLECTION.value)
    return names


def manager_tools(obs: ManagerObservation | None = None) -> list[dict]:
    """Return the definitions of the manager's tools the workflow can accept now (see :func:`manager_tool_names`)."""
    return [function_schema(name, MANAGER_TOOL_MODELS[name].__doc__, MANAGER_TOOL_MODELS[name])
            for name in manager_tool_names(obs)]
