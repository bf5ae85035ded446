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
channels a ``foxglove.start_server`` WebSocket server serves, and :class:`FoxgloveServer`
(``robot-team run --foxglove PORT``) runs that server, on loopback unless told otherwise.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Iterable, Sequence

import foxglove
import foxglove.layouts as fl
import numpy as np
from foxglove.channels import LogChannel, SceneUpdateChannel
from foxglove.messages import (ArrowPrimitive, Color, CubePrimitive, CylinderPrimitive, KeyValuePair, Log, LogLevel,
                               Pose, Quaternion, SceneEntity, SceneEntityDeletion, SceneEntityDeletionType,
                               SceneUpdate, SpherePrimitive, TextPrimitive, Timestamp, Vector3)

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.floor import Floor
from robot_team.contracts.names import MAP_FRAME, RobotId
from robot_team.ros.stamps import s_to_time
from robot_team.contracts.scene import (
    AVAILABILITY_COLOURS, ESCALATION_COLOUR, ESI_COLOURS, HCW_Z, KIND_COLOURS, KIND_HEIGHTS, ROBOT_Z, ROLE_COLOURS,
    Sample, Scene, SceneState, case_tile, escalation_rings, floor_geometry)

SCENE_TOPIC = 'team/scene'
"""The Foxglove ``SceneUpdate`` channel (in the team's namespace: ``/team/scene``)."""
LOG_TOPIC = 'team/log'
"""The Foxglove ``Log`` channel of the team's events (``/team/log``)."""
CASES_TOPIC = 'team/cases'
"""The patients' cases as a table (JSON, :data:`CASES_SCHEMA`; Foxglove's Table panel shows ``/team/cases.cases``)."""
CASES_SCHEMA = {
    'type': 'object', 'title': 'robot_team.Cases',
    'properties': {'cases': {'type': 'array', 'items': {'type': 'object', 'properties': {
        'case_id': {'type': 'string'}, 'patient_id': {'type': 'string'}, 'room': {'type': 'string'},
        'esi_level': {'type': 'integer'}, 'state': {'type': 'string'}, 'tasks': {'type': 'string'},
        'open_escalations': {'type': 'string'}}}}}}
"""The JSON schema of a ``team/cases`` message."""
LAYOUT_FILE = 'config/foxglove/robot_team.json'
"""The Foxglove layout in the repository and the share folder (:func:`layout`; ``scripts/gen_foxglove_layout.py``)."""
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
    """Return the floor's static geometry as the ``floor`` entity.

    The geometry is :func:`~robot_team.contracts.scene.floor_geometry`'s.
    """
    cubes, cylinders, texts = [], [], []
    for s in floor_geometry(floor):
        height = KIND_HEIGHTS[s.kind] if s.kind != 'wall' else floor.wall_height
        colour = _colour(KIND_COLOURS[s.kind])
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


def robot_entity(scene: Scene, robot: RobotId) -> SceneEntity:
    """Return robot ``robot`` of ``scene`` as its ``robot/<robot>`` entity (it must have a pose)."""
    r = scene.robots[robot]
    colour = _colour(ROLE_COLOURS.get(r.role, (0.95, 0.5, 0.1)))
    return SceneEntity(
        timestamp=stamp(r.stamp_s), frame_id=MAP_FRAME, id=f'robot/{robot}',
        cylinders=[CylinderPrimitive(pose=_pose(r.x, r.y, ROBOT_Z / 2), size=Vector3(x=0.6, y=0.6, z=ROBOT_Z),
                                     bottom_scale=1.0, top_scale=1.0, color=colour)],
        arrows=[ArrowPrimitive(pose=_pose(r.x, r.y, ROBOT_Z + 0.05, r.yaw), shaft_length=0.5, shaft_diameter=0.08,
                               head_length=0.25, head_diameter=0.2, color=colour)],
        texts=[_text(r.x, r.y, ROBOT_Z + 0.6, r.label)],
        metadata=_meta(role=r.role, x=r.x, y=r.y, yaw=r.yaw, task_id=r.task_id, task_type=r.task_type,
                       task_status=r.task_status, case_id=r.case_id, room=r.room))


