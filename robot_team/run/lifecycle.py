"""An episode's lifecycle: signals, an orderly teardown, and the exit code of ``robot-team run``.

Everything an episode starts ends with it: :func:`stop_nodes` stops the team's work while the
executor still spins (the manager's brain thread, the robots' tasks with their LLM requests in
flight, the simulator's waiting goals and pages), so that what they record on their way out
reaches the record; :func:`shutdown_executor` then ends the executor's threads and
:func:`threads_left` names any thread that outlived the episode (reported in ``report.json``
under ``teardown``). :class:`Interrupt` turns SIGINT and SIGTERM into a request to stop: the
episode ends with outcome ``interrupted`` and still writes its report and record.

Exit codes of ``robot-team run`` (:func:`exit_code`):

====  ==========================================================================================
0     the episode's outcome is the scenario's expected one (``success`` when none is given);
      with several cases (a shift, or a patient who arrived during the episode), every case's
      outcome is its expected one (the report's ``cases``) and the run was not cut off
1     the episode ran to another outcome (``failure``, ``escalated``, ``timeout``...), a case
      did, or a patient waited so long for the team that a person was asked to take them (the
      report's ``unserved_patients``)
2     bad input: scenario, floor, staff directory or option (nothing ran)
3     the team did not start (a node crashed or did not come up)
130   interrupted by SIGINT (Ctrl-C); 143: by SIGTERM (128 + the signal's number)
====  ==========================================================================================
"""

from __future__ import annotations

import inspect
import signal
import threading
import time
from typing import Iterable

from robot_team.catalog import OPERATIONAL_ROBOTS
from robot_team.contracts.names import HOSPITAL_SYSTEMS, MOTION_SIM, Role, role_name

EXIT_AS_EXPECTED = 0
EXIT_UNEXPECTED_OUTCOME = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_STARTED = 3

STOP_ORDER = (Role.MANAGER.value, MOTION_SIM, HOSPITAL_SYSTEMS, *OPERATIONAL_ROBOTS)
"""Nodes stopped first, in this order: no new decision; the floor's clock stopped and its waiting
goals released; the hospital's waiting pages released (a robot's tool may be blocked in a page the
simulator holds); then the robots' tasks, waited for (a fleet's robots as their role's)."""


class Interrupt:
    """Turn SIGINT and SIGTERM into a request to end the episode (a context manager).

    On the first signal, :attr:`signal_name` is set, :attr:`event` is set, and the previous
    handlers are back in place, so that a second Ctrl-C stops at once (the usual convention).
    Outside the main thread (where Python cannot install handlers) it does nothing.

    Attributes
    ----------
    event : threading.Event
        Set when a signal arrived.
    signal_name : str
        ``'SIGINT'`` or ``'SIGTERM'`` once one arrived, else ``''``.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.event = threading.Event()
        self.signal_name = ''
        self._previous: dict[int, object] = {}

    def __enter__(self) -> 'Interrupt':
        """Install the handlers (main thread only)."""
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        """Put the previous handlers back."""
        self._restore()

    def _handle(self, signum, _frame) -> None:
        self.signal_name = signal.Signals(signum).name
        self.event.set()
        self._restore()

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def is_set(self) -> bool:
        """Return whether a signal arrived."""
        return self.event.is_set()


def stop_nodes(nodes: Iterable, timeout_s: float = 5.0) -> list[str]:
    """Call ``stop(timeout_s)`` on every node that has one, in :data:`STOP_ORDER`; return those that did not stop.

    Nodes without ``stop`` are left alone (they hold no thread of their own). A node's
    ``stop`` returns False (or raises) when its work did not end in time.
    """
    order = {name: i for i, name in enumerate(STOP_ORDER)}
    stoppable = [n for n in nodes if callable(getattr(n, 'stop', None))]
    stoppable.sort(key=lambda n: order.get(n.get_name(), order.get(role_name(n.get_name()), len(order))))
    not_stopped = []
    for node in stoppable:
        try:
            stopped = node.stop(timeout_s) if _takes_timeout(node.stop) else node.stop()
        except Exception as exc:  # noqa: BLE001 - one node's failure must not keep the others running
            stopped = False
            node.get_logger().error(f'stop failed: {type(exc).__name__}: {exc}')
        if stopped is False:
            not_stopped.append(node.get_name())
    return not_stopped


def _takes_timeout(method) -> bool:
    try:
        return 'timeout_s' in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def shutdown_executor(executor, spin_thread: threading.Thread, timeout_s: float = 5.0) -> bool:
    """Shut ``executor`` down and join the thread spinning it; return whether every callback finished in time.

    Never blocks past ``timeout_s`` (plus the join): a callback still running is reported by
    :func:`threads_left` instead of hanging the run.
    """
    try:
        finished = executor.shutdown(timeout_sec=timeout_s, wait_for_threads=False)
    except TypeError:   # an rclpy without wait_for_threads
        finished = executor.shutdown(timeout_sec=timeout_s)
    spin_thread.join(timeout=timeout_s)
    return bool(finished) and not spin_thread.is_alive()


def threads_left(before: set[threading.Thread], grace_s: float = 2.0) -> list[str]:
    """Return the names of threads started since ``before`` that are still alive after ``grace_s`` (wall s)."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not alive or time.monotonic() >= deadline:
            return sorted(t.name for t in alive)
        time.sleep(0.02)


TIME_LIMIT_OUTCOMES = ('timeout', 'held_for_human')
"""Outcomes of a run its time limit ended (not every case closed)."""


def exit_code(report: dict) -> int:
    """Return the exit code of ``robot-team run`` for a run report (see the module docstring)."""
    outcome = report.get('outcome')
    if outcome == 'interrupted':
        name = report.get('interrupted_by') or 'SIGINT'
        return 128 + int(getattr(signal.Signals, name, signal.SIGINT))
    if outcome == 'input_error':
        return EXIT_BAD_INPUT
    if outcome == 'start_error':
        return EXIT_NOT_STARTED
    expected = report.get('expected_outcome') or 'success'
    if report.get('unserved_patients'):   # a patient who waited for a person: never a run as expected
        return EXIT_UNEXPECTED_OUTCOME
    cases = report.get('cases') or []
    if len(cases) > 1:   # several cases: each its own expected outcome
        as_expected = all(c.get('outcome') == (c.get('expected_outcome') or 'success') for c in cases)
        return EXIT_AS_EXPECTED if as_expected and outcome not in TIME_LIMIT_OUTCOMES else EXIT_UNEXPECTED_OUTCOME
    return EXIT_AS_EXPECTED if outcome == expected else EXIT_UNEXPECTED_OUTCOME
