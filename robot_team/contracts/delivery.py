"""When a published message has reached its readers, for the hold that keeps sim time still meanwhile (rclpy-free).

On the follow clock every wall second is tens of sim seconds, and the clock may jump across quiet
time (:mod:`robot_team.contracts.clock_sync`). A message the team's decisions start from (a patient
arrival) that DDS delivers late, because its reader was matched late on a busy host or a lost
sample waited for the writer's next heartbeat to be repaired, let sim time run on meanwhile: in a
rehearsal (50 process-per-node starts beside a busy loop, run 17) the manager got an arrival
1.08 wall s after it was published, the clock had jumped from 3 s to 665 s, and the case missed
its onboarding deadline.

So the publisher holds sim time (``team/clock_holds``, reason
:data:`robot_team.llm.lockstep.MESSAGE_DELIVERY`, charged nothing) from the publish until the
message is delivered: at least ``expected_readers`` readers matched (the launcher knows who reads
it: the manager and the supervisor read arrivals, the info-collection robots badge scans, the
display robots the screens' content) and every matched reader acknowledged every
sample (DDS's reliable acknowledgement: ``Publisher.wait_for_all_acked`` with no wait). A delivery
not made within :data:`DELIVERY_WAIT_S` wall seconds ends its hold anyway and is reported (a reader
that died stays matched until its lease ends; one that never comes must not stop the clock).

:class:`Deliveries` is the bookkeeping; the node's side is :class:`robot_team.sim.delivery.DeliveryHolds`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Callable

DELIVERY_WAIT_S = 10.0
"""Wall s after a publish within which its delivery should be made; its hold ends then anyway
(reported). Fast DDS keeps a dead reader matched for the participant lease (3 s with the team's
profile, ``config/fastdds/team_liveness.xml``), and repairs a lost sample within a writer heartbeat
period (50 ms there; 3 s by Fast DDS's default)."""


@dataclass(frozen=True)
class Reach:
    """What a publisher's readers have of it now.

    ``matched``: readers matched (count); ``acked``: every matched reader acknowledged every sample
    the publisher sent.
    """

    matched: int
    acked: bool


@dataclass
class PendingDelivery:
    """One message awaiting delivery.

    Its publisher's ``key``, the ``hold_id`` that holds sim time, the readers expected (count),
    ``since`` (wall s, the caller's clock) and what it was (``what``, for the record).
    """

    key: str
    hold_id: str
    expected_readers: int
    since: float
    what: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Settled:
    """A delivery that ended: made (``delivered``) or given up after the wait; its ``reach`` then and wall s taken."""

    pending: PendingDelivery
    delivered: bool
    reach: Reach
    waited_s: float


def check_expected_readers(expected_readers: int) -> int:
    """Return ``expected_readers`` (a count of readers) if it is a whole number, 0 or more.

    Raises
    ------
    ValueError
        Naming ``expected_readers`` and what it must be, otherwise.
    """
    if isinstance(expected_readers, bool) or not isinstance(expected_readers, int) or expected_readers < 0:
        raise ValueError(f'expected_readers must be a whole number, 0 or more, got {expected_readers!r}')
    return expected_readers


def is_delivered(reach: Reach, expected_readers: int) -> bool:
    """Return whether a message has reached its readers: ``expected_readers`` matched, and all acknowledged.

    Raises
    ------
    ValueError
        As :func:`check_expected_readers`.
    """
    return reach.matched >= check_expected_readers(expected_readers) and reach.acked


class Deliveries:
    """The messages a node published and holds sim time for, until each is delivered or given up.

    Parameters
    ----------
    wait_s
        See :data:`DELIVERY_WAIT_S` (wall s, positive).

    Raises
    ------
    ValueError
        If ``wait_s`` is not a positive number.

    Notes
    -----
    Thread-safe: a node's publishing callback calls :meth:`add`, its wall timer :meth:`settle`.
    """

    def __init__(self, wait_s: float = DELIVERY_WAIT_S):
        if not (isinstance(wait_s, (int, float)) and math.isfinite(wait_s) and wait_s > 0):
            raise ValueError(f'wait_s must be a positive number of wall seconds, got {wait_s!r}')
        self.wait_s = float(wait_s)
        self._pending: list[PendingDelivery] = []
        self._lock = threading.Lock()

    def add(self, pending: PendingDelivery) -> None:
        """Take a message just published, with the hold begun for it.

        Raises
        ------
        ValueError
            As :func:`check_expected_readers`, for its ``expected_readers``.
        """
        check_expected_readers(pending.expected_readers)
        with self._lock:
            self._pending.append(pending)

    def settle(self, now: float, reach: Callable[[str], Reach]) -> list[Settled]:
        """End and return the deliveries made, and those still not made ``wait_s`` after their publish.

        ``reach(key)`` tells what the publisher ``key``'s readers have now; it is asked once per
        publisher per call. ``now`` is on the clock of the ``since`` the deliveries were added with.
        """
        with self._lock:
            pending, self._pending = self._pending, []
        reaches: dict[str, Reach] = {}
        settled: list[Settled] = []
        kept: list[PendingDelivery] = []
        for item in pending:
            if item.key not in reaches:
                reaches[item.key] = reach(item.key)
            now_reach = reaches[item.key]
            waited = round(now - item.since, 3)
            if is_delivered(now_reach, item.expected_readers):
                settled.append(Settled(item, True, now_reach, waited))
            elif now - item.since > self.wait_s:
                settled.append(Settled(item, False, now_reach, waited))
            else:
                kept.append(item)
        with self._lock:
            self._pending = kept + self._pending
        return settled

    @property
    def pending(self) -> int:
        """How many deliveries are not settled yet."""
        with self._lock:
            return len(self._pending)

    def take_all(self) -> list[PendingDelivery]:
        """Remove and return every pending delivery (the node stops: their holds must end)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending
