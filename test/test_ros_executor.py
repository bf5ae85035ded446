"""TeamExecutor: a MultiThreadedExecutor that hands each callback to its pool once.

Checked without timing: every message of a ping-pong is delivered, each callback reaches the
pool once (rclpy's own executor hands a waiting callback over on every pass of its wait loop),
a callback may block on a future that another callback completes, and a mutually exclusive
group never runs two callbacks at once.
"""

import threading

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Int64  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from ros_helpers import wait_for  # noqa: E402
from robot_team.ros.executor import TeamExecutor  # noqa: E402
from robot_team.ros.util import wait_for_server, wait_future  # noqa: E402
from robot_team.ros.spin import SpinThread  # noqa: E402


class _Spinning:
    """A TeamExecutor spinning ``nodes`` in a thread, counting what it hands to its pool."""

    def __init__(self, context, nodes, threads=4):
        self.executor = TeamExecutor(num_threads=threads, context=context)
        self.submitted = 0
        submit = self.executor._executor.submit

        def counting_submit(fn, *args):
            self.submitted += 1
            return submit(fn, *args)
        self.executor._executor.submit = counting_submit
        self.nodes = nodes
        for node in nodes:
            self.executor.add_node(node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def close(self):
        assert self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=5.0)
        for node in self.nodes:
            node.destroy_node()


def test_a_ping_pong_delivers_every_message_and_each_callback_reaches_the_pool_once(ros_context):
    ping, pong = Node('ping', context=ros_context), Node('pong', context=ros_context)
    rounds, received, done = 300, [], threading.Event()
    to_pong = ping.create_publisher(Int64, 'ping', 10)
    to_ping = pong.create_publisher(Int64, 'pong', 10)
    pong.create_subscription(Int64, 'ping', to_ping.publish, 10)

    def on_pong(msg):
        received.append(msg.data)
        if msg.data + 1 >= rounds:
            done.set()
        else:
            to_pong.publish(Int64(data=msg.data + 1))
    ping.create_subscription(Int64, 'pong', on_pong, 10)
    spinning = _Spinning(ros_context, [ping, pong])
    try:
        while to_pong.get_subscription_count() < 1 or to_ping.get_subscription_count() < 1:
            threading.Event().wait(0.01)
        to_pong.publish(Int64(data=0))
        assert done.wait(60.0), f'{len(received)} of {rounds} round trips'
        assert received == list(range(rounds))
        # 2 callbacks a round trip (plus start-up): rclpy's executor hands one over again on every pass
        assert spinning.submitted <= 2 * rounds + 20
    finally:
        spinning.close()


def test_a_callback_may_block_on_a_service_answered_by_another_thread(ros_context):
    server, client_node = Node('server', context=ros_context), Node('caller', context=ros_context)
    server.create_service(Trigger, 'answer', lambda _req, res: Trigger.Response(success=True, message='42'))
    group = ReentrantCallbackGroup()
    client = client_node.create_client(Trigger, 'answer', callback_group=group)
    answers, done = [], threading.Event()

    def blocking_callback():   # a timer callback that waits on a future, as the robots' tools do
        timer.cancel()
        wait_for_server(client, 10.0, 'answer')
        answers.append(wait_future(client.call_async(Trigger.Request()), 10.0, 'answer').message)
        done.set()
    timer = client_node.create_timer(0.01, blocking_callback, callback_group=group)
    spinning = _Spinning(ros_context, [server, client_node])
    try:
        assert done.wait(30.0)
        assert answers == ['42']
    finally:
        spinning.close()


def test_a_mutually_exclusive_group_runs_one_callback_at_a_time(ros_context):
    node = Node('exclusive', context=ros_context)
    group = MutuallyExclusiveCallbackGroup()
    lock, overlaps, calls, done = threading.Lock(), [], [], threading.Event()

    def callback(name):
        if not lock.acquire(blocking=False):
            overlaps.append(name)
            return
        try:
            threading.Event().wait(0.002)
            calls.append(name)
            if len(calls) >= 40:
                done.set()
        finally:
            lock.release()
    for name in 'abcd':
        node.create_timer(0.001, lambda name=name: callback(name), callback_group=group)
    spinning = _Spinning(ros_context, [node], threads=4)
    try:
        assert done.wait(30.0)
        assert overlaps == []
    finally:
        spinning.close()


