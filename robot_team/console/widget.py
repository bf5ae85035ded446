"""The supervisor console's Qt widget: renders a :class:`ConsolePresenter`, forwards clicks to it.

:class:`SupervisorConsoleWidget` is a plain ``QWidget`` (the rqt plugin adds it to rqt; the
standalone console shows it in its own window). It holds no state of its own: a timer on the
GUI thread redraws it whenever the presenter's ``version`` changes, and each button calls one
presenter action. Above the tables, the floor map (:class:`~robot_team.console.floor_map.FloorMapWidget`)
draws the presenter's ``scene``. Object names (``acknowledge_button``, ``reassign_combo``,
``floor_map``...) let tests and rqt perspectives find its parts.
"""

from __future__ import annotations

from robot_team.console.floor_map import FloorMapWidget
from robot_team.console.presenter import ConsolePresenter
from robot_team.console.qt import QtCore, QtGui, QtWidgets

REFRESH_MS = 100
"""How often the widget checks the presenter for changes, wall ms."""

ESCALATION_COLUMNS = ('ID', 'State', 'Severity', 'Kind', 'Task', 'Raised by', 'Reason', "Manager's proposal",
                      'Options', 'Due (s)', 'Decision')
TASK_COLUMNS = ('Task', 'Type', 'Robot', 'Status', 'Issue', 'Ground truth')
STATE_COLOURS = {'open': '#c62828', 'acknowledged': '#ef6c00', 'resolved': '#2e7d32', 'expired': '#6a1b9a',
                 'running': '#1565c0', 'success': '#2e7d32', 'failure': '#c62828'}
STATUS_COLOURS = {'info': '#37474f', 'ok': '#2e7d32', 'error': '#c62828'}
ALERT_BANNER_STYLE = 'QLabel { background: #c62828; color: white; padding: 4px; font-weight: bold; }'
"""The banner's style while something needs a person: the team held, a node lost, the console not receiving."""


