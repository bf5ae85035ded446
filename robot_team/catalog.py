"""The tool catalog: the one place where a tool's meaning lives.

For every tool of the team this module declares, once:

- its **name** (:class:`Tool`, :class:`ManagerTool`) and its **owner** (the only role that may call it);
- its **input schema** (the pydantic model that validates a call and becomes the LLM schema;
  the model's docstring is the tool's description unless one is given) and its **output
  schema** (what a successful call returns: the ground truth a report carries);
- **what its output proves** (:class:`Proof`): what a success claim of its task needs from it
  (the false-completion guard, ``robot_team.grounding``), bound to the task (:class:`TaskFacts`:
  its room and HCW; a call with empty or unrelated arguments proves nothing), and how the run
  report keeps it as evidence (``robot_team.run_report``);
- **what its output can show against its task** (``negative``: a negative finding, e.g. an HCW
  the RTLS does not know): with a failed call, what grounds a failure report
  (``robot_team.grounding.failure_grounds``);
- its **role in the rubric** (:class:`RubricUse`: the key tool that starts a task, where the
  HCW's location, the directory record or the care team come from);
- and, per role (:class:`RoleDecl`), the task type it executes and **what the world must show**
  for a success of its task (:class:`WorldFact`: the RTLS sees the HCW at the room's door, the
  directory holds the check-in, the room's screen shows its care team), observed by the robot's
  own tools when it claims success and checked again by the manager on the report's evidence.

Everything else derives from :data:`TOOLS` and :data:`ROLES`: ownership (:data:`TOOL_OWNERS`,
:data:`TASK_OWNER`), the toolbox registrations (:func:`register_tools`), the LLM schemas, the
report evidence (:data:`EVIDENCE_TOOLS`), the rubric's key tools (:data:`KEY_TOOLS`). No other
module writes a tool's name or a role's name as a literal: they use these declarations.

The class that implements a role's tools is not named here: :mod:`robot_team.tools.roles` binds
each role to it, above both this module and the tools (``robot_team.agents.robot_node`` binds it to
its node).

This module sits at the bottom layer (contracts): it imports only :mod:`robot_team.names`,
:mod:`robot_team.reports`, pydantic and the standard library, and loads no module by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from robot_team.names import Robot, role_name
from robot_team.reports import TaskType


class Tool(str, Enum):
    """The operational robots' tools (the value is the name the LLM and the record use)."""

    LOCATE_STAFF = 'locate_staff'
    PAGE_STAFF = 'page_staff'
    ROOM_DOOR_POSE = 'room_door_pose'
    PLAN_PATH = 'plan_path'
    NAVIGATE_TO_POSE = 'navigate_to_pose'
    READ_BADGE_SCAN = 'read_badge_scan'
    LOOKUP_STAFF_BY_BADGE = 'lookup_staff_by_badge'
    RECORD_CHECK_IN = 'record_check_in'
    FETCH_CARE_TEAM = 'fetch_care_team'
    SHOW_DISPLAY = 'show_display'


class ManagerTool(str, Enum):
    """The manager's only tools (they act through the supervisor; schemas in ``robot_team.llm.toolschema``)."""

    DELEGATE_TASK = 'delegate_task'
    ESCALATE_TO_SUPERVISOR = 'escalate_to_supervisor'
    SUBMIT_REFLECTION = 'submit_reflection'


REPORT_TOOL = 'submit_report'
"""Every operational robot's last tool: its report (schema ``robot_team.llm.toolschema.SubmitReport``)."""


class ClosedSet(str, Enum):
    """What a task closes a tool argument to: the Toolbox refuses any other value, a constrained request offers only it.

    One rule (:func:`outside_task`) for the guard and the offer. A task is about one patient's
    room and one HCW: a robot that looks up, reads or shows another room, or pages another HCW,
    does not do its task (the display robot of a run showed ER-12's care team on the Triage
    screen and reported success; the screen it wrote to was never the task's).

    Some values come from a call's result in the task (:attr:`ToolDecl.closes`): the badge a
    robot looks up is the one its scan read.
    """

    TASK_ROOM = 'task_room'          # the room the task names (the patient's room)
    TASK_HCW = 'task_hcw'            # the HCW the task names
    SCANNED_BADGE = 'scanned_badge'  # the badge ID the task's latest successful badge scan read