def test_a_qos_event_reaches_its_callback(ros_context):
    # QoS event handlers are waited on every EVENT_POLL_S only: the event still arrives.
    from rclpy.event_handler import SubscriptionEventCallbacks
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    node = Node('qos_events', context=ros_context)
    events = threading.Event()
    node.create_subscription(Int64, 'qos', lambda _m: None, QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
                             event_callbacks=SubscriptionEventCallbacks(incompatible_qos=lambda _e: events.set()))
    spinning = _Spinning(ros_context, [node])
    try:
        node.create_publisher(Int64, 'qos', QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        assert events.wait(30.0)
    finally:
        spinning.close()


def test_a_parameter_and_a_type_description_request_are_served(ros_context):
    # A node's parameter and type-description services are waited on every EVENT_POLL_S only, and
    # its own services on every wait: each is answered, and only the tools' ones are left out between.
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from type_description_interfaces.srv import GetTypeDescription

    from robot_team.ros.executor import _is_infrastructure

    node = Node('params', context=ros_context, parameter_overrides=[Parameter('speed', value=0.5)],
                automatically_declare_parameters_from_overrides=True)
    node.create_service(Trigger, 'own', lambda _req, res: Trigger.Response(success=True))
    assert [s.srv_name for s in node.services if not _is_infrastructure(s)] == ['own']
    asker = Node('asker', context=ros_context)
    spinning, asking = _Spinning(ros_context, [node]), _Spinning(ros_context, [asker])
    try:
        params = AsyncParameterClient(asker, 'params')
        assert params.wait_for_services(timeout_sec=10.0)
        assert wait_future(params.get_parameters(['speed']), 10.0, 'get_parameters').values[0].double_value == 0.5
        describe = asker.create_client(GetTypeDescription, '/params/get_type_description')
        assert describe.wait_for_service(timeout_sec=10.0)
        reply = wait_future(describe.call_async(GetTypeDescription.Request(type_name='std_srvs/srv/Trigger')),
                            10.0, 'get_type_description')    # answered (no type hash asked for: refused)
        assert isinstance(reply, GetTypeDescription.Response) and not reply.successful
    finally:
        spinning.close()
        asking.close()


def test_what_a_node_destroys_while_the_executor_spins_leaves_the_graph(ros_context):
    # The executor holds its entities' handles between waits: one the node destroys (a subscription,
    # an action client, the node itself) must still be destroyed, and leave the graph, while it spins.
    from rclpy.action import ActionClient
    from rclpy.node import Node as RclpyNode
    from robot_team.action import PageStaff

    team, watcher = Node('team_member', context=ros_context), RclpyNode('graph_watcher', context=ros_context)
    team.create_subscription(Int64, 'kept', lambda _m: None, 10)
    sub = team.create_subscription(Int64, 'dropped', lambda _m: None, 10)
    action = ActionClient(team, PageStaff, 'dropped_action')
    kept_pub, dropped_pub = watcher.create_publisher(Int64, 'kept', 10), watcher.create_publisher(Int64, 'dropped', 10)
    spinning = _Spinning(ros_context, [team])
    try:
        assert wait_for(lambda: dropped_pub.get_subscription_count() == 1 and kept_pub.get_subscription_count() == 1
                        and 'dropped_action' in str(watcher.get_service_names_and_types()), 10.0)
        team.destroy_subscription(sub)
        action.destroy()
        assert wait_for(lambda: dropped_pub.get_subscription_count() == 0, 10.0), 'the destroyed subscription stayed'
        assert wait_for(lambda: 'dropped_action' not in str(watcher.get_service_names_and_types()), 10.0), (
            'the destroyed action client stayed')
        assert kept_pub.get_subscription_count() == 1
        spinning.executor.remove_node(team)
        team.destroy_node()
        assert wait_for(lambda: kept_pub.get_subscription_count() == 0, 10.0), 'the destroyed node stayed'
    finally:
        spinning.nodes = [watcher]
        spinning.close()


def test_shutdown_lets_the_nodes_it_spun_be_destroyed(ros_context):
    node, watcher = Node('spun_node', context=ros_context), Node('watcher', context=ros_context)
    node.create_subscription(Int64, 'spun', lambda _m: None, 10)
    pub = watcher.create_publisher(Int64, 'spun', 10)
    spinning = _Spinning(ros_context, [node])
    assert wait_for(lambda: pub.get_subscription_count() == 1, 10.0)
    spinning.close()   # shuts the executor down, then destroys the node
    try:
        assert wait_for(lambda: pub.get_subscription_count() == 0, 10.0), 'the node outlived its destruction'
    finally:
        watcher.destroy_node()


def test_a_node_waits_for_its_first_clock_before_its_ros_time_has_started(ros_context, executor):
    # A robot restarted mid-episode must not stamp its work at t = 0 (before the task it serves).
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from robot_team.ros.messages import reliable_qos
    from robot_team.ros.stamps import s_to_stamp
    from robot_team.ros.util import wait_clock_started
    from ros_helpers import wait_for
    follower = Node('follower', context=ros_context, parameter_overrides=[Parameter('use_sim_time', value=True)])
    source = Node('clock_source', context=ros_context)
    clock = source.create_publisher(Clock, '/clock', reliable_qos())
    executor.add_node(follower)
    executor.add_node(source)
    try:
        assert not wait_clock_started(follower, 0.2)   # no /clock yet: ROS time reads 0
        assert wait_for(lambda: clock.get_subscription_count() > 0)
        clock.publish(Clock(clock=s_to_stamp(194.0)))
        assert wait_clock_started(follower, 10.0)
        wall = Node('wall_clock', context=ros_context)
        assert wait_clock_started(wall, 0.0)   # no sim time: its clock has always started
        wall.destroy_node()
    finally:
        for node in (follower, source):
            executor.remove_node(node)
            node.destroy_node()


def _destroyed_while_waited(ros_context, make_executor):
    """Destroy a node whose QoS event handler the executor has entered but not yet added to its wait set.

    The executor's thread is held (``threading.setprofile``) at its first call of that handler's
    ``add_to_wait_set`` until another thread destroyed the node: the window a node destroyed while
    its executor spins hits now and then. Return whether a timer of another node still ticks
    afterwards, and what ended the executor's spin (None: nothing).
    """
    from rclpy.event_handler import EventHandler
    doomed = rclpy.create_node('doomed', context=ros_context)
    doomed.create_publisher(Int64, 'chatter', 10)   # its QoS event handlers are waitables
    handlers = {id(w) for w in doomed.waitables if isinstance(w, EventHandler)}
    assert handlers
    ticking = rclpy.create_node('ticking', context=ros_context)
    ticks = []
    ticking.create_timer(0.01, lambda: ticks.append(1))
    at_window, destroyed = threading.Event(), threading.Event()

    def profile(frame, event, arg):
        if (event == 'call' and frame.f_code.co_name == 'add_to_wait_set' and not at_window.is_set()
                and id(frame.f_locals.get('self')) in handlers):
            at_window.set()
            destroyed.wait(5.0)

    executor = make_executor()
    executor.add_node(doomed)
    executor.add_node(ticking)
    thread = SpinThread(executor, 'spin-under-test', max_respins=0)   # stops at the first exception, kept

    threading.setprofile(profile)   # for the threads started from now on: the executor's
    try:
        thread.start()
    finally:
        threading.setprofile(None)
    try:
        assert at_window.wait(10.0), 'the executor never added the handler to a wait set'
        executor.remove_node(doomed)
        doomed.destroy_node()
        destroyed.set()
        before = len(ticks)
        still_ticking = wait_for(lambda: len(ticks) >= before + 10, 5.0)
        ended = thread.take_failures()
        return still_ticking, (ended[0].exception if ended else None)
    finally:
        destroyed.set()
        executor.shutdown(timeout_sec=2.0)
        thread.join(timeout=5.0)
        ticking.destroy_node()


def test_a_node_destroyed_while_its_wait_set_is_built_leaves_the_executor_spinning(ros_context):
    still_ticking, ended = _destroyed_while_waited(
        ros_context, lambda: TeamExecutor(num_threads=2, context=ros_context))
    assert ended is None and still_ticking, f'the executor stopped: {ended!r}'


def test_rclpys_executor_stops_on_a_node_destroyed_while_its_wait_set_is_built(ros_context):
    """The same window on rclpy's ``MultiThreadedExecutor`` (ros2/rclpy#1284): fails once rclpy has #1590."""
    from rclpy.exceptions import InvalidHandle
    from rclpy.executors import MultiThreadedExecutor
    still_ticking, ended = _destroyed_while_waited(
        ros_context, lambda: MultiThreadedExecutor(num_threads=2, context=ros_context))
    assert isinstance(ended, InvalidHandle) and not still_ticking, (
        f"rclpy's executor went on ({ended!r}): the installed rclpy drops invalid waitables (ros2/rclpy#1590)")