def hcw_entity(scene: Scene, hcw_id: str) -> SceneEntity:
    """Return HCW ``hcw_id`` of ``scene`` as its ``hcw/<id>`` entity."""
    h = scene.hcws[hcw_id]
    return SceneEntity(
        timestamp=stamp(h.stamp_s), frame_id=MAP_FRAME, id=f'hcw/{hcw_id}',
        spheres=[SpherePrimitive(pose=_pose(h.x, h.y, HCW_Z), size=Vector3(x=0.45, y=0.45, z=0.45),
                                 color=_colour(AVAILABILITY_COLOURS.get(h.availability, (0.4, 0.4, 0.4))))],
        texts=[_text(h.x, h.y, HCW_Z + 0.5, h.label, 10.0)],
        metadata=_meta(x=h.x, y=h.y, area=h.area, specialty=h.specialty, availability=h.availability,
                       state=h.state, robot=h.robot, following=h.following))


def case_entity(scene: Scene, floor: Floor, case_id: str) -> SceneEntity | None:
    """Return a case as its ``case/<id>`` entity on its room (None if the room is not on ``floor``)."""
    c = scene.cases[case_id]
    tile = case_tile(floor, c)
    if tile is None:
        return None
    x, y, sx, sy, alpha = tile
    return SceneEntity(
        timestamp=stamp(scene.t_s), frame_id=MAP_FRAME, id=f'case/{case_id}',
        cubes=[CubePrimitive(pose=_pose(x, y, 0.04), size=Vector3(x=sx, y=sy, z=0.04),
                             color=_colour(ESI_COLOURS.get(c.esi_level, (0.6, 0.6, 0.6)), alpha))],
        texts=[_text(x, y, 0.3, c.label())],
        metadata=_meta(room=c.room, patient_id=c.patient_id, esi_level=c.esi_level, state=c.state))


def escalation_entity(scene: Scene, floor: Floor, escalation_id: str) -> SceneEntity | None:
    """Return an open escalation as red rings on its room and robot (None if it points at neither)."""
    e = scene.escalations[escalation_id]
    red = _colour(ESCALATION_COLOUR[:3], ESCALATION_COLOUR[3])
    cylinders = [CylinderPrimitive(pose=_pose(x, y, z), size=Vector3(x=d, y=d, z=0.05), bottom_scale=1.0,
                                   top_scale=1.0, color=red) for x, y, z, d in escalation_rings(scene, floor, e)]
    if not cylinders:
        return None
    return SceneEntity(timestamp=stamp(scene.t_s), frame_id=MAP_FRAME, id=f'escalation/{escalation_id}',
                       cylinders=cylinders, metadata=_meta(state=e.state, kind=e.kind, robot=e.robot, room=e.room,
                                                           task_id=e.task_id, reason=e.reason))


