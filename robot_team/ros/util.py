"""Small rclpy helpers for waiting from worker threads without spinning.

Brains and tools run in worker threads of a ``MultiThreadedExecutor``; they wait for futures
and for ROS (sim) time with these helpers while other executor threads deliver the responses.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from typing import Callable, ContextManager, TypeVar

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.logging import LoggingSeverity

from robot_team.contracts.config import ConfigError
from robot_team.contracts.errors import ToolError
from robot_team.contracts.names import SUBMIT_REPORT, RobotId, validate_robots
from robot_team.contracts.reports import ReportAnswer
from robot_team.ros.emitter import log_line
from robot_team.ros.messages import report_to_msg
from robot_team.ros.stamps import now_s
from robot_team.srv import SubmitReport

T = TypeVar('T')


def wait_future(future, timeout_s: float, what: str):
    """Block until an rclpy ``future`` is done; return its result.

    Parameters
    ----------
    future
        An ``rclpy.task.Future`` completed by another executor thread.
    timeout_s
        Longest wait, wall seconds.
    what
        The resource waited on, named in the error.

    Raises
    ------
    ToolError
        If the future is not done in time, was cancelled, or raised.
    """
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise ToolError(f'timed out after {timeout_s:.0f} s (wall) waiting for {what}')
    return _result(future, what)


def _result(future, what: str):
    """Return a done ``future``'s result; raise ToolError naming ``what`` if it was cancelled or raised."""
    if future.cancelled():
        raise ToolError(f'{what} was cancelled')
    exc = future.exception()
    if exc is not None:
        raise ToolError(f'{what} failed: {exc}')
    return future.result()


def server_gids(node, client) -> frozenset[str] | None:
    """Return the graph IDs (GIDs, hex) of the servers of ``client``'s service that ``node``'s graph shows now.

    A server is its request reader, on the DDS topic ``rq<service>Request``: the name rmw_fastrtps
    and rmw_cyclonedds give a service's request topic (read with ``no_mangle``). Returns None where
    the middleware does not say (no such topic in its graph API), which :func:`call_service` takes
    as "nothing to compare".
    """
    try:
        infos = node.get_subscriptions_info_by_topic(f'rq{client.service_name}Request', no_mangle=True)
    except Exception:   # noqa: BLE001 - any rmw that cannot answer: nothing to compare
        return None
    return frozenset(bytes(info.endpoint_gid).hex() for info in infos)


RESEND_CHECK_S = 0.1
"""Wall s between two looks at a called service's servers while :func:`call_service` waits."""

RESEND_SETTLE_S = 0.1
"""Wall s a new server is in the graph before :func:`call_service` sends it the request: the graph
hears of a server's reader as DDS matches it, and a request sent before that match is not kept for it."""


def call_service(node, client, request, timeout_s: float, what: str):
    """Call ``client``'s service with ``request``; send it again to each server that appears meanwhile.

    A request reaches the servers matched when it is sent, and no later one (volatile). When the
    server dies with the request (a killed ``hospital_systems`` while a robot's ``locate_staff``
    was in flight: CI), the runner restarts it, and the restarted server never hears the request:
    the caller waited its whole wall timeout while sim time ran hundreds of seconds. So while it
    waits, this looks at the service's servers (:func:`server_gids`, every :data:`RESEND_CHECK_S`)
    and sends the request again once a server it was not sent to has been in the graph for
    :data:`RESEND_SETTLE_S`, once per new server. DDS hands a request to every server matched when
    it is sent, an old one that still lives too; the first response wins, the others are dropped.

    Parameters
    ----------
    node
        The calling node (its graph is read).
    client
        An ``rclpy.client.Client`` whose callbacks another executor thread runs.
    request
        The request message.
    timeout_s
        Longest wait for a response, wall s.
    what
        The response waited for, named in the error and the log.

    Raises
    ------
    ToolError
        If no response comes within ``timeout_s``, or the call failed.
    """
    done = threading.Event()
    sent_to = server_gids(node, client)
    futures = [client.call_async(request)]
    futures[0].add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + timeout_s
    new_since: float | None = None
    try:
        while not done.wait(min(RESEND_CHECK_S, max(0.0, deadline - time.monotonic()))):
            now = time.monotonic()
            if now >= deadline:
                raise ToolError(f'timed out after {timeout_s:.0f} s (wall) waiting for {what}')
            servers = server_gids(node, client) if sent_to is not None else None
            if servers is None or servers <= sent_to:
                new_since = None
                continue
            new_since = now if new_since is None else new_since
            if now - new_since >= RESEND_SETTLE_S:
                log_line(
                    node.get_logger(), LoggingSeverity.WARN,
                    f'{what}: sent the request again, to {len(servers - sent_to)} server(s) that appeared while '
                    f'it waited (a restarted server never hears a request sent before it started)')
                sent_to, new_since = sent_to | servers, None
                futures.append(client.call_async(request))
                futures[-1].add_done_callback(lambda _f: done.set())
        future = next(f for f in futures if f.done())
    finally:
        for other in futures:
            if not other.done():
                client.remove_pending_request(other)
                other.cancel()
    return _result(future, what)


