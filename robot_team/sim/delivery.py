"""A node's side of delivery holds: sim time held from a publish until DDS delivered it to its readers.

The rule and its reasons are in :mod:`robot_team.contracts.delivery`. :class:`DeliveryHolds`
begins a hold on ``team/clock_holds`` (reason :data:`robot_team.llm.lockstep.MESSAGE_DELIVERY`,
charged no sim time) when the node publishes such a message, and a wall-clock timer (sim time
stands still meanwhile, so a ROS-time timer would never fire) checks every ``period_s`` whether
each is delivered: the publisher's matched readers (``get_subscription_count``) and their
acknowledgements (``wait_for_all_acked`` with no wait). A delivery given up after ``wait_s`` is
recorded (a ``sim`` event, ``what: delivery_late``) and logged; one made is logged at debug level
only, as its wall time depends on the machine, not on the ED.

Only nodes on sim time hold (on the wall clock nothing holds, as a live floor does not wait).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.logging import LoggingSeverity

from robot_team.contracts.delivery import (DELIVERY_WAIT_S, Deliveries, PendingDelivery, Reach, Settled,
                                           check_expected_readers)
from robot_team.contracts.events import EventKind
from robot_team.llm.lockstep import MESSAGE_DELIVERY, ClockHoldPublisher
from robot_team.ros.emitter import log_line

CHECK_PERIOD_S = 0.01
"""Wall s between two checks of the pending deliveries (only while one is pending)."""


class DeliveryHolds:
    """Publish messages (:meth:`publish`) and hold sim time from each until its readers have it.

    Parameters
    ----------
    node
        The rclpy node that publishes (on sim time; else nothing is held).
    emit
        The node's event emitter's ``emit(kind, summary, /, *, target, reason, **data)``.
    wait_s
        Wall s after which a delivery is given up (:data:`robot_team.contracts.delivery.DELIVERY_WAIT_S`).
    period_s
        Wall s between two checks while a delivery is pending.

    Raises
    ------
    ValueError
        If ``wait_s`` or ``period_s`` is not a positive number.
    """

    def __init__(self, node, emit: Callable, wait_s: float = DELIVERY_WAIT_S, period_s: float = CHECK_PERIOD_S):
        if not period_s > 0:
            raise ValueError(f'period_s must be a positive number of wall seconds, got {period_s!r}')
        self._deliveries = Deliveries(wait_s)
        self._emit = emit
        self._logger = node.get_logger()
        self.enabled = bool(node.get_parameter('use_sim_time').value)
        self._publishers: dict[str, object] = {}
        self._holds = ClockHoldPublisher(node, node.get_name(), MESSAGE_DELIVERY) if self.enabled else None
        self._timer = None
        self._lock = threading.Lock()   # a pending delivery and a running check timer go together
        if self.enabled:
            self._timer = node.create_timer(period_s, self._check, clock=Clock(clock_type=ClockType.STEADY_TIME),
                                            callback_group=MutuallyExclusiveCallbackGroup())
            self._timer.cancel()
        self.settled: list[Settled] = []
        """The deliveries that ended so far (made or given up), in order."""

    def publish(self, publisher, msg, expected_readers: int, **what) -> str | None:
        """Publish ``msg`` on ``publisher`` and hold sim time until its readers have it.

        Held until at least ``expected_readers`` readers are matched and every matched reader
        acknowledged it (:func:`robot_team.contracts.delivery.is_delivered`). ``what`` describes the
        message for the record (e.g. ``patient_id``). Returns the hold's ID, or None when nothing is
        held (the node is not on sim time).

        Raises
        ------
        ValueError
            As :func:`robot_team.contracts.delivery.check_expected_readers` (nothing is published then).
        """
        check_expected_readers(expected_readers)
        publisher.publish(msg)
        if not self.enabled:
            return None
        key = publisher.topic_name
        self._publishers[key] = publisher
        hold_id = self._holds.begin()
        with self._lock:
            self._deliveries.add(PendingDelivery(key, hold_id, expected_readers, time.monotonic(), dict(what)))
            self._timer.reset()
        return hold_id

    def _reach(self, key: str) -> Reach:
        publisher = self._publishers[key]
        return Reach(publisher.get_subscription_count(), bool(publisher.wait_for_all_acked(Duration(seconds=0))))

    def _check(self) -> None:
        """Settle the deliveries made or overdue, end their holds, and stop checking when none is left."""
        for item in self._deliveries.settle(time.monotonic(), self._reach):
            self._holds.end(item.pending.hold_id)
            self._report(item)
            self.settled.append(item)   # after its report: whoever reads settled finds it recorded
        self._stop_checking_when_idle()

    def _report(self, item: Settled) -> None:
        """Log a delivery made; log and record one given up."""
        topic, reach = item.pending.key, item.reach
        if item.delivered:
            log_line(self._logger, LoggingSeverity.DEBUG,
                     f'{topic}: delivered to {reach.matched} reader(s) after {item.waited_s:.3f} wall s')
            return
        summary = (f'{topic}: not delivered within {item.waited_s:.1f} wall s ({reach.matched} of '
                   f"{item.pending.expected_readers} reader(s) matched, "
                   f"{'all' if reach.acked else 'not all'} acknowledged); sim time runs on")
        log_line(self._logger, LoggingSeverity.WARN, summary)
        self._emit(EventKind.SIM, summary, target=topic, reason='a reader matched late or missed the message',
                   what='delivery_late', topic=topic, expected_readers=item.pending.expected_readers,
                   matched=reach.matched, acked=reach.acked, waited_s=item.waited_s, **item.pending.what)

    def _stop_checking_when_idle(self) -> None:
        with self._lock:
            if not self._deliveries.pending and self._timer is not None:
                self._timer.cancel()

    def stop(self) -> None:
        """End every hold still pending (the node stops) and the checks."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        for pending in self._deliveries.take_all():
            self._holds.end(pending.hold_id)
