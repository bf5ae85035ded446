"""Restarting a node that died, as a deployment does (rclpy-free).

Two pieces shared by ``robot-team run --processes`` (:mod:`robot_team.run.processes`) and the launch
files (:mod:`robot_team.bringup.plan`, launch's ``respawn``):

- :class:`RestartPolicy`: which crashed node processes start again, after what delay (wall
  seconds, as launch's ``respawn_delay``) and how often (``max_restarts`` per node, as launch's
  ``respawn_max_retries``); the bookkeeping of attempts and of the restarts that are due;
- the DDS participant profile of the team's processes (:func:`dds_environment`): Fast DDS keeps
  a killed process's endpoints matched for its participant lease (20 s by default), so an action
  client would still see a dead server as ready; the profile ``config/fastdds/team_liveness.xml``
  announces a 3 s lease (every 1 s), so a killed node leaves the ROS graph within about 3 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from robot_team.contracts.config import share_dir

DEFAULT_MAX_RESTARTS = 3
"""How many times a node that died is started again, per node and episode (0: never)."""
DEFAULT_RESTART_DELAY_S = 0.5
"""Wall seconds between a node's exit and its restart (launch's ``respawn_delay``)."""

FASTDDS_PROFILES_VARIABLE = 'FASTDDS_DEFAULT_PROFILES_FILE'
"""The environment variable through which Fast DDS loads an XML profiles file at start."""
LIVENESS_PROFILE = 'config/fastdds/team_liveness.xml'
"""The team's Fast DDS profile (participant lease 3 s, announced every 1 s), relative to the share folder."""


class RestartError(ValueError):
    """A restart setting out of range (negative count or delay), or a restart not scheduled."""


@dataclass(frozen=True)
class RestartDecision:
    """What happens to a node whose process ended.

    ``restart`` True: it starts again at ``due_s`` (the caller's clock, s) as attempt ``attempt``
    (1-based). False: it stays down, ``reason`` says why: ``disabled`` (``max_restarts`` 0),
    ``not_restartable`` (a node that cannot resume, e.g. the clock source) or ``exhausted``.
    """

    node: str
    restart: bool
    attempt: int
    due_s: float = math.inf
    reason: str = ''


@dataclass
class RestartPolicy:
    """Restart bookkeeping for a set of node processes: attempts per node, delay, the most attempts.

    ``max_restarts`` restarts per node (0: never), each ``delay_s`` wall seconds after the exit;
    nodes in ``not_restartable`` are never restarted. Time is whatever clock the caller passes
    (``now_s``, seconds; the runner uses ``time.monotonic``).

    Raises
    ------
    RestartError
        If ``max_restarts`` is not an integer >= 0 or ``delay_s`` not a finite number >= 0.
    """

    max_restarts: int = DEFAULT_MAX_RESTARTS
    delay_s: float = DEFAULT_RESTART_DELAY_S
    not_restartable: frozenset = frozenset()
    attempts: dict = field(default_factory=dict)
    """Restarts begun per node (node -> count)."""
    _due: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise RestartError(f'max_restarts must be an integer >= 0 (0: never restart), got {self.max_restarts!r}')
        if not isinstance(self.delay_s, (int, float)) or not math.isfinite(self.delay_s) or self.delay_s < 0:
            raise RestartError(f'restart delay must be a number of seconds >= 0, got {self.delay_s!r}')
        self.not_restartable = frozenset(self.not_restartable)

    def crashed(self, node: str, now_s: float) -> RestartDecision:
        """Record that ``node``'s process ended at ``now_s``; return whether and when it restarts.

        A restart that is decided is pending until :meth:`due` hands it out (or :meth:`cancel`).
        """
        done = self.attempts.get(node, 0)
        if node in self.not_restartable:
            return RestartDecision(node, False, done, reason='not_restartable')
        if self.max_restarts == 0:
            return RestartDecision(node, False, done, reason='disabled')
        if done >= self.max_restarts:
            return RestartDecision(node, False, done, reason='exhausted')
        decision = RestartDecision(node, True, done + 1, due_s=now_s + self.delay_s)
        self._due[node] = decision
        return decision

    def due(self, now_s: float) -> list[RestartDecision]:
        """Return the pending restarts whose time has come (oldest first) and count them as begun."""
        ready = sorted((d for d in self._due.values() if d.due_s <= now_s), key=lambda d: d.due_s)
        for decision in ready:
            del self._due[decision.node]
            self.attempts[decision.node] = decision.attempt
        return ready

    def pending(self, node: str | None = None) -> bool:
        """Whether a restart of ``node`` (of any node, if None) is decided but not begun."""
        return bool(self._due) if node is None else node in self._due

    def cancel(self) -> list[str]:
        """Drop every pending restart (the episode is ending); return the nodes that will not restart."""
        nodes = sorted(self._due)
        self._due.clear()
        return nodes

    def can_restart(self, node: str) -> bool:
        """Whether ``node`` would be restarted if its process ended now (ignoring a pending restart)."""
        return (node not in self.not_restartable and self.max_restarts > 0
                and self.attempts.get(node, 0) < self.max_restarts)

    def summary(self, down: set | frozenset = frozenset()) -> dict:
        """Return the report's restart section: the settings, restarts per node, nodes left down."""
        return {'max_restarts': self.max_restarts, 'delay_s': self.delay_s,
                'not_restartable': sorted(self.not_restartable), 'restarts': dict(sorted(self.attempts.items())),
                'down': sorted(down)}


def liveness_profile() -> Path:
    """Return the team's Fast DDS profiles file (``config/fastdds/team_liveness.xml`` of the share folder).

    Raises
    ------
    ConfigError
        If the share folder cannot be found (see :func:`robot_team.contracts.config.share_dir`).
    FileNotFoundError
        If the share folder has no such file (an install older than the profile).
    """
    path = share_dir() / LIVENESS_PROFILE
    if not path.is_file():
        raise FileNotFoundError(f'Fast DDS profile {path} is missing: reinstall (scripts/setup.sh or colcon build)')
    return path


def dds_environment(environ: Mapping[str, str]) -> tuple[dict, dict]:
    """Return what to add to a node process's environment for the team's DDS profile, and a record of it.

    The team's profile (:func:`liveness_profile`) is used unless ``environ`` already names a
    profiles file in ``FASTDDS_DEFAULT_PROFILES_FILE`` (the user's choice is kept, not merged).
    The record is ``{'variable', 'file', 'set_by': 'robot_team'|'user'}`` for ``report.json``.

    Raises
    ------
    ConfigError, FileNotFoundError
        As :func:`liveness_profile`, when the team's profile is needed and cannot be found.
    """
    user = environ.get(FASTDDS_PROFILES_VARIABLE, '')
    if user:
        return {}, {'variable': FASTDDS_PROFILES_VARIABLE, 'file': user, 'set_by': 'user'}
    path = str(liveness_profile())
    return ({FASTDDS_PROFILES_VARIABLE: path},
            {'variable': FASTDDS_PROFILES_VARIABLE, 'file': path, 'set_by': 'robot_team'})
