"""Service responses that reach a client whose reply reader the server has not matched yet.

rmw_fastrtps sends a service's response only once the server has matched the client's reply
reader; it waits 100 ms for that, then gives up, and rclpy turns the failure into a
``RuntimeWarning`` ("failed to send response (timeout): client will not receive response") and
drops the response (ros2/rmw_fastrtps#390, #467). A client that found the service
(``wait_for_service``) and called it at once can meet this on a busy host: the server's
discovery of the client's reader lags its discovery of the client's request writer (CI: the
supervisor decided a person's ``resolve`` and the console heard nothing for 10 s). Upstream's
advice is to send again once the match is done (rmw_fastrtps#467); :func:`deliver_responses` does
that, for up to :data:`RESPONSE_RETRY_S` wall seconds, and reports a response it could not deliver.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable

from robot_team.contracts.events import EventKind

SEND_FAILED = 'failed to send response'
"""The start of rclpy's warning for a response the middleware did not send (rclpy ``_rclpy_service.cpp``)."""

RESPONSE_RETRY_S = 5.0
"""Wall s a response is sent again for while the client's reply reader is not matched: discovery
on a busy host takes a second or two; a client that waits longer than this (the console: 10 s) is
answered, one that left is not waited for (the middleware then reports success)."""

RETRY_PAUSE_S = 0.05
"""Wall s between two attempts, besides the 100 ms the middleware waits in each."""

_warnings_lock = threading.Lock()


def deliver_responses(service: Any, on_lost: Callable[[str, int, float], None] | None = None, *,
                      retry_s: float = RESPONSE_RETRY_S, on_retried: Callable[[str, int, float], None] | None = None):
    """Make ``service`` (an ``rclpy.service.Service``) send each response again until it is delivered.

    Replaces the instance's ``send_response``, which every executor calls after the callback.
    A send that rclpy reports as failed (:data:`SEND_FAILED`) is repeated every
    :data:`RETRY_PAUSE_S` for up to ``retry_s`` wall seconds. ``on_retried(service_name, attempts,
    waited_s)`` is called for a response delivered after more than one attempt, ``on_lost(...)``
    for one that never was (both optional; they must not raise). Other warnings raised while
    sending are shown as usual. Returns ``service``.

    Raises
    ------
    ValueError
        If ``retry_s`` is negative.
    """
    if retry_s < 0.0:
        raise ValueError(f'retry_s must be >= 0 s, got {retry_s!r}')
    send = service.send_response
    name = str(getattr(service, 'srv_name', '?'))

    def send_response(response, header) -> None:
        start = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            if _sent(send, response, header):
                if attempts > 1 and on_retried is not None:
                    on_retried(name, attempts, time.monotonic() - start)
                return
            waited = time.monotonic() - start
            if waited >= retry_s:
                if on_lost is not None:
                    on_lost(name, attempts, waited)
                return
            time.sleep(RETRY_PAUSE_S)

    service.send_response = send_response
    return service


def _sent(send: Callable[[Any, Any], None], response, header) -> bool:
    """Call ``send`` once; return False if rclpy warned that the response was not sent.

    ``warnings.catch_warnings`` swaps process-wide state: one sender at a time (a lock), and a
    warning of another thread caught meanwhile is shown again after.
    """
    with _warnings_lock:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            send(response, header)
    failed = False
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning) and str(warning.message).startswith(SEND_FAILED):
            failed = True
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno,
                                 warning.file, warning.line)
    return not failed


def reported_deliveries(logger: Any, emit: Callable[..., Any], *,
                        retry_s: float = RESPONSE_RETRY_S) -> Callable[[Any], Any]:
    """Return ``deliver(service)``: :func:`deliver_responses` with a lost response recorded and logged.

    ``logger``: the node's (``rclpy`` logger); ``emit``: its event emitter's
    :meth:`~robot_team.ros.emitter.EventEmitter.emit`; ``retry_s``: as for :func:`deliver_responses`.
    A response delivered only after retries is logged (info); one never delivered is a
    ``response_lost`` event (data: ``service``, ``attempts``, ``waited_s``) and an error in the
    log: the client saw no answer, although the request was served.
    """
    def lost(name: str, attempts: int, waited: float) -> None:
        logger.error(f'the response of {name} was not delivered: the client\'s reply reader did not match '
                     f'in {waited:.1f} s ({attempts} attempts)')
        emit(EventKind.RESPONSE_LOST, f'response of {name} not delivered', target=name,
             reason=f"the client's reply reader did not match within {waited:.1f} wall s ({attempts} attempts); "
                    'the request was served', service=name, attempts=attempts, waited_s=round(waited, 3))

    def retried(name: str, attempts: int, waited: float) -> None:
        logger.info(f'the response of {name} was delivered after {attempts} attempts ({waited:.2f} s): the '
                    "client's reply reader matched late")

    return lambda service: deliver_responses(service, lost, on_retried=retried, retry_s=retry_s)
