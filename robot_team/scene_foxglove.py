"""The scene and the team's events as Foxglove messages (``foxglove-sdk``): ``SceneUpdate`` and ``Log``.

Foxglove's well-known schemas (``foxglove.SceneUpdate``, ``foxglove.Log``; protobuf) come from
``foxglove.messages``: no schema is copied here. Everything is in the ``map`` frame (REP-105),
m and rad (REP-103), z up from the floor.

Entities (``SceneEntity.id``), each with metadata (``KeyValuePair``) a panel or script can read:

- ``floor``: walls (grey boxes), rooms (flat tiles by kind), corridors, doors (green gaps), badge
  readers (discs of their read radius), docks, with the rooms' names; written once;
- ``robot/<name>``: a disc and an arrow along the heading, labelled with role, task and case
  (metadata ``role``, ``task_id``, ``task_type``, ``task_status``, ``case_id``, ``x``, ``y``, ``yaw``);
- ``hcw/<id>``: a sphere coloured by availability, labelled with whom they follow
  (metadata ``availability``, ``state``, ``robot``, ``following``);
- ``case/<case_id>``: a tile on the patient's room coloured by ESI level, labelled with the
  case's state (metadata ``room``, ``esi_level``, ``state``);
- ``escalation/<id>``: a red ring on its room and over its robot while it is open; deleted
  (``SceneEntityDeletion``) once resolved or expired.

:func:`write_foxglove` writes a finished run's scene over time and its events as ``Log``
messages through an MCAP writer of ``foxglove.open_mcap`` (the recorder adds its
``/team/events`` channel to the same file); :class:`LiveScene` logs the live scene on
channels a ``foxglove.start_server`` WebSocket server serves.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import foxglove
import numpy as np
from foxglove.channels import LogChannel, SceneUpdateChannel
from foxglove.messages import (ArrowPrimitive, Color, CubePrimitive, CylinderPrimitive, KeyValuePair, Log, LogLevel,
                               Pose, Quaternion, SceneEntity, SceneEntityDeletion, SceneEntityDeletionType,
                               SceneUpdate, SpherePrimitive, TextPrimitive, Timestamp, Vector3)

from robot_team.events import EventKind, TeamEventModel
from robot_team.floor import Floor
from robot_team.names import MAP_FRAME, Robot
from robot_team.rostime import s_to_time
from robot_team.scene import Sample, Scene, SceneState, floor_geometry

SCENE_TOPIC = 'team/scene'
"""The Foxglove ``SceneUpdate`` channel (in the team's namespace: ``/team/scene``)."""
LOG_TOPIC = 'team/log'
"""The Foxglove ``Log`` channel of the team's events (``/team/log``)."""
ROBOT_Z = 0.3      # m: height of a robot's disc and arrow
HCW_Z = 0.9        # m: height of an HCW's sphere

_KIND_COLOURS = {'wall': (0.45, 0.45, 0.5, 1.0), 'room': (0.85, 0.88, 0.95, 0.6),
                 'corridor': (0.95, 0.95, 0.9, 0.4), 'door': (0.2, 0.7, 0.3, 0.9),
                 'reader': (0.2, 0.4, 0.9, 0.25), 'dock': (0.3, 0.3, 0.3, 0.8)}
_KIND_HEIGHTS = {'wall': 2.5, 'room': 0.02, 'corridor': 0.01, 'door': 0.05, 'reader': 0.03, 'dock': 0.05}
ROLE_COLOURS = {Robot.NAVIGATION.value: (0.1, 0.45, 0.85), Robot.INFO_COLLECTION.value: (0.55, 0.3, 0.75),
                Robot.DISPLAY.value: (0.0, 0.6, 0.6)}
"""Each robot role's colour (r, g, b in 0..1); other roles are orange."""
AVAILABILITY_COLOURS = {'available': (0.2, 0.7, 0.3), 'busy': (0.95, 0.6, 0.1), 'off_shift': (0.5, 0.5, 0.5)}
ESI_COLOURS = {1: (0.8, 0.1, 0.1), 2: (0.95, 0.45, 0.1), 3: (0.95, 0.8, 0.15), 4: (0.3, 0.7, 0.3),
               5: (0.3, 0.5, 0.9)}
"""Colours of ESI levels 1 (resuscitation) .. 5 (non-urgent)."""
ERROR_KINDS = {EventKind.NODE_CRASHED.value, EventKind.FALSE_COMPLETION.value, EventKind.WORKFLOW_VIOLATION.value,
               EventKind.INPUT_ERROR.value, EventKind.BRAIN_ERROR.value, EventKind.LLM_ERROR.value,
               EventKind.REPORT_REJECTED.value, EventKind.TOOL_REFUSED.value, EventKind.INVALID_CALL.value}
WARNING_KINDS = {EventKind.ESCALATION.value, EventKind.ESCALATION_REQUESTED.value, EventKind.DEADLINE_MISSED.value,
                 EventKind.TEAM_HELD.value, EventKind.ROBOT_LOST.value, EventKind.DELEGATION_REFUSED.value,
                 EventKind.ESCALATION_EXPIRED.value, EventKind.PATIENT_UNSERVED.value, EventKind.SAFE_DEFAULT.value}


def stamp(t: float) -> Timestamp:
    """Return ROS time ``t`` (s, >= 0) as a Foxglove ``Timestamp``."""
    return Timestamp.from_epoch_secs(max(float(t), 0.0))


def _pose(x: float, y: float, z: float = 0.0, yaw: float = 0.0) -> Pose:
    return Pose(position=Vector3(x=float(x), y=float(y), z=float(z)),
                orientation=Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2)))


