"""Service responses sent again while the client's reply reader is not matched (robot_team.ros.services), and
requests sent again to a server that appears while the client waits (robot_team.ros.util.call_service)."""

import threading
import warnings

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_team.contracts.events import EventKind  # noqa: E402
from robot_team.ros.executor import TeamExecutor  # noqa: E402
from robot_team.ros.services import SEND_FAILED, deliver_responses, reported_deliveries  # noqa: E402
from robot_team.contracts.errors import ToolError  # noqa: E402
from robot_team.ros.util import call_service, wait_for_server, wait_future  # noqa: E402
from ros_helpers import wait_for  # noqa: E402

# rclpy's words for a response rmw_fastrtps did not send (its 100 ms wait for the reader timed out)
RCLPY_WARNING = ('failed to send response (timeout): client will not receive response, at '
                 '/project/src/rmw_response.cpp:164, at /project/src/rcl/service.c:401')


class _Service:
    """A service whose middleware drops the first ``drops`` responses, warning as rclpy does."""

    srv_name = '/team/supervisor/resolve_escalation'

    def __init__(self, drops: int, other_warning: str = ''):
        self.drops, self.other_warning, self.delivered, self.attempts = drops, other_warning, [], 0

    def send_response(self, response, header):
        self.attempts += 1
        if self.other_warning:
            warnings.warn(self.other_warning, UserWarning)
        if self.attempts <= self.drops:
            warnings.warn(RCLPY_WARNING, RuntimeWarning)
            return
        self.delivered.append((response, header))


@pytest.mark.parametrize('drops', [0, 1, 3])
def test_a_dropped_response_is_sent_again_until_delivered(drops):
    service, retried, lost = _Service(drops), [], []
    deliver_responses(service, lambda *a: lost.append(a), on_retried=lambda *a: retried.append(a))
    service.send_response('answer', 'header-1')
    assert service.delivered == [('answer', 'header-1')] and service.attempts == drops + 1
    assert not lost
    assert [(name, attempts) for name, attempts, _ in retried] == ([(service.srv_name, drops + 1)] if drops else [])


def test_a_response_never_delivered_is_reported_once_after_the_retry_time():
    service, lost = _Service(drops=10 ** 6), []
    deliver_responses(service, lambda *a: lost.append(a), retry_s=0.2)
    service.send_response('answer', 'header-1')
    [(name, attempts, waited)] = lost
    assert name == service.srv_name and attempts == service.attempts >= 2 and 0.2 <= waited < 5.0
    assert not service.delivered


def test_other_warnings_raised_while_sending_are_still_shown():
    service = _Service(drops=1, other_warning='something else')
    deliver_responses(service)
    with pytest.warns(UserWarning, match='something else'):
        service.send_response('answer', 'header-1')
    assert service.delivered


def test_a_negative_retry_time_is_refused():
    with pytest.raises(ValueError, match='retry_s'):
        deliver_responses(_Service(0), retry_s=-1.0)


def test_the_rclpy_warning_is_what_is_recognised():
    assert RCLPY_WARNING.startswith(SEND_FAILED)


def test_a_wrapped_service_answers_a_real_client_and_records_nothing(ros_context):
    server, caller = Node('server', context=ros_context), Node('caller', context=ros_context)
    events = []
    deliver = reported_deliveries(server.get_logger(), lambda *a, **k: events.append((a, k)))
    deliver(server.create_service(Trigger, 'answer', lambda _req, res: Trigger.Response(success=True, message='42')))
    client = caller.create_client(Trigger, 'answer')
    executor = TeamExecutor(context=ros_context)
    for node in (server, caller):
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        wait_for_server(client, 10.0, 'answer')
        answers = [wait_future(client.call_async(Trigger.Request()), 10.0, 'answer').message for _ in range(3)]
        assert answers == ['42'] * 3 and events == []
    finally:
        executor.shutdown()
        spinner.join(10.0)
        for node in (server, caller):
            node.destroy_node()


def test_a_lost_response_is_an_event_and_an_error_in_the_log():
    class Logger:
        def __init__(self):
            self.lines = []

        def error(self, text):
            self.lines.append(('error', text))

        def info(self, text):
            self.lines.append(('info', text))
    logger, events = Logger(), []
    service = _Service(drops=10 ** 6)
    deliver = reported_deliveries(logger, lambda kind, summary, **data: events.append((kind, summary, data)),
                                  retry_s=0.1)
    deliver(service)
    service.send_response('answer', 'header-1')
    [(kind, summary, data)] = events
    assert kind == EventKind.RESPONSE_LOST and data['service'] == data['target'] == service.srv_name
    assert data['attempts'] == service.attempts and data['waited_s'] >= 0.1
    assert [level for level, _ in logger.lines] == ['error']


# -- the client's side: a request sent again to a server that appears (robot_team.ros.util.call_service) --

def test_a_request_whose_server_never_answers_is_sent_again_once_a_server_appears(ros_context):
    """CI: hospital_systems killed with a robot's locate_staff in flight; its restart never heard the request."""
    caller, first = Node('caller', context=ros_context), Node('first', context=ros_context)
    calls, got_first, release = {'first': 0, 'second': 0}, threading.Event(), threading.Event()

    def stuck(_req, _res):   # took the request and does not answer (a server killed with it)
        calls['first'] += 1
        got_first.set()
        release.wait(20.0)
        return Trigger.Response(success=True, message='first')

    def answer(_req, _res):
        calls['second'] += 1
        return Trigger.Response(success=True, message='second')

    first.create_service(Trigger, 'answer', stuck, callback_group=ReentrantCallbackGroup())   # each call stuck
    client = caller.create_client(Trigger, 'answer')
    executor = TeamExecutor(num_threads=6, context=ros_context)
    for node in (caller, first):
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    second = None
    try:
        wait_for_server(client, 10.0, 'answer')
        with pytest.raises(ToolError, match='timed out after 1 s'):   # nobody else: the wall bound holds
            call_service(caller, client, Trigger.Request(), 1.0, 'answer')
        assert got_first.is_set() and calls['first'] == 1              # sent once to the server it had
        result: dict = {}
        waiter = threading.Thread(target=lambda: result.update(
            answer=call_service(caller, client, Trigger.Request(), 20.0, 'answer')), daemon=True)
        waiter.start()
        assert wait_for(lambda: calls['first'] == 2, 10.0)
        second = Node('second', context=ros_context)                    # the server restarted
        second.create_service(Trigger, 'answer', answer)
        executor.add_node(second)
        waiter.join(20.0)
        # sent again once, when the new server appeared: DDS hands it to every server matched then
        assert result['answer'].message == 'second' and calls == {'first': 3, 'second': 1}
    finally:
        release.set()
        executor.shutdown()
        spinner.join(10.0)
        for node in (caller, first, second):
            if node is not None:
                node.destroy_node()
