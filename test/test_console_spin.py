"""The supervisor console says when its own ROS spin fails, instead of showing a stale team as current.

rclpy's executors end ``spin()`` on the first exception a callback raises. The console spins
through :func:`robot_team.console.app.start_spinning`: each such exception is logged and put on
the status line, the executor spins again, and after ``MAX_RESPINS`` the banner says the console no
longer receives the team.
"""

import os

import pytest

os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen')
rclpy = pytest.importorskip('rclpy')
qt = pytest.importorskip('robot_team.console.qt', reason='no Qt binding (pip install -r requirements/gui.txt)')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from ros_helpers import wait_for  # noqa: E402
from robot_team.console import app as console_app  # noqa: E402
from robot_team.console.presenter import ConsolePresenter  # noqa: E402
from robot_team.console.widget import SupervisorConsoleWidget  # noqa: E402
from robot_team.run.lifecycle import shutdown_executor  # noqa: E402


def test_a_failing_callback_is_shown_spun_past_and_at_last_says_the_console_stopped_receiving(ros_context):
    node = rclpy.create_node('supervisor_console', context=ros_context)
    raised, to_raise, good = [], [1], []

    def failing():   # a callback of the console's node that raises while the test lets it (to_raise)
        if to_raise[0] > 0:
            to_raise[0] -= 1
            raised.append(len(raised) + 1)
            raise RuntimeError(f'malformed update {len(raised)}')
    node.create_timer(0.02, failing)
    node.create_timer(0.01, lambda: good.append(len(raised)))
    presenter = ConsolePresenter(port=None)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    spinner = console_app.start_spinning(executor, presenter, node.get_logger())
    app = qt.QtWidgets.QApplication.instance() or qt.QtWidgets.QApplication(['test'])
    widget = SupervisorConsoleWidget(presenter)
    try:
        assert wait_for(lambda: presenter.status().level == 'error', timeout=10.0)
        first = presenter.status().text
        assert 'RuntimeError: malformed update 1' in first and 'receives again' in first, first
        assert presenter.not_receiving() == ''
        after = len(good)
        assert wait_for(lambda: len(good) > after + 2, timeout=10.0), 'the spin did not go on after a failure'

        to_raise[0] = console_app.MAX_RESPINS   # the rest, up to one past what it spins past
        assert wait_for(lambda: spinner.gave_up, timeout=10.0)
        failures = spinner.take_failures()
        assert [f.attempt for f in failures] == list(range(1, console_app.MAX_RESPINS + 2))
        assert [f.spun_again for f in failures] == [True] * console_app.MAX_RESPINS + [False]
        stopped = presenter.not_receiving()
        assert f'RuntimeError: malformed update {console_app.MAX_RESPINS + 1}' in stopped, stopped
        assert presenter.status().text == stopped
        widget.refresh()
        assert widget.hold_label.text().startswith('NOT RECEIVING: ' + stopped), widget.hold_label.text()
        presenter.on_hold(False, [])   # what comes later does not take the banner away
        widget.refresh()
        assert widget.hold_label.text().startswith('NOT RECEIVING: ')
        seen = len(good)
        spinner.join(timeout=2.0)
        assert not spinner.is_alive() and len(good) == seen, 'nothing spins once the console gave up'
    finally:
        console_app.dispose(app, widget)
        shutdown_executor(executor, spinner, timeout_s=2.0)
        node.destroy_node()
