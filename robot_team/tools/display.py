"""The display robot's tools: the care-team composition and the room's shared screen.

- ``fetch_care_team`` -> the staff directory (SQLite)
- ``show_display`` -> ``/ed/display/show`` (robot_team/srv/ShowDisplay)
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from robot_team import names
from robot_team.rosutil import team_name, wait_for_server, wait_future
from robot_team.tools.base import ToolError, Toolbox
from robot_team.tools.info import open_directory


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


class DisplayTools:
    """The display robot's tools.

    Parameters
    ----------
    node
        The display robot's node.
    staff_db
        Path of the staff directory (SQLite).
    """

    def __init__(self, node, staff_db: str, callback_group=None):
        from robot_team.srv import ShowDisplay
        self._node = node
        self._staff_db = staff_db
        self._show = node.create_client(ShowDisplay, team_name(node, names.SHOW_DISPLAY), callback_group=callback_group)

    def register(self, toolbox: Toolbox) -> None:
        """Register every display tool in ``toolbox``."""
        from robot_team.tools.catalog import register_tools
        register_tools(toolbox, self)

    def fetch_care_team(self, args: FetchCareTeamInput) -> dict:
        """Return ``{'room': ..., 'members': [{hcw_id, name, specialty, role}, ...]}``."""
        with open_directory(self._staff_db) as directory:
            team = directory.care_team(args.room)
        members = []
        for entry in team:
            data = entry.model_dump()
            members.append({k: data.get(k, '') for k in ('hcw_id', 'name', 'specialty', 'role')})
        return {'room': args.room, 'members': members}

    def show_display(self, args: ShowDisplayInput) -> dict:
        """Call the display service; return its reply (evidence). A refusal is a ToolError."""
        from robot_team.msg import DisplayEntry
        from robot_team.srv import ShowDisplay
        wait_for_server(self._show, 10.0, f'service {names.SHOW_DISPLAY}')
        request = ShowDisplay.Request(
            room=args.room, title=args.title, layout=args.layout,
            entries=[DisplayEntry(role=e.role, hcw_id=e.hcw_id, name=e.name, specialty=e.specialty)
                     for e in args.entries])
        response = wait_future(self._show.call_async(request), 10.0, f'response of {names.SHOW_DISPLAY}')
        reply = {'service': names.SHOW_DISPLAY, 'success': response.success, 'message': response.message,
                 'rendered_lines': list(response.rendered_lines)}
        if not response.success:
            raise ToolError(f'display service refused: {response.message}', output=reply)
        return reply
