"""The Qt binding of the console: rqt's ``python_qt_binding`` where installed, else PySide6 from PyPI.

Import the Qt names from here (``from robot_team.console.qt import QtWidgets``) so that the
widget runs inside rqt (which loads its own binding) and standalone alike.
"""

from __future__ import annotations

try:   # inside rqt, or on a ROS 2 install with rqt: use the binding rqt uses
    from python_qt_binding import QtCore, QtGui, QtWidgets  # noqa: F401
    BINDING = 'python_qt_binding'
except ImportError:
    try:
        from PySide6 import QtCore, QtGui, QtWidgets  # noqa: F401
        BINDING = 'PySide6'
    except ImportError as exc:   # pragma: no cover - depends on the install
        raise ImportError('the supervisor console needs Qt: rqt (python_qt_binding) or PySide6 '
                          '(pip install -r requirements/gui.txt, or scripts/setup.sh --gui)') from exc


def exec_app(app) -> int:
    """Run ``app``'s event loop (``exec`` in Qt 6, ``exec_`` in older bindings); return its exit code."""
    run = getattr(app, 'exec', None) or getattr(app, 'exec_')
    return int(run())