class SupervisorConsoleWidget(QtWidgets.QWidget):
    """The "Robot Team Supervisor" console: escalations, team hold, task board, a person's actions.

    Parameters
    ----------
    presenter
        The console's state and actions.
    parent
        Qt parent widget.
    """

    def __init__(self, presenter: ConsolePresenter, parent=None):
        super().__init__(parent)
        self.presenter = presenter
        self._shown_version = -1
        self.setObjectName('RobotTeamSupervisorWidget')
        self.setWindowTitle('Robot Team Supervisor')
        self._build()
        self._timer = QtCore.QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._timer.start(REFRESH_MS)
        self.refresh()

    def stop(self) -> None:
        """Stop redrawing (before the widget or the presenter goes away)."""
        self._timer.stop()
        self.floor_map.stop()

    # --- Layout -------------------------------------------------------------------------------

    def _build(self) -> None:
        outer = QtWidgets.QHBoxLayout(self)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.floor_map = FloorMapWidget(self.presenter.scene)
        panel = QtWidgets.QWidget()
        splitter.addWidget(self.floor_map)
        splitter.addWidget(panel)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([1000, 1000])     # half the height each to begin with (a person drags the handle)
        outer.addWidget(splitter)
        layout = QtWidgets.QVBoxLayout(panel)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QtWidgets.QHBoxLayout()
        title = QtWidgets.QLabel('<b>Robot Team Supervisor</b>')
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(QtWidgets.QLabel('Operator ID:'))
        self.operator_edit = self._named(QtWidgets.QLineEdit(self.presenter.operator_id), 'operator_edit')
        self.operator_edit.setPlaceholderText('e.g. charge_nurse')
        self.operator_edit.editingFinished.connect(lambda: self.presenter.set_operator(self.operator_edit.text()))
        top.addWidget(self.operator_edit)
        layout.addLayout(top)

        self.hold_label = self._named(QtWidgets.QLabel(), 'hold_label')
        self.hold_label.setWordWrap(True)
        layout.addWidget(self.hold_label)

        layout.addWidget(QtWidgets.QLabel('<b>Escalations</b>'))
        self.escalation_table = self._named(self._table(ESCALATION_COLUMNS), 'escalation_table')
        self.escalation_table.itemSelectionChanged.connect(self._selection_changed)
        layout.addWidget(self.escalation_table, 3)
        self.details_label = self._named(QtWidgets.QLabel(), 'details_label')
        self.details_label.setWordWrap(True)
        self.details_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.details_label)

        actions = QtWidgets.QHBoxLayout()
        self.acknowledge_button = self._button('Acknowledge', 'acknowledge_button', self._acknowledge)
        self.accept_button = self._button("Accept manager's proposal", 'accept_button', self._accept)
        self.reassign_combo = self._named(QtWidgets.QComboBox(), 'reassign_combo')
        self.reassign_combo.setMinimumContentsLength(28)
        self.reassign_button = self._button('Reassign to', 'reassign_button', self._reassign)
        self.retry_button = self._button('Retry', 'retry_button', self._retry)
        self.abort_button = self._button('Abort', 'abort_button', self._abort)
        self.note_edit = self._named(QtWidgets.QLineEdit(), 'note_edit')
        self.note_edit.setPlaceholderText('note (recorded with the decision)')
        for widget in (self.acknowledge_button, self.accept_button, self.reassign_button, self.reassign_combo,
                       self.retry_button, self.abort_button):
            actions.addWidget(widget)
        actions.addWidget(self.note_edit, 1)
        layout.addLayout(actions)

        layout.addWidget(QtWidgets.QLabel('<b>Team task board</b>'))
        self.task_table = self._named(self._table(TASK_COLUMNS), 'task_table')
        layout.addWidget(self.task_table, 2)

        person = QtWidgets.QHBoxLayout()
        self.instruction_edit = self._named(QtWidgets.QLineEdit(), 'instruction_edit')
        self.instruction_edit.setPlaceholderText('instruction to the team (advisory for the manager)')
        self.instruction_button = self._button('Send instruction', 'instruction_button', self._instruct)
        self.concern_edit = self._named(QtWidgets.QLineEdit(), 'concern_edit')
        self.concern_edit.setPlaceholderText('concern, or why to stop')
        self.concern_button = self._button('Raise concern', 'concern_button', self._concern)
        self.hold_button = self._button('Stop and hold team', 'hold_button', self._stop_and_hold)
        self.hold_button.setStyleSheet('QPushButton { background: #c62828; color: white; font-weight: bold; }')
        person.addWidget(self.instruction_edit, 2)
        person.addWidget(self.instruction_button)
        person.addWidget(self.concern_edit, 2)
        person.addWidget(self.concern_button)
        person.addWidget(self.hold_button)
        layout.addLayout(person)

        self.status_label = self._named(QtWidgets.QLabel(), 'status_label')
        self.status_label.setWordWrap(True)
        layout.addWidget(self.status_label)

    def _named(self, widget, name: str):
        widget.setObjectName(name)
        return widget

    def _button(self, text: str, name: str, slot):
        button = self._named(QtWidgets.QPushButton(text), name)
        button.clicked.connect(slot)
        return button

    def _table(self, columns):
        table = QtWidgets.QTableWidget(0, len(columns))
        table.setHorizontalHeaderLabels(list(columns))
        table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        table.verticalHeader().setVisible(False)
        table.horizontalHeader().setStretchLastSection(True)
        return table

    # --- Clicks -> presenter ------------------------------------------------------------------

    def _sync_operator(self) -> None:
        if self.operator_edit.text().strip() != self.presenter.operator_id:
            self.presenter.set_operator(self.operator_edit.text())

    def _acknowledge(self) -> None:
        self._sync_operator()
        self.presenter.acknowledge(self.note_edit.text())

    def _accept(self) -> None:
        self._sync_operator()
        self.presenter.accept_proposal(self.note_edit.text())

    def _reassign(self) -> None:
        self._sync_operator()
        self.presenter.reassign(self.reassign_combo.currentData() or '', self.note_edit.text())

    def _retry(self) -> None:
        self._sync_operator()
        self.presenter.retry(self.note_edit.text())

    def _abort(self) -> None:
        self._sync_operator()
        self.presenter.abort(self.note_edit.text())

    def _instruct(self) -> None:
        self._sync_operator()
        if self.presenter.send_instruction(self.instruction_edit.text()):
            self.instruction_edit.clear()

    def _concern(self) -> None:
        self._sync_operator()
        if self.presenter.raise_concern(self.concern_edit.text()):
            self.concern_edit.clear()

    def _stop_and_hold(self) -> None:
        self._sync_operator()
        self.presenter.stop_and_hold(self.concern_edit.text())

    def _selection_changed(self) -> None:
        rows = self.escalation_table.selectionModel().selectedRows()
        if rows:
            item = self.escalation_table.item(rows[0].row(), 0)
            if item is not None and (self.presenter.selected is None
                                     or item.text() != self.presenter.selected.escalation_id):
                self.presenter.select(item.text())

    # --- Presenter -> view --------------------------------------------------------------------

    def refresh(self) -> None:
        """Redraw from the presenter if it changed (called by the timer on the GUI thread)."""
        version = self.presenter.version
        if version == self._shown_version:
            return
        self._shown_version = version
        p = self.presenter
        hold = p.hold()
        if hold.active:
            self.hold_label.setText(f"TEAM HELD by {', '.join(hold.escalation_ids)} ({hold.held_by}): {hold.reason}"
                                    ' - robots stopped; resolve the hold escalation to release it')
            self.hold_label.setStyleSheet(ALERT_BANNER_STYLE)
        else:
            self.hold_label.setText('Team running (not held)')
            self.hold_label.setStyleSheet('QLabel { background: #e8f5e9; color: #1b5e20; padding: 4px; }')
        lost = p.lost_nodes()
        if lost:   # a node down matters as much as a hold: the same banner, after it
            self.hold_label.setText(self.hold_label.text() + ' | LOST: ' + '; '.join(lost.values()))
            self.hold_label.setStyleSheet(ALERT_BANNER_STYLE)
        stopped = p.not_receiving()
        if stopped:   # nothing shown is current any more: first on the banner
            self.hold_label.setText('NOT RECEIVING: ' + stopped + ' | ' + self.hold_label.text())
            self.hold_label.setStyleSheet(ALERT_BANNER_STYLE)

        selected = p.selected
        rows = p.escalations()
        self._fill(self.escalation_table, [
            (r.escalation_id, r.state, r.severity, r.kind, r.task_id or '-', r.raised_by, r.reason, r.proposal or '-',
             ', '.join(r.options) or '-', f'{r.due_s:.0f}' if r.due_s is not None and r.is_open else '-',
             r.outcome or '-') for r in rows], state_column=1)
        if selected is not None:
            for index, row in enumerate(rows):
                if row.escalation_id == selected.escalation_id:
                    self.escalation_table.blockSignals(True)
                    self.escalation_table.selectRow(index)
                    self.escalation_table.blockSignals(False)
        self.details_label.setText(p.details())

        tasks = p.tasks()
        self._fill(self.task_table, [(t.task_id, t.task_type, t.robot, t.status, t.issue or '-', t.ground_truth)
                                     for t in tasks], state_column=3)

        current = self.reassign_combo.currentData()
        self.reassign_combo.blockSignals(True)
        self.reassign_combo.clear()
        for hcw in p.available_staff():
            suffix = '' if hcw.availability == 'available' else ' - availability unknown'
            self.reassign_combo.addItem(hcw.label + suffix, hcw.hcw_id)
        if current:
            index = self.reassign_combo.findData(current)
            if index >= 0:
                self.reassign_combo.setCurrentIndex(index)
        self.reassign_combo.blockSignals(False)

        for button, action in ((self.acknowledge_button, 'acknowledge'), (self.accept_button, 'accept'),
                               (self.reassign_button, 'reassign'), (self.retry_button, 'retry'),
                               (self.abort_button, 'abort')):
            button.setEnabled(p.can(action))
        proposal = selected.proposal if selected is not None and selected.proposal else ''
        self.accept_button.setText(f"Accept manager's proposal ({proposal})" if proposal
                                   else "Accept manager's proposal")
        status = p.status()
        self.status_label.setText(status.text + (f'  [{p.pending} pending]' if p.pending else ''))
        self.status_label.setStyleSheet(f'QLabel {{ color: {STATUS_COLOURS[status.level]}; }}')
        if self.operator_edit.text().strip() != p.operator_id and not self.operator_edit.hasFocus():
            self.operator_edit.setText(p.operator_id)

    def _fill(self, table, rows: list[tuple], state_column: int) -> None:
        table.setRowCount(len(rows))
        for r, values in enumerate(rows):
            for c, value in enumerate(values):
                item = QtWidgets.QTableWidgetItem(str(value))
                item.setToolTip(str(value))
                if c == state_column and value in STATE_COLOURS:
                    item.setForeground(QtGui.QBrush(QtGui.QColor(STATE_COLOURS[value])))
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                table.setItem(r, c, item)
        table.resizeColumnsToContents()
        table.horizontalHeader().setStretchLastSection(True)
