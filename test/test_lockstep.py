"""The lockstep LLM clock: holds on team/clock_holds stop the simulator's /clock; a lost release expires.

Unit tests of :class:`~robot_team.llm.lockstep.HoldTracker`; then a real ROS graph: the simulator
node (the clock source) in lockstep and a brain's :class:`~robot_team.llm.lockstep.ClockHoldPublisher`
(the one :class:`~robot_team.llm.client.ChatClient` uses) on a private domain.
"""

import time

import pytest

from robot_team.llm.lockstep import LLM_REQUEST, SERVER_DISCOVERY, HoldTracker, check_llm_clock
from ros_helpers import FakeWall


def test_tracker_holds_while_any_hold_is_active_and_charges_a_step_per_ended_hold():
    wall = FakeWall()
    tracker = HoldTracker(max_hold_s=60.0, wall=wall, hold_step_s=2.0)
    assert not tracker.held() and tracker.take_step() == 0.0
    tracker.update('manager/1', 'manager', True)
    tracker.update('navigation_robot/1', 'navigation_robot', True)
    wall.t += 5.0
    assert tracker.held() and sorted(tracker.active) == ['manager', 'navigation_robot']
    tracker.update('manager/1', 'manager', False)
    assert tracker.held()
    tracker.update('navigation_robot/1', 'navigation_robot', False)
    tracker.update('navigation_robot/1', 'navigation_robot', False)   # a duplicate release charges nothing
    tracker.update('manager/1', 'manager', True)                      # a late duplicate start is ignored
    assert not tracker.held() and tracker.take_step() == 4.0 and tracker.take_step() == 0.0
    assert tracker.holds_seen == 2 and tracker.held_wall_s == pytest.approx(5.0)


def test_a_wait_for_discovery_holds_sim_time_and_charges_none_of_it():
    """A node waiting for DDS to find a server holds sim time as an LLM request does, but the wait is
    wall time of a busy machine, not of the ED: it costs no sim time when it ends."""
    wall = FakeWall()
    tracker = HoldTracker(max_hold_s=60.0, wall=wall, hold_step_s=2.0)
    tracker.update('manager/1', 'manager', True, SERVER_DISCOVERY)
    wall.t += 12.0
    assert tracker.held() and tracker.active == ['manager']
    tracker.update('manager/2', 'manager', True, LLM_REQUEST)
    tracker.update('manager/1', 'manager', False, SERVER_DISCOVERY)
    assert tracker.held() and tracker.take_step() == 0.0
    tracker.update('manager/2', 'manager', False, '')   # a release's reason is not read: the start's counts
    assert not tracker.held() and tracker.take_step() == 2.0
    assert tracker.holds_seen == 2 and tracker.held_wall_s == pytest.approx(12.0)


def test_a_lost_release_expires_after_max_hold_s_and_is_reported():
    wall, expired = FakeWall(), []
    tracker = HoldTracker(max_hold_s=30.0, wall=wall, on_expired=lambda *a: expired.append(a))
    tracker.update('display_robot/3', 'display_robot', True)
    wall.t += 29.0
    assert tracker.held() and not expired
    wall.t += 2.0
    assert not tracker.held()
    assert expired == [('display_robot/3', 'display_robot', pytest.approx(31.0))] and tracker.expired == 1
    assert tracker.take_step() == 0.0       # an expired hold is no request that ended
    tracker.update('display_robot/3', 'display_robot', False)   # its release, too late, changes nothing
    assert not tracker.held()


def test_bad_modes_and_limits_are_refused():
    assert check_llm_clock('lockstep') == 'lockstep'
    with pytest.raises(ValueError, match="expected realtime or lockstep"):
        check_llm_clock('paused', '--llm-clock')
    with pytest.raises(ValueError, match='max_hold_s must be positive'):
        HoldTracker(max_hold_s=0)


# --- on a ROS graph --------------------------------------------------------------------------------

rclpy = pytest.importorskip('rclpy')


def _graph(ros_context, executor, **params):
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from robot_team.contracts.config import load_scenario
    from robot_team.llm.lockstep import ClockHoldPublisher
    from robot_team.ros.messages import event_from_msg, events_qos
    from robot_team.msg import TeamEvent
    from robot_team.contracts.names import TEAM_EVENTS
    from robot_team.sim.motion_node import MotionSimNode
    overrides = [Parameter('real_time_factor', value=20.0), Parameter('llm_clock', value='lockstep'),
                 *[Parameter(k, value=v) for k, v in params.items()]]
    sim = MotionSimNode(load_scenario('onboarding'), context=ros_context, parameter_overrides=overrides)
    brain = rclpy.create_node('brain_under_test', context=ros_context)
    clocks, events = [], []
    brain.create_subscription(Clock, '/clock', lambda m: clocks.append(m.clock.sec + m.clock.nanosec * 1e-9), 100)
    brain.create_subscription(TeamEvent, TEAM_EVENTS, lambda m: events.append(event_from_msg(m)),
                              events_qos())
    hold = ClockHoldPublisher(brain, 'manager')
    for node in (sim, brain):
        executor.add_node(node)
    return sim, brain, hold, clocks, events


def _close(executor, *nodes):
    for node in nodes:
        executor.remove_node(node)
        node.destroy_node()
    time.sleep(0.2)


def _sim_now(clocks, settle=0.3):
    time.sleep(settle)
    return clocks[-1]