def _colour(rgb: Sequence[float], a: float = 1.0) -> Color:
    r, g, b = rgb[:3]
    return Color(r=float(r), g=float(g), b=float(b), a=float(rgb[3]) if len(rgb) > 3 else a)


def _text(x: float, y: float, z: float, text: str, size: float = 12.0) -> TextPrimitive:
    return TextPrimitive(pose=_pose(x, y, z), billboard=True, font_size=size, scale_invariant=True,
                         color=_colour((0.05, 0.05, 0.05)), text=text)


def _meta(**values) -> list[KeyValuePair]:
    return [KeyValuePair(key=k, value=str(v)) for k, v in values.items()]


def floor_entity(floor: Floor, t: float = 0.0) -> SceneEntity:
    """Return the floor's static geometry (:func:`robot_team.scene.floor_geometry`) as the ``floor`` entity."""
    cubes, cylinders, texts = [], [], []
    for s in floor_geometry(floor):
        height = _KIND_HEIGHTS[s.kind] if s.kind != 'wall' else floor.wall_height
        colour = _colour(_KIND_COLOURS[s.kind])
        if s.kind == 'reader':
            cylinders.append(CylinderPrimitive(pose=_pose(s.x, s.y, height / 2), size=Vector3(x=s.sx, y=s.sy, z=height),
                                               bottom_scale=1.0, top_scale=1.0, color=colour))
            continue
        cubes.append(CubePrimitive(pose=_pose(s.x, s.y, height / 2, s.yaw), size=Vector3(x=s.sx, y=s.sy, z=height),
                                   color=colour))
        if s.kind in ('room', 'corridor'):
            texts.append(_text(s.x, s.y + s.sy / 2 - 0.8, 0.1, s.name, 11.0))
    return SceneEntity(timestamp=stamp(t), frame_id=MAP_FRAME, id='floor', cubes=cubes, cylinders=cylinders,
                       texts=texts, metadata=_meta(name=floor.name, rooms=len(floor.rooms)))


def robot_entity(scene: Scene, name: str) -> SceneEntity:
    """Return robot ``name`` of ``scene`` as its ``robot/<name>`` entity (it must have a pose)."""
    r = scene.robots[name]
    colour = _colour(ROLE_COLOURS.get(r.role, (0.95, 0.5, 0.1)))
    label = r.name if not r.task_id else f'{r.name}\n{r.task_id} {r.task_status} ({r.case_id or "-"})'
    return SceneEntity(
        timestamp=stamp(r.stamp_s), frame_id=MAP_FRAME, id=f'robot/{name}',
        cylinders=[CylinderPrimitive(pose=_pose(r.x, r.y, ROBOT_Z / 2), size=Vector3(x=0.6, y=0.6, z=ROBOT_Z),
                                     bottom_scale=1.0, top_scale=1.0, color=colour)],
        arrows=[ArrowPrimitive(pose=_pose(r.x, r.y, ROBOT_Z + 0.05, r.yaw), shaft_length=0.5, shaft_diameter=0.08,
                               head_length=0.25, head_diameter=0.2, color=colour)],
        texts=[_text(r.x, r.y, ROBOT_Z + 0.6, label)],
        metadata=_meta(role=r.role, x=r.x, y=r.y, yaw=r.yaw, task_id=r.task_id, task_type=r.task_type,
                       task_status=r.task_status, case_id=r.case_id, room=r.room))


