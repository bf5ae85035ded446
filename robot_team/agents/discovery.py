"""A node's wait for DDS to discover a server it must call: sim time held, each wait on the record.

Finding a server is DDS discovery: wall time, longer the busier the machine, not a fact of the ED.
On a follow clock every wall second of it is tens of sim seconds, in which deadlines would pass and
a robot's server would be given up as unreachable: an outcome that depends on the load. So the
manager and the robots wait for a server that is not ready at once inside a :class:`DiscoveryHold`
(:func:`robot_team.ros.util.wait_for_server`'s ``hold``): a hold on ``team/clock_holds`` of reason
:data:`~robot_team.llm.lockstep.SERVER_DISCOVERY`, which the clock source charges no sim time, and
an ``observation`` (cue ``server_discovery``) with what was waited for, the wall s and whether it
was found.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from robot_team.contracts.events import EventKind
from robot_team.llm.lockstep import SERVER_DISCOVERY, ClockHoldPublisher


@dataclass
class DiscoveryWait:
    """One wait inside a :class:`DiscoveryHold`, as ``with hold(what) as wait:`` gives it.

    ``hold_id``: the hold's ID. ``found``: whether what was waited for was found; the block sets
    it False for a wait that ends without it and goes on anyway (one that raises is not found
    either). ``data``: more to record with the wait (e.g. a server count).
    """

    hold_id: str
    found: bool = True
    data: dict = field(default_factory=dict)


class DiscoveryHold:
    """``with hold(what):`` holds the team's sim time while ``node`` waits for a server, then records the wait.

    ``node`` (the one that waits) and ``holder`` (``'manager'``, a robot's name) are as for
    :class:`~robot_team.llm.lockstep.ClockHoldPublisher`; ``emit`` is the node's
    :meth:`~robot_team.ros.emitter.EventEmitter.emit`, which records each wait.
    """

    def __init__(self, node, holder: str, emit: Callable[..., object]):
        self._publisher = ClockHoldPublisher(node, holder, SERVER_DISCOVERY)
        self._holder = holder
        self._emit = emit

    @contextmanager
    def __call__(self, what: str = 'a server') -> Iterator[str]:
        """Hold sim time for the block (waiting for ``what``, e.g. ``service team/supervisor/authorize_task``).

        Yields the wait (:class:`DiscoveryWait`). Records one ``observation`` when the block ends:
        found (it returned, and did not say otherwise) or not (it raised: the exception goes on).
        """
        start = time.monotonic()
        found, wait = False, None
        try:
            with self._publisher() as hold_id:
                wait = DiscoveryWait(hold_id)
                yield wait
            found = wait.found
        finally:
            waited = time.monotonic() - start
            self._emit(EventKind.OBSERVATION,
                       f'{self._holder} waited {waited:.1f} wall s for {what}' + ('' if found else ': not found'),
                       target=self._holder, reason='DDS discovery; sim time was held meanwhile',
                       cue='server_discovery', server=what, waited_wall_s=round(waited, 3), found=found,
                       **(wait.data if wait is not None else {}))
