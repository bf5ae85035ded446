"""The floor as a person watching the team sees it: robots, HCWs, patients' cases, escalations.

:class:`SceneState` joins three streams into one picture of the floor, with no rclpy:

- **robot poses** (:meth:`SceneState.observe_robot`): what each robot's ``amcl_pose`` (or
  ``odom`` where ``odom`` is ``map``) says, map frame (REP-105), m and rad (REP-103);
- **HCW locations** (:meth:`SceneState.observe_staff`): what the RTLS streams on
  ``ed/rtls/locations`` (``robot_team/msg/StaffLocation``), with whom each HCW follows;
- **team events** (:meth:`SceneState.apply`, :class:`robot_team.contracts.events.TeamEventModel`): cases
  opened, waiting and closed (room, ESI level), delegations and reports (each robot's task and
  case), tool calls, escalations opened and resolved (their task's robot and room).

The static geometry (rooms, doors, corridors, badge readers, docks) comes from the floor
description (:func:`robot_team.contracts.floor.load_floor`); :func:`floor_geometry` lists it as plain shapes.
Every update is stamped with ROS time (sim time in simulated runs), s. The state keeps, when
asked (``keep_samples``), every pose and location it took as a :class:`Sample`, so that a
recorder can write the scene over time (``scene.jsonl``, Foxglove ``SceneUpdate``) and
:class:`SceneTimeline` can rebuild the scene at any sim time of a finished run (replay).

Thread-safe: ROS callbacks update it while a GUI thread reads :meth:`SceneState.snapshot`.
"""

from __future__ import annotations

import copy
import json
import math
import threading
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Sequence

from robot_team.contracts.config import ConfigError, load_scenario
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.floor import DEFAULT_FLOOR, Floor, floor_path, load_floor
from robot_team.contracts.jsonl import read_lines
from robot_team.contracts.names import HOSPITAL_SYSTEMS, NO_ROBOT, RobotId, Role, role_name

SAMPLE_PERIOD_S = 0.1
"""Least ROS time between two kept samples of one robot or HCW that moves, s (10 Hz)."""
MOVED_M = 0.01
"""A robot or HCW that moved less than this (m) and turned less than :data:`TURNED_RAD` keeps no new sample."""
TURNED_RAD = 0.01
TOOL_CALLS_KEPT = 8
"""Most recent tool calls kept per robot."""

CaseState = Literal['waiting', 'open', 'closed']


@dataclass
class RobotView:
    """One robot: pose in ``map`` (``x``, ``y`` m, ``yaw`` rad, at ``stamp_s``) and what it works on."""

    name: RobotId
    x: float = math.nan
    y: float = math.nan
    yaw: float = 0.0
    stamp_s: float = math.nan
    task_id: str = ''
    task_type: str = ''
    task_status: str = ''         # running | success | failure ('' none yet)
    case_id: str = ''
    room: str = ''                # the task's room
    tool_calls: list[str] = field(default_factory=list)   # latest last: "<tool> (<task_id>) ok|failed|..."

    @property
    def placed(self) -> bool:
        """Whether a pose has been seen."""
        return not math.isnan(self.x)

    @property
    def role(self) -> str:
        """The robot's role: ``navigation_robot`` for ``navigation_robot_2`` too."""
        return role_name(self.name)

    @property
    def label(self) -> str:
        """What every view writes beside the robot: its name, then its task, status and case."""
        if not self.task_id:
            return self.name
        return f'{self.name}\n{self.task_id} {self.task_status} ({self.case_id or "-"})'


@dataclass
class HcwView:
    """One HCW as the RTLS streams them: position (m, map), availability, and whom they follow."""

    hcw_id: str
    x: float = math.nan
    y: float = math.nan
    yaw: float = 0.0
    stamp_s: float = math.nan
    area: str = ''
    specialty: str = ''
    availability: str = ''        # available | busy | off_shift
    detail: str = ''
    state: str = ''               # idle | waiting | following | entering | arrived
    robot: RobotId = NO_ROBOT               # the robot they wait for or follow

    @property
    def following(self) -> str:
        """The robot this HCW follows now ('' none)."""
        return self.robot if self.state == 'following' else ''

    @property
    def label(self) -> str:
        """What every view writes beside the HCW: ``#<id>``, and ``-> <robot>`` while following one."""
        return f'#{self.hcw_id}' + (f' -> {self.following}' if self.following else '')