class TaskFacts(NamedTuple):
    """What one task is about, for its proofs (``robot_team.grounding``).

    ``room``: the patient's room; ``hcw_id``: the HCW the supervisor's gate says the task is about
    (the one a navigation escorts; for the later steps the one it escorted); ``started_s``: when
    the task began (ROS time, s): what the world shows of it is stamped no earlier.
    """

    room: str
    hcw_id: str
    started_s: float = 0.0


class WorldFact(str, Enum):
    """What the world must show for a role's success (:attr:`RoleDecl.world`), beyond its tools' answers.

    Observed by the robot's tools when it claims success (each role's tools class answers its own,
    ``observe``), kept in the report's evidence (``world``) and checked by the one rule
    ``robot_team.grounding.world_contradictions``, at the robot and again at the manager.
    """

    HCW_AT_ROOM = 'hcw_at_room'                  # the RTLS sees the task's HCW in the room or at its door
    CHECKED_IN = 'checked_in'                    # the directory holds the HCW's check-in at the room (this task)
    SCREEN_SHOWS_CARE_TEAM = 'screen_shows_care_team'   # the room's screen shows the directory's care team


AT_DOOR_M = 2.5
"""How far from a room's door (its corridor approach or the pose just inside) an HCW the RTLS
sees counts as at the room, m: an escorted HCW follows 1 m behind the robot, which stops just
inside the door, and steps in a few seconds later (``robot_team.sim.hospital``)."""

STAMP_SLACK_S = 1.0
"""How much earlier than a task's start (as one node saw it) the world's stamps of it may be, s: two team
nodes' ROS time may differ by one step of the follow clock (``robot_team.clock_sync``, 1 s by default)."""

OBSERVE_WAIT_S = 20.0
"""The longest a robot waits for the world to show its task's success, ROS s (e.g. the HCW stepping
in behind the robot, the screen's new content announced): past it, what it shows is what counts."""


def same_care_team(shown: Iterable[Mapping[str, Any]], team: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return how the entries ``shown`` differ from the care team ``team`` (empty: they are the same).

    Each entry and member is a mapping with ``hcw_id``, ``name``, ``role``, ``specialty``. The same
    HCWs, once each; each shown with the member's name and role (compared without case or outer
    spaces), and a specialty, when shown, equal to the member's. An empty ``team`` is never shown
    (nobody to show). The one rule behind the display proof (what the robot showed against what
    it fetched) and the world's (the screen against the directory).
    """
    def norm(value) -> str:
        return str(value or '').strip().casefold()
    members = {str(m.get('hcw_id', '')): m for m in team}
    if not members:
        return ['the care team is empty: nobody to show']
    problems, seen = [], set()
    for entry in shown:
        hcw = str(entry.get('hcw_id', ''))
        member = members.get(hcw)
        if member is None:
            problems.append(f"#{hcw or '?'} ({entry.get('name', '')!r}) is not on the care team")
            continue
        if hcw in seen:
            problems.append(f'#{hcw} is shown twice')
        seen.add(hcw)
        for key in ('name', 'role'):
            if norm(entry.get(key)) != norm(member.get(key)):
                problems.append(f"#{hcw}'s {key} is shown as {entry.get(key)!r}, not {member.get(key)!r}")
        if norm(entry.get('specialty')) and norm(entry.get('specialty')) != norm(member.get('specialty')):
            problems.append(f"#{hcw}'s specialty is shown as {entry.get('specialty')!r}, not "
                            f"{member.get('specialty')!r}")
    missing = [h for h in members if h not in seen]
    if missing:
        problems.append('not shown: ' + ', '.join(f"#{h} ({members[h].get('name', '')})" for h in missing))
    return problems


class RubricUse(str, Enum):
    """What the rubric (``robot_team.evaluation.rubric``) reads from a tool's output."""

    LOCATION = 'location'     # where the HCW is (navigation: "HCW location" must be grounded in it)
    IDENTITY = 'identity'     # the HCW's directory record (info collection: ID, name, specialty)
    CARE_TEAM = 'care_team'   # the care team fetched (display: the layout is built from it)


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


