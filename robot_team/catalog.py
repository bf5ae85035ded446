"""The tool catalog: the one place where the team's tools and roles are gathered.

Each operational role declares, in its own package (``robot_team.roles.<role>.decl``), once for
every tool it owns:

- its **name** (:class:`~robot_team.contracts.names.Tool`; the manager's are :class:`ManagerTool`, here) and
  its **owner** (the only role that may call it);
- its **input schema** (the pydantic model that validates a call and becomes the LLM schema;
  the model's docstring is the tool's description unless one is given) and its **output
  schema** (what a successful call returns: the ground truth a report carries);
- **what its output proves** (:class:`~robot_team.roles.base.Proof`): what a success claim of its
  task needs from it (the false-completion guard, ``robot_team.rules.grounding``), bound to the task
  (:class:`~robot_team.roles.base.TaskFacts`: its room and HCW; a call with empty or unrelated
  arguments proves nothing), and how the run report keeps it as evidence (``robot_team.run_report``);
- **what its output can show against its task** (``negative``: a negative finding, e.g. an HCW
  the RTLS does not know): with a failed call, what grounds a failure report
  (``robot_team.rules.grounding.failure_grounds``);
- its **role in the rubric** (:class:`~robot_team.roles.base.RubricUse`: the key tool that starts a
  task, where the HCW's location, the directory record or the care team come from);
- and, for the role (:class:`~robot_team.roles.base.RoleDecl`), the task type it executes and
  **what the world must show** for a success of its task (:class:`~robot_team.roles.base.WorldFact`:
  the RTLS sees the HCW at the room's door, the directory holds the check-in, the room's screen
  shows its care team), observed by the robot's own tools when it claims success and checked again
  by the manager on the report's evidence.

This module gathers them, by plain imports, into :data:`TOOLS` and :data:`ROLES`, and everything
else derives from those: ownership (:data:`TOOL_OWNERS`, :data:`TASK_OWNER`), the toolbox
registrations (:func:`register_tools`), the LLM schemas, the report evidence
(:data:`EVIDENCE_TOOLS`), the rubric's key tools (:data:`KEY_TOOLS`). The types of the
declarations (:mod:`robot_team.roles.base`) and :class:`~robot_team.contracts.names.Tool` are importable
from here too. No module but this one and :mod:`robot_team.contracts.names` writes a tool's name or a
role's name as a literal: they use these declarations.

The class that implements a role's tools is not named here: :mod:`robot_team.tools.roles` binds
each role to it (``robot_team.roles.<role>.tools``), above both this module and the tools
(``robot_team.agents.robot_node`` binds it to its node).

This module sits at the bottom layer (contracts), above the roles' declarations: it imports only
those, :mod:`robot_team.roles.base`, :mod:`robot_team.contracts.names`, :mod:`robot_team.contracts.reports` and the
standard library, and loads no module by name.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable, Iterable, Mapping

from robot_team.contracts.names import RobotId, Role, Tool, role_name
from robot_team.contracts.reports import TaskType
from robot_team.roles.base import (  # noqa: F401 - the declarations' types, importable from the catalog
    AT_DOOR_M,
    OBSERVE_WAIT_S,
    STAMP_SLACK_S,
    ClosedSet,
    Proof,
    RoleDecl,
    RubricUse,
    TaskFacts,
    ToolDecl,
    ToolOutput,
    WorldFact,
    same_care_team,
)
from robot_team.roles.display.decl import DISPLAY_ROLE, DISPLAY_TOOLS
from robot_team.roles.info_collection.decl import INFO_COLLECTION_ROLE, INFO_COLLECTION_TOOLS
from robot_team.roles.navigation.decl import NAVIGATION_ROLE, NAVIGATION_TOOLS


class ManagerTool(str, Enum):
    """The manager's only tools (they act through the supervisor; schemas in ``robot_team.llm.toolschema``)."""

    DELEGATE_TASK = 'delegate_task'
    ESCALATE_TO_SUPERVISOR = 'escalate_to_supervisor'
    SUBMIT_REFLECTION = 'submit_reflection'


REPORT_TOOL = 'submit_report'
"""Every operational robot's last tool: its report (schema ``robot_team.llm.toolschema.SubmitReport``)."""

TOOLS: tuple[ToolDecl, ...] = NAVIGATION_TOOLS + INFO_COLLECTION_TOOLS + DISPLAY_TOOLS
"""Every operational robot's tools, in the order they are offered (each role's, in workflow order)."""

ROLES: tuple[RoleDecl, ...] = (NAVIGATION_ROLE, INFO_COLLECTION_ROLE, DISPLAY_ROLE)
"""The operational robots, in workflow order."""

