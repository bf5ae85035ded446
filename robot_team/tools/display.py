"""The display robot's tools: the care-team composition and the room's shared screen.

- ``Tool.FETCH_CARE_TEAM`` -> the staff directory (SQLite)
- ``Tool.SHOW_DISPLAY`` -> ``/ed/display/show`` (robot_team/srv/ShowDisplay)
"""

from __future__ import annotations


from robot_team import names
from robot_team.catalog import FetchCareTeamInput, ShowDisplayInput, Tool, implements, register_tools
from robot_team.errors import ToolError
from robot_team.msg import DisplayEntry
from robot_team.names import team_name
from robot_team.rosutil import wait_for_server, wait_future
from robot_team.srv import ShowDisplay
from robot_team.tools.base import Toolbox
from robot_team.tools.info import open_directory


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
        self._node = node
        self._staff_db = staff_db
        self._show = node.create_client(ShowDisplay, team_name(node, names.SHOW_DISPLAY), callback_group=callback_group)

    @classmethod
    def from_node(cls, node, callback_group=None) -> 'DisplayTools':
        """Build the tools for ``node`` from its ``staff_db`` parameter (SQLite file)."""
        return cls(node, node.get_parameter('staff_db').value, callback_group)

    started_data: dict = {}
    """What the robot's ``node_started`` event records about these tools (nothing)."""

    def cancel(self) -> None:
        """Stop the work in flight: there is none to stop, each call being one short service call."""

    def register(self, toolbox: Toolbox) -> None:
        """Register every display tool in ``toolbox``."""
        register_tools(toolbox, self)

    @implements(Tool.FETCH_CARE_TEAM)
    def care_team(self, args: FetchCareTeamInput) -> dict:
        """Return ``{'room': ..., 'members': [{hcw_id, name, specialty, role}, ...]}``."""
        with open_directory(self._staff_db) as directory:
            team = directory.care_team(args.room)
        members = []
        for entry in team:
            data = entry.model_dump()
            members.append({k: data.get(k, '') for k in ('hcw_id', 'name', 'specialty', 'role')})
        return {'room': args.room, 'members': members}

    @implements(Tool.SHOW_DISPLAY)
    def show(self, args: ShowDisplayInput) -> dict:
        """Call the display service; return its reply (evidence). A refusal is a ToolError."""
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
