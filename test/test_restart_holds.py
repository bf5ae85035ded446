"""Sim time held over a node's restart (:mod:`robot_team.run.restart_holds`), without ROS.

The runner's end of it on a real graph (the hold on ``team/clock_holds``, the clock source
standing still) is in ``test_restart.py``'s killed-robot episode.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.run.restart_holds import RestartHolds

WATCHED = ('navigation_robot', 'info_collection_robot', 'display_robot', 'manager', 'hospital_systems')


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Holds:
    """The hold publisher's side: holds begun and ended, in order."""

    def __init__(self):
        self.ids = itertools.count(1)
        self.active: set[str] = set()
        self.ended: list[str] = []

    def begin(self) -> str:
        hold_id = f'runner/{next(self.ids)}'
        self.active.add(hold_id)
        return hold_id

    def end(self, hold_id: str) -> None:
        assert hold_id in self.active, f'{hold_id} ended twice or never begun'
        self.active.remove(hold_id)
        self.ended.append(hold_id)


def event(kind: EventKind, wall: float, actor: str = 'supervisor', **data) -> TeamEventModel:
    return TeamEventModel(stamp_s=0.0, wall_time=wall, seq=1, actor=actor, kind=kind.value, data=data)


def make(back_wait_s: float = 20.0):
    clock, holds = Clock(), Holds()
    return RestartHolds(holds.begin, holds.end, WATCHED, back_wait_s=back_wait_s, wall=clock), clock, holds


def test_a_watched_node_holds_until_the_supervisor_sees_it_back_not_when_it_starts():
    restarts, clock, holds = make()
    hold = restarts.crashed('info_collection_robot', restart=True)
    assert hold and holds.active == {hold} and restarts.holding == ['info_collection_robot']
    clock.now += 2.0
    assert restarts.observe(event(EventKind.NODE_STARTED, clock.now, actor='info_collection_robot')) == []
    assert restarts.observe(event(EventKind.ROBOT_BACK, clock.now, node='display_robot')) == []   # another robot
    clock.now += 1.5
    [ended] = restarts.observe(event(EventKind.ROBOT_BACK, clock.now, node='info_collection_robot'))
    assert (ended.node, ended.hold_id, ended.released_by, ended.held_wall_s) == (
        'info_collection_robot', hold, 'robot_back', 3.5)
    assert holds.active == set() and restarts.holding == []


def test_a_node_the_supervisor_never_heard_before_its_crash_is_back_when_the_supervisor_hears_it():
    """CI (cb3ab05): the display robot, killed 0.75 s after its start, was never lost for the supervisor."""
    restarts, clock, holds = make()
    hold = restarts.crashed('display_robot', restart=True)
    clock.now += 1.3
    assert restarts.observe(event(EventKind.NODE_STARTED, clock.now, actor='display_robot')) == []
    assert restarts.observe(event(EventKind.ROBOT_SEEN, clock.now, node='navigation_robot')) == []   # another robot
    clock.now += 0.4
    [ended] = restarts.observe(event(EventKind.ROBOT_SEEN, clock.now, node='display_robot'))
    assert (ended.hold_id, ended.released_by, ended.held_wall_s) == (hold, 'robot_seen', 1.7)
    assert holds.active == set()


def test_a_watched_node_seen_back_holds_until_its_start_reaches_the_record():
    """CI (4b04fb6): the supervisor saw the display robot back before the recorder heard the new process."""
    restarts, clock, holds = make()
    hold = restarts.crashed('display_robot', restart=True)
    clock.now += 2.0
    assert restarts.observe(event(EventKind.ROBOT_BACK, clock.now, node='display_robot')) == []
    assert holds.active == {hold}
    # the previous incarnation's start ends nothing
    assert restarts.observe(event(EventKind.NODE_STARTED, clock.now - 60.0, actor='display_robot')) == []
    clock.now += 0.5
    # the new start, stamped before the robot_back but recorded after it
    [ended] = restarts.observe(event(EventKind.NODE_STARTED, clock.now - 1.0, actor='display_robot'))
    assert (ended.hold_id, ended.released_by, ended.held_wall_s) == (hold, 'robot_back', 2.0)
    assert not holds.active


def test_a_node_seen_back_whose_start_never_reaches_the_record_ends_its_hold_after_the_wait():
    restarts, clock, holds = make(back_wait_s=20.0)
    restarts.crashed('manager', restart=True)
    clock.now += 1.0
    restarts.observe(event(EventKind.ROBOT_BACK, clock.now, node='manager'))
    clock.now += 20.0
    assert restarts.overdue() == []
    clock.now += 0.5
    [late] = restarts.overdue()
    assert (late.node, late.released_by, late.held_wall_s) == ('manager', 'not_recorded', 21.5)
    assert not holds.active


