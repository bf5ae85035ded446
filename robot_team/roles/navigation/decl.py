"""The navigation role's declaration: its tools' schemas, what their outputs prove, and the role.

The navigation robot locates the task's HCW (RTLS), pages them, plans the route and escorts them
to the patient's room through Nav2 goals. Its tools are implemented by
:class:`robot_team.roles.navigation.tools.NavigationTools`, its protocol brain is
:class:`robot_team.roles.navigation.protocol.NavigationProtocolBrain`; :mod:`robot_team.catalog`
gathers :data:`NAVIGATION_TOOLS` and :data:`NAVIGATION_ROLE` with the other roles'.

At the bottom layer (contracts), below the catalog: it imports only :mod:`robot_team.roles.base`,
:mod:`robot_team.contracts.names`, :mod:`robot_team.contracts.reports` and pydantic.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, Field

from robot_team.contracts.names import Role, Tool
from robot_team.contracts.reports import TaskType
from robot_team.roles.base import ClosedSet, Proof, RoleDecl, RubricUse, ToolDecl, ToolOutput, WorldFact


# --- Input schemas (validation and LLM schema; the docstring is the tool's description) ------

class LocateStaffInput(BaseModel):
    """Ask the RTLS where HCWs are and if they are free (hcw_ids first, then others of specialty)."""

    hcw_ids: list[str] = Field(default_factory=list)
    specialty: str = ''


class PageStaffInput(BaseModel):
    """Page the task's HCW and wait for the acknowledgement (needed before escorting; none: the call fails)."""

    hcw_id: str = Field(min_length=1)
    message: str = Field(min_length=1)
    timeout_s: float = Field(30.0, gt=0, le=300, description='How long to wait for an answer, s.')


class RoomInput(BaseModel):
    """A room of the ED floor."""

    room: str = Field(min_length=1)


class PlanPathInput(BaseModel):
    """Plan a route on the map, m (start: robot pose by default)."""

    goal_x: float
    goal_y: float
    start_x: float | None = None
    start_y: float | None = None


class NavigateInput(BaseModel):
    """Drive to a map pose with Nav2 (m, rad): to the HCW, then to the room's door pose (the escort)."""

    x: float
    y: float
    yaw: float = 0.0
    timeout_s: float = Field(900.0, gt=0, description='Longest the goal may take, s.')


# --- Output schemas (what a successful call returns; extra fields are allowed) ----------------

class StaffLocation(ToolOutput):
    """One HCW as the RTLS sees them (position in ``map``, m)."""

    hcw_id: str
    specialty: str = ''
    area: str = ''
    x: float
    y: float
    availability: str
    detail: str = ''


class LocateStaffOutput(ToolOutput):
    """The RTLS's answer: the HCWs found and the IDs it does not know."""

    staff: list[StaffLocation]
    unknown_ids: list[str] = Field(default_factory=list)


class PageOutput(ToolOutput):
    """A page's fate: delivered, acknowledged, the HCW's reply and the sim s waited.

    ``meet_at``: once acknowledged, where the RTLS sees the HCW (``area``, ``x``, ``y`` in ``map``,
    m): where the escort picks them up.
    """

    hcw_id: str
    delivered: bool
    acknowledged: bool
    reply: str = ''
    response_time_s: float
    meet_at: dict[str, Any] = Field(default_factory=dict)


class PlanarPose(ToolOutput):
    """A pose in ``map`` (m, rad)."""

    x: float
    y: float
    yaw: float


class DoorPoseOutput(PlanarPose):
    """The pose just inside a room's door (escort goal) and its corridor approach ``door``."""

    room: str
    door: PlanarPose


class PathOutput(ToolOutput):
    """A planned route (``compute_path_to_pose``): length, a few waypoints, the areas crossed (m, ``map``)."""

    start: list[float]
    goal: list[float]
    length_m: float
    waypoints: list[list[float]]
    areas: list[str]


class NavGoalOutput(ToolOutput):
    """A Nav2 ``navigate_to_pose`` goal result (``error_code`` from nav2_msgs; distances m, duration sim s)."""

    action: str
    outcome: str
    error_code: int
    error_name: str
    goal: list[float]
    final_pose: list[float] | None = None
    duration_s: float = 0.0