def scene_update(scene: Scene, floor: Floor | None, *, with_floor: bool = False,
                 robots: Iterable[RobotId] | None = None, hcws: Iterable[str] | None = None,
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


def cases_message(scene: Scene) -> dict:
    """Return the scene's cases as a ``team/cases`` message (:data:`CASES_SCHEMA`), in the order they came."""
    rows = []
    for c in scene.cases.values():
        tasks = [f'{t.task_id} {t.status}' for t in scene.tasks.values() if t.case_id == c.case_id]
        open_escalations = [e.escalation_id for e in scene.open_escalations()
                            if e.case_id == c.case_id or (e.room and e.room == c.room)]
        rows.append({'case_id': c.case_id, 'patient_id': c.patient_id, 'room': c.room, 'esi_level': c.esi_level,
                     'state': c.state, 'tasks': ', '.join(tasks), 'open_escalations': ', '.join(open_escalations)})
    return {'cases': rows}


def layout():
    """Return the repository's Foxglove layout: the 3D scene, the events' log and the table of cases.

    Built with ``foxglove.layouts``: a 3D panel on ``/team/scene`` in the ``map`` frame, beside a
    Log panel on ``/team/log`` above a Table panel on ``/team/cases.cases``. For a team in a
    namespace, change the topics in Foxglove's panel settings.
    """
    three_d = fl.ThreeDeePanel(title='ED floor', config=fl.ThreeDeeConfig(
        fixed_frame=MAP_FRAME, follow_tf=MAP_FRAME, follow_mode='follow-none',
        topics={'/' + SCENE_TOPIC: fl.BaseRendererSceneUpdateTopicSettings(visible=True)}))
    log = fl.LogPanel(title='Team events', config=fl.LogConfig(topic_to_render='/' + LOG_TOPIC, show_name=True))
    table = fl.TablePanel(title='Cases', config=fl.TableConfig(topic_path='/' + CASES_TOPIC + '.cases'))
    return fl.Layout(content=fl.SplitContainer(direction='row', items=[
        fl.SplitItem(proportion=2, content=three_d),
        fl.SplitItem(proportion=1, content=fl.SplitContainer(direction='column', items=[
            fl.SplitItem(proportion=2, content=log), fl.SplitItem(proportion=1, content=table)]))]))


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
    """Log a finished run's scene (``SceneUpdate``), events (``Log``) and cases on ``context``'s channels.

    The caller has opened a sink on ``context`` (``foxglove.open_mcap(path, context=context)``).
    Channels: ``<prefix>team/scene``, ``<prefix>team/log`` and ``<prefix>team/cases``. The floor
    comes first; then each sample updates its robot or HCW at its time, and each event that
    changes a case, a task or an escalation updates the robots, cases and escalations (and the
    table of cases). Returns how many scene and log messages were logged.
    """
    scene_channel = SceneUpdateChannel(prefix + SCENE_TOPIC, context=context)
    log_channel = LogChannel(prefix + LOG_TOPIC, context=context)
    cases_channel = foxglove.Channel(prefix + CASES_TOPIC, schema=CASES_SCHEMA, context=context)
    wall = sim_to_wall(events)
    state = SceneState(floor)
    items = sorted([(s.t, 0, i, s) for i, s in enumerate(samples)]
                   + [(e.stamp_s, 1, i, e) for i, e in enumerate(events)], key=lambda item: item[:3])
    start = items[0][0] if items else 0.0
    scene_channel.log(scene_update(state.view(), floor, with_floor=True), log_time=wall(start))
    written = 1
    for t, _, _, item in items:
        if isinstance(item, Sample):
            state.take(item)
            snapshot = state.view()   # (read before the next change)
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
            snapshot = state.view()   # (read before the next change)
            scene_channel.log(scene_update(snapshot, floor, hcws=()), log_time=wall(t))
            cases_channel.log(cases_message(snapshot), log_time=wall(t))
        written += 1
    return written


LIVE_RATE_HZ = 10.0
"""How often the live server checks the scene for changes, per wall second."""
REPEAT_S = 1.0
"""The live scene is sent again at least this often (wall s), changed or not."""


class LiveScene:
    """Log a live scene to Foxglove channels (a WebSocket server's), on demand.

    The scene is a :class:`~robot_team.contracts.scene.SceneState`.

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
        self.cases_channel = foxglove.Channel(prefix + CASES_TOPIC, schema=CASES_SCHEMA, context=context)
        self._version = -1
        self._published_at = -math.inf

    def publish(self, every_s: float = REPEAT_S) -> bool:
        """Log the whole scene (the floor included) if it changed, or ``every_s`` wall s passed; return whether it did.

        The repeat lets a client that connects later (a WebSocket server keeps no history) see
        the floor even while nothing moves.
        """
        version = self.scene.version
        if version == self._version and time.monotonic() - self._published_at < every_s:
            return False
        self._version, self._published_at = version, time.monotonic()
        snapshot = self.scene.snapshot()
        self.scene_channel.log(scene_update(snapshot, self.scene.floor, with_floor=True))
        self.cases_channel.log(cases_message(snapshot))
        return True

    def log_event(self, event: TeamEventModel) -> None:
        """Log one team event on the ``Log`` channel."""
        self.log_channel.log(log_message(event))


class FoxgloveServer:
    """The live scene and events over Foxglove's WebSocket protocol (``foxglove.start_server``).

    Foxglove (the app, ``ws://HOST:PORT``) sees ``<prefix>team/scene`` (``SceneUpdate``, the whole
    scene at most :data:`LIVE_RATE_HZ` times a wall second while it changes, else every
    :data:`REPEAT_S`) and ``<prefix>team/log`` (each event as a ``Log``, via :meth:`log_event`).

    Parameters
    ----------
    scene
        The live scene (the recorder's).
    port
        TCP port (0: any free one, see :attr:`port`).
    host
        Address to bind: loopback by default; anything else serves the floor to the network.
    prefix
        The team's namespace, ending in ``/``.

    Raises
    ------
    RuntimeError
        If the server cannot start (the port is taken).
    """

    def __init__(self, scene: SceneState, port: int, host: str = '127.0.0.1', prefix: str = '/'):
        self.context = foxglove.Context()
        self.live = LiveScene(scene, self.context, prefix)
        self.server = foxglove.start_server(name='robot_team', host=host, port=int(port), context=self.context)
        self.port = int(self.server.port)
        """The port the server listens on."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='foxglove-live', daemon=True)
        self._thread.start()

    def log_event(self, event: TeamEventModel) -> None:
        """Send one team event as a ``Log`` (any thread)."""
        self.live.log_event(event)

    def _run(self) -> None:
        while not self._stop.wait(1.0 / LIVE_RATE_HZ):
            self.live.publish()

    def stop(self) -> None:
        """Stop sending and close the server."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.server.stop()
