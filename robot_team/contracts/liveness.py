"""Liveness of the team's nodes: who is up, who was lost, who came back (no rclpy).

Every team node announces itself once per incarnation with a ``robot_team/msg/Heartbeat`` on
``team/heartbeat/<node>`` (:mod:`robot_team.ros.liveness`): reliable, transient local, with DDS
liveliness ``AUTOMATIC`` and a lease of :data:`LIVELINESS_LEASE_S`. The middleware asserts that
liveliness from its own threads, so a busy Python interpreter does not fake a loss; a killed process
or a host cut off the network stops the assertions and every subscriber is told within the lease
(``not_alive_count`` rises), while a clean shutdown deletes the publisher (``alive_count`` falls,
nothing becomes "not alive"): a node that stops with its episode is not lost. This is the field's
means for the same job as Nav2's bond (``bond_timeout`` 4 s by default in ``lifecycle_manager``).

:class:`LivenessTracker` turns those signals into changes the supervisor records and acts on:

- ``lost``: the liveliness of the node's announcement ran out while no other incarnation was alive
  and did not come back within :data:`LOSS_CONFIRM_S`, or a new incarnation announced itself while
  the old one was still thought alive (a restart faster than the lease);
- ``back``: a lost node's announcement is matched and alive again, and only it (the dead
  incarnation has left the graph): ``restarted`` when its writer is a new one (a new process),
  else the same incarnation regained its liveliness (a host back on the network);
- ``seen``: the first announcement of a node the watcher did not know: its first incarnation, or
  a restarted one whose predecessor the watcher never heard (killed before its announcement
  reached the watcher: CI, a display robot killed 0.75 s after its start was never "lost", so
  never "back"). The watcher has the node from then on, as after ``back``.

Times are wall seconds (``time.monotonic``): liveness is about processes and links, not sim time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable, Literal

from pydantic import BaseModel, Field

from robot_team.contracts.names import HOSPITAL_SYSTEMS, MOTION_SIM, OPERATOR, RECORDER, RobotId, Role

LOSS_CONFIRM_S = 1.0
"""Wall s a node's liveliness stays out before it is lost: a lapse its own writer recovers from within
this is no loss. CI (cb3ab05, beside the local model and a colcon build): the navigation robot's
liveliness lapsed for 0.1 s on a starved host; its escort was closed as lost and given again. A
killed process or a cut link never recovers within it; a loss is then noticed within the lease plus
this (3 s, within the 5 s of issue 19)."""

LIVELINESS_LEASE_S = 2.0
"""DDS liveliness lease of each node's announcement, wall s: a lost node is noticed within it.

Within the 5 s the team allows to notice a loss (issue 19), with room for the middleware's own
assertion period (a fraction of the lease); Nav2's lifecycle manager resets its stack after a
``bond_timeout`` of 4 s by default."""

NOTICED_BY_LIVELINESS = 'liveliness'
"""The node's DDS liveliness lease ran out (a killed process, a cut link)."""
NOTICED_BY_HEARTBEAT = 'heartbeat'
"""A new incarnation announced itself while the old one was still thought alive."""

WATCHED: tuple[str, ...] = (Role.NAVIGATION.value, Role.INFO_COLLECTION.value, Role.DISPLAY.value,
                            Role.MANAGER.value, HOSPITAL_SYSTEMS, MOTION_SIM, OPERATOR, RECORDER)
"""The nodes the supervisor watches: the team but itself, the recorder and the simulator's nodes."""


def watched(robots: Iterable[RobotId]) -> list[str]:
    """Return the nodes the supervisor watches in a team whose operational robots are ``robots`` (a fleet's too)."""
    return [*robots, *(n for n in WATCHED if n not in OPERATIONAL_ROBOTS)]


OPERATIONAL_ROBOTS: frozenset[str] = frozenset(
    {Role.NAVIGATION.value, Role.INFO_COLLECTION.value, Role.DISPLAY.value})
"""The watched nodes that hold delegated tasks (a task held by a lost one is recovered by the workflow)."""


class LivenessChange(BaseModel):
    """A node lost or back."""

    node: str = Field(description='Node name, e.g. navigation_robot.')
    state: Literal['lost', 'back', 'seen']
    instance_id: str = Field('', description="The incarnation lost ('lost') or now alive ('back', 'seen').")
    restarted: bool = Field(False, description="'back' as a new incarnation (restarted), not the same one.")
    noticed_by: str = Field('', description="'liveliness' or 'heartbeat' (see the module docstring).")
    lost_for_s: float = Field(0.0, description="'back': wall s since the loss was noticed.")


