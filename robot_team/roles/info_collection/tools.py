"""The info-collection robot's tools: the door badge readers and the staff directory.

Declared in :mod:`robot_team.roles.info_collection.decl`:

- ``Tool.READ_BADGE_SCAN`` -> ``/ed/badge_scans`` (robot_team/msg/BadgeScan), buffered per room
- ``Tool.LOOKUP_STAFF_BY_BADGE`` -> the staff directory (SQLite)
- ``Tool.RECORD_CHECK_IN`` -> the staff directory (the HCW joins the room's care team)
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts import names
from robot_team.catalog import TaskFacts, Tool, implements
from robot_team.contracts.errors import ToolError
from robot_team.msg import BadgeScan
from robot_team.contracts.names import team_name
from robot_team.roles.info_collection.decl import INFO_COLLECTION_ROLE, BadgeInput, CheckInInput, ReadBadgeScanInput
from robot_team.ros.stamps import now_s, stamp_to_s
from robot_team.ros.util import wait_ros_time
from robot_team.tools.base import open_directory
from robot_team.tools.directory_tools import DirectoryTools


def scan_qos():
    """Return the QoS of the badge-scan subscription: reliable, 50 deep, durability ``BEST_AVAILABLE``.

    Transient local when the badge system keeps its recent scans for late joiners (hospital systems
    does: a restarted info-collection robot reads a scan made while it was down), volatile with a
    badge system that does not (rclpy's ``BEST_AVAILABLE`` matches either, since ROS 2 Iron).
    """
    return QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.BEST_AVAILABLE)


class InfoCollectionTools(DirectoryTools):
    """The info-collection robot's tools (:class:`~robot_team.tools.directory_tools.DirectoryTools`).

    Parameters: ``node``, ``staff_db`` (as :class:`~robot_team.tools.directory_tools.DirectoryTools`).
    """

    def __init__(self, node, staff_db: str, callback_group=None):
        super().__init__(node, staff_db)
        self._scans: dict[str, list[dict]] = {}
        node.create_subscription(BadgeScan, team_name(node, names.BADGE_SCANS), self._scan_callback, scan_qos(),
                                 callback_group=callback_group)

    def _scan_callback(self, msg) -> None:
        scan = {'badge_id': msg.badge_id, 'reader_id': msg.reader_id, 'room': msg.room,
                'stamp_s': stamp_to_s(msg.header.stamp),
                'frame_id': msg.header.frame_id}
        with self._lock:
            self._scans.setdefault(msg.room, []).append(scan)

    decl = INFO_COLLECTION_ROLE

    def _look(self, task: TaskFacts) -> dict:
        """Return what the staff directory shows now of :attr:`WorldFact.CHECKED_IN` for ``task``.

        ``{room, check_ins: [{hcw_id, badge_id, stamp_s}]}``: the latest check-in (ROS time, s) of
        each HCW on the room's care team who checked in there.

        Raises
        ------
        ToolError
            If the directory cannot be opened.
        """
        with open_directory(self._staff_db) as directory:
            team = directory.care_team(task.room)
        return {'room': task.room, 'check_ins': [
            {'hcw_id': m.hcw_id, 'badge_id': m.badge_id, 'stamp_s': m.checked_in_s}
            for m in team if m.checked_in_s is not None]}

    def _latest(self, room: str, max_age_s: float) -> dict | None:
        now = now_s(self._node)
        with self._lock:
            scans = [s for s in self._scans.get(room, []) if now - s['stamp_s'] <= max_age_s]
        return scans[-1] if scans else None

    @implements(Tool.READ_BADGE_SCAN)
    def read_scan(self, args: ReadBadgeScanInput) -> dict:
        """Return the latest scan at ``room`` (badge_id, reader_id, stamp_s in sim s)."""
        wait_ros_time(self._node, lambda: self._latest(args.room, args.max_age_s) is not None, args.timeout_s)
        scan = self._latest(args.room, args.max_age_s)
        if scan is None:
            raise ToolError(f'no badge scan at {args.room} within {args.timeout_s:.0f} s')
        return dict(scan)

    @implements(Tool.LOOKUP_STAFF_BY_BADGE)
    def lookup_badge(self, args: BadgeInput) -> dict:
        """Return the directory record of the badge's HCW (hcw_id, name, specialty, role)."""
        with open_directory(self._staff_db) as directory:
            record = directory.by_badge(args.badge_id)
        if record is None:
            raise ToolError(f"badge '{args.badge_id}' is not in the staff directory")
        return record.model_dump()

    @implements(Tool.RECORD_CHECK_IN)
    def check_in(self, args: CheckInInput) -> dict:
        """Record the check-in; return what was written (an unknown HCW or a wrong badge is a ToolError)."""
        stamp = now_s(self._node)
        with open_directory(self._staff_db) as directory:
            try:
                directory.check_in(args.room, args.hcw_id, args.badge_id, stamp)
            except ValueError as exc:
                raise ToolError(f'check-in refused by the staff directory: {exc}') from exc
        return {'room': args.room, 'hcw_id': args.hcw_id, 'badge_id': args.badge_id, 'stamp_s': round(stamp, 3)}