def test_a_node_nobody_watches_holds_until_it_started_again():
    restarts, clock, holds = make()
    hold = restarts.crashed('supervisor', restart=True)
    # its previous incarnation's start, recorded before the crash, ends nothing
    assert restarts.observe(event(EventKind.NODE_STARTED, clock.now - 60.0, actor='supervisor')) == []
    clock.now += 1.0
    [ended] = restarts.observe(event(EventKind.NODE_STARTED, clock.now, actor='supervisor'))
    assert ended.hold_id == hold and ended.released_by == 'node_started' and not holds.active


def test_a_back_recorded_before_the_crash_ends_nothing():
    restarts, clock, holds = make()
    restarts.crashed('manager', restart=True)
    assert restarts.observe(event(EventKind.ROBOT_BACK, clock.now - 0.5, node='manager')) == []
    assert len(holds.active) == 1


def test_no_hold_for_a_node_that_stays_down_and_a_held_one_that_then_stays_down_ends():
    restarts, clock, holds = make()
    assert restarts.crashed('motion_sim', restart=False) is None and not holds.active
    hold = restarts.crashed('display_robot', restart=True)
    assert restarts.crashed('display_robot', restart=True) is None   # died again while away: the same hold
    assert holds.active == {hold}
    clock.now += 4.0
    ended = restarts.crashed('display_robot', restart=False)
    assert ended.hold_id == hold and ended.released_by == 'stays_down' and ended.held_wall_s == 4.0
    assert not holds.active


def test_a_started_node_not_seen_back_ends_its_hold_after_the_wait_and_the_episode_end_ends_all():
    restarts, clock, holds = make(back_wait_s=20.0)
    restarts.crashed('navigation_robot', restart=True)
    restarts.crashed('manager', restart=True)
    clock.now += 30.0
    assert restarts.overdue() == []   # not started yet: the restart itself may take long
    restarts.observe(event(EventKind.NODE_STARTED, clock.now, actor='navigation_robot'))
    clock.now += 19.0
    assert restarts.overdue() == []
    clock.now += 2.0
    [late] = restarts.overdue()
    assert late.node == 'navigation_robot' and late.released_by == 'not_seen_back'
    [last] = restarts.end_all()
    assert last.node == 'manager' and last.released_by == 'episode_end' and not holds.active
    assert restarts.end_all() == []


NODES = (*WATCHED, 'supervisor')


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(('crash', 'crash_down', 'started', 'back', 'seen', 'overdue', 'tick')),
                          st.sampled_from(NODES), st.floats(0.0, 30.0)), max_size=40))
def test_every_hold_begun_ends_once_and_only_on_what_came_after_its_crash(steps):
    """Any order of crashes, starts, backs and waits: no hold ends twice, or without its causes after it began."""
    restarts, clock, holds = make()
    since: dict[str, float] = {}
    facts: dict[str, set[str]] = {}   # the "back" facts recorded since a held node's crash
    back_kind: dict[str, str] = {}    # the supervisor's latest of them (robot_back or robot_seen)
    for what, node, dt in steps:
        clock.now += dt
        if what in ('crash', 'crash_down'):
            outcome = restarts.crashed(node, restart=what == 'crash')
            if what == 'crash' and node in since:   # died again while away: its facts start over
                facts.pop(node, None)
            if isinstance(outcome, str):
                since[node] = clock.now
            elif outcome is not None:
                since.pop(node)
                facts.pop(node, None)
        elif what in ('started', 'back', 'seen'):
            kind, data = {'started': (EventKind.NODE_STARTED, {}), 'back': (EventKind.ROBOT_BACK, {'node': node}),
                          'seen': (EventKind.ROBOT_SEEN, {'node': node})}[what]
            fact = 'started' if what == 'started' else 'back'   # robot_seen: the supervisor has it, as robot_back
            if node in since and (what == 'started' or node in WATCHED):
                facts.setdefault(node, set()).add(fact)
                if fact == 'back':
                    back_kind[node] = kind.value
            for ended in restarts.observe(event(kind, clock.now, actor=node, **data)):
                assert ended.node == node and clock.now >= since.pop(node)
                assert ended.released_by == ('node_started' if node == 'supervisor' else back_kind[node])
                assert facts.pop(node) == ({'started'} if node == 'supervisor' else {'started', 'back'})
        elif what == 'overdue':
            for ended in restarts.overdue():
                since.pop(ended.node)
                missing = {'not_seen_back': 'back', 'not_recorded': 'started'}[ended.released_by]
                seen = facts.pop(ended.node)
                assert len(seen) == 1 and missing not in seen
        assert set(restarts.holding) == set(since) and len(holds.active) == len(since)
    restarts.end_all()
    assert not holds.active and len(holds.ended) == len(set(holds.ended))
