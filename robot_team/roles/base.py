"""What every role's declaration is made of: tools, their proofs, roles, and the task they serve.

Each operational role declares its tools and itself in its own package (``robot_team.roles.<role>.decl``)
with these types; :mod:`robot_team.catalog` gathers them (:data:`~robot_team.catalog.TOOLS`,
:data:`~robot_team.catalog.ROLES`) and derives the rest. The names of the tools and the roles are
:class:`~robot_team.contracts.names.Tool` and :class:`~robot_team.contracts.names.Role`.

This module sits at the bottom layer (contracts), below the roles' declarations and the catalog: it
imports only :mod:`robot_team.contracts.names`, :mod:`robot_team.contracts.reports`,
:mod:`robot_team.contracts.clock_sync`, pydantic and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from pydantic import BaseModel, ConfigDict

from robot_team.contracts.clock_sync import CLOCK_SPREAD_S
from robot_team.contracts.names import Role, Tool
from robot_team.contracts.reports import TaskType


class ClosedSet(str, Enum):
    """What a task closes a tool argument to: the Toolbox refuses any other value, a constrained request offers only it.

    One rule (:func:`~robot_team.catalog.outside_task`) for the guard and the offer. A task is about
    one patient's room and one HCW: a robot that looks up, reads or shows another room, or pages
    another HCW, does not do its task (the display robot of a run showed ER-12's care team on the Triage
    screen and reported success; the screen it wrote to was never the task's).

    Some values come from a call's result in the task (:attr:`ToolDecl.closes`): the badge a
    robot looks up is the one its scan read.
    """

    TASK_ROOM = 'task_room'          # the room the task names (the patient's room)
    TASK_HCW = 'task_hcw'            # the HCW the task names
    SCANNED_BADGE = 'scanned_badge'  # the badge ID the task's latest successful badge scan read


class TaskFacts(NamedTuple):
    """What one task is about, for its proofs (``robot_team.rules.grounding``).

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
    ``robot_team.rules.grounding.world_contradictions``, at the robot and again at the manager.
    """

    HCW_AT_ROOM = 'hcw_at_room'                  # the RTLS sees the task's HCW in the room or at its door
    CHECKED_IN = 'checked_in'                    # the directory holds the HCW's check-in at the room (this task)
    SCREEN_SHOWS_CARE_TEAM = 'screen_shows_care_team'   # the room's screen shows the directory's care team


AT_DOOR_M = 2.5
"""How far from a room's door (its corridor approach or the pose just inside) an HCW the RTLS
sees counts as at the room, m: an escorted HCW follows 1 m behind the robot, which stops just
inside the door, and steps in a few seconds later (as the embedded simulator's hospital has them do)."""

STAMP_SLACK_S = CLOCK_SPREAD_S
"""How much earlier than a task's start (as one node saw it) the world's stamps of it may be, s: two team
nodes' ROS time may differ by one step of the follow clock (:data:`~robot_team.contracts.clock_sync.CLOCK_SPREAD_S`)."""

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


# --- Tool outputs ------------------------------------------------------------------------------

class ToolOutput(BaseModel):
    """What a successful tool call returns (each tool's output schema derives from it; extra fields are allowed)."""

    model_config = ConfigDict(extra='allow')


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
        Its name (:class:`~robot_team.contracts.names.Tool`).
    owner
        The only robot that may call it (:class:`~robot_team.contracts.names.Role`).
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
        ``(argument, ClosedSet)``: arguments the task closes to one value
        (:func:`~robot_team.catalog.outside_task`): the Toolbox refuses any other (``invalid_call``
        of category ``outside_task``) and a constrained request offers only it.
    usage
        How a task uses it, for the worked example of the knowledge base (default: its description).
    requires
        Tools of the same task that must have succeeded earlier in the task before this one runs
        (:func:`~robot_team.catalog.missing_prerequisites`): the Toolbox refuses the call otherwise
        (``invalid_call`` of category ``missing_prerequisite``) and a constrained request does not
        offer it yet.
        E.g. no Nav2 goal before the HCW acknowledged the page: the escort has nobody to escort.
    negative
        ``(args, output, hcw_id) -> str``: the negative finding a *successful* call shows about a
        task with HCW ``hcw_id`` (its arguments, its output), in words; ``''`` when none. Such a
        result grounds a failure report as a failed call does (the protocol brains report these
        cases as failures), e.g. the RTLS does not know the task's HCW.
    """

    tool: Tool
    owner: Role
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


@dataclass(frozen=True)
class RoleDecl:
    """One operational robot role.

    Attributes
    ----------
    role
        The role (the node name and namespace of its first robot).
    task_type
        The only task type it executes (role alignment). The class implementing its tools
        (:func:`robot_team.tools.roles.implementation_class`) has a ``from_node(node,
        callback_group)`` classmethod (reads its node's parameters) and its tools as methods
        marked with :func:`~robot_team.catalog.implements`.
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

    role: Role
    task_type: TaskType
    truth: Callable[[Mapping[str, Any]], str] = field(default=lambda _evidence: '')
    report_data: tuple[tuple[str, str], ...] = ()
    world: tuple[WorldFact, ...] = ()
    needs_hcw: bool = False
