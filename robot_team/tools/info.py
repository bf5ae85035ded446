"""The info-collection robot's tools: the door badge readers and the staff directory.

- ``read_badge_scan`` -> ``/ed/badge_scans`` (robot_team/msg/BadgeScan), buffered per room
- ``lookup_staff_by_badge`` -> the staff directory (SQLite)
- ``record_check_in`` -> the staff directory (the HCW joins the room's care team)
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, Field

from robot_team import names
from robot_team.rostime import now_s, stamp_to_s
from robot_team.rosutil import team_name, wait_ros_time
from robot_team.tools.base import ToolError, Toolbox


def scan_qos():
    """Return the QoS of the badge-scan subscription: reliable, volatile, 50 deep."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


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


def open_directory(path: str):
    """Open the staff directory at ``path``, turning a failure into a :class:`ToolError`."""
    from robot_team.config import ConfigError
    from robot_team.directory import StaffDirectory
    try:
        return StaffDirectory(path)
    except ConfigError as exc:
        raise ToolError(f'staff directory unavailable: {exc}') from exc


class InfoCollectionTools:
    """The info-collection robot's tools.

    Parameters
    ----------
    node
        The info-collection robot's node.
    staff_db
        Path of the staff directory (SQLite). Opened on each use, so a directory that cannot
        be opened is a task failure with an issue, not a crash at start-up.
    """

    def __init__(self, node, staff_db: str, callback_group=None):
        from robot_team.msg import BadgeScan
        self._node = node
        self._staff_db = staff_db
        self._scans: dict[str, list[dict]] = {}
        self._lock = threading.Lock()
        # Reliable and volatile: compatible with a volatile or a transient-local reader publisher.
        node.create_subscription(BadgeScan, team_name(node, names.BADGE_SCANS), self._scan_callback, scan_qos(),
                                 callback_group=callback_group)

    def _scan_callback(self, msg) -> None:
        scan = {'badge_id': msg.badge_id, 'reader_id': msg.reader_id, 'room': msg.room,
                'stamp_s': stamp_to_s(msg.header.stamp),
                'frame_id': msg.header.frame_id}
        with self._lock:
            self._scans.setdefault(msg.room, []).append(scan)

    def register(self, toolbox: Toolbox) -> None:
        """Register every info-collection tool in ``toolbox``."""
        from robot_team.tools.catalog import register_tools
        register_tools(toolbox, self)

    def _latest(self, room: str, max_age_s: float) -> dict | None:
        now = now_s(self._node)
        with self._lock:
            scans = [s for s in self._scans.get(room, []) if now - s['stamp_s'] <= max_age_s]
        return scans[-1] if scans else None

    def read_badge_scan(self, args: ReadBadgeScanInput) -> dict:
        """Return the latest scan at ``room`` (badge_id, reader_id, stamp_s in sim s)."""
        wait_ros_time(self._node, lambda: self._latest(args.room, args.max_age_s) is not None, args.timeout_s)
        scan = self._latest(args.room, args.max_age_s)
        if scan is None:
            raise ToolError(f'no badge scan at {args.room} within {args.timeout_s:.0f} s')
        return dict(scan)

    def lookup_staff_by_badge(self, args: BadgeInput) -> dict:
        """Return the directory record of the badge's HCW (hcw_id, name, specialty, role)."""
        with open_directory(self._staff_db) as directory:
            record = directory.by_badge(args.badge_id)
        if record is None:
            raise ToolError(f"badge '{args.badge_id}' is not in the staff directory")
        return record.model_dump()

    def record_check_in(self, args: CheckInInput) -> dict:
        """Record the check-in; return what was written (an unknown HCW or a wrong badge is a ToolError)."""
        stamp = now_s(self._node)
        with open_directory(self._staff_db) as directory:
            try:
                directory.record_check_in(args.room, args.hcw_id, args.badge_id, stamp)
            except ValueError as exc:
                raise ToolError(f'check-in refused by the staff directory: {exc}') from exc
        return {'room': args.room, 'hcw_id': args.hcw_id, 'badge_id': args.badge_id, 'stamp_s': round(stamp, 3)}