class ReadBadgeScanInput(BaseModel):
    """Read the latest badge scan at a room's door reader (waits for one)."""

    room: str = Field(min_length=1)
    timeout_s: float = Field(120.0, gt=0, le=900, description='How long to wait for a scan, s.')
    max_age_s: float = Field(600.0, gt=0, description='Ignore scans older than this, s.')


class BadgeInput(BaseModel):
    """Look up a badge's HCW in the staff directory."""

    badge_id: str = Field(min_length=1, description='As scanned')


class CheckInInput(BaseModel):
    """Record an HCW's check-in at a room (joins its care team)."""

    room: str = Field(min_length=1)
    hcw_id: str = Field(min_length=1)
    badge_id: str = Field(min_length=1)


class FetchCareTeamInput(BaseModel):
    """Fetch a room's care team from the staff directory."""

    room: str = Field(min_length=1)


class DisplayEntryInput(BaseModel):
    """One care-team member to show."""

    role: str = Field(min_length=1)
    hcw_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    specialty: str = ''


class ShowDisplayInput(BaseModel):
    """Show the care team on the room's shared screen."""

    room: str = Field(min_length=1)
    title: str = Field(min_length=1)
    entries: list[DisplayEntryInput] = Field(min_length=1)
    layout: str = Field(min_length=1, description='e.g. rows by role')


# --- Output schemas (what a successful call returns; extra fields are allowed) ----------------

class _Output(BaseModel):
    model_config = ConfigDict(extra='allow')


class StaffLocation(_Output):
    """One HCW as the RTLS sees them (position in ``map``, m)."""

    hcw_id: str
    specialty: str = ''
    area: str = ''
    x: float
    y: float
    availability: str
    detail: str = ''


class LocateStaffOutput(_Output):
    """The RTLS's answer: the HCWs found and the IDs it does not know."""

    staff: list[StaffLocation]
    unknown_ids: list[str] = Field(default_factory=list)


class PageOutput(_Output):
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


class PlanarPose(_Output):
    """A pose in ``map`` (m, rad)."""

    x: float
    y: float
    yaw: float


class DoorPoseOutput(PlanarPose):
    """The pose just inside a room's door (escort goal) and its corridor approach ``door``."""

    room: str
    door: PlanarPose


class PathOutput(_Output):
    """A planned route (``compute_path_to_pose``): length, a few waypoints, the areas crossed (m, ``map``)."""

    start: list[float]
    goal: list[float]
    length_m: float
    waypoints: list[list[float]]
    areas: list[str]


class NavGoalOutput(_Output):
    """A Nav2 ``navigate_to_pose`` goal result (``error_code`` from nav2_msgs; distances m, duration sim s)."""

    action: str
    outcome: str
    error_code: int
    error_name: str
    goal: list[float]
    final_pose: list[float] | None = None
    duration_s: float = 0.0


class BadgeScanOutput(_Output):
    """A badge scan at a door reader (stamp in sim s)."""

    badge_id: str
    reader_id: str
    room: str
    stamp_s: float


class StaffRecordOutput(_Output):
    """An HCW's staff directory record."""

    hcw_id: str
    badge_id: str
    name: str
    specialty: str
    role: str


class CheckInOutput(_Output):
    """A check-in as written to the staff directory (stamp in sim s)."""

    room: str
    hcw_id: str
    badge_id: str
    stamp_s: float


class CareTeamMember(_Output):
    """One member of a room's care team."""

    hcw_id: str
    name: str
    specialty: str = ''
    role: str = ''


class CareTeamOutput(_Output):
    """A room's care team, from the staff directory."""

    room: str
    members: list[CareTeamMember]


class DisplayReplyOutput(_Output):
    """The display service's reply (``ed/display/show``)."""

    service: str
    success: bool
    message: str = ''
    rendered_lines: list[str] = Field(default_factory=list)


# --- What an output proves -------------------------------------------------------------------

