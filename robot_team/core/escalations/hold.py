"""The team hold: the team's stop, engaged by hold escalations and released when each is resolved."""

from __future__ import annotations

import threading
from typing import Callable

from robot_team.core.escalations.lifecycle import Emit, HoldState
from robot_team.contracts.events import EventKind


class TeamHold:
    """The team's stop: engaged by hold escalations, released when each is resolved.

    Parameters
    ----------
    emit
        Event sink (``team_held``, ``team_released``).
    stop_robots
        Called with the reason when the hold is engaged (and again when one more hold joins):
        cancel every robot's goals (the node cancels every goal of each robot's
        ``execute_task`` and Nav2 actions).
    publish
        Called with the :class:`HoldState` whenever it changes (``team/hold``).

    Notes
    -----
    Several holds may be engaged at once; the team stays held until the last is released.
    Thread-safe.
    """

    def __init__(self, emit: Emit, stop_robots: Callable[[str], None], publish: Callable[[HoldState], None]):
        self._emit = emit
        self._stop_robots = stop_robots
        self._publish = publish
        self._lock = threading.Lock()
        self._holds: dict[str, tuple[str, str, float]] = {}   # escalation ID -> (reason, by, since)
        self.held_s = 0.0
        """Total ROS time the team has been held (s), over every released hold."""

    @property
    def active(self) -> bool:
        """Whether the team is held."""
        with self._lock:
            return bool(self._holds)

    def state(self) -> HoldState:
        """Return the current hold (a copy)."""
        with self._lock:
            if not self._holds:
                return HoldState()
            first = min(self._holds.values(), key=lambda h: h[2])
            return HoldState(active=True, escalation_ids=list(self._holds), reason=first[0], held_by=first[1],
                             since_s=first[2])

    def engage(self, escalation_id: str, reason: str, by: str, now_s: float) -> None:
        """Hold the team for ``escalation_id``: stop the robots, publish, record ``team_held``."""
        with self._lock:
            first = not self._holds
            self._holds[escalation_id] = (reason, by, now_s)
        self._emit(EventKind.TEAM_HELD, f'team held by {escalation_id} ({by})', target=escalation_id, reason=reason,
                   escalation_id=escalation_id, held_by=by, first=first)
        self._stop_robots(reason)
        self._publish(self.state())

    def release(self, escalation_id: str, by: str, now_s: float) -> float:
        """Release ``escalation_id``'s hold; return the ROS time the team was held if it is now free, else 0."""
        with self._lock:
            hold = self._holds.pop(escalation_id, None)
            if hold is None:
                return 0.0
            free = not self._holds
            since = min([hold[2], *(h[2] for h in self._holds.values())])
            held_for = max(0.0, now_s - since) if free else 0.0
            self.held_s += held_for
        self._emit(EventKind.TEAM_RELEASED, f'{escalation_id} released by {by}' + ('' if free else
                   ' (the team stays held by ' + ', '.join(self.state().escalation_ids) + ')'),
                   target=escalation_id, escalation_id=escalation_id, released_by=by, team_free=free,
                   held_for_s=held_for)
        self._publish(self.state())
        return held_for