@dataclass
class _Life:
    state: Literal['unknown', 'alive', 'lost'] = 'unknown'
    instance_id: str = ''
    writer: str = ''                    # the graph's ID (GID) of its announcement's writer ('' unknown)
    lost_instance: str = ''
    lost_writer: str = ''
    lost_wall: float = 0.0
    pending_instance: str = ''          # a new incarnation's announcement that came while it was lost
    lapsed_wall: float | None = None    # when its liveliness ran out, while not yet lost (LOSS_CONFIRM_S)
    alive_count: int | None = None      # the latest DDS liveliness counts of its announcement (None: none yet)
    not_alive_count: int | None = None

    @property
    def one_writer(self) -> bool:
        """Whether exactly one writer of its announcement is matched and alive (or no liveliness is known)."""
        return self.alive_count is None or (self.alive_count == 1 and self.not_alive_count == 0)


class LivenessTracker:
    """Track the liveness of ``nodes`` from their announcements and DDS liveliness changes.

    Parameters
    ----------
    nodes
        Names of the nodes to watch (announcements and changes of others are ignored).
    confirm_s
        Wall s a node's liveliness stays out before it is lost (:data:`LOSS_CONFIRM_S`; 0: at once).
        Meanwhile it is :meth:`lapsed`; its own writer alive again ends the lapse, and
        :meth:`confirm` loses it after that time.

    Raises
    ------
    ValueError
        If ``confirm_s`` is negative.

    Notes
    -----
    Thread-safe (one lock). Each method returns the changes it caused, oldest first; a node is
    ``unknown`` until its first announcement (a node that never came up is not "lost"), which is
    ``seen``.

    Every call passes ``writers``: the graph IDs (GIDs) of the writers of the node's announcement
    the graph shows now. A lost node is ``back`` once exactly one writer is matched and alive again
    (the dead incarnation has left the graph: until DDS drops the dead process's participant, a
    request to the node may still reach only the dead one): ``restarted`` if that writer is not the
    one lost (a new process), else reconnected (the same process, its host back on the network).
    The writer tells them apart: its announcement, transient local, may reach the watcher seconds
    after its liveliness (measured here under load: 3 s).
    """

    def __init__(self, nodes: Iterable[str], confirm_s: float = LOSS_CONFIRM_S):
        if confirm_s < 0.0:
            raise ValueError(f'confirm_s must be >= 0 s, got {confirm_s!r}')
        self._lives = {name: _Life() for name in nodes}
        self._lock = threading.Lock()
        self.confirm_s = float(confirm_s)

    @property
    def nodes(self) -> tuple[str, ...]:
        """The watched nodes."""
        return tuple(self._lives)

    def state(self, node: str) -> str:
        """Return ``'unknown'``, ``'alive'`` or ``'lost'`` (``KeyError`` for a node not watched)."""
        with self._lock:
            return self._lives[node].state

    def lost(self) -> list[str]:
        """Return the nodes lost now."""
        with self._lock:
            return [name for name, life in self._lives.items() if life.state == 'lost']

    def lapsed(self) -> list[str]:
        """Return the nodes whose liveliness ran out and that are not lost yet (:data:`LOSS_CONFIRM_S`)."""
        with self._lock:
            return [name for name, life in self._lives.items() if life.lapsed_wall is not None]

    def confirm(self, node: str, wall_s: float) -> list[LivenessChange]:
        """Lose ``node`` if its liveliness ran out ``confirm_s`` or more before ``wall_s`` and did not come back.

        The watch calls this on its wall-clock tick for each :meth:`lapsed` node.
        """
        with self._lock:
            life = self._lives.get(node)
            if life is None or life.lapsed_wall is None or wall_s - life.lapsed_wall < self.confirm_s:
                return []
            return [self._lose(node, life, NOTICED_BY_LIVELINESS, wall_s)]

    def announced(self, node: str, instance_id: str, writers: Iterable[str], wall_s: float) -> list[LivenessChange]:
        """Take a node's announcement (``Heartbeat``) from incarnation ``instance_id`` at ``wall_s``.

        Raises
        ------
        ValueError
            If ``instance_id`` is empty (an announcement must name its incarnation).
        """
        if not instance_id:
            raise ValueError(f'heartbeat of {node!r}: expected a non-empty instance_id')
        with self._lock:
            life = self._lives.get(node)
            if life is None or life.instance_id == instance_id:
                return []
            writers = set(writers)
            if life.state == 'unknown' or (life.state == 'alive' and not life.instance_id):
                # its first announcement, or a restarted one back (by its writer) whose words come late
                first = life.state == 'unknown'
                life.state, life.instance_id = 'alive', instance_id
                if len(writers) == 1 and not life.writer:
                    life.writer = next(iter(writers))
                return [LivenessChange(node=node, state='seen', instance_id=instance_id)] if first else []
            changes = []
            if life.state == 'alive':   # a new incarnation while the old one was thought alive
                changes.append(self._lose(node, life, NOTICED_BY_HEARTBEAT, wall_s))
            if instance_id != life.lost_instance:
                life.pending_instance = instance_id
            return changes + self._try_back(node, life, writers, wall_s)

    def liveliness(self, node: str, alive_count: int, not_alive_count: int, not_alive_count_change: int,
                   writers: Iterable[str], wall_s: float) -> list[LivenessChange]:
        """Take a DDS liveliness change of ``node``'s announcement (``QoSLivelinessChangedInfo``'s counts)."""
        with self._lock:
            life = self._lives.get(node)
            if life is None:
                return []
            life.alive_count, life.not_alive_count = alive_count, not_alive_count
            writers = set(writers)
            if life.state == 'alive' and not life.writer and len(writers) == 1 and life.one_writer:
                life.writer = next(iter(writers))
            if life.state == 'alive' and not_alive_count_change > 0 and alive_count == 0:
                if self.confirm_s == 0.0:
                    return [self._lose(node, life, NOTICED_BY_LIVELINESS, wall_s)]
                life.lapsed_wall = wall_s if life.lapsed_wall is None else life.lapsed_wall
                return []
            if (life.lapsed_wall is not None and life.one_writer and len(writers) == 1
                    and (not life.writer or writers == {life.writer})):
                life.lapsed_wall = None   # its own writer asserted its liveliness again: a lapse, no loss
            return self._try_back(node, life, writers, wall_s)

    def graph_seen(self, node: str, writers: Iterable[str], wall_s: float) -> list[LivenessChange]:
        """Look again at a lost ``node`` with the ``writers`` of its announcement the graph shows now.

        The graph drops a dead process's writer on its own schedule: the liveliness change that
        counts the dead writer gone (``not_alive_count`` back to 0) may come while the graph still
        shows it, and then no other change follows. The watch calls this on a wall-clock tick while
        a node is lost, so that such a node is still ``back`` once the graph shows one writer.
        """
        with self._lock:
            life = self._lives.get(node)
            if life is None:
                return []
            return self._try_back(node, life, set(writers), wall_s)

    def _try_back(self, node: str, life: _Life, writers: set[str], wall_s: float) -> list[LivenessChange]:
        """Back once one writer is matched and alive, and the graph shows which (lock held)."""
        if life.state != 'lost' or life.alive_count == 0 or not life.one_writer or len(writers) != 1:
            return []
        writer = next(iter(writers))
        restarted = writer != life.lost_writer or not life.lost_writer
        life.state, life.writer = 'alive', writer
        # a new one's announcement may still be on its way ('' until it comes)
        life.instance_id = life.pending_instance if restarted else life.lost_instance
        life.pending_instance = ''
        return [LivenessChange(node=node, state='back', instance_id=life.instance_id, restarted=restarted,
                               lost_for_s=round(max(0.0, wall_s - life.lost_wall), 3))]

    @staticmethod
    def _lose(node: str, life: _Life, noticed_by: str, wall_s: float) -> LivenessChange:
        life.lost_instance, life.lost_writer, life.lost_wall = life.instance_id, life.writer, wall_s
        life.state, life.writer, life.pending_instance, life.lapsed_wall = 'lost', '', '', None
        return LivenessChange(node=node, state='lost', instance_id=life.lost_instance, noticed_by=noticed_by)


class BackNotices:
    """Which robot's withheld ``back`` notice still holds: a later ``lost`` or ``back`` of it supersedes it.

    The supervisor tells the team that a robot is back only once its goals are cancelled, up to a
    few wall seconds later (:data:`robot_team.agents.supervisor_node.BACK_NOTICE_WAIT_S`). A robot
    lost again meanwhile is announced lost at once; the waiting ``back`` notice must then not follow
    it, or the team would hear "back" last and delegate to a robot that is gone. Thread-safe: the
    notice waits in a thread of its own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}

    def changed(self, robot: str) -> int:
        """Count a ``lost`` or ``back`` change of ``robot``; return its number (1, 2, ... per robot)."""
        with self._lock:
            self._latest[robot] = number = self._latest.get(robot, 0) + 1
            return number

    def announce_if_current(self, robot: str, number: int, announce) -> bool:
        """Call ``announce()`` if change ``number`` is still ``robot``'s latest; return whether it was.

        The check and the call hold the lock that :meth:`changed` takes: a change counted after the
        check is announced after this one, never before it.
        """
        with self._lock:
            if self._latest.get(robot) != number:
                return False
            announce()
            return True
