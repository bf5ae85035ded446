"""Spinning an executor on a thread of its own, without losing what ends its spin.

rclpy's executors end ``spin()`` on the first exception a callback raises, or that building
their wait set raises (rclpy 9.1.2's ``ActionClient`` made on a spinning node:
:mod:`robot_team.ros.action_client`). A plain ``threading.Thread(target=executor.spin)`` then
ends, and every node on that executor stops receiving, with nothing said. :class:`SpinThread`
keeps each such exception as a :class:`SpinFailure`, tells whoever asked (``on_failure``), and
spins again, a bounded number of times. The in-process team's runner
(:mod:`robot_team.run.episode`) records the failures as ``node_crashed`` events; the supervisor
console (:mod:`robot_team.console.app`) shows them on its banner.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class SpinFailure:
    """An exception that ended an executor's ``spin()`` (see :class:`SpinThread`).

    ``exception``: the exception; ``error``: ``'Type: message'``; ``traceback_tail``: the last
    lines of its traceback; ``spun_again``: whether :class:`SpinThread` spun the executor again;
    ``attempt``: its number among the thread's failures (1 for the first).
    """

    exception: Exception
    error: str
    traceback_tail: list[str]
    spun_again: bool
    attempt: int


class SpinThread(threading.Thread):
    """A daemon thread spinning ``executor``; an exception that ends ``spin()`` is kept and spun past.

    Each exception that ends ``spin()`` is kept (:meth:`take_failures`), passed to
    ``on_failure`` if given, and the executor spun again, up to ``max_respins`` times; after that
    the thread ends (:attr:`gave_up`). ``spin()`` returning (the executor shut down) or an
    exception once the executor's context is shut down ends it quietly.

    Parameters
    ----------
    executor
        An rclpy executor (``spin()``, ``context``).
    name
        The thread's name.
    max_respins
        How many times the executor is spun again after an exception (>= 0).
    on_failure
        Called on this thread with each :class:`SpinFailure`, after it is kept and before the
        executor spins again (or the thread ends). An exception it raises is printed to stderr
        with its traceback and does not stop the thread.

    Raises
    ------
    ValueError
        If ``max_respins`` is negative.
    """

    def __init__(self, executor, name: str, max_respins: int,
                 on_failure: Callable[[SpinFailure], None] | None = None):
        super().__init__(name=name, daemon=True)
        if max_respins < 0:
            raise ValueError(f'max_respins must be >= 0, got {max_respins}')
        self._executor = executor
        self._max_respins = max_respins
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._failures: list[SpinFailure] = []
        self._taken = 0
        self.gave_up = False
        """True once an exception ended ``spin()`` more than ``max_respins`` times and ``on_failure`` was told of
        it: nothing spins any more."""

    def run(self) -> None:
        """Spin until the executor is shut down, keeping each exception that ends ``spin()``."""
        while True:
            try:
                self._executor.spin()
                return
            except Exception as exc:  # noqa: BLE001 - kept, reported, spun past
                if not self._executor.context.ok():   # a teardown raced the wait set: a normal end
                    return
                with self._lock:
                    again = len(self._failures) < self._max_respins
                    tail = traceback.format_exc().rstrip().splitlines()[-12:]
                    failure = SpinFailure(exc, f'{type(exc).__name__}: {exc}', tail, again,
                                          attempt=len(self._failures) + 1)
                    self._failures.append(failure)
                self._tell(failure)
                if not again:
                    self.gave_up = True   # (after telling: whoever reads it sees the last failure told)
                    return

    def take_failures(self) -> list[SpinFailure]:
        """Return the failures not taken before, oldest first."""
        with self._lock:
            new = self._failures[self._taken:]
            self._taken = len(self._failures)
            return new

    def _tell(self, failure: SpinFailure) -> None:
        if self._on_failure is None:
            return
        try:
            self._on_failure(failure)
        except Exception:  # noqa: BLE001 - the listener's own failure is printed, the spin goes on
            traceback.print_exc()