ROLES_BY_NAME: dict[str, RoleDecl] = {r.role.value: r for r in ROLES}
"""Robot role (value) -> its declaration."""

ROLE_TASK: dict[str, TaskType] = {r.role.value: r.task_type for r in ROLES}
"""Operational robot role (value) -> the one task type it executes."""

OPERATIONAL_ROBOTS: tuple[str, ...] = tuple(r.role.value for r in ROLES)
"""The operational robots' names, in workflow order (the robots a manager delegates to)."""

TOOLS_BY_NAME: dict[str, ToolDecl] = {t.name: t for t in TOOLS}
"""Tool name -> its declaration."""

TOOL_OWNERS: dict[str, str] = {**{t.name: t.owner.value for t in TOOLS},
                               **{tool.value: Role.MANAGER.value for tool in ManagerTool}}
"""Every tool of the team and the only role that owns it."""

MANAGER_TOOLS: tuple[str, ...] = tuple(tool.value for tool in ManagerTool)
"""The manager's only tools."""

TASK_OWNER: dict[TaskType, str] = {**{r.task_type: r.role.value for r in ROLES},
                                   TaskType.REFLECTION: Role.MANAGER.value}
"""The only robot allowed to execute each task (role alignment); the manager writes the reflection."""

EVIDENCE_TOOLS: dict[str, tuple[str, ...]] = {
    r.task_type.value: tuple(t.name for t in TOOLS if t.task_type is r.task_type and t.evidence) for r in ROLES}
"""Task type (value) -> the tools whose results a run report keeps as evidence."""

KEY_TOOLS: dict[TaskType, tuple[str, ...]] = {
    r.task_type: tuple(t.name for t in TOOLS if t.task_type is r.task_type and t.key) for r in ROLES}
"""Task type -> the tool that starts the task (the data it works from); it must be called by the task's owner."""


