"""The supervisor console outside rqt: the same widget in its own window, or one offscreen screenshot.

:func:`run_console` starts a node (``supervisor_console``) in its own rclpy context on the
team's domain, spins it on a background thread, and shows
:class:`~robot_team.console.widget.SupervisorConsoleWidget` until the window closes; with
``screenshot`` it renders the widget once, offscreen, after the team's state has arrived, saves
the PNG and returns.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor

from robot_team.console.presenter import ConsolePresenter
from robot_team.console.qt import QtCore, QtWidgets, exec_app
from robot_team.console.ros_client import ConsoleClient
from robot_team.console.widget import SupervisorConsoleWidget
from robot_team.contracts.names import validate_namespace
from robot_team.ros.spin import SpinFailure, SpinThread

SETTLE_S = 0.5
"""After the supervisor is discovered, how long its transient-local history gets to arrive, wall s."""

MAX_RESPINS = 5
"""How many exceptions ending the console's ROS spin it spins past before it stops receiving (and says so)."""


def run_console(*, domain_id: int | None = None, namespace: str = '/', operator_id: str = '',
                screenshot: Path | None = None, timeout_s: float = 15.0, size: tuple[int, int] = (1400, 860)) -> int:
    """Run the console against a running team; return an exit code (0: ok).

    Parameters
    ----------
    domain_id, namespace
        The team's ROS domain and namespace (as given to ``robot-team run``).
    operator_id
        Who is at the console (the supervisor checks it on each request).
    screenshot
        Render once offscreen (``QT_QPA_PLATFORM=offscreen`` unless set) after the team's state
        arrived, write this PNG, exit.
    timeout_s
        With ``screenshot``: longest wait for the team's state, wall s.
    size
        Window size, pixels.

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    TimeoutError
        With ``screenshot``, if no supervisor answered within ``timeout_s``.
    RuntimeError
        If the screenshot cannot be written.
    """
    validate_namespace(namespace, 'team namespace')
    if screenshot is not None:
        os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen')

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(['robot-team console'])
    context = rclpy.Context()
    rclpy.init(context=context, **({} if domain_id is None else {'domain_id': domain_id}))
    node = rclpy.create_node('supervisor_console', context=context)
    presenter = ConsolePresenter(port=None, operator_id=operator_id)
    client = ConsoleClient(node, presenter, namespace)
    executor = SingleThreadedExecutor(context=context)   # callbacks never block (services: call_async)
    executor.add_node(node)
    spinner = start_spinning(executor, presenter, node.get_logger())
    widget = SupervisorConsoleWidget(presenter)
    widget.resize(*size)
    try:
        if screenshot is None:
            widget.show()
            return exec_app(app)
        return _screenshot(app, widget, client, Path(screenshot), timeout_s)
    finally:
        dispose(app, widget)
        del widget
        executor.shutdown(timeout_sec=2.0)
        spinner.join(timeout=5.0)
        node.destroy_node()
        context.try_shutdown()


def start_spinning(executor, presenter: ConsolePresenter, logger) -> SpinThread:
    """Spin ``executor`` on a thread that tells ``presenter`` (and ``logger``) what ends its spin; return it started.

    An exception that ends the spin (a callback's) is logged with its traceback's tail and
    shown on the console's status line; the executor spins again up to :data:`MAX_RESPINS`
    times, then the console says on its banner that it no longer receives the team
    (:meth:`ConsolePresenter.on_spin_failure`), instead of showing a stale team as current.
    """
    def tell(failure: SpinFailure) -> None:
        logger.error(f'the console\'s spin ended: {failure.error} (failure {failure.attempt}, '
                     f"{'spinning again' if failure.spun_again else 'no longer receiving'})\n"
                     + '\n'.join(failure.traceback_tail))
        presenter.on_spin_failure(failure.error, failure.spun_again, failure.attempt)

    spinner = SpinThread(executor, 'console-ros', MAX_RESPINS, on_failure=tell)
    spinner.start()
    return spinner


def dispose(app, widget) -> None:
    """Stop and delete ``widget`` now, on the GUI thread (Qt must not meet it again at interpreter exit)."""
    widget.stop()
    widget.close()
    widget.deleteLater()
    app.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    app.processEvents()


def wait_for_team(app, client, timeout_s: float) -> None:
    """Process Qt events until the supervisor is discovered and its latched state has arrived.

    Raises
    ------
    TimeoutError
        If that does not happen within ``timeout_s`` wall seconds.
    """
    deadline = time.monotonic() + timeout_s
    connected_at = None
    while time.monotonic() < deadline:
        app.processEvents()
        if connected_at is None and client.connected() and client.presenter.heard('hold'):
            connected_at = time.monotonic()
        if connected_at is not None and time.monotonic() - connected_at >= SETTLE_S:
            return
        time.sleep(0.02)
    raise TimeoutError(f'no supervisor state on {client.namespace} within {timeout_s:.0f} s (is the team running, '
                       f'on this ROS_DOMAIN_ID and namespace?)')


def save_screenshot(app, widget, path: Path) -> Path:
    """Render ``widget`` as it is now and write it to ``path`` (PNG); return the path.

    Raises
    ------
    RuntimeError
        If the image cannot be written.
    """
    widget.show()
    widget.refresh()
    for _ in range(5):
        app.processEvents()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not widget.grab().save(str(path), 'PNG'):
        raise RuntimeError(f'cannot write the screenshot {path}')
    return path


def _screenshot(app, widget, client, path: Path, timeout_s: float) -> int:
    wait_for_team(app, client, timeout_s)
    save_screenshot(app, widget, path)
    return 0