@dataclass
class CaseView:
    """A patient's case: the room, ESI level (1 most urgent .. 5), and its state."""

    case_id: str
    patient_id: str = ''
    room: str = ''
    esi_level: int = 0
    state: CaseState = 'waiting'
    assigned_hcw_id: str = ''
    opened_s: float = math.nan
    closed_s: float = math.nan

    def label(self, sep: str = ' ') -> str:
        """What every view writes on the case's room: patient (else case ID), ``sep``, ESI level and state."""
        return f'{self.patient_id or self.case_id}{sep}ESI {self.esi_level or "?"}: {self.state}'


@dataclass
class TaskView:
    """A delegated task: its robot, type, room, HCW, case and status, with the robot's report."""

    task_id: str
    task_type: str = ''
    robot: RobotId = NO_ROBOT
    room: str = ''
    hcw_id: str = ''
    case_id: str = ''
    status: str = 'authorized'    # authorized | running | success | failure
    issue: str = ''
    summary: str = ''


@dataclass
class EscalationView:
    """An escalation and where it points: its task's robot and room ('' for a team-wide one)."""

    escalation_id: str
    state: str = 'open'           # open | acknowledged | resolved | expired
    kind: str = ''
    severity: str = ''
    task_id: str = ''
    robot: RobotId = NO_ROBOT
    room: str = ''
    case_id: str = ''
    reason: str = ''
    holds_team: bool = False

    @property
    def is_open(self) -> bool:
        """Whether a person still has to answer it."""
        return self.state in ('open', 'acknowledged')


@dataclass(frozen=True)
class Sample:
    """One kept observation at ROS time ``t`` (s): ``what`` is ``robot`` or ``hcw``, ``values`` its fields."""

    t: float
    what: Literal['robot', 'hcw']
    name: str
    values: dict

    def to_json(self) -> str:
        """Return the sample as one JSON line."""
        return json.dumps({'t': self.t, 'what': self.what, 'name': self.name, **self.values})

    @classmethod
    def from_json(cls, line: str) -> 'Sample':
        """Parse :meth:`to_json`'s output.

        Raises
        ------
        ValueError
            If the line is not JSON or lacks ``t``, ``what`` or ``name``.
        """
        d = json.loads(line)
        try:
            return cls(float(d.pop('t')), d.pop('what'), str(d.pop('name')), d)
        except KeyError as exc:
            raise ValueError(f'not a scene sample: missing {exc}') from None


@dataclass
class Scene:
    """A consistent copy of the scene (what :meth:`SceneState.snapshot` returns); ``t_s``: latest stamp seen, s."""

    t_s: float
    robots: dict[RobotId, RobotView]
    hcws: dict[str, HcwView]
    cases: dict[str, CaseView]
    tasks: dict[str, TaskView]
    escalations: dict[str, EscalationView]
    reports: dict[str, list[str]]   # robot -> its reports' one-line summaries, latest last

    def open_escalations(self) -> list[EscalationView]:
        """Return the escalations still open or acknowledged."""
        return [e for e in self.escalations.values() if e.is_open]

    def case_in(self, room: str) -> CaseView | None:
        """Return the latest case not closed in ``room``, else the latest closed one, else None."""
        cases = [c for c in self.cases.values() if c.room == room]
        live = [c for c in cases if c.state != 'closed']
        return (live or cases or [None])[-1]