def hcw_entity(scene: Scene, hcw_id: str) -> SceneEntity:
    """Return HCW ``hcw_id`` of ``scene`` as its ``hcw/<id>`` entity."""
    h = scene.hcws[hcw_id]
    label = f'#{h.hcw_id}' + (f' -> {h.following}' if h.following else '')
    return SceneEntity(
        timestamp=stamp(h.stamp_s), frame_id=MAP_FRAME, id=f'hcw/{hcw_id}',
        spheres=[SpherePrimitive(pose=_pose(h.x, h.y, HCW_Z), size=Vector3(x=0.45, y=0.45, z=0.45),
                                 color=_colour(AVAILABILITY_COLOURS.get(h.availability, (0.4, 0.4, 0.4))))],
        texts=[_text(h.x, h.y, HCW_Z + 0.5, label, 10.0)],
        metadata=_meta(x=h.x, y=h.y, area=h.area, specialty=h.specialty, availability=h.availability,
                       state=h.state, robot=h.robot, following=h.following))


def case_entity(scene: Scene, floor: Floor, case_id: str) -> SceneEntity | None:
    """Return a case as its ``case/<id>`` entity on its room (None if the room is not on ``floor``)."""
    c = scene.cases[case_id]
    room = floor.rooms.get(c.room)
    if room is None:
        return None
    alpha = 0.25 if c.state == 'closed' else 0.7
    (x, y), (sx, sy) = room.center, room.size
    return SceneEntity(
        timestamp=stamp(scene.t_s), frame_id=MAP_FRAME, id=f'case/{case_id}',
        cubes=[CubePrimitive(pose=_pose(x, y, 0.04), size=Vector3(x=sx * 0.8, y=sy * 0.8, z=0.04),
                             color=_colour(ESI_COLOURS.get(c.esi_level, (0.6, 0.6, 0.6)), alpha))],
        texts=[_text(x, y, 0.3, f'{c.patient_id or c.case_id} ESI {c.esi_level or "?"}: {c.state}')],
        metadata=_meta(room=c.room, patient_id=c.patient_id, esi_level=c.esi_level, state=c.state))


def escalation_entity(scene: Scene, floor: Floor, escalation_id: str) -> SceneEntity | None:
    """Return an open escalation as red rings on its room and robot (None if it points at neither)."""
    e = scene.escalations[escalation_id]
    ring = Vector3(x=1.6, y=1.6, z=0.05)
    red = _colour((0.85, 0.1, 0.1), 0.8)
    cylinders = []
    room = floor.rooms.get(e.room)
    if room is not None:
        cylinders.append(CylinderPrimitive(pose=_pose(*room.center, 0.1), size=Vector3(x=3.0, y=3.0, z=0.05),
                                           bottom_scale=1.0, top_scale=1.0, color=red))
    robot = scene.robots.get(e.robot)
    if robot is not None and robot.placed:
        cylinders.append(CylinderPrimitive(pose=_pose(robot.x, robot.y, 0.05), size=ring, bottom_scale=1.0,
                                           top_scale=1.0, color=red))
    if not cylinders:
        return None
    return SceneEntity(timestamp=stamp(scene.t_s), frame_id=MAP_FRAME, id=f'escalation/{escalation_id}',
                       cylinders=cylinders, metadata=_meta(state=e.state, kind=e.kind, robot=e.robot, room=e.room,
                                                           task_id=e.task_id, reason=e.reason))


def scene_update(scene: Scene, floor: Floor | None, *, with_floor: bool = False,
                 robots: Iterable[str] | None = None, hcws: Iterable[str] | None = None,
                 cases: bool = True) -> SceneUpdate:
    """Return a ``SceneUpdate`` of ``scene``: the given robots and HCWs (None: all), cases and escalations.

    Resolved or expired escalations become deletions; ``with_floor`` adds the ``floor`` entity.
    """
    entities, deletions = [], []
    if with_floor and floor is not None:
        entities.append(floor_entity(floor, scene.t_s))
    for name in scene.robots if robots is None else robots:
        if scene.robots[name].placed:
            entities.append(robot_entity(scene, name))
    for hcw_id in scene.hcws if hcws is None else hcws:
        entities.append(hcw_entity(scene, hcw_id))
    if cases and floor is not None:
        for case_id in scene.cases:
            entity = case_entity(scene, floor, case_id)
            if entity is not None:
                entities.append(entity)
        for esc in scene.escalations.values():
            entity = escalation_entity(scene, floor, esc.escalation_id) if esc.is_open else None
            if entity is not None:
                entities.append(entity)
            elif not esc.is_open:
                deletions.append(SceneEntityDeletion(timestamp=stamp(scene.t_s),
                                                     type=SceneEntityDeletionType.MatchingId,
                                                     id=f'escalation/{esc.escalation_id}'))
    return SceneUpdate(entities=entities, deletions=deletions)


