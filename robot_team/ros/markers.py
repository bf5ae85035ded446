"""The scene as rviz2 markers: ``visualization_msgs/MarkerArray`` on ``team/floor_markers``.

The same scene as Foxglove's (:mod:`robot_team.scene_foxglove`) and the console's floor map, from
:class:`robot_team.contracts.scene.Scene` and the floor's geometry (:func:`robot_team.contracts.scene.floor_geometry`),
with the same heights and colours (:mod:`robot_team.contracts.scene`). Everything is in the ``map`` frame
(REP-105), m and rad (REP-103). Marker namespaces (``Marker.ns``), ids stable within each:

- ``floor``: a ``CUBE`` per wall, room, corridor, door and dock, a ``CYLINDER`` per badge
  reader, and the rooms' names (``TEXT_VIEW_FACING``);
- ``robots``: an ``ARROW`` along each robot's heading; ``robot_labels``: its name, task and case;
- ``hcws``: a ``SPHERE`` per HCW coloured by availability; ``hcw_labels``: whom they follow;
- ``cases``: a tile on the patient's room coloured by ESI level, with its state;
- ``escalations``: a red ring on the room and the robot of each open escalation.

Each array starts with a ``DELETEALL`` marker, so what ended (a resolved escalation) disappears.
"""

from __future__ import annotations

import math
from typing import Sequence

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from robot_team.contracts.floor import Floor
from robot_team.contracts.names import MAP_FRAME
from robot_team.contracts.scene import (
    AVAILABILITY_COLOURS, ESCALATION_COLOUR, ESI_COLOURS, HCW_Z, KIND_COLOURS, KIND_HEIGHTS, ROBOT_Z, ROLE_COLOURS,
    Scene, case_tile, escalation_rings, floor_geometry)

FLOOR_MARKERS = 'team/floor_markers'
"""The topic (relative: in the team's namespace) of the scene's ``MarkerArray``."""


def _colour(rgb: Sequence[float], alpha: float | None = None) -> ColorRGBA:
    a = alpha if alpha is not None else (rgb[3] if len(rgb) > 3 else 1.0)
    return ColorRGBA(r=float(rgb[0]), g=float(rgb[1]), b=float(rgb[2]), a=float(a))


def _pose(x: float, y: float, z: float = 0.0, yaw: float = 0.0) -> Pose:
    return Pose(position=Point(x=float(x), y=float(y), z=float(z)),
                orientation=Quaternion(z=math.sin(yaw / 2), w=math.cos(yaw / 2)))


class _Markers:
    """Builds one array: each marker gets the stamp, frame and the next id of its namespace."""

    def __init__(self, stamp: Time):
        self.stamp = stamp
        self.array = MarkerArray(markers=[Marker(action=Marker.DELETEALL)])
        self._ids: dict[str, int] = {}

    def add(self, ns: str, kind: int, pose: Pose, scale: tuple[float, float, float], colour: ColorRGBA,
            **fields) -> Marker:
        marker = Marker(ns=ns, id=self._ids.get(ns, 0), type=kind, action=Marker.ADD, pose=pose,
                        scale=Vector3(x=float(scale[0]), y=float(scale[1]), z=float(scale[2])), color=colour, **fields)
        marker.header.stamp, marker.header.frame_id = self.stamp, MAP_FRAME
        self._ids[ns] = marker.id + 1
        self.array.markers.append(marker)
        return marker

    def text(self, ns: str, x: float, y: float, z: float, text: str, size: float = 0.4) -> None:
        self.add(ns, Marker.TEXT_VIEW_FACING, _pose(x, y, z), (0.0, 0.0, size), _colour((0.05, 0.05, 0.05)),
                 text=text)


def floor_markers(scene: Scene, floor: Floor | None, stamp: Time) -> MarkerArray:
    """Return ``scene`` (and ``floor``'s geometry, if known) as a ``MarkerArray`` stamped ``stamp``.

    Robots and HCWs without a pose yet are left out; so are cases and escalations whose room is
    not on ``floor``.
    """
    out = _Markers(stamp)
    if floor is not None:
        for s in floor_geometry(floor):
            height = KIND_HEIGHTS[s.kind] if s.kind != 'wall' else floor.wall_height
            kind = Marker.CYLINDER if s.kind == 'reader' else Marker.CUBE
            out.add('floor', kind, _pose(s.x, s.y, height / 2, s.yaw), (s.sx, s.sy, height),
                    _colour(KIND_COLOURS[s.kind]))
            if s.kind in ('room', 'corridor'):
                out.text('floor', s.x, s.y + s.sy / 2 - 0.8, 0.1, s.name, 0.35)
    for name, r in sorted(scene.robots.items()):
        if not r.placed:
            continue
        colour = _colour(ROLE_COLOURS.get(r.role, (0.95, 0.5, 0.1)))
        out.add('robots', Marker.ARROW, _pose(r.x, r.y, ROBOT_Z, r.yaw), (0.8, 0.3, 0.3), colour)
        out.text('robot_labels', r.x, r.y, ROBOT_Z + 0.6, r.label)
    for hcw_id, h in sorted(scene.hcws.items()):
        if math.isnan(h.x) or math.isnan(h.y):
            continue
        out.add('hcws', Marker.SPHERE, _pose(h.x, h.y, HCW_Z), (0.45, 0.45, 0.45),
                _colour(AVAILABILITY_COLOURS.get(h.availability, (0.4, 0.4, 0.4))))
        out.text('hcw_labels', h.x, h.y, HCW_Z + 0.5, h.label, 0.3)
    for _, c in sorted(scene.cases.items()):
        tile = case_tile(floor, c)
        if tile is None:
            continue
        x, y, sx, sy, alpha = tile
        out.add('cases', Marker.CUBE, _pose(x, y, 0.04), (sx, sy, 0.04),
                _colour(ESI_COLOURS.get(c.esi_level, (0.6, 0.6, 0.6)), alpha))
        out.text('cases', x, y, 0.3, c.label())
    red = _colour(ESCALATION_COLOUR)
    for e in scene.open_escalations():
        for x, y, z, d in escalation_rings(scene, floor, e):
            out.add('escalations', Marker.CYLINDER, _pose(x, y, z), (d, d, 0.05), red)
    return out.array