class SceneState:
    """The live scene: updated from poses, RTLS locations and team events; read as :meth:`snapshot`.

    Parameters
    ----------
    floor
        The floor (static geometry); ``None`` for a scene without one yet (:attr:`floor` may be set later).
    robots
        Robots to show before their first pose (more appear as they are seen).
    keep_samples
        Keep every pose and location taken as a :class:`Sample` (:meth:`samples`), thinned to one
        per :data:`SAMPLE_PERIOD_S` per moving entity.
    """

    def __init__(self, floor: Floor | None = None, robots: Sequence[RobotId] = (), keep_samples: bool = False):
        self.floor = floor
        self._lock = threading.Lock()
        self._robots = {r: RobotView(r) for r in robots}
        self._hcws: dict[str, HcwView] = {}
        self._cases: dict[str, CaseView] = {}
        self._tasks: dict[str, TaskView] = {}
        self._escalations: dict[str, EscalationView] = {}
        self._reports: dict[str, list[str]] = {}
        self._keep = keep_samples
        self._samples: list[Sample] = []
        self._last_kept: dict[tuple[str, str], Sample] = {}
        self._t = 0.0
        self.version = 0
        """Incremented by every change (readers redraw when it moved)."""

    # --- updates ------------------------------------------------------------------------------

    def observe_robot(self, robot: RobotId, x: float, y: float, yaw: float, stamp_s: float) -> None:
        """Take a robot's pose: map frame, ``x``, ``y`` (m), ``yaw`` (rad), at ROS time ``stamp_s`` (s)."""
        with self._lock:
            view = self._robots.setdefault(robot, RobotView(robot))
            view.x, view.y, view.yaw, view.stamp_s = float(x), float(y), float(yaw), float(stamp_s)
            self._sample('robot', robot, stamp_s, {'x': view.x, 'y': view.y, 'yaw': view.yaw})

    def observe_staff(self, hcw_id: str, *, x: float, y: float, yaw: float = 0.0, stamp_s: float,
                      area: str = '', specialty: str = '', availability: str = '', detail: str = '',
                      state: str = '', robot: RobotId = NO_ROBOT) -> None:
        """Take one RTLS location of an HCW (fields as ``robot_team/msg/StaffLocation``; m, rad, s)."""
        values = {'x': float(x), 'y': float(y), 'yaw': float(yaw), 'area': area, 'specialty': specialty,
                  'availability': availability, 'detail': detail, 'state': state, 'robot': robot}
        with self._lock:
            view = self._hcws.setdefault(hcw_id, HcwView(hcw_id))
            for key, value in values.items():
                setattr(view, key, value)
            view.stamp_s = float(stamp_s)
            self._sample('hcw', hcw_id, stamp_s, values)

    def apply(self, event: TeamEventModel) -> None:
        """Take one team event: cases, tasks, tool calls, reports, escalations (other kinds are ignored)."""
        handler = _HANDLERS.get(event.kind)
        if handler is None:
            return
        with self._lock:
            handler(self, event, event.data)
            self._t = max(self._t, event.stamp_s)
            self.version += 1

    def apply_all(self, events: Iterable[TeamEventModel]) -> None:
        """Apply each event, in order."""
        for event in events:
            self.apply(event)

    def take(self, sample: Sample) -> None:
        """Apply a kept :class:`Sample` again (replay)."""
        v = sample.values
        if sample.what == 'robot':
            self.observe_robot(sample.name, v['x'], v['y'], v.get('yaw', 0.0), sample.t)
        else:
            self.observe_staff(sample.name, stamp_s=sample.t, **{k: v[k] for k in _STAFF_FIELDS if k in v})

    def _sample(self, what: str, name: str, t: float, values: dict) -> None:
        """Record a change (lock held): bump the version, keep a thinned sample if asked."""
        self._t = max(self._t, float(t))
        self.version += 1
        if not self._keep:
            return
        last = self._last_kept.get((what, name))
        if last is not None:
            moved = math.hypot(values['x'] - last.values['x'], values['y'] - last.values['y'])
            turned = abs(math.remainder(values['yaw'] - last.values['yaw'], math.tau))
            same = {k: v for k, v in values.items() if k not in ('x', 'y', 'yaw')} == {
                k: v for k, v in last.values.items() if k not in ('x', 'y', 'yaw')}
            if same and moved < MOVED_M and turned < TURNED_RAD:
                return
            if same and t - last.t < SAMPLE_PERIOD_S - 1e-9:
                return
        sample = Sample(float(t), what, name, dict(values))
        self._samples.append(sample)
        self._last_kept[(what, name)] = sample

    # --- reading ------------------------------------------------------------------------------

    def snapshot(self) -> Scene:
        """Return a consistent deep copy of the scene."""
        with self._lock:
            return Scene(self._t, copy.deepcopy(self._robots), copy.deepcopy(self._hcws),
                         copy.deepcopy(self._cases), copy.deepcopy(self._tasks),
                         copy.deepcopy(self._escalations), copy.deepcopy(self._reports))

    def view(self) -> Scene:
        """Return the scene as it is, not copied: for a reader that is also its only writer.

        A finished run's writer (:func:`robot_team.scene_foxglove.write_foxglove`) reads the scene
        between the changes it makes itself; a deep copy for each of a run's hundreds of samples
        cost it 0.1 s or more. The :class:`Scene` shares the state's objects: it changes with them,
        so read it before the next change and keep nothing of it. Other readers: :meth:`snapshot`.
        """
        with self._lock:
            return Scene(self._t, self._robots, self._hcws, self._cases, self._tasks, self._escalations,
                         self._reports)

    def samples(self) -> list[Sample]:
        """Return the kept samples, in the order taken (empty unless ``keep_samples``)."""
        with self._lock:
            return list(self._samples)

    # --- event handlers (lock held) -----------------------------------------------------------

    def _case(self, case_id: str) -> CaseView:
        return self._cases.setdefault(case_id, CaseView(case_id))

    def _on_case(self, event: TeamEventModel, d: dict) -> None:
        case = self._case(str(d.get('case_id', '')))
        case.patient_id = str(d.get('patient_id', case.patient_id) or case.case_id)
        case.room = str(d.get('room', case.room))
        case.esi_level = int(d.get('esi_level', case.esi_level) or 0)
        case.assigned_hcw_id = str(d.get('assigned_hcw_id', case.assigned_hcw_id))
        if event.kind == EventKind.CASE_OPENED.value:
            case.state, case.opened_s = 'open', event.stamp_s

    def _on_case_closed(self, event: TeamEventModel, d: dict) -> None:
        if d.get('case_id') and event.actor == 'supervisor':
            case = self._case(str(d['case_id']))
            case.state, case.closed_s = 'closed', event.stamp_s

    def _on_authorized(self, event: TeamEventModel, d: dict) -> None:
        task_id = str(d.get('task_id', ''))
        if task_id:
            task = self._tasks.setdefault(task_id, TaskView(task_id))
            task.task_type, task.robot = str(d.get('task_type', '')), str(d.get('robot', event.target))
            task.hcw_id = str(d.get('hcw_id', task.hcw_id))
            task.case_id = str(d.get('case_id', task.case_id))

    def _on_delegation(self, event: TeamEventModel, d: dict) -> None:
        self._on_authorized(event, d)
        task = self._tasks.get(str(d.get('task_id', '')))
        if task is None:
            return
        task.room = str(d.get('room', task.room))
        robot = self._robots.setdefault(task.robot, RobotView(task.robot))
        robot.task_id, robot.task_type, robot.task_status = task.task_id, task.task_type, 'running'
        robot.case_id, robot.room = task.case_id, task.room
        task.status = 'running'

    def _on_report(self, event: TeamEventModel, d: dict) -> None:
        task = self._tasks.setdefault(str(d.get('task_id', event.target)), TaskView(str(d.get('task_id', ''))))
        task.status, task.issue = str(d.get('status', '')), str(d.get('issue', ''))
        task.summary = str(d.get('summary', ''))
        task.robot = task.robot or event.actor
        robot = self._robots.get(task.robot)
        if robot is not None and robot.task_id == task.task_id:
            robot.task_status = task.status
        self._reports.setdefault(task.robot, []).append(
            f'{task.task_id} {task.status}: {task.issue or task.summary}'.strip())

    def _on_tool(self, event: TeamEventModel, d: dict) -> None:
        robot = self._robots.get(event.actor)
        if robot is None:
            return
        if event.kind == EventKind.TOOL_CALL.value:
            robot.tool_calls.append(f'{event.target} ({d.get("task_id", "")})')
        else:
            outcome = ('ok' if d.get('ok') else 'failed') if event.kind == EventKind.TOOL_RESULT.value else 'refused'
            robot.tool_calls.append(f'{event.target} ({d.get("task_id", "")}) {outcome}')
        del robot.tool_calls[:-TOOL_CALLS_KEPT]

    def _on_escalation(self, event: TeamEventModel, d: dict) -> None:
        esc_id = str(d.get('escalation_id', ''))
        if not esc_id:
            return
        esc = self._escalations.setdefault(esc_id, EscalationView(esc_id))
        esc.state = str(d.get('state', 'open')) or 'open'
        esc.kind, esc.severity = str(d.get('kind', '')), str(d.get('severity', ''))
        esc.task_id, esc.reason = str(d.get('task_id', '')), event.reason or event.summary
        esc.holds_team = bool(d.get('holds_team', False))
        task = self._tasks.get(esc.task_id)
        if task is not None:
            esc.robot, esc.room, esc.case_id = task.robot, task.room, task.case_id
        esc.case_id = str(d.get('case_id', esc.case_id))
        if not esc.room and esc.case_id in self._cases:
            esc.room = self._cases[esc.case_id].room

    def _on_escalation_step(self, event: TeamEventModel, d: dict) -> None:
        esc = self._escalations.get(str(d.get('escalation_id', '')))
        if esc is None:
            return
        if event.kind == EventKind.ESCALATION_ACKNOWLEDGED.value:
            esc.state = 'acknowledged' if esc.is_open else esc.state
        elif event.kind == EventKind.ESCALATION_EXPIRED.value:
            esc.state = 'expired'
        else:
            esc.state = 'resolved'


