"""The console widget offscreen (QT_QPA_PLATFORM=offscreen): clicks drive the supervisor's real services.

Screenshots are saved as test artifacts in ``$ROBOT_TEAM_TEST_ARTIFACTS`` (default
``test-artifacts/`` in the checkout): ``console_widget.png`` from the widget, and
``console_cli.png`` from ``robot-team console --screenshot`` in its own process.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ros_helpers import wait_for

os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen')
rclpy = pytest.importorskip('rclpy')
qt = pytest.importorskip('robot_team.console.qt', reason='no Qt binding (pip install -r requirements/gui.txt)')

from rclpy.parameter import Parameter  # noqa: E402

from robot_team.contracts import names  # noqa: E402
from robot_team.contracts.config import load_scenario, load_staff_seed, share_dir  # noqa: E402
from robot_team.directory import StaffDirectory  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.ros.messages import report_to_msg  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get('ROBOT_TEAM_TEST_ARTIFACTS', ROOT / 'test-artifacts'))


def call(node, srv_type, name, **fields):
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(srv_type.Request(**fields))
    assert wait_for(future.done)
    return future.result()


@pytest.fixture
def team(ros_context, executor, tmp_path):
    """A supervisor with the run's staff directory, and the manager's side as the test drives it."""
    from robot_team.agents.supervisor_node import SupervisorNode
    db = tmp_path / 'staff.sqlite'
    StaffDirectory.create(db, load_staff_seed(share_dir() / 'config' / 'staff.yaml'))
    supervisor = SupervisorNode(load_scenario('onboarding'), context=ros_context, parameter_overrides=[
        Parameter('use_sim_time', value=False), Parameter('staff_db', value=str(db)),
        Parameter('escalation_db', value=str(tmp_path / 'escalations.sqlite'))])
    manager = rclpy.create_node('test_manager', context=ros_context)
    for node in (supervisor, manager):
        executor.add_node(node)
    try:
        yield supervisor, manager
    finally:
        for node in (supervisor, manager):
            executor.remove_node(node)
            node.destroy_node()


def escalate(manager, options):
    from robot_team.srv import AuthorizeTask, RequestEscalation, SubmitReport
    auth = call(manager, AuthorizeTask, names.AUTHORIZE_TASK, task_type='navigation', robot='navigation_robot',
                hcw_id='80', requested_by='manager')
    report = TaskReportModel(task_id=auth.task_id, task_type='navigation', robot='navigation_robot',
                             status='failure', issue='HCW #80 unavailable: on an urgent call')
    assert call(manager, SubmitReport, names.SUBMIT_REPORT, report=report_to_msg(report)).accepted
    esc = call(manager, RequestEscalation, names.REQUEST_ESCALATION, task_id=auth.task_id,
               reason='HCW #80 unavailable', options=options)
    assert esc.accepted
    return auth.task_id, esc.escalation_id


def test_clicks_drive_the_supervisor_and_a_screenshot_is_saved(team, ros_context, executor):
    from robot_team.console.app import dispose, save_screenshot, wait_for_team
    from robot_team.console.presenter import ConsolePresenter
    from robot_team.console.ros_client import ConsoleClient
    from robot_team.console.widget import SupervisorConsoleWidget
    supervisor, manager = team
    task_id, esc_id = escalate(manager, ['reassign:90', 'retry', 'abort'])
    app = qt.QtWidgets.QApplication.instance() or qt.QtWidgets.QApplication([])
    node = rclpy.create_node('supervisor_console', context=ros_context)
    presenter = ConsolePresenter(port=None)
    client = ConsoleClient(node, presenter)
    executor.add_node(node)
    widget = SupervisorConsoleWidget(presenter)
    widget.resize(1400, 860)
    widget.show()

    def pump_until(predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            app.processEvents()
            if predicate():
                return True
            time.sleep(0.02)
        app.processEvents()
        return predicate()
    try:
        wait_for_team(app, client, timeout_s=15.0)
        table = widget.escalation_table
        assert pump_until(lambda: table.rowCount() == 1 and table.item(0, 0).text() == esc_id)
        assert table.item(0, 1).text() == 'open' and table.item(0, 7).text() == 'reassign:90'
        assert pump_until(lambda: widget.reassign_combo.findData('90') >= 0)   # the staff directory

        widget.acknowledge_button.click()   # no operator ID yet: refused by the console, nothing sent
        assert pump_until(lambda: 'enter your operator ID' in widget.status_label.text())
        widget.operator_edit.setText('visitor')
        widget.retry_button.click()         # not an authorised operator: refused by the supervisor
        assert pump_until(lambda: 'refused' in widget.status_label.text()), widget.status_label.text()
        assert "operator 'visitor' is not authorised" in widget.status_label.text()
        widget.instruction_button.click()   # empty instruction: refused by the console
        assert pump_until(lambda: 'instruction first' in widget.status_label.text())
        assert supervisor.desk.record(esc_id).state.value == 'open'

        widget.operator_edit.setText('charge_nurse')
        widget.acknowledge_button.click()
        assert wait_for(lambda: supervisor.desk.record(esc_id).state.value == 'acknowledged')
        assert pump_until(lambda: table.item(0, 1).text() == 'acknowledged')
        assert pump_until(lambda: not widget.acknowledge_button.isEnabled())
        widget.instruction_edit.setText('Page #90 before the escort')
        widget.instruction_button.click()
        assert wait_for(lambda: [i.text for i in supervisor.desk.store.instructions() if i.accepted]
                        == ['Page #90 before the escort'])

        widget.reassign_combo.setCurrentIndex(widget.reassign_combo.findData('90'))
        widget.note_edit.setText('Dr. Brennan covers ER-12')
        widget.reassign_button.click()
        assert wait_for(lambda: supervisor.desk.record(esc_id).state.value == 'resolved')
        record = supervisor.desk.record(esc_id)
        assert (record.decision, record.hcw_id, record.decided_by, record.note) == (
            'reassign', '90', 'charge_nurse', 'Dr. Brennan covers ER-12')
        assert pump_until(lambda: table.item(0, 1).text() == 'resolved' and 'accepted' in
                          widget.status_label.text())
        assert pump_until(lambda: widget.task_table.rowCount() == 1 and widget.task_table.item(0, 3).text() ==
                          'failure')

        widget.concern_edit.setText('ER-12 door sticks')
        widget.hold_button.click()          # stop-and-hold: the banner turns red
        assert pump_until(lambda: 'TEAM HELD' in widget.hold_label.text(), timeout=10.0)
        assert supervisor.desk.hold.active
        path = save_screenshot(app, widget, ARTIFACTS / 'console_widget.png')
        assert path.stat().st_size > 10_000
        image = qt.QtGui.QImage(str(path))
        assert (image.width(), image.height()) == (1400, 860)
    finally:
        dispose(app, widget)   # deleted on the GUI thread now, not by the interpreter at exit
        executor.remove_node(node)
        node.destroy_node()


def test_robot_team_console_screenshot_in_its_own_process(team, domain_id):
    supervisor, manager = team
    escalate(manager, ['reassign:90', 'abort'])
    path = ARTIFACTS / 'console_cli.png'
    path.unlink(missing_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM='offscreen', PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, '-X', 'faulthandler', '-m', 'robot_team.cli', 'console', '--screenshot',
                           str(path),
                           '--domain-id', str(domain_id), '--operator-id', 'charge_nurse'],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.exists() and path.stat().st_size > 10_000
    nobody = subprocess.run([sys.executable, '-m', 'robot_team.cli', 'console', '--screenshot', str(path),
                             '--domain-id', str(domain_id), '--namespace', 'floor9', '--timeout', '3'],
                            env=env, capture_output=True, text=True, timeout=120)
    assert nobody.returncode == 1 and 'no supervisor state on /floor9' in nobody.stdout