@dataclass(frozen=True)
class Proof:
    """What a successful call of one tool proves about its task, and what a success claim needs of it.

    Attributes
    ----------
    text
        What it proves, in words.
    missing
        Why a success claim fails when the proof is absent (no successful call, or ``flag`` false).
    required
        A success claim of its task needs a successful call.
    flag
        An output key that must be true in the last successful call (e.g. a page's ``acknowledged``).
    last_must_succeed, not_last
        The last call must be the successful one, else ``not_last`` is the reason (a later goal
        that failed undoes an earlier success).
    claim_keys
        Keys of the report's ``data`` that must equal the same keys of the output.
    goal_of, tolerance_m
        This output is the pose the last successful call of ``goal_of`` must have reached (its
        output's ``goal``), within ``tolerance_m`` m in x and y.
    visited_by, visit_tolerance_m
        The task's HCW's position in this output (its ``staff`` entry, ``map`` frame) must have
        been the goal of an earlier successful call of ``visited_by``, within ``visit_tolerance_m``
        m in x and y: the escort picked the HCW up.
    lists_task_hcw
        Only a successful call whose output's ``staff`` lists the task's HCW counts (the RTLS was
        asked where *that* HCW is; a call about nobody or about others proves nothing).
    task_hcw_key
        The output key that must equal the task's HCW (the scanned badge is that HCW's).
    shows
        ``(tool, output key)``: this call's ``entries`` argument must be exactly the members the last
        successful call of ``tool`` returned under that key (:func:`same_care_team`).
    """

    text: str
    missing: str = ''
    required: bool = False
    flag: str = ''
    last_must_succeed: bool = False
    not_last: str = ''
    claim_keys: tuple[str, ...] = ()
    goal_of: 'Tool | None' = None
    tolerance_m: float = 0.5
    visited_by: 'Tool | None' = None
    visit_tolerance_m: float = 1.0
    lists_task_hcw: bool = False
    task_hcw_key: str = ''
    shows: 'tuple[Tool, str] | None' = None


@dataclass(frozen=True)
class ToolDecl:
    """One robot tool.

    Attributes
    ----------
    tool
        Its name (:class:`Tool`).
    owner
        The only robot that may call it (:class:`~robot_team.names.Robot`).
    task_type
        The task type it serves.
    input_model, output_model
        Its arguments' and its successful output's pydantic models.
    description
        What it does physically, for the LLM (default: the input model's docstring).
    evidence
        Whether its results are kept as ground-truth evidence in the run report.
    report_key, many
        Where the run report keeps it (default: the tool name) and whether every call is kept
        (a list) rather than the last.
    key
        Whether it is the tool that starts its task (the rubric checks its owner called it).
    proof
        What its output proves for a success claim (None: nothing).
    rubric
        What the rubric reads from it (None: nothing beyond the above).
    once
        Its evidence is complete once it succeeded: a constrained request no longer offers it in
        the same task (``False``: it may serve several times, e.g. one goal after another).
    final
        Its answer depends only on its arguments and on data a task does not change (the staff
        directory): a *failed* call is as final as a successful one, so the Toolbox answers a
        repeat with the same arguments from the journal instead of running it, and a constrained
        request no longer offers a tool whose every argument is closed to values it already ran
        with (the 0.5B info-collection robot looked an unknown badge up five times in a row).
    closes
        ``(ClosedSet, output key)``: what a successful call's output closes for the rest of its
        task (the latest such call's value), e.g. the badge scan closes the badge to look up.
    closed
        ``(argument, ClosedSet)``: arguments the task closes to one value (:func:`outside_task`):
        the Toolbox refuses any other (``invalid_call`` of category ``outside_task``) and a
        constrained request offers only it.
    usage
        How a task uses it, for the worked example of the knowledge base (default: its description).
    requires
        Tools of the same task that must have succeeded earlier in the task before this one runs
        (:func:`missing_prerequisites`): the Toolbox refuses the call otherwise (``invalid_call``
        of category ``missing_prerequisite``) and a constrained request does not offer it yet.
        E.g. no Nav2 goal before the HCW acknowledged the page: the escort has nobody to escort.
    negative
        ``(args, output, hcw_id) -> str``: the negative finding a *successful* call shows about a
        task with HCW ``hcw_id`` (its arguments, its output), in words; ``''`` when none. Such a
        result grounds a failure report as a failed call does (the protocol brains report these
        cases as failures), e.g. the RTLS does not know the task's HCW.
    """

    tool: Tool
    owner: Robot
    task_type: TaskType
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    description: str = ''
    evidence: bool = False
    report_key: str = ''
    many: bool = False
    key: bool = False
    proof: Proof | None = None
    rubric: RubricUse | None = None
    once: bool = True
    final: bool = False
    closed: tuple[tuple[str, ClosedSet], ...] = ()
    closes: tuple[tuple[ClosedSet, str], ...] = ()
    usage: str = ''
    requires: tuple[Tool, ...] = ()
    negative: Callable[[Mapping[str, Any], Mapping[str, Any], str], str] | None = None

    @property
    def name(self) -> str:
        """The tool's name as the LLM, the toolbox and the record use it."""
        return self.tool.value

    @property
    def text(self) -> str:
        """The description given to the LLM."""
        return self.description or (self.input_model.__doc__ or '').strip()

    @property
    def evidence_key(self) -> str:
        """The key of its evidence in a task's ground truth (run report)."""
        return self.report_key or self.name


