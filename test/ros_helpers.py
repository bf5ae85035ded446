"""Helpers for ROS graph tests (importable: pytest.ini puts test/ on sys.path)."""

import os
import socket
import time

_held_sockets: dict[int, socket.socket] = {}   # domain ID -> its lock, for this process's life or until released
_released: dict[int, float] = {}                # domain ID -> when this process released it (time.monotonic)


def reserve_domain_id() -> int:
    """Reserve and return a ROS domain ID (1-101) unused by any other process on this machine."""
    return reserve_domain_ids(1)


class FakeWall:
    """A monotonic wall clock the test sets (``wall.t += 1.5``), for rules that take a ``wall`` callable."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def wait_for(predicate, timeout: float = 10.0, period: float = 0.02):
    """Poll ``predicate`` until it is truthy or ``timeout`` (wall s) passes; return its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(period)
        value = predicate()
    return value


def worker_domains() -> range:
    """The ROS domain IDs this test process may use: 1-101, or its own slice of them under pytest-xdist.

    Each xdist worker (``PYTEST_XDIST_WORKER`` ``gwN`` of ``PYTEST_XDIST_WORKER_COUNT``) gets a
    contiguous slice, so that a domain one worker released is never taken by another while the
    first one's participants still linger on it (the order of reuse below is per process).
    """
    lowest, highest = 1, 101
    worker, count = os.environ.get('PYTEST_XDIST_WORKER', ''), os.environ.get('PYTEST_XDIST_WORKER_COUNT', '')
    if not (worker.startswith('gw') and worker[2:].isdigit() and count.isdigit() and int(count) > 1):
        return range(lowest, highest + 1)
    index, count = int(worker[2:]), int(count)
    size = (highest - lowest + 1) // count
    first = lowest + index * size
    return range(first, highest + 1 if index == count - 1 else first + size)


def reserve_domain_ids(count: int) -> int:
    """Reserve ``count`` consecutive ROS domain IDs unused by any other process here; return the first.

    The IDs come from :func:`worker_domains` (1-101 in one test process). IDs this process never
    used come first, then those it released longest ago (a graph's participants may linger on
    their domain for their lease after the test: the suite has more graph tests than domains, so
    IDs are reused, as late as possible).
    """
    domains = worker_domains()
    for first in sorted(range(domains.start, domains.stop - count + 1), key=lambda d: _released.get(d, -1.0)):
        held = []
        for domain in range(first, first + count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(('127.0.0.1', 22119 + domain))   # a lock port per domain
            except OSError:
                sock.close()
                break
            held.append(sock)
        if len(held) == count:
            _held_sockets.update(zip(range(first, first + count), held))
            return first
        for sock in held:
            sock.close()
    raise RuntimeError(f'no {count} consecutive free ROS domain IDs between {domains.start} and {domains.stop - 1}')


def release_domain_ids(first: int, count: int = 1) -> None:
    """Give back domain IDs reserved by :func:`reserve_domain_ids` (reused last by this process)."""
    for domain in range(first, first + count):
        sock = _held_sockets.pop(domain, None)
        if sock is not None:
            sock.close()
            _released[domain] = time.monotonic()


def page(node, keep_ticking=lambda: time.sleep(0.01), timeout: float = 30.0, **goal):
    """Page through the paging system's action (``ed/paging/page_staff``) from ``node``; return its result.

    ``goal``: the ``PageStaff.Goal``'s fields. ``keep_ticking()`` is called while the result is
    awaited (a test that drives the clock itself advances it there). The action client is made
    once per node and lives as long as the node: rclpy 9's executors fail (``RCLError``: "action
    client pointer is invalid") when an action client is destroyed while they build a wait set,
    which a test's executor spinning meanwhile does at any moment (a suite run, 2026-12-03).
    """
    from action_msgs.msg import GoalStatus
    from robot_team.action import PageStaff
    from robot_team.contracts.names import PAGE_STAFF
    from robot_team.ros.action_client import TeamActionClient
    client = getattr(node, '_test_page_client', None)
    if client is None:
        client = node._test_page_client = TeamActionClient(node, PageStaff, PAGE_STAFF)   # (safe while it spins)
    assert client.wait_for_server(timeout_sec=10.0), f'{PAGE_STAFF} not available'
    sent = client.send_goal_async(PageStaff.Goal(**goal))
    assert wait_for(sent.done, 10.0) and sent.result().accepted, 'the page was not accepted'
    future = sent.result().get_result_async()
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        keep_ticking()
    assert future.done(), f'{PAGE_STAFF} did not answer'
    assert future.result().status == GoalStatus.STATUS_SUCCEEDED
    return future.result().result
