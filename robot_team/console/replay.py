"""Replay a finished run in the console: the floor map at any sim time, with a slider (``robot-team replay DIR``).

:class:`ReplayWidget` shows the console's :class:`~robot_team.console.floor_map.FloorMapWidget`
over a :class:`~robot_team.contracts.scene.SceneTimeline` (the run's ``scene.jsonl`` and ``events.jsonl``),
a slider over the run's sim time (steps of :data:`STEP_S`), and the team's events up to the
chosen time, latest first. Moving the slider rebuilds the scene at that time; nothing talks to ROS.
"""

from __future__ import annotations

import os
from pathlib import Path

from robot_team.console.floor_map import FloorMapWidget
from robot_team.console.qt import QtCore, QtWidgets, exec_app
from robot_team.contracts.events import TeamEventModel
from robot_team.contracts.scene import SceneTimeline

STEP_S = 0.1
"""The slider's step, sim s."""
EVENTS_SHOWN = 200
"""Most events listed under the map (the latest before the slider's time)."""


class ReplayWidget(QtWidgets.QWidget):
    """A finished run's floor map with a sim-time slider.

    Parameters
    ----------
    timeline
        The run's scene over time.
    events
        The run's events (listed up to the slider's time).
    title
        The window title (the run folder).
    parent
        Qt parent widget.
    """

    def __init__(self, timeline: SceneTimeline, events: list[TeamEventModel], title: str = '', parent=None):
        super().__init__(parent)
        self.setObjectName('RobotTeamReplay')
        self.setWindowTitle(f'Robot Team replay: {title}' if title else 'Robot Team replay')
        self.timeline = timeline
        self._events = sorted(events, key=lambda e: (e.stamp_s, e.wall_time))
        self.floor_map = FloorMapWidget(timeline.at(timeline.start_s))
        self.floor_map.stop()      # a replayed scene changes only with the slider
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setObjectName('time_slider')
        self.slider.setRange(round(timeline.start_s / STEP_S), round(timeline.end_s / STEP_S))
        self.time_label = QtWidgets.QLabel()
        self.time_label.setObjectName('time_label')
        self.event_list = QtWidgets.QListWidget()
        self.event_list.setObjectName('event_list')
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(QtWidgets.QLabel('Sim time:'))
        bar.addWidget(self.slider, 1)
        bar.addWidget(self.time_label)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.floor_map, 3)
        layout.addLayout(bar)
        layout.addWidget(self.event_list, 1)
        self.slider.valueChanged.connect(lambda value: self.show_time(value * STEP_S))
        self.show_time(timeline.start_s)

    @property
    def t(self) -> float:
        """The sim time shown, s."""
        return self.slider.value() * STEP_S

    def show_time(self, t: float) -> None:
        """Show the run at sim time ``t`` (s, clamped to the run): the map, the slider, the events so far."""
        t = min(max(t, self.timeline.start_s), self.timeline.end_s)
        value = round(t / STEP_S)
        if self.slider.value() != value:
            self.slider.blockSignals(True)
            self.slider.setValue(value)
            self.slider.blockSignals(False)
        self.floor_map.set_scene(self.timeline.at(t))
        self.time_label.setText(f'{t:7.1f} s of {self.timeline.end_s:.1f} s')
        shown = [e for e in self._events if e.stamp_s <= t][-EVENTS_SHOWN:]
        self.event_list.clear()
        self.event_list.addItems([f'{e.stamp_s:7.1f}  {e.actor}: {e.summary}' for e in reversed(shown)])


def run_replay(timeline: SceneTimeline, events: list[TeamEventModel], *, title: str = '', at: float | None = None,
               screenshot: Path | None = None, size: tuple[int, int] = (1400, 900)) -> int:
    """Show the replay window until it is closed; return an exit code (0: ok).

    Parameters
    ----------
    timeline, events
        The run's scene over time and its events.
    title
        Shown in the window title (the run folder).
    at
        The sim time to open at (s; default the run's start).
    screenshot
        Render once offscreen (``QT_QPA_PLATFORM=offscreen`` unless set) at ``at``, write this PNG, exit.
    size
        Window size, pixels.

    Raises
    ------
    RuntimeError
        If the screenshot cannot be written.
    """
    if screenshot is not None:
        os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen')
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(['robot-team replay'])
    widget = ReplayWidget(timeline, events, title)
    widget.resize(*size)
    if at is not None:
        widget.show_time(at)
    try:
        widget.show()
        if screenshot is None:
            return exec_app(app)
        for _ in range(5):
            app.processEvents()
        Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
        if not widget.grab().save(str(screenshot), 'PNG'):
            raise RuntimeError(f'cannot write the screenshot {screenshot}')
        return 0
    finally:
        widget.close()
        widget.deleteLater()
        app.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
        app.processEvents()
