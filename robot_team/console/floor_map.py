"""The console's floor map: the floor, its robots, HCWs, patients' cases and open escalations, live.

:class:`FloorMapWidget` draws a :class:`~robot_team.contracts.scene.SceneState` (kept up to date by the
console's :class:`~robot_team.ros.scene.SceneFeed`, or rebuilt at a sim time by replay) in a
``QGraphicsView``. Scene coordinates are the ``map`` frame in metres with y flipped (Qt's y
grows downwards): map (x, y) is drawn at scene (x, -y). The view fits the floor.

What it draws:

- the floor (once it is known): corridors, rooms (patient rooms blue-grey), walls, doors (green),
  badge readers (dashed circles of their read radius), docks, with the rooms' names;
- each robot: a disc in its role's colour with a heading tick, labelled with its name, task and case;
- each HCW: a dot by availability (green available, orange busy, grey off shift), labelled
  ``#id`` and ``-> robot`` while following it;
- each patient's room with a case: a tile by ESI level (1 red .. 5 blue), labelled with the
  patient, ESI and the case's state;
- each open escalation: a red frame on its room and a red ring around its robot.

Every drawn entity carries its ID (``robot/<name>``, ``hcw/<id>``, ``case/<id>``,
``escalation/<id>``) as item data, so tests and clicks find it (:meth:`FloorMapWidget.entity_position`).
Clicking a robot or a case shows its tasks, last tool calls and reports beside the map.
It redraws at most every :data:`REFRESH_MS` wall ms, and only when the scene changed.
"""

from __future__ import annotations

import math

from robot_team.console.qt import QtCore, QtGui, QtWidgets
from robot_team.contracts.names import Role
from robot_team.contracts.scene import Scene, SceneState, floor_geometry

REFRESH_MS = 100
"""How often the map checks its scene for changes, wall ms (at most 10 redraws a second)."""
ROBOT_RADIUS_M = 0.4
HCW_RADIUS_M = 0.25
ID_ROLE = 0
"""Item data key holding an entity's ID."""

ROLE_COLOURS = {Role.NAVIGATION.value: '#1565c0', Role.INFO_COLLECTION.value: '#6a1b9a',
                Role.DISPLAY.value: '#00838f'}
AVAILABILITY_COLOURS = {'available': '#2e7d32', 'busy': '#ef6c00', 'off_shift': '#757575'}
ESI_COLOURS = {1: '#d32f2f', 2: '#f57c00', 3: '#fbc02d', 4: '#43a047', 5: '#1e88e5'}
KIND_COLOURS = {'patient_room': '#dfe6f2', 'corridor': '#f7f5ee'}
ESCALATION_COLOUR = '#c62828'


def _brush(colour: str, alpha: int = 255):
    c = QtGui.QColor(colour)
    c.setAlpha(alpha)
    return QtGui.QBrush(c)


def _pen(colour: str, width: float = 0.0, style=None):
    """A pen ``width`` m wide (0: one pixel whatever the zoom)."""
    pen = QtGui.QPen(QtGui.QColor(colour))
    pen.setWidthF(width)
    pen.setCosmetic(width == 0.0)
    if style is not None:
        pen.setStyle(style)
    return pen


class _View(QtWidgets.QGraphicsView):
    """The map's view: keeps the floor fitted, reports clicks on entities."""

    def __init__(self, scene, on_click):
        super().__init__(scene)
        self._on_click = on_click
        self.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def fit(self) -> None:
        rect = self.sceneRect()
        if rect.width() > 0:
            self.fitInView(rect, QtCore.Qt.AspectRatioMode.KeepAspectRatio)

    def resizeEvent(self, event):  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.fit()

    def mousePressEvent(self, event):  # noqa: N802 - Qt's name
        item = self.itemAt(event.position().toPoint() if hasattr(event, 'position') else event.pos())
        while item is not None and not item.data(ID_ROLE):
            item = item.parentItem()
        if item is not None:
            self._on_click(str(item.data(ID_ROLE)))
        super().mousePressEvent(event)


