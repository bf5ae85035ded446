"""LLM requests that end with their episode: cancellable from any thread, counted per process.

A brain thread blocks in its LLM request; when the episode ends (or the supervisor hands the
manager's role to the protocol brain), another thread must be able to end that request at
once, not after the client's timeout, so that no request, thread or callback outlives its
episode. :class:`Requests` runs each request on the calling thread in an asyncio event loop of
its own, through ``openai.AsyncOpenAI``; :meth:`Requests.cancel` cancels the request's task from
any thread, which closes its HTTP connection (the server sees the client go away).
:func:`in_flight` counts the requests running in this process (tests check it is 0 after an
episode).

One :class:`Requests` per :class:`~robot_team.llm.client.ChatClient`: one request at a time.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable

_registry_lock = threading.Lock()
_running: set['Requests'] = set()


class RequestCancelled(RuntimeError):
    """The request was cancelled (the episode ended or the brain was replaced); it is not retried."""


def in_flight() -> int:
    """Return the number of LLM requests running in this process."""
    with _registry_lock:
        return len(_running)


class Requests:
    """Run one client's LLM requests so that any thread can cancel them.

    Parameters
    ----------
    make_client
        Returns the ``openai.AsyncOpenAI`` client (called once, lazily, on the first request).

    Notes
    -----
    :meth:`run` is called by one thread at a time (the brain's); :meth:`cancel`, :meth:`reset`
    and :meth:`close` from any thread. A cancel stays in force (each later :meth:`run` raises
    :class:`RequestCancelled` at once) until :meth:`reset`; :meth:`close` cancels for good and
    releases the client, its event loop and the loop's resolver thread (at once when idle,
    else when the running request returns).
    """

    def __init__(self, make_client: Callable[[], Any]):
        self._make_client = make_client
        self._client = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._closed = False
        self._running = False

    @property
    def cancelled(self) -> bool:
        """Return True while requests are refused: after :meth:`cancel` (until :meth:`reset`) or :meth:`close`."""
        return self._cancelled.is_set()

    def prepare(self) -> None:
        """Make the client and its event loop now (start-up), so that the first request does not pay for it."""
        with self._lock:
            if self._closed:
                return
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            if self._client is None:
                self._client = self._make_client()

    def run(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """Return ``await call(client)``, run on this thread; raise :class:`RequestCancelled` if cancelled.

        Other exceptions of ``call`` (timeouts, HTTP errors) propagate unchanged.
        """
        with self._lock:
            if self._cancelled.is_set():
                raise RequestCancelled('LLM requests are cancelled' + (' (client closed)' if self._closed else ''))
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            loop = self._loop
            if self._client is None:
                self._client = self._make_client()
            task = loop.create_task(call(self._client))
            self._task, self._running = task, True
            with _registry_lock:
                _running.add(self)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            raise RequestCancelled('LLM request cancelled') from None
        finally:
            with self._lock:
                self._task, self._running = None, False
                with _registry_lock:
                    _running.discard(self)
                closing = self._closed
            if closing:
                self._release()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` (a retry's backoff) unless cancelled meanwhile; return whether cancelled."""
        return self._cancelled.wait(seconds)

    def cancel(self) -> None:
        """Cancel the request in flight, and every later one until :meth:`reset` (any thread)."""
        self._cancelled.set()
        with self._lock:
            task, loop = self._task, self._loop
            if task is not None and not task.done() and loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)

    def reset(self) -> None:
        """Accept requests again after :meth:`cancel` (not after :meth:`close`)."""
        with self._lock:
            if not self._closed:
                self._cancelled.clear()

    def close(self) -> None:
        """Cancel for good and release the client and its event loop (any thread)."""
        with self._lock:
            self._closed = True
        self.cancel()
        with self._lock:
            running = self._running
        if not running:
            self._release()

    def _release(self) -> None:
        with self._lock:
            loop, client = self._loop, self._client
            self._loop = self._client = None
        if loop is None or loop.is_closed():
            return
        try:
            if client is not None:
                loop.run_until_complete(client.close())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