def _hcw_not_located(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The RTLS was asked for the task's HCW and does not list them."""
    asked = [str(h) for h in args.get('hcw_ids') or ()]
    listed = {str(s.get('hcw_id')) for s in output.get('staff') or ()}
    if hcw_id in asked and hcw_id not in listed:
        return f'HCW #{hcw_id} is unknown to the location system'
    return ''


def _badge_of_another_hcw(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The scanned badge belongs to another HCW than the task's."""
    found = str(output.get('hcw_id') or '')
    if hcw_id and found and found != hcw_id:
        return f"badge {output.get('badge_id', args.get('badge_id', '?'))} belongs to HCW #{found}, not #{hcw_id}"
    return ''


def _no_care_team(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The staff directory lists nobody on the room's care team."""
    if not output.get('members'):
        return f"the staff directory lists no care team for {output.get('room', args.get('room', '?'))}"
    return ''


_NAV, _INFO, _DISP = Robot.NAVIGATION, Robot.INFO_COLLECTION, Robot.DISPLAY
TOOLS: tuple[ToolDecl, ...] = (
    ToolDecl(Tool.LOCATE_STAFF, _NAV, TaskType.NAVIGATION, LocateStaffInput, LocateStaffOutput,
             evidence=True, key=True, rubric=RubricUse.LOCATION, negative=_hcw_not_located,
             proof=Proof('where the HCW is, to pick them up', required=True, lists_task_hcw=True,
                         missing="the RTLS was never asked where the task's HCW is",
                         visited_by=Tool.NAVIGATE_TO_POSE)),
    ToolDecl(Tool.PAGE_STAFF, _NAV, TaskType.NAVIGATION, PageStaffInput, PageOutput, evidence=True,
             closed=(('hcw_id', ClosedSet.TASK_HCW),), requires=(Tool.LOCATE_STAFF,),
             proof=Proof('the HCW answered the page', missing='the HCW never acknowledged a page',
                         flag='acknowledged')),
    ToolDecl(Tool.ROOM_DOOR_POSE, _NAV, TaskType.NAVIGATION, RoomInput, DoorPoseOutput,
             "Map pose inside a room's door (escort the HCW there) and its corridor approach ('door').",
             closed=(('room', ClosedSet.TASK_ROOM),),
             proof=Proof("where the escort ends: the room's door", required=True,
                         missing="the room's door pose was never looked up", goal_of=Tool.NAVIGATE_TO_POSE)),
    ToolDecl(Tool.PLAN_PATH, _NAV, TaskType.NAVIGATION, PlanPathInput, PathOutput, evidence=True),
    ToolDecl(Tool.NAVIGATE_TO_POSE, _NAV, TaskType.NAVIGATION, NavigateInput, NavGoalOutput, evidence=True,
             report_key='nav2_goals', many=True, once=False, requires=(Tool.PAGE_STAFF,),
             usage="drive to the HCW (x, y of meet_at from page_staff), then escort them to the room (x, y, yaw "
                   "from room_door_pose)",
             proof=Proof('the escort reached its goal (Nav2 goal result)', required=True,
                         missing='no navigate_to_pose goal succeeded', last_must_succeed=True,
                         not_last='the last navigate_to_pose goal did not succeed')),
    ToolDecl(Tool.READ_BADGE_SCAN, _INFO, TaskType.INFO_COLLECTION, ReadBadgeScanInput, BadgeScanOutput,
             evidence=True, key=True, closed=(('room', ClosedSet.TASK_ROOM),),
             closes=((ClosedSet.SCANNED_BADGE, 'badge_id'),),
             proof=Proof('the HCW badged in at the door', required=True, missing='no badge scan was read')),
    ToolDecl(Tool.LOOKUP_STAFF_BY_BADGE, _INFO, TaskType.INFO_COLLECTION, BadgeInput, StaffRecordOutput,
             evidence=True, rubric=RubricUse.IDENTITY, requires=(Tool.READ_BADGE_SCAN,), final=True,
             closed=(('badge_id', ClosedSet.SCANNED_BADGE),),
             negative=_badge_of_another_hcw,
             proof=Proof("the scanned badge is the escorted HCW's", required=True,
                         missing='no badge was found in the staff directory', task_hcw_key='hcw_id',
                         claim_keys=('hcw_id', 'name', 'specialty'))),
    ToolDecl(Tool.RECORD_CHECK_IN, _INFO, TaskType.INFO_COLLECTION, CheckInInput, CheckInOutput, evidence=True,
             closed=(('room', ClosedSet.TASK_ROOM), ('hcw_id', ClosedSet.TASK_HCW),
                     ('badge_id', ClosedSet.SCANNED_BADGE)),
             requires=(Tool.LOOKUP_STAFF_BY_BADGE,),
             proof=Proof("the directory recorded the HCW's check-in at the room", required=True,
                         missing='the check-in was never recorded')),
    ToolDecl(Tool.FETCH_CARE_TEAM, _DISP, TaskType.DISPLAY, FetchCareTeamInput, CareTeamOutput,
             evidence=True, key=True, rubric=RubricUse.CARE_TEAM, closed=(('room', ClosedSet.TASK_ROOM),),
             negative=_no_care_team,
             proof=Proof("the room's care team, as the directory gives it", required=True,
                         missing='the care team was never fetched')),
    ToolDecl(Tool.SHOW_DISPLAY, _DISP, TaskType.DISPLAY, ShowDisplayInput, DisplayReplyOutput, evidence=True,
             closed=(('room', ClosedSet.TASK_ROOM),), requires=(Tool.FETCH_CARE_TEAM,),
             proof=Proof('the room screen shows the care team', missing='the display service never accepted a layout',
                         flag='success', shows=(Tool.FETCH_CARE_TEAM, 'members'))),
)
"""Every operational robot's tools, in the order they are offered."""


# --- Roles ------------------------------------------------------------------------------------

def _navigation_truth(evidence: Mapping[str, Any]) -> str:
    goals = evidence.get(TOOLS_BY_NAME[Tool.NAVIGATE_TO_POSE].evidence_key)
    if goals:
        return '; '.join(f"{Tool.NAVIGATE_TO_POSE.value} {(g.get('output') or {}).get('outcome', '?')} "
                         f"(error {(g.get('output') or {}).get('error_code', '?')})" for g in goals)
    page = evidence.get(Tool.PAGE_STAFF.value)
    if page:
        return f"page acknowledged: {(page.get('output') or {}).get('acknowledged')}"
    return ''


def _info_truth(evidence: Mapping[str, Any]) -> str:
    scan_item, who_item = evidence.get(Tool.READ_BADGE_SCAN.value), evidence.get(Tool.LOOKUP_STAFF_BY_BADGE.value)
    if not (scan_item or who_item):
        return ''
    scan, who = (scan_item or {}).get('output') or {}, (who_item or {}).get('output') or {}
    return f"badge {scan.get('badge_id', '?')} -> {who.get('name', 'not found')}"


def _display_truth(evidence: Mapping[str, Any]) -> str:
    shown = evidence.get(Tool.SHOW_DISPLAY.value)
    return f"display {'shown' if shown.get('ok') else 'refused'}" if shown else ''


@dataclass(frozen=True)
class RoleDecl:
    """One operational robot role.

    Attributes
    ----------
    robot
        The role (its node name and namespace).
    task_type
        The only task type it executes (role alignment). The class implementing its tools
        (:func:`robot_team.tools.roles.implementation_class`) has a ``from_node(node,
        callback_group)`` classmethod (reads its node's parameters) and its tools as methods
        marked with :func:`implements`.
    truth
        Its task's ground truth in a few words, from the condensed evidence (empty if none).
    report_data
        ``(key, what it holds)``: what its report's ``data`` states, each item from a tool's output,
        described in the ``submit_report`` schema (optional there: no guard refuses a report
        without them). The items of the published evaluation's local reasoning metric (Bai, Ding,
        Taylor): the HCW's location and the path; the HCW's ID, name and specialty; the care team
        and the layout built from it (the rubric reads them under these keys, among others).
    world
        What the world must show for a success of its task (:class:`WorldFact`), observed by its
        tools class's ``observe(fact, task, until)`` (a JSON-ready mapping).
    needs_hcw
        Its task is about one HCW: a success needs the task to name one (:attr:`TaskFacts.hcw_id`).
    """

    robot: Robot
    task_type: TaskType
    truth: Callable[[Mapping[str, Any]], str] = field(default=lambda _evidence: '')
    report_data: tuple[tuple[str, str], ...] = ()
    world: tuple[WorldFact, ...] = ()
    needs_hcw: bool = False


ROLES: tuple[RoleDecl, ...] = (
    RoleDecl(Robot.NAVIGATION, TaskType.NAVIGATION, _navigation_truth,
             (('hcw_location', f'where {Tool.LOCATE_STAFF.value} found the HCW: area, x, y'),
              ('path', f'the route {Tool.PLAN_PATH.value} planned: length_m, waypoints')),
             world=(WorldFact.HCW_AT_ROOM,), needs_hcw=True),
    RoleDecl(Robot.INFO_COLLECTION, TaskType.INFO_COLLECTION, _info_truth,
             tuple((key, f'from {Tool.LOOKUP_STAFF_BY_BADGE.value}') for key in ('hcw_id', 'name', 'specialty')),
             world=(WorldFact.CHECKED_IN,), needs_hcw=True),
    RoleDecl(Robot.DISPLAY, TaskType.DISPLAY, _display_truth,
             (('members', f'the care team {Tool.FETCH_CARE_TEAM.value} returned, as shown'),
              ('layout', 'the layout plan shown, naming each member')),
             world=(WorldFact.SCREEN_SHOWS_CARE_TEAM,)),
)
"""The operational robots, in workflow order."""

ROLES_BY_ROBOT: dict[str, RoleDecl] = {r.robot.value: r for r in ROLES}
"""Robot role (value) -> its declaration."""

ROLE_TASK: dict[str, TaskType] = {r.robot.value: r.task_type for r in ROLES}
"""Operational robot role (value) -> the one task type it executes."""

OPERATIONAL_ROBOTS: tuple[str, ...] = tuple(r.robot.value for r in ROLES)
"""The operational robots' names, in workflow order (the robots a manager delegates to)."""

TOOLS_BY_NAME: dict[str, ToolDecl] = {t.name: t for t in TOOLS}
"""Tool name -> its declaration."""

TOOL_OWNERS: dict[str, str] = {**{t.name: t.owner.value for t in TOOLS},
                               **{tool.value: Robot.MANAGER.value for tool in ManagerTool}}
"""Every tool of the team and the only role that owns it."""

MANAGER_TOOLS: tuple[str, ...] = tuple(tool.value for tool in ManagerTool)
"""The manager's only tools."""

TASK_OWNER: dict[TaskType, str] = {**{r.task_type: r.robot.value for r in ROLES},
                                   TaskType.REFLECTION: Robot.MANAGER.value}
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
    of this kind and the grounds of an LLM robot's failure report (``robot_team.grounding``).
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


def tools_of(owner: 'Robot | str') -> list[ToolDecl]:
    """Return the tools ``owner`` (a role or its name) owns, in declaration order (empty for an unknown owner)."""
    value = owner.value if isinstance(owner, Robot) else owner
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


def role_of(robot: 'Robot | str') -> RoleDecl:
    """Return the declaration of operational robot ``robot``'s role (a role's name, or ``<role>_<n>`` of a fleet).

    Raises
    ------
    KeyError
        If ``robot`` is not an operational robot (e.g. the manager).
    """
    value = robot.value if isinstance(robot, Robot) else robot
    try:
        return ROLES_BY_ROBOT[role_name(value)]
    except KeyError:
        raise KeyError(f'{value!r} is not an operational robot (expected one of {", ".join(OPERATIONAL_ROBOTS)})') \
            from None


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