# --- Tools ------------------------------------------------------------------------------------

def _hcw_not_located(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The RTLS was asked for the task's HCW and does not list them."""
    asked = [str(h) for h in args.get('hcw_ids') or ()]
    listed = {str(s.get('hcw_id')) for s in output.get('staff') or ()}
    if hcw_id in asked and hcw_id not in listed:
        return f'HCW #{hcw_id} is unknown to the location system'
    return ''


_NAVIGATE = ToolDecl(
    Tool.NAVIGATE_TO_POSE, Role.NAVIGATION, TaskType.NAVIGATION, NavigateInput, NavGoalOutput, evidence=True,
    report_key='nav2_goals', many=True, once=False, requires=(Tool.PAGE_STAFF,),
    usage="drive to the HCW (x, y of meet_at from page_staff), then escort them to the room (x, y, yaw "
          "from room_door_pose)",
    proof=Proof('the escort reached its goal (Nav2 goal result)', required=True,
                missing='no navigate_to_pose goal succeeded', last_must_succeed=True,
                not_last='the last navigate_to_pose goal did not succeed'))

NAVIGATION_TOOLS: tuple[ToolDecl, ...] = (
    ToolDecl(Tool.LOCATE_STAFF, Role.NAVIGATION, TaskType.NAVIGATION, LocateStaffInput, LocateStaffOutput,
             evidence=True, key=True, rubric=RubricUse.LOCATION, negative=_hcw_not_located,
             proof=Proof('where the HCW is, to pick them up', required=True, lists_task_hcw=True,
                         missing="the RTLS was never asked where the task's HCW is",
                         visited_by=Tool.NAVIGATE_TO_POSE)),
    ToolDecl(Tool.PAGE_STAFF, Role.NAVIGATION, TaskType.NAVIGATION, PageStaffInput, PageOutput, evidence=True,
             closed=(('hcw_id', ClosedSet.TASK_HCW),), requires=(Tool.LOCATE_STAFF,),
             proof=Proof('the HCW answered the page', missing='the HCW never acknowledged a page',
                         flag='acknowledged')),
    ToolDecl(Tool.ROOM_DOOR_POSE, Role.NAVIGATION, TaskType.NAVIGATION, RoomInput, DoorPoseOutput,
             "Map pose inside a room's door (escort the HCW there) and its corridor approach ('door').",
             closed=(('room', ClosedSet.TASK_ROOM),),
             proof=Proof("where the escort ends: the room's door", required=True,
                         missing="the room's door pose was never looked up", goal_of=Tool.NAVIGATE_TO_POSE)),
    ToolDecl(Tool.PLAN_PATH, Role.NAVIGATION, TaskType.NAVIGATION, PlanPathInput, PathOutput, evidence=True),
    _NAVIGATE,
)
"""The navigation robot's tools, in the order they are offered."""


# --- The role ---------------------------------------------------------------------------------

def _truth(evidence: Mapping[str, Any]) -> str:
    goals = evidence.get(_NAVIGATE.evidence_key)
    if goals:
        return '; '.join(f"{Tool.NAVIGATE_TO_POSE.value} {(g.get('output') or {}).get('outcome', '?')} "
                         f"(error {(g.get('output') or {}).get('error_code', '?')})" for g in goals)
    page = evidence.get(Tool.PAGE_STAFF.value)
    if page:
        return f"page acknowledged: {(page.get('output') or {}).get('acknowledged')}"
    return ''


NAVIGATION_ROLE = RoleDecl(
    Role.NAVIGATION, TaskType.NAVIGATION, _truth,
    (('hcw_location', f'where {Tool.LOCATE_STAFF.value} found the HCW: area, x, y'),
     ('path', f'the route {Tool.PLAN_PATH.value} planned: length_m, waypoints')),
    world=(WorldFact.HCW_AT_ROOM,), needs_hcw=True)
"""The navigation robot's role: find the task's HCW and escort them to the patient's room."""
