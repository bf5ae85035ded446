"""The display robot's tools: the care-team composition and the room's shared screen.

Declared in :mod:`robot_team.roles.display.decl`:

- ``Tool.FETCH_CARE_TEAM`` -> the staff directory (SQLite)
- ``Tool.SHOW_DISPLAY`` -> ``/ed/display/show`` (robot_team/srv/ShowDisplay)

What each screen shows comes from ``/ed/display/content`` (robot_team/msg/DisplayContent), the
display system's own announcement: the success of a display task is checked against it.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts import names
from robot_team.catalog import TaskFacts, Tool, implements
from robot_team.contracts.errors import ToolError
from robot_team.msg import DisplayContent, DisplayEntry
from robot_team.contracts.names import team_name
from robot_team.roles.display.decl import DISPLAY_ROLE, FetchCareTeamInput, ShowDisplayInput
from robot_team.ros.stamps import stamp_to_s
from robot_team.ros.util import SERVER_WAIT_S, call_service, discovery_hold_of, wait_for_server
from robot_team.srv import ShowDisplay
from robot_team.tools.base import open_directory
from robot_team.tools.directory_tools import DirectoryTools


class DisplayTools(DirectoryTools):
    """The display robot's tools (:class:`~robot_team.tools.directory_tools.DirectoryTools`: ``node``, ``staff_db``)."""

    def __init__(self, node, staff_db: str, callback_group=None):
        super().__init__(node, staff_db)
        self._show = node.create_client(ShowDisplay, team_name(node, names.SHOW_DISPLAY), callback_group=callback_group)
        self._screens: dict[str, dict] = {}   # room -> what its screen shows (the latest announcement)
        node.create_subscription(   # every screen's latest content, also for a robot that joins late
            DisplayContent, team_name(node, names.DISPLAY_CONTENT), self._content_callback,
            QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL),
            callback_group=callback_group)

    def _content_callback(self, msg) -> None:
        screen = {'entries': [{'role': e.role, 'hcw_id': e.hcw_id, 'name': e.name, 'specialty': e.specialty}
                              for e in msg.entries],
                  'lines': list(msg.lines), 'stamp_s': stamp_to_s(msg.header.stamp)}
        with self._lock:
            if screen['stamp_s'] >= self._screens.get(msg.room, {}).get('stamp_s', float('-inf')):
                self._screens[msg.room] = screen

    @implements(Tool.FETCH_CARE_TEAM)
    def care_team(self, args: FetchCareTeamInput) -> dict:
        """Return ``{'room': ..., 'members': [{hcw_id, name, specialty, role}, ...]}``."""
        return {'room': args.room, 'members': self._members(args.room)}

    def _members(self, room: str) -> list[dict]:
        """Return ``room``'s care team as the directory gives it now (hcw_id, name, specialty, role each)."""
        with open_directory(self._staff_db) as directory:
            team = directory.care_team(room)
        return [{k: str(getattr(entry, k) or '') for k in ('hcw_id', 'name', 'specialty', 'role')} for entry in team]

    decl = DISPLAY_ROLE

    def _look(self, task: TaskFacts) -> dict:
        """Return what the room's screen and the directory show now (:attr:`WorldFact.SCREEN_SHOWS_CARE_TEAM`).

        ``{room, screen: {entries, lines, stamp_s} | None, care_team: [members]}``: the screen as the
        display system last announced it (stamp: ROS time, s) and the room's care team as the
        directory gives it now.

        Raises
        ------
        ToolError
            If the directory cannot be opened.
        """
        with self._lock:
            screen = self._screens.get(task.room)
        return {'room': task.room, 'screen': dict(screen) if screen else None,
                'care_team': self._members(task.room)}

    @implements(Tool.SHOW_DISPLAY)
    def show(self, args: ShowDisplayInput) -> dict:
        """Call the display service; return its reply (evidence). A refusal is a ToolError."""
        wait_for_server(self._show, SERVER_WAIT_S, f'service {names.SHOW_DISPLAY}', discovery_hold_of(self._node))
        request = ShowDisplay.Request(
            room=args.room, title=args.title, layout=args.layout,
            entries=[DisplayEntry(role=e.role, hcw_id=e.hcw_id, name=e.name, specialty=e.specialty)
                     for e in args.entries])
        response = call_service(self._node, self._show, request, SERVER_WAIT_S, f'response of {names.SHOW_DISPLAY}')
        reply = {'service': names.SHOW_DISPLAY, 'success': response.success, 'message': response.message,
                 'rendered_lines': list(response.rendered_lines)}
        if not response.success:
            raise ToolError(f'display service refused: {response.message}', output=reply)
        return reply
