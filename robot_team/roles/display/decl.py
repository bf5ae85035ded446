"""The display role's declaration: its tools' schemas, what their outputs prove, and the role.

The display robot fetches the room's care team from the staff directory and shows it on the
room's shared screen. Its tools are implemented by
:class:`robot_team.roles.display.tools.DisplayTools`, its protocol brain is
:class:`robot_team.roles.display.protocol.DisplayProtocolBrain`; :mod:`robot_team.catalog` gathers
:data:`DISPLAY_TOOLS` and :data:`DISPLAY_ROLE` with the other roles'.

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

class CareTeamMember(ToolOutput):
    """One member of a room's care team."""

    hcw_id: str
    name: str
    specialty: str = ''
    role: str = ''


class CareTeamOutput(ToolOutput):
    """A room's care team, from the staff directory."""

    room: str
    members: list[CareTeamMember]


class DisplayReplyOutput(ToolOutput):
    """The display service's reply (``ed/display/show``)."""

    service: str
    success: bool
    message: str = ''
    rendered_lines: list[str] = Field(default_factory=list)


# --- Tools ------------------------------------------------------------------------------------

def _no_care_team(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The staff directory lists nobody on the room's care team."""
    if not output.get('members'):
        return f"the staff directory lists no care team for {output.get('room', args.get('room', '?'))}"
    return ''


DISPLAY_TOOLS: tuple[ToolDecl, ...] = (
    ToolDecl(Tool.FETCH_CARE_TEAM, Role.DISPLAY, TaskType.DISPLAY, FetchCareTeamInput, CareTeamOutput,
             evidence=True, key=True, rubric=RubricUse.CARE_TEAM, closed=(('room', ClosedSet.TASK_ROOM),),
             negative=_no_care_team,
             proof=Proof("the room's care team, as the directory gives it", required=True,
                         missing='the care team was never fetched')),
    ToolDecl(Tool.SHOW_DISPLAY, Role.DISPLAY, TaskType.DISPLAY, ShowDisplayInput, DisplayReplyOutput,
             evidence=True, closed=(('room', ClosedSet.TASK_ROOM),), requires=(Tool.FETCH_CARE_TEAM,),
             proof=Proof('the room screen shows the care team', missing='the display service never accepted a layout',
                         flag='success', shows=(Tool.FETCH_CARE_TEAM, 'members'))),
)
"""The display robot's tools, in the order they are offered."""


# --- The role ---------------------------------------------------------------------------------

def _truth(evidence: Mapping[str, Any]) -> str:
    shown = evidence.get(Tool.SHOW_DISPLAY.value)
    return f"display {'shown' if shown.get('ok') else 'refused'}" if shown else ''


DISPLAY_ROLE = RoleDecl(
    Role.DISPLAY, TaskType.DISPLAY, _truth,
    (('members', f'the care team {Tool.FETCH_CARE_TEAM.value} returned, as shown'),
     ('layout', 'the layout plan shown, naming each member')),
    world=(WorldFact.SCREEN_SHOWS_CARE_TEAM,))
"""The display robot's role: show the room's care team on its screen."""