SERVER_WAIT_S = 30.0
"""Wall s a tool waits for a server (service or action) to be found and to answer before it fails.

Generous on purpose: on a loaded machine (the test suite beside two benchmark teams on 2 cores)
a navigate_to_pose goal's answer took more than 10 s, and how busy the machine is must not change
an episode's outcome. A server that is gone is noticed sooner by its liveliness
(:mod:`robot_team.contracts.liveness`).
"""

SERVER_POLL_S = 0.002
"""Wall s between checks while waiting for a server (rclpy's own waits sleep 0.25 s between checks)."""


def wait_for_server(client, timeout_s: float, what: str,
                    hold: Callable[[str], ContextManager] | None = None) -> None:
    """Wait until a service or action server is available (checked every 2 ms).

    rclpy's ``wait_for_service``/``wait_for_server`` sleep 0.25 s whenever the server is not
    ready yet (e.g. while DDS still matches a client made at start-up); under a sim clock at 40x
    that is 10 s of sim time, so this checks readiness itself. ``hold``: where the server is not
    ready at once, the wait runs inside ``with hold(what):`` (a node's hold of the team's sim time
    while DDS discovers the server: :class:`robot_team.agents.discovery.DiscoveryHold`, which
    records the wait); nothing is held for a server ready at once.

    Raises
    ------
    ToolError
        If no server appears within ``timeout_s`` wall seconds.
    """
    ready = getattr(client, 'server_is_ready', None) or client.service_is_ready
    if ready():
        return
    deadline = time.monotonic() + timeout_s
    with hold(what) if hold is not None else contextlib.nullcontext():
        while not ready():
            if time.monotonic() >= deadline:
                raise ToolError(f'{what} is not available (waited {timeout_s:.0f} s)')
            time.sleep(SERVER_POLL_S)


def discovery_hold_of(node) -> Callable[[str], ContextManager] | None:
    """Return the hold of the team's sim time that ``node`` offers while it waits on DDS discovery, or None.

    The team's nodes that call servers (the manager, the robots) set a ``discovery_hold`` attribute
    (a :class:`robot_team.agents.discovery.DiscoveryHold`) before they build their tools; a tool
    passes it to :func:`wait_for_server`. Any other node: None.
    """
    return getattr(node, 'discovery_hold', None)


def wait_clock_started(node, timeout_s: float) -> bool:
    """Wait until ``node``'s ROS time has started; return whether it has (False after ``timeout_s`` wall s).

    Under ``use_sim_time`` a node's clock reads 0 until its first ``/clock`` message: a node just
    (re)started that acts before then would stamp its work at t = 0, before the task it serves
    began. Without sim time the clock has always started. Checked every 10 ms
    (:func:`wait_ros_time`, its wall cap the only bound: ROS time stands still until then).
    """
    return wait_ros_time(node, lambda: now_s(node) > 0.0, math.inf, wall_cap_s=timeout_s, poll_s=0.01)