def negative_finding(tool: str, args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """Return the negative finding a successful call of ``tool`` shows about a task with HCW ``hcw_id``.

    ``args`` and ``output``: the call's arguments and output. ``''`` when none, or when ``tool``
    declares none (:attr:`ToolDecl.negative`). The one rule behind the protocol brains' failures
    of this kind and the grounds of an LLM robot's failure report (``robot_team.rules.grounding``).
    """
    decl = TOOLS_BY_NAME.get(tool)
    return decl.negative(args, output, hcw_id) if decl is not None and decl.negative is not None else ''


def final_failure(journal: Iterable[Any]) -> str:
    """Return the ``final`` tool whose own failed answer is in a task's ``journal``, else ``''``.

    ``journal``: the task's tool journal as the report's evidence carries it (``tool_journal``:
    mappings with ``tool``, ``ok`` and ``answered``, as ``ToolResult.as_dict`` writes them); an
    entry of any other shape counts for nothing. Such an answer comes from data a task does not
    change (:attr:`ToolDecl.final`: the staff directory does not know the scanned badge), so it
    stands for every later attempt too; a crash or a refused call (``answered`` false) does not.
    The first one in journal order when several.
    """
    for entry in journal:
        if not isinstance(entry, Mapping) or entry.get('ok') or not entry.get('answered'):
            continue
        decl = TOOLS_BY_NAME.get(str(entry.get('tool', '')))
        if decl is not None and decl.final:
            return decl.name
    return ''


def missing_prerequisites(tool: str, succeeded: set[str]) -> list[str]:
    """Return the tools ``tool`` requires (:attr:`ToolDecl.requires`) that are not in ``succeeded``.

    ``succeeded``: names of the tools with a successful call earlier in the same task (a page is
    successful only when acknowledged). An undeclared tool requires nothing. The one rule behind
    the Toolbox's refusal and the constrained offer.
    """
    decl = TOOLS_BY_NAME.get(tool)
    return [] if decl is None else [r.value for r in decl.requires if r.value not in succeeded]


def task_closes(room: str, hcw_id: str) -> dict[ClosedSet, str]:
    """Return what a task for the patient's ``room`` and the HCW ``hcw_id`` closes arguments to.

    The one mapping from a task to :class:`ClosedSet` values, for the Toolbox's refusal and the
    constrained offer alike (:func:`outside_task`); an empty value closes nothing.
    """
    return {ClosedSet.TASK_ROOM: room, ClosedSet.TASK_HCW: hcw_id}


def result_closes(tool: str, output: Mapping[str, Any]) -> dict[ClosedSet, str]:
    """Return what a *successful* call of ``tool`` with ``output`` closes for the rest of its task.

    From :attr:`ToolDecl.closes` (empty for an undeclared tool or a missing or empty value). The
    Toolbox adds it to the task's values (:meth:`robot_team.tools.base.Toolbox.task_values`),
    which both its refusal and the constrained offer read.
    """
    decl = TOOLS_BY_NAME.get(tool)
    return {closed: str(output[key]) for closed, key in (decl.closes if decl is not None else ())
            if output.get(key) not in (None, '')}


def outside_task(tool: str, args: Mapping[str, Any], task: Mapping[ClosedSet, str]) -> list[str]:
    """Return why ``args`` of ``tool`` leave its task (empty: they do not), one reason per argument.

    ``task``: the values the task closes (:func:`task_closes`, and :func:`result_closes` of its
    calls so far); a value the task leaves empty closes nothing. An undeclared tool is never outside. The one rule
    behind the Toolbox's refusal and the constrained offer (:attr:`ToolDecl.closed`).
    """
    decl = TOOLS_BY_NAME.get(tool)
    problems = []
    for argument, closed in decl.closed if decl is not None else ():
        wanted = task.get(closed, '')
        if wanted and argument in args and str(args[argument]) != wanted:
            problems.append(f"{argument} {args[argument]!r} is not the task's ({wanted!r})")
    return problems


def tools_of(role: 'Role | str') -> list[ToolDecl]:
    """Return the tools of role ``role`` (a :class:`Role` or its value) in declaration order (none if unknown)."""
    value = role.value if isinstance(role, Role) else role
    return [t for t in TOOLS if t.owner.value == value]


def tools_for(task_type: TaskType) -> list[ToolDecl]:
    """Return the tools that serve ``task_type``, in declaration order."""
    return [t for t in TOOLS if t.task_type is task_type]


def rubric_tool(use: RubricUse) -> str:
    """Return the name of the tool the rubric reads for ``use``.

    Raises
    ------
    KeyError
        If no tool is declared for ``use``.
    """
    for decl in TOOLS:
        if decl.rubric is use:
            return decl.name
    raise KeyError(f'no tool declared for rubric use {use.value!r}')


def role_of(robot: 'Role | RobotId') -> RoleDecl:
    """Return the declaration of operational robot ``robot``'s role (a role's name, or ``<role>_<n>`` of a fleet).

    Raises
    ------
    KeyError
        If ``robot`` is not an operational robot (e.g. the manager).
    """
    value = str(robot)   # a Role is its name (names.NameEnum)
    try:
        return ROLES_BY_NAME[role_name(value)]
    except KeyError:
        raise KeyError(f'{value!r} is not an operational robot (expected one of {", ".join(OPERATIONAL_ROBOTS)})') \
            from None


def operational_role(role: 'Role | str') -> Role:
    """Return ``role`` (a role, or a role's name) as the :class:`Role` of an operational robot.

    Raises
    ------
    ValueError
        If ``role`` is not an operational robot's role (e.g. the manager, or a fleet robot's name).
    """
    if role not in ROLE_TASK:
        raise ValueError(f"unknown robot role '{role}': expected one of {', '.join(ROLE_TASK)}")
    return Role(role)


_TOOL_ATTR = '__robot_team_tool__'


def implements(tool: Tool) -> Callable[[Callable], Callable]:
    """Mark a method as the implementation of ``tool`` (found by :func:`register_tools`)."""
    def mark(func: Callable) -> Callable:
        setattr(func, _TOOL_ATTR, tool)
        return func
    return mark


def implementations_of(implementation: Any) -> dict[Tool, Callable]:
    """Return ``implementation``'s tool methods (marked with :func:`implements`), or the mapping itself.

    ``implementation`` is an object whose methods are marked, or a mapping ``Tool -> callable``
    (e.g. a test's stand-ins).
    """
    if isinstance(implementation, Mapping):
        return {Tool(k): v for k, v in implementation.items()}
    found: dict[Tool, Callable] = {}
    for attr in dir(type(implementation)):
        tool = getattr(getattr(type(implementation), attr, None), _TOOL_ATTR, None)
        if tool is not None:
            found[tool] = getattr(implementation, attr)
    return found


def register_tools(toolbox, implementation) -> None:
    """Register every tool ``toolbox.owner`` owns, implemented by ``implementation``.

    Parameters
    ----------
    toolbox
        A :class:`~robot_team.tools.base.Toolbox` (anything with ``owner`` and ``register``).
    implementation
        See :func:`implementations_of`.

    Raises
    ------
    AttributeError
        If ``implementation`` lacks one of the owner's declared tools.
    """
    funcs = implementations_of(implementation)
    for decl in tools_of(toolbox.owner):
        if decl.tool not in funcs:
            raise AttributeError(f'{type(implementation).__name__} implements no {decl.name!r} '
                                 f'(declared for {decl.owner.value} in robot_team.catalog)')
        toolbox.register(decl.name, decl.text, decl.input_model, funcs[decl.tool])