_STAFF_FIELDS = ('x', 'y', 'yaw', 'area', 'specialty', 'availability', 'detail', 'state', 'robot')
_HANDLERS = {
    EventKind.CASE_OPENED.value: SceneState._on_case,
    EventKind.CASE_WAITING.value: SceneState._on_case,
    EventKind.CASE_CLOSED.value: SceneState._on_case_closed,
    EventKind.DELEGATION_AUTHORIZED.value: SceneState._on_authorized,
    EventKind.DELEGATION.value: SceneState._on_delegation,
    EventKind.TASK_REPORT.value: SceneState._on_report,
    EventKind.TOOL_CALL.value: SceneState._on_tool,
    EventKind.TOOL_RESULT.value: SceneState._on_tool,
    EventKind.TOOL_REFUSED.value: SceneState._on_tool,
    EventKind.ESCALATION.value: SceneState._on_escalation,
    EventKind.ESCALATION_ACKNOWLEDGED.value: SceneState._on_escalation_step,
    EventKind.HUMAN_DECISION.value: SceneState._on_escalation_step,
    EventKind.ESCALATION_EXPIRED.value: SceneState._on_escalation_step,
}


# --- the static geometry ------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """One static element of the floor, axis-aligned or rotated: a box or a disc, map frame, m.

    ``kind`` is ``wall``, ``room``, ``corridor``, ``door``, ``reader`` or ``dock``; ``x``, ``y``
    the centre, ``sx``, ``sy`` the size (a disc: ``sx`` = ``sy`` = its diameter), ``yaw`` the
    rotation (rad).
    """

    kind: str
    name: str
    x: float
    y: float
    sx: float
    sy: float
    yaw: float = 0.0


# How every view of the scene draws it (Foxglove, rviz2 markers): heights, m; colours r, g, b(, a) in 0..1.
ROBOT_Z = 0.3      # m: height of a robot's disc and arrow
HCW_Z = 0.9        # m: height of an HCW's sphere
KIND_COLOURS = {'wall': (0.45, 0.45, 0.5, 1.0), 'room': (0.85, 0.88, 0.95, 0.6),
                'corridor': (0.95, 0.95, 0.9, 0.4), 'door': (0.2, 0.7, 0.3, 0.9),
                'reader': (0.2, 0.4, 0.9, 0.25), 'dock': (0.3, 0.3, 0.3, 0.8)}
"""Colour of each kind of floor shape (r, g, b, a in 0..1), shared by every view of the scene."""
KIND_HEIGHTS = {'wall': 2.5, 'room': 0.02, 'corridor': 0.01, 'door': 0.05, 'reader': 0.03, 'dock': 0.05}
"""Drawn height of each kind of floor shape, m (walls: the floor's own ``wall_height``)."""
ROLE_COLOURS = {Role.NAVIGATION.value: (0.1, 0.45, 0.85), Role.INFO_COLLECTION.value: (0.55, 0.3, 0.75),
                Role.DISPLAY.value: (0.0, 0.6, 0.6)}
"""Each robot role's colour (r, g, b in 0..1); other roles are orange."""
AVAILABILITY_COLOURS = {'available': (0.2, 0.7, 0.3), 'busy': (0.95, 0.6, 0.1), 'off_shift': (0.5, 0.5, 0.5)}
ESI_COLOURS = {1: (0.8, 0.1, 0.1), 2: (0.95, 0.45, 0.1), 3: (0.95, 0.8, 0.15), 4: (0.3, 0.7, 0.3),
               5: (0.3, 0.5, 0.9)}
"""Colours of ESI levels 1 (resuscitation) .. 5 (non-urgent)."""
ESCALATION_COLOUR = (0.85, 0.1, 0.1, 0.8)
"""The rings of an open escalation (r, g, b, a)."""


def case_tile(floor: Floor | None, case: CaseView) -> tuple[float, float, float, float, float] | None:
    """Return a case's tile on its room as ``(x, y, size_x, size_y, alpha)`` (m; None: its room is not on ``floor``).

    The tile covers 0.8 of the room's width and depth; a closed case's is faint (alpha 0.25, else 0.7).
    """
    room = floor.rooms.get(case.room) if floor is not None else None
    if room is None:
        return None
    (x, y), (sx, sy) = room.center, room.size
    return x, y, sx * 0.8, sy * 0.8, 0.25 if case.state == 'closed' else 0.7


def escalation_rings(scene: Scene, floor: Floor | None,
                     escalation: EscalationView) -> list[tuple[float, float, float, float]]:
    """Return the rings marking an open escalation as ``(x, y, z, diameter)`` (m): on its room, around its robot.

    A room not on ``floor`` (or no floor known) or a robot with no pose yet gets none.
    """
    rings = []
    room = floor.rooms.get(escalation.room) if floor is not None else None
    if room is not None:
        rings.append((*room.center, 0.1, 3.0))
    robot = scene.robots.get(escalation.robot)
    if robot is not None and robot.placed:
        rings.append((robot.x, robot.y, 0.05, 1.6))
    return rings


DOOR_DEPTH_M = 0.3
"""Drawn depth of a door gap across the wall line, m."""


def floor_geometry(floor: Floor) -> list[Shape]:
    """Return the floor's static shapes: corridors, rooms, walls, doors, badge readers, docks (in that order).

    A door is the gap in its room's wall (width ``door_width``, :data:`DOOR_DEPTH_M` deep, across
    the approach pose's heading); a reader is a disc of its read radius; a dock a 0.5 m square
    turned to the dock's yaw.
    """
    shapes = [Shape('corridor', a.name, *a.center, *a.size) for a in floor.corridors]
    shapes += [Shape('room', r.name, *r.center, *r.size) for r in floor.rooms.values()]
    shapes += [Shape('wall', w.name, w.x, w.y, w.sx, w.sy, w.yaw) for w in floor.walls]
    for room in floor.rooms.values():
        gx, gy = room.door_gap
        shapes.append(Shape('door', room.name, gx, gy, DOOR_DEPTH_M, room.door_width, room.door.yaw))
    shapes += [Shape('reader', b.reader_id, b.x, b.y, 2 * b.radius, 2 * b.radius) for b in floor.readers]
    shapes += [Shape('dock', d.robot, d.pose.x, d.pose.y, 0.5, 0.5, d.pose.yaw) for d in floor.docks.values()]
    return shapes


def floor_of(events: Iterable[TeamEventModel]) -> Floor:
    """Return the floor of a run: its scenario's, as ``hospital_systems`` announced it, else the default floor.

    Raises
    ------
    robot_team.contracts.floor.FloorError
        If the floor description cannot be used.
    """
    for event in events:
        if event.actor == HOSPITAL_SYSTEMS and event.kind == EventKind.NODE_STARTED.value:
            try:
                return load_floor(load_scenario(str(event.data.get('scenario', ''))).floor_path)
            except ConfigError:
                break
    return load_floor(floor_path(DEFAULT_FLOOR))


# --- a finished run's scene over time -----------------------------------------------------------

SCENE_FILE = 'scene.jsonl'
"""The run folder's scene samples (one :class:`Sample` per line), beside ``events.jsonl``."""


def write_samples(samples: Iterable[Sample], path: Path) -> None:
    """Write samples as JSON lines to ``path``."""
    with open(path, 'w', encoding='utf-8') as f:
        for sample in samples:
            f.write(sample.to_json() + '\n')


def read_samples(path: Path) -> list[Sample]:
    """Read a ``scene.jsonl``.

    Raises
    ------
    ValueError
        If a line is not a sample; the message names the line.
    """
    return read_lines(path, Sample.from_json, (ValueError, TypeError))


class SceneTimeline:
    """A finished run's scene at any ROS time: its samples and events, replayed up to ``t``.

    Parameters
    ----------
    floor
        The run's floor.
    samples, events
        The run's kept samples (``scene.jsonl``) and team events (``events.jsonl``).
    """

    def __init__(self, floor: Floor | None, samples: Sequence[Sample], events: Sequence[TeamEventModel]):
        self.floor = floor
        items = [(s.t, 0, i, s) for i, s in enumerate(samples)] + [(e.stamp_s, 1, i, e) for i, e in enumerate(events)]
        items.sort(key=lambda item: item[:3])
        self._times = [item[0] for item in items]
        self._items = [item[3] for item in items]
        robots = sorted({s.name for s in samples if s.what == 'robot'})
        self._robots = robots

    @property
    def start_s(self) -> float:
        """The earliest stamp, s (0 if empty)."""
        return self._times[0] if self._times else 0.0

    @property
    def end_s(self) -> float:
        """The latest stamp, s (0 if empty)."""
        return self._times[-1] if self._times else 0.0

    def at(self, t: float) -> SceneState:
        """Return the scene as it stood at ROS time ``t`` (s): everything stamped at or before it applied."""
        state = SceneState(self.floor, self._robots)
        for item in self._items[:bisect_right(self._times, t)]:
            if isinstance(item, Sample):
                state.take(item)
            else:
                state.apply(item)
        return state


def scene_dict(scene: Scene) -> dict:
    """Return a scene as plain data (JSON-ready), for reports and tests."""
    return {'t_s': scene.t_s, 'robots': {k: asdict(v) for k, v in scene.robots.items()},
            'hcws': {k: asdict(v) for k, v in scene.hcws.items()},
            'cases': {k: asdict(v) for k, v in scene.cases.items()},
            'escalations': {k: asdict(v) for k, v in scene.escalations.items()}}