def wait_ros_time(node, condition, timeout_s: float, *, wall_cap_s: float = 120.0,
                  poll_s: float = 0.005) -> bool:
    """Wait until ``condition()`` is true or ``timeout_s`` of ROS time passes.

    ROS time is sim time under ``use_sim_time``; ``wall_cap_s`` bounds the wall-clock wait
    in case the clock stops. Returns the final value of ``condition()``.
    """
    start = now_s(node)
    wall_deadline = time.monotonic() + wall_cap_s
    while not condition():
        if now_s(node) - start >= timeout_s or time.monotonic() >= wall_deadline:
            return bool(condition())
        time.sleep(poll_s)
    return True


def watch_ros_time(node, look: Callable[[], T], until: Callable[[T], bool], timeout_s: float, *,
                   every_s: float = 0.5) -> T:
    """Return ``look()``'s latest answer once ``until`` holds of it, or once ``timeout_s`` of ROS time passed.

    ``look`` is asked at most once per ``every_s`` of ROS time (it may be a service call: the
    RTLS, the directory), and once at the start; bounded in wall time as :func:`wait_ros_time`.
    """
    seen: dict = {'t': None, 'value': None}

    def shows() -> bool:
        t = now_s(node)
        if seen['t'] is None or t - seen['t'] >= every_s:
            seen['t'], seen['value'] = t, look()
        return bool(until(seen['value']))
    wait_ros_time(node, shows, timeout_s)
    return seen['value']


def submit_report(node, client, report, timeout_s: float, hold: Callable[[str], ContextManager] | None = None):
    """Call ``team/supervisor/submit_report`` with ``report`` (a TaskReportModel) through ``node``'s ``client``.

    Returns the supervisor's :class:`~robot_team.contracts.reports.ReportAnswer`. ``hold``: as for
    :func:`wait_for_server`, while the service is not found yet. The call is :func:`call_service`'s
    (sent again to a restarted supervisor).

    Raises
    ------
    ToolError
        If the supervisor does not answer within ``timeout_s`` (wall s).
    """
    wait_for_server(client, timeout_s, f'service {SUBMIT_REPORT}', hold)
    response = call_service(node, client, SubmitReport.Request(report=report_to_msg(report)), timeout_s,
                            f'response of {SUBMIT_REPORT}')
    return ReportAnswer(accepted=response.accepted, explanation=response.explanation)


def spin_node(name: str, make_node, make_executor, args=None) -> int:
    """Run one node as a program: init rclpy, build the node, spin until interrupted, clean up.

    Parameters
    ----------
    name
        Program name for error messages, e.g. ``'supervisor'``.
    make_node, make_executor
        Callables returning the node and the executor (callers document their executor choice).
    args
        Command-line arguments for ``rclpy.init`` (``--ros-args ...``).

    Returns
    -------
    int
        0 on a normal stop (Ctrl-C, external shutdown); 2 if the node's configuration is
        unusable (the :class:`~robot_team.contracts.config.ConfigError` is printed).
    """
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        executor = make_executor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ConfigError as exc:
        print(f'{name}: {exc}', file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - re-raised unless it is the shutdown racing the executor
        if rclpy.ok():
            raise
        # Ctrl-C shut the context down while the executor was building its wait set (RCLError
        # "context is not valid"): a normal stop, like ExternalShutdownException
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def declare_robots(node, default) -> list[RobotId]:
    """Declare ``node``'s ``robots`` parameter (string array) and return the team's operational robots.

    Default ``default`` (the scenario's fleet, :attr:`robot_team.contracts.config.Scenario.robots`); checked
    by :func:`robot_team.contracts.names.validate_robots`.

    Raises
    ------
    ConfigError
        If the value is not the robots of every role, each once.
    """
    value = node.declare_parameter('robots', list(default), ParameterDescriptor(
        description="The team's operational robots: every role's, <role> or <role>_<n> for a fleet")).value
    try:
        return validate_robots(value, f'{node.get_name()} parameter robots')
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
