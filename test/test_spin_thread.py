"""An exception that ends the executor's spin is kept, recorded, and spun past (robot_team.ros.spin.SpinThread).

rclpy's executors end ``spin()`` on the first exception a callback (or building the wait set)
raises; with the whole team in one executor that would stop every node at once. The runner's
:class:`SpinThread` keeps each such exception and spins again, up to ``max_restarts`` times; the
episode records each one as ``node_crashed`` (target ``executor``) and, once it gives up, takes
every in-process node as down and stores its own events without the executor.
"""

import threading
import time

import pytest

pytest.importorskip('rclpy')
from ros_helpers import wait_for  # noqa: E402
from robot_team.contracts.config import load_scenario  # noqa: E402
from robot_team.contracts.events import EventKind  # noqa: E402
from robot_team.contracts.names import Role  # noqa: E402
from robot_team.ros.executor import TeamExecutor  # noqa: E402
from robot_team.ros.spin import SpinThread  # noqa: E402
from robot_team.run.lifecycle import shutdown_executor  # noqa: E402


def _ticking(ros_context, raise_on):
    """A node with a 10 ms timer counting its ticks, raising ``RuntimeError`` on the ticks ``raise_on`` picks."""
    import rclpy
    node = rclpy.create_node('ticking', context=ros_context)
    ticks = []

    def tick():
        ticks.append(len(ticks) + 1)
        if raise_on(len(ticks)):
            raise RuntimeError(f'tick {len(ticks)} failed')
    node.create_timer(0.01, tick)
    return node, ticks


def test_an_exception_that_ends_spin_is_kept_and_the_executor_spun_again(ros_context):
    node, ticks = _ticking(ros_context, lambda n: n == 2)
    executor = TeamExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    spin = SpinThread(executor, 'spin-under-test', max_respins=3)
    spin.start()
    try:
        assert wait_for(lambda: len(ticks) >= 10, 10.0), f'the executor stopped spinning after {ticks}'
        failures = spin.take_failures()
        assert [f.error for f in failures] == ['RuntimeError: tick 2 failed']
        assert failures[0].spun_again and not spin.gave_up and spin.is_alive()
        assert any('tick 2 failed' in line for line in failures[0].traceback_tail)
        assert spin.take_failures() == [], 'a failure was taken twice'
    finally:
        assert shutdown_executor(executor, spin, timeout_s=5.0)
        node.destroy_node()
    assert spin.take_failures() == [], 'the shutdown was kept as a failure'


def test_past_max_respins_it_gives_up_and_the_thread_ends(ros_context):
    node, ticks = _ticking(ros_context, lambda n: True)
    executor = TeamExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    spin = SpinThread(executor, 'spin-under-test', max_respins=2)
    spin.start()
    try:
        spin.join(timeout=10.0)
        assert not spin.is_alive() and spin.gave_up
        failures = spin.take_failures()
        assert [f.spun_again for f in failures] == [True, True, False]
        time.sleep(0.3)   # a tick handed to the pool before the last failure surfaced may still run
        ran = len(ticks)
        time.sleep(0.3)
        assert len(ticks) == ran, 'callbacks still run after the executor gave up'
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()


def test_it_says_it_gave_up_only_once_the_last_failure_was_told(ros_context):
    """A reader that sees ``gave_up`` finds the last failure already told.

    The console test read an empty banner after ``gave_up`` once, the suite on three workers on two cores.
    """
    node, _ticks = _ticking(ros_context, lambda n: True)
    executor = TeamExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    telling, release, told = threading.Event(), threading.Event(), []

    def slow_listener(failure):
        if not failure.spun_again:
            telling.set()
            release.wait(10.0)
        told.append(failure.attempt)
    spin = SpinThread(executor, 'spin-under-test', max_respins=1, on_failure=slow_listener)
    spin.start()
    try:
        assert telling.wait(10.0), 'the last failure was never told'
        time.sleep(0.2)
        assert not spin.gave_up, 'gave_up was set while the last failure was still being told'
        release.set()
        spin.join(timeout=10.0)
        assert spin.gave_up and told == [1, 2]
    finally:
        release.set()
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()


def test_the_episode_records_each_failure_and_once_it_gives_up_the_team_is_down(ros_context, tmp_path):
    """The runner's side, on a real recorder node: events stored without the executor once it gave up."""
    from robot_team.recorder import TeamRecorder
    from robot_team.ros.emitter import EventEmitter
    from robot_team.run.episode import EXECUTOR, Episode, _RunnerEvents

    scenario = load_scenario('onboarding')
    episode = Episode(scenario, tmp_path, max_restarts=1)
    recorder = TeamRecorder(context=ros_context)
    node, _ticks = _ticking(ros_context, lambda n: True)
    executor = TeamExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    episode._spin = spin = SpinThread(executor, 'spin-under-test', max_respins=episode.restarts.max_restarts)
    episode.events = _RunnerEvents(EventEmitter(recorder, 'runner'), recorder, spin)
    episode.nodes = [recorder, node]
    spin.start()
    try:
        spin.join(timeout=10.0)
        assert spin.gave_up
        episode._check_team()
        crashed = [e for e in recorder.events() if e.kind == EventKind.NODE_CRASHED.value]
        # nothing spins the recorder: both failures were stored directly, in order
        assert [(e.target, e.data['restart'], e.data['restart_attempt']) for e in crashed] == [
            (EXECUTOR, True, 1), (EXECUTOR, False, 2)]
        assert crashed[0].data['error'] == 'RuntimeError: tick 1 failed'
        assert 'ticking' in crashed[0].data['nodes']
        assert Role.MANAGER.value in episode._down and episode.team.expected() <= episode._down
        episode._check_team()
        assert len([e for e in recorder.events() if e.kind == EventKind.NODE_CRASHED.value]) == 2, 'recorded twice'
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        recorder.destroy_node()
    assert not any(t.name == 'spin-under-test' for t in threading.enumerate())