def test_sim_time_stands_still_while_a_brain_holds_and_steps_after_release(ros_context, executor):
    from ros_helpers import wait_for
    sim, brain, hold, clocks, events = _graph(ros_context, executor, hold_step_s=5.0)
    try:
        assert wait_for(lambda: len(clocks) > 5, 10.0)

        def started():
            return [e for e in events if e.kind == 'node_started' and e.actor == 'motion_sim']
        assert wait_for(started, 5.0)
        assert [e.data['llm_clock'] for e in started()] == ['lockstep']
        first = _sim_now(clocks)
        before = _sim_now(clocks, 0.5)
        assert before > first                     # it runs without a hold
        with hold():
            time.sleep(0.5)                       # the hold reaches the simulator
            during = _sim_now(clocks, 0.0)
            time.sleep(1.0)                       # 20 sim s would pass in realtime
            assert _sim_now(clocks, 0.0) == during
        after = _sim_now(clocks, 0.5)
        assert after - during >= 5.0              # the hold's step (hold_step_s), then time runs again
    finally:
        _close(executor, brain, sim)


def test_a_hold_that_is_never_released_expires_and_is_recorded(ros_context, executor):
    from ros_helpers import wait_for
    sim, brain, hold, clocks, events = _graph(ros_context, executor, max_hold_s=1.0)
    try:
        assert wait_for(lambda: len(clocks) > 5, 10.0)
        holding = hold()
        holding.__enter__()                       # a brain that dies mid-request never releases
        time.sleep(0.4)
        frozen = _sim_now(clocks, 0.0)
        assert _sim_now(clocks, 0.3) == frozen
        assert wait_for(lambda: any(e.data.get('what') == 'clock_hold_expired' for e in events), 5.0)
        assert _sim_now(clocks, 0.3) > frozen     # time runs again
        expired = next(e for e in events if e.data.get('what') == 'clock_hold_expired')
        assert expired.data['holder'] == 'manager' and expired.data['age_s'] >= 1.0
    finally:
        _close(executor, brain, sim)


def test_the_follow_clock_ticks_slowly_while_held_and_steps_as_soon_as_the_hold_ends(ros_context, executor):
    """While a brain waits on its LLM nothing steps: the clock source wakes the team every HELD_TICK_S only."""
    from ros_helpers import wait_for

    from robot_team.sim.clock_source import HELD_TICK_S
    sim, brain, hold, clocks, events = _graph(ros_context, executor, clock_mode='follow', max_step_size=1.0)
    try:
        assert wait_for(lambda: len(clocks) > 5, 10.0)
        with hold():
            time.sleep(0.5)                       # the hold reaches the simulator
            during, seen = clocks[-1], len(clocks)
            time.sleep(2.0)
            resent = clocks[seen:]
            assert set(resent) <= {during}        # nothing stepped
            # the current time is still resent (a lost /clock cannot stall the team), at the slow pace:
            # at tick_hz (100) with a resend after 0.1 s (FOLLOW_RESEND_S until 2026-12-03) it was 20 in these 2 s
            assert 1 <= len(resent) <= 2.0 / HELD_TICK_S + 1, resent
            released = time.monotonic()
        assert wait_for(lambda: clocks[-1] > during, 2.0)
        assert time.monotonic() - released < 0.5  # stepped at once, not at the next slow tick
        assert sim._timer.timer_period_ns == int(1e9 / sim.tick_hz)
    finally:
        _close(executor, brain, sim)


def test_a_discovery_hold_that_ends_in_an_error_is_released_and_recorded(ros_context):
    """A node's wait for a server that never appears (a ToolError out of the block) still releases
    its hold, so sim time runs again, and the wait is on the record as not found."""
    from robot_team.agents.discovery import DiscoveryHold
    from robot_team.contracts.errors import ToolError
    from robot_team.llm.lockstep import clock_holds_qos
    from robot_team.msg import ClockHold
    from robot_team.contracts.names import CLOCK_HOLDS
    from ros_helpers import wait_for

    node = rclpy.create_node('waiter', context=ros_context)
    executor = rclpy.executors.SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    holds, recorded = [], []
    node.create_subscription(ClockHold, CLOCK_HOLDS, holds.append, clock_holds_qos())
    hold = DiscoveryHold(node, 'navigation_robot', lambda kind, summary, **data: recorded.append((kind, data)))
    try:
        with pytest.raises(ToolError, match='gone'):
            with hold('service ed/rtls/locate_staff') as wait:
                hold_id = wait.hold_id
                raise ToolError('gone')
        assert wait_for(lambda: executor.spin_once(timeout_sec=0.05) or len(holds) == 2, timeout=10.0), holds
        assert [(h.hold_id, h.active, h.reason) for h in holds] == [(hold_id, True, SERVER_DISCOVERY),
                                                                    (hold_id, False, SERVER_DISCOVERY)]
        [(kind, data)] = recorded
        assert kind == 'observation' and (data['server'], data['found']) == ('service ed/rtls/locate_staff', False)
        # a wait that ends without what it waited for and goes on (the manager's for a dead incarnation
        # to leave the graph) says so itself, once, with what it adds
        recorded.clear()
        with hold('the graph to drop the dead incarnation of display_robot') as wait:
            wait.data['servers'] = 2
            wait.found = False
        [(kind, data)] = recorded
        assert (data['found'], data['servers'], data['cue']) == (False, 2, 'server_discovery')
    finally:
        executor.shutdown()
        node.destroy_node()
