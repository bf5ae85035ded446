"""The one declaration of every robot's tools: who owns each, its input schema, what it proves.

Everything else is derived from :data:`TOOLS` (as rai derives ``tools_by_name`` from one list):

- ownership (:data:`TOOL_OWNERS`; :class:`~robot_team.tools.base.Toolbox` refuses any other
  owner's registration or call);
- the LLM tool schemas (each Toolbox registers a tool with its declared description and input
  model; ``robot_team.llm.toolschema`` turns those into function-calling schemas);
- the evidence kept in a run report (:data:`EVIDENCE_TOOLS`) and the rubric's key tools
  (:data:`KEY_TOOLS`: the tool that starts each task, which its owner must call).

The tool implementations live in ``robot_team.tools.navigation``, ``.info`` and ``.display``
(one method per declared name).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from robot_team.names import Robot
from robot_team.reports import TaskType
from robot_team.tools.display import FetchCareTeamInput, ShowDisplayInput
from robot_team.tools.info import BadgeInput, CheckInInput, ReadBadgeScanInput
from robot_team.tools.navigation import LocateStaffInput, NavigateInput, PageStaffInput, PlanPathInput, RoomInput


@dataclass(frozen=True)
class ToolDecl:
    """One robot tool.

    Attributes
    ----------
    name
        Tool name (the implementing method has the same name).
    owner
        The only robot that may call it (its role, e.g. ``'navigation_robot'``).
    task_type
        The task type it serves.
    input_model
        Its arguments' pydantic model (validation and the LLM schema).
    description
        What it does physically, for the LLM (default: the input model's docstring).
    evidence
        Whether its results are kept as ground-truth evidence in the run report.
    key
        Whether it is the tool that starts its task (the rubric checks its owner called it).
    """

    name: str
    owner: str
    task_type: TaskType
    input_model: type[BaseModel]
    description: str = ''
    evidence: bool = False
    key: bool = False

    @property
    def text(self) -> str:
        """The description given to the LLM."""
        return self.description or (self.input_model.__doc__ or '').strip()


_NAV, _INFO, _DISP = Robot.NAVIGATION.value, Robot.INFO_COLLECTION.value, Robot.DISPLAY.value
TOOLS: tuple[ToolDecl, ...] = (
    ToolDecl('locate_staff', _NAV, TaskType.NAVIGATION, LocateStaffInput, evidence=True, key=True),
    ToolDecl('page_staff', _NAV, TaskType.NAVIGATION, PageStaffInput, evidence=True),
    ToolDecl('room_door_pose', _NAV, TaskType.NAVIGATION, RoomInput,
             "Map pose inside a room's door (escort the HCW there) and its corridor approach ('door')."),
    ToolDecl('plan_path', _NAV, TaskType.NAVIGATION, PlanPathInput, evidence=True),
    ToolDecl('navigate_to_pose', _NAV, TaskType.NAVIGATION, NavigateInput, evidence=True),
    ToolDecl('read_badge_scan', _INFO, TaskType.INFO_COLLECTION, ReadBadgeScanInput, evidence=True, key=True),
    ToolDecl('lookup_staff_by_badge', _INFO, TaskType.INFO_COLLECTION, BadgeInput, evidence=True),
    ToolDecl('record_check_in', _INFO, TaskType.INFO_COLLECTION, CheckInInput, evidence=True),
    ToolDecl('fetch_care_team', _DISP, TaskType.DISPLAY, FetchCareTeamInput, evidence=True, key=True),
    ToolDecl('show_display', _DISP, TaskType.DISPLAY, ShowDisplayInput, evidence=True),
)
"""Every operational robot's tools, in the order they are offered."""

MANAGER_TOOLS: tuple[str, ...] = ('delegate_task', 'escalate_to_supervisor', 'submit_reflection')
"""The manager's only tools (schemas in ``robot_team.llm.toolschema``; they act through the supervisor)."""

TOOLS_BY_NAME: dict[str, ToolDecl] = {t.name: t for t in TOOLS}

TOOL_OWNERS: dict[str, str] = {**{t.name: t.owner for t in TOOLS},
                               **{name: Robot.MANAGER.value for name in MANAGER_TOOLS}}
"""Every tool of the team and the only role that owns it."""

EVIDENCE_TOOLS: dict[str, tuple[str, ...]] = {
    kind.value: tuple(t.name for t in TOOLS if t.task_type is kind and t.evidence)
    for kind in (TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY)}
"""Task type (value) -> the tools whose results a run report keeps as evidence."""

KEY_TOOLS: dict[TaskType, tuple[str, ...]] = {
    kind: tuple(t.name for t in TOOLS if t.task_type is kind and t.key)
    for kind in (TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY)}
"""Task type -> the tool that starts the task (the data it works from); it must be called by the task's owner."""


def tools_of(owner: str) -> list[ToolDecl]:
    """Return the tools ``owner`` owns, in declaration order (empty for an unknown owner)."""
    return [t for t in TOOLS if t.owner == owner]


def register_tools(toolbox, implementation) -> None:
    """Register every tool ``toolbox.owner`` owns, implemented by ``implementation``'s method of the same name.

    Raises
    ------
    AttributeError
        If ``implementation`` lacks a declared tool's method.
    """
    for decl in tools_of(toolbox.owner):
        toolbox.register(decl.name, decl.text, decl.input_model, getattr(implementation, decl.name))