class FloorMapWidget(QtWidgets.QWidget):
    """The floor map: a view of a scene, and the details of the robot or case clicked.

    Parameters
    ----------
    scene
        The live (or replayed) scene; :meth:`set_scene` replaces it.
    parent
        Qt parent widget.
    """

    def __init__(self, scene: SceneState | None = None, parent=None):
        super().__init__(parent)
        self.setObjectName('floor_map')
        self.state = scene if scene is not None else SceneState()
        self.graphics = QtWidgets.QGraphicsScene(self)
        self.view = _View(self.graphics, self.select)
        self.view.setObjectName('floor_map_view')
        self.details_label = QtWidgets.QLabel('Click a robot or a patient room for its tasks, tool calls and reports.')
        self.details_label.setObjectName('floor_map_details')
        self.details_label.setWordWrap(True)
        self.details_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        self.details_label.setMinimumWidth(280)
        self.view.setMinimumSize(480, 320)
        side = QtWidgets.QVBoxLayout()
        side.addWidget(QtWidgets.QLabel('<b>Floor</b>'))
        side.addWidget(self.details_label, 1)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view, 4)
        layout.addLayout(side, 1)
        self.selected = ''
        self.shown: Scene | None = None
        """The scene last drawn (a snapshot)."""
        self.redraws = 0
        """How many times the map was redrawn."""
        self.shown_version = -1
        """The scene's ``version`` last drawn (behind it while a change waits for the next redraw)."""
        self._items: dict[str, QtWidgets.QGraphicsItem] = {}
        self._floor = None
        self._timer = QtCore.QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._timer.start(REFRESH_MS)

    def stop(self) -> None:
        """Stop redrawing."""
        self._timer.stop()

    def set_scene(self, scene: SceneState) -> None:
        """Show ``scene`` from now on (replay moves through time this way); redraw now."""
        self.state = scene
        self.shown_version = -1
        self.refresh()

    # --- reading what is drawn ----------------------------------------------------------------

    def entity_ids(self) -> list[str]:
        """Return the IDs of the entities drawn now."""
        return list(self._items)

    def entity_position(self, entity_id: str) -> tuple[float, float] | None:
        """Return where entity ``entity_id`` is drawn, in the map frame (m), or None if it is not drawn."""
        item = self._items.get(entity_id)
        if item is None:
            return None
        point = item.sceneBoundingRect().center() if item.pos().isNull() else item.pos()
        return point.x(), -point.y()

    def entity_label(self, entity_id: str) -> str:
        """Return the text drawn with an entity ('' if none)."""
        item = self._items.get(entity_id)
        texts = [] if item is None else [c.text() for c in item.childItems()
                                         if isinstance(c, QtWidgets.QGraphicsSimpleTextItem)]
        return '\n'.join(texts)

    # --- drawing ------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Redraw if the scene changed (the timer calls it on the GUI thread)."""
        version = self.state.version
        floor = self.state.floor
        if version == self.shown_version and floor is self._floor:
            return
        self.shown_version = version
        if floor is not self._floor:
            self._draw_floor(floor)
        scene = self.shown = self.state.snapshot()
        for item in self._items.values():
            self.graphics.removeItem(item)
        self._items = {}
        self._draw_cases(scene)
        self._draw_escalations(scene)
        for name, robot in sorted(scene.robots.items()):
            if robot.placed:
                self._draw_robot(name, robot)
        for hcw_id, hcw in sorted(scene.hcws.items()):
            if not math.isnan(hcw.x):
                self._draw_hcw(hcw_id, hcw)
        self.redraws += 1
        if self.selected:
            self.details_label.setText(self.details(self.selected))

    def _label(self, parent, text: str, dx: float = 0.0, dy: float = 0.0, size: int = 8, bold: bool = False):
        label = QtWidgets.QGraphicsSimpleTextItem(text, parent)
        font = label.font()
        font.setPointSize(size)
        font.setBold(bold)
        label.setFont(font)
        label.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        label.setPos(dx, dy)
        return label

    def _draw_floor(self, floor) -> None:
        self.graphics.clear()
        self._items = {}
        self._floor = floor
        if floor is None:
            return
        kinds = {r.name: r.kind for r in floor.rooms.values()}
        for s in floor_geometry(floor):
            rect = QtCore.QRectF(-s.sx / 2, -s.sy / 2, s.sx, s.sy)
            if s.kind == 'reader':
                item = self.graphics.addEllipse(rect, _pen('#1e88e5', 0, QtCore.Qt.PenStyle.DashLine))
            elif s.kind == 'wall':
                item = self.graphics.addRect(rect, QtGui.QPen(QtCore.Qt.PenStyle.NoPen), _brush('#546e7a'))
            elif s.kind == 'door':
                item = self.graphics.addRect(rect, QtGui.QPen(QtCore.Qt.PenStyle.NoPen), _brush('#43a047'))
            elif s.kind == 'dock':
                item = self.graphics.addRect(rect, _pen('#424242'), _brush('#bdbdbd'))
            else:
                colour = KIND_COLOURS.get(kinds.get(s.name, s.kind), '#eceff1')
                item = self.graphics.addRect(rect, _pen('#b0bec5'), _brush(colour))
                self._label(item, s.name, -s.sx / 2 + 0.2, -s.sy / 2 + 0.2, 7)
            item.setPos(s.x, -s.y)
            item.setRotation(-math.degrees(s.yaw))
            item.setZValue({'corridor': 0, 'room': 1, 'reader': 2, 'dock': 2, 'wall': 3, 'door': 4}[s.kind])
        xmin, ymin, xmax, ymax = floor.bounds
        self.graphics.setSceneRect(QtCore.QRectF(xmin - 1, -ymax - 1, xmax - xmin + 2, ymax - ymin + 2))
        self.view.fit()

    def _keep(self, entity_id: str, item, z: float):
        item.setData(ID_ROLE, entity_id)
        item.setZValue(z)
        self._items[entity_id] = item
        return item

    def _draw_cases(self, scene: Scene) -> None:
        floor = self._floor
        if floor is None:
            return
        for case_id, case in scene.cases.items():
            room = floor.rooms.get(case.room)
            if room is None:
                continue
            (sx, sy) = room.size
            alpha = 70 if case.state == 'closed' else 150
            item = self.graphics.addRect(QtCore.QRectF(-sx * 0.4, -sy * 0.4, sx * 0.8, sy * 0.8),
                                         QtGui.QPen(QtCore.Qt.PenStyle.NoPen),
                                         _brush(ESI_COLOURS.get(case.esi_level, '#9e9e9e'), alpha))
            item.setPos(room.center[0], -room.center[1])
            self._label(item, case.label('\n'), -sx * 0.35, 0.0, 8, True)
            self._keep(f'case/{case_id}', item, 5)

    def _draw_escalations(self, scene: Scene) -> None:
        floor = self._floor
        for esc in scene.open_escalations():
            parts = []
            room = floor.rooms.get(esc.room) if floor is not None else None
            if room is not None:
                (sx, sy) = room.size
                frame = self.graphics.addRect(QtCore.QRectF(room.center[0] - sx / 2, -room.center[1] - sy / 2, sx, sy),
                                              _pen(ESCALATION_COLOUR, 0.35), QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
                parts.append(frame)
            robot = scene.robots.get(esc.robot)
            if robot is not None and robot.placed:
                r = ROBOT_RADIUS_M * 2
                ring = self.graphics.addEllipse(QtCore.QRectF(robot.x - r, -robot.y - r, 2 * r, 2 * r),
                                                _pen(ESCALATION_COLOUR, 0.15),
                                                QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
                parts.append(ring)
            if not parts:
                continue
            group = self.graphics.createItemGroup(parts)
            self._label(group, f'{esc.escalation_id} ({esc.state})', parts[0].boundingRect().left(),
                        parts[0].boundingRect().top(), 8, True).setBrush(_brush(ESCALATION_COLOUR))
            self._keep(f'escalation/{esc.escalation_id}', group, 9)

    def _draw_robot(self, name: str, robot) -> None:
        colour = ROLE_COLOURS.get(robot.role, '#ef6c00')
        r = ROBOT_RADIUS_M
        item = QtWidgets.QGraphicsEllipseItem(-r, -r, 2 * r, 2 * r)
        item.setPen(_pen('#212121'))
        item.setBrush(_brush(colour))
        tip = (2.2 * r * math.cos(robot.yaw), -2.2 * r * math.sin(robot.yaw))
        heading = QtWidgets.QGraphicsLineItem(0.0, 0.0, *tip, item)
        heading.setPen(_pen('#212121', 0.12))
        self._label(item, robot.label, r, r, 8)
        item.setPos(robot.x, -robot.y)
        self.graphics.addItem(item)
        self._keep(f'robot/{name}', item, 10)

    def _draw_hcw(self, hcw_id: str, hcw) -> None:
        r = HCW_RADIUS_M
        item = QtWidgets.QGraphicsEllipseItem(-r, -r, 2 * r, 2 * r)
        item.setPen(_pen('#212121'))
        item.setBrush(_brush(AVAILABILITY_COLOURS.get(hcw.availability, '#9e9e9e')))
        self._label(item, hcw.label, r, -r, 7, bool(hcw.following))
        item.setPos(hcw.x, -hcw.y)
        self.graphics.addItem(item)
        self._keep(f'hcw/{hcw_id}', item, 11)

    # --- clicks -------------------------------------------------------------------------------

    def select(self, entity_id: str) -> None:
        """Show the details of ``entity_id`` (a robot, case, HCW or escalation) beside the map."""
        self.selected = entity_id
        self.details_label.setText(self.details(entity_id))

    def details(self, entity_id: str) -> str:
        """Return what the map shows for ``entity_id``: tasks, last tool calls and reports of a robot or case."""
        scene = self.shown or self.state.snapshot()
        kind, _, key = entity_id.partition('/')
        if kind == 'robot' and key in scene.robots:
            r = scene.robots[key]
            tasks = [t for t in scene.tasks.values() if t.robot == key]
            return '\n'.join([
                f'{key} ({r.role}) at ({r.x:.1f}, {r.y:.1f}) m, heading {math.degrees(r.yaw):.0f} deg, '
                f'pose of sim time {r.stamp_s:.1f} s',
                'Tasks: ' + ('; '.join(f'{t.task_id} {t.task_type} {t.status} (case {t.case_id or "-"}, '
                                       f'{t.room or "-"}, HCW #{t.hcw_id or "-"})' for t in tasks) or 'none'),
                'Last tool calls: ' + (', '.join(r.tool_calls) or 'none'),
                'Reports: ' + (' | '.join(scene.reports.get(key, [])) or 'none')])
        if kind == 'case' and key in scene.cases:
            c = scene.cases[key]
            tasks = [t for t in scene.tasks.values() if t.case_id == key]
            escalations = [e for e in scene.escalations.values() if e.case_id == key or
                           (e.room == c.room and e.room)]
            return '\n'.join([
                f'Case {key}: patient {c.patient_id} in {c.room}, ESI {c.esi_level}, {c.state}',
                'Tasks: ' + ('; '.join(f'{t.task_id} {t.task_type} by {t.robot}: {t.status}'
                                       + (f' ({t.issue})' if t.issue else '') for t in tasks) or 'none'),
                'Escalations: ' + ('; '.join(f'{e.escalation_id} {e.state}: {e.reason}' for e in escalations)
                                   or 'none')])
        if kind == 'hcw' and key in scene.hcws:
            h = scene.hcws[key]
            return (f'HCW #{key} ({h.specialty}) in {h.area}: {h.availability}'
                    + (f', {h.detail}' if h.detail else '') + f'; {h.state or "idle"}'
                    + (f' -> {h.robot}' if h.robot else ''))
        if kind == 'escalation' and key in scene.escalations:
            e = scene.escalations[key]
            return f'{key} ({e.state}, {e.severity}) on {e.task_id or "the team"}: {e.reason}'
        return ''