def log_message(event: TeamEventModel) -> Log:
    """Return a team event as a Foxglove ``Log``: stamped in ROS time, named after its actor, level by kind."""
    level = (LogLevel.Error if event.kind in ERROR_KINDS else LogLevel.Warning if event.kind in WARNING_KINDS
             else LogLevel.Info)
    text = f'[{event.kind}] {event.summary}' + (f' ({event.reason})' if event.reason else '')
    return Log(timestamp=stamp(event.stamp_s), level=level, message=text, name=event.actor, file=event.target,
               line=event.seq)


def sim_to_wall(events: Sequence[TeamEventModel]):
    """Return a function mapping ROS time (s) to wall time (ns since the epoch), interpolated from the events.

    Foxglove plays a file by log time; the team's events are logged at wall time, so scene updates
    (stamped in sim time) are logged at the wall time the events say that sim time was reached.
    Without events, ROS time is returned as is (ns).
    """
    pairs = sorted((e.stamp_s, e.wall_time) for e in events)
    if not pairs:
        return lambda t: s_to_time(max(t, 0.0)).nanoseconds
    sims = np.array([p[0] for p in pairs])
    walls = np.maximum.accumulate(np.array([p[1] for p in pairs]))
    return lambda t: s_to_time(float(np.interp(t, sims, walls))).nanoseconds


_SCENE_KINDS = {EventKind.CASE_OPENED.value, EventKind.CASE_WAITING.value, EventKind.CASE_CLOSED.value,
                EventKind.DELEGATION.value, EventKind.TASK_REPORT.value, EventKind.ESCALATION.value,
                EventKind.ESCALATION_ACKNOWLEDGED.value, EventKind.HUMAN_DECISION.value,
                EventKind.ESCALATION_EXPIRED.value}


def write_foxglove(context: foxglove.Context, events: Sequence[TeamEventModel], samples: Sequence[Sample],
                   floor: Floor | None, prefix: str = '/') -> int:
    """Log a finished run's scene (``SceneUpdate``) and events (``Log``) on ``context``'s channels; return the count.

    The caller has opened a sink on ``context`` (``foxglove.open_mcap(path, context=context)``).
    Channels: ``<prefix>team/scene`` and ``<prefix>team/log``. The floor comes first; then each
    sample updates its robot or HCW at its time, and each event that changes a case, a task or an
    escalation updates the robots, cases and escalations.
    """
    scene_channel = SceneUpdateChannel(prefix + SCENE_TOPIC, context=context)
    log_channel = LogChannel(prefix + LOG_TOPIC, context=context)
    wall = sim_to_wall(events)
    state = SceneState(floor)
    items = sorted([(s.t, 0, i, s) for i, s in enumerate(samples)]
                   + [(e.stamp_s, 1, i, e) for i, e in enumerate(events)], key=lambda item: item[:3])
    start = items[0][0] if items else 0.0
    scene_channel.log(scene_update(state.snapshot(), floor, with_floor=True), log_time=wall(start))
    written = 1
    for t, _, _, item in items:
        if isinstance(item, Sample):
            state.take(item)
            snapshot = state.snapshot()
            one = [item.name]
            update = (scene_update(snapshot, floor, robots=one, hcws=(), cases=False) if item.what == 'robot'
                      else scene_update(snapshot, floor, robots=(), hcws=one, cases=False))
            scene_channel.log(update, log_time=wall(t))
        else:
            log_channel.log(log_message(item), log_time=int(item.wall_time * 1e9))
            if item.kind not in _SCENE_KINDS:
                written += 1
                continue
            state.apply(item)
            scene_channel.log(scene_update(state.snapshot(), floor, hcws=()), log_time=wall(t))
        written += 1
    return written


class LiveScene:
    """Log a live :class:`~robot_team.scene.SceneState` to Foxglove channels (a WebSocket server's), on demand.

    Parameters
    ----------
    scene
        The state a feed keeps up to date.
    context
        The Foxglove context the server serves.
    prefix
        The team's namespace, ending in ``/``.
    """

    def __init__(self, scene: SceneState, context: foxglove.Context, prefix: str = '/'):
        self.scene = scene
        self.scene_channel = SceneUpdateChannel(prefix + SCENE_TOPIC, context=context)
        self.log_channel = LogChannel(prefix + LOG_TOPIC, context=context)
        self._version = -1

    def publish(self) -> bool:
        """Log the whole scene (the floor included) if it changed since the last call; return whether it did."""
        version = self.scene.version
        if version == self._version:
            return False
        self._version = version
        self.scene_channel.log(scene_update(self.scene.snapshot(), self.scene.floor, with_floor=True))
        return True

    def log_event(self, event: TeamEventModel) -> None:
        """Log one team event on the ``Log`` channel."""
        self.log_channel.log(log_message(event))
