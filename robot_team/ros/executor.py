"""A multi-threaded rclpy executor that does not stall: :class:`TeamExecutor`.

rclpy's ``MultiThreadedExecutor`` (rclpy 9) has one thread wait on a wait set of every entity of
every node and hand each ready callback to a thread pool. With a whole team in one process (about
300 entities, half of them QoS event handlers) on the follow clock, where every sim step waits
for every node's acknowledgement, it spends most of the GIL on its own bookkeeping:

- a callback handed to the pool stays in the executor's task list until a worker starts it, and
  every pass of the waiting thread hands it over again: a pure pub/sub ping-pong does 100-1,600
  round trips per second with gaps of 0.1-0.9 s (a ``SingleThreadedExecutor``: 3,000), its pool
  queue holding thousands of copies;
- every callback wakes the waiting thread twice (its data taken, its callback ended), and every
  wake rebuilds the wait set in Python (a list membership test per waitable, a context manager per
  entity): about 0.8 ms of CPU for the team, some 16 wakes per clock step.

:class:`TeamExecutor` is a ``MultiThreadedExecutor`` (same pool, same callback groups, the same
order of callbacks and the same rules for which entity may run) that hands a callback to the pool
once, wakes once per callback, builds the wait set in one pass per node from the entities it
holds (:class:`_HeldEntities`: each handle entered once, while it stays its node's, not around
every wait: an onboarding episode builds some 900 wait sets of about 200 entities), and waits on the QoS
event handlers (incompatible QoS or type; the team registers no event callback of its own) and
the nodes' parameter and type-description services every :data:`EVENT_POLL_S` only, and leaves
out a waitable destroyed while its wait set is built (a node destroyed while the executor spins,
as a restarted node's old one: rclpy 9.1.2's executors stop spinning on it, ros2/rclpy#1284, fixed
by ros2/rclpy#1590 in rclpy 10.0.5, not in the Kilted wheel). The
blocking model is unchanged: a callback may block its worker thread waiting for a future that
another worker completes.

It reads the same private state of ``rclpy.executors.Executor`` as rclpy's own executors
(``_tasks``, ``_guard``, an entity's ``_executor_event``) and a mutually exclusive group's
``_active_entity``; written against rclpy 9 (Kilted).
"""

from __future__ import annotations

import threading
import time

from rclpy.action import ActionClient, ActionServer
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.event_handler import EventHandler
from rclpy.exceptions import InvalidHandle
from rclpy.executors import (ConditionReachedException, ExternalShutdownException, MultiThreadedExecutor,
                             ShutdownException, TimeoutException, TimeoutObject)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.task import Task
from rclpy.timer import Timer
from rclpy.utilities import timeout_sec_to_nsec

EVENT_POLL_S = 0.1
"""Wall seconds between two waits on the nodes' QoS event handlers (incompatible QoS or type, and
any event callback a node registers) and on their infrastructure services (parameters, type
descriptions: :data:`INFRASTRUCTURE_SERVICES`): such an event or request is handled at most this
late. Each publisher and subscription has QoS event handlers (about half of a team's waitable
entities) and each node seven such services (most of the services a team has), each some Python
calls per wait set built; the waits in between leave them out."""

INFRASTRUCTURE_SERVICES = frozenset({'rcl_interfaces', 'type_description_interfaces'})
"""Interface packages of the services every rclpy node offers for tools (``ros2 param``: the six
parameter services; ``ros2 interface``: ``~/get_type_description``), waited on every
:data:`EVENT_POLL_S` only: they serve people and tools, never the team's own exchanges."""


def _is_infrastructure(service) -> bool:
    """Return whether ``service`` is one of a node's tool-facing services (cached on the service)."""
    slow = getattr(service, '_team_infrastructure', None)
    if slow is None:
        slow = service.srv_type.__module__.split('.', 1)[0] in INFRASTRUCTURE_SERVICES
        service._team_infrastructure = slow
    return slow


def _can_execute(entity) -> bool:
    """Return whether ``entity``'s callback may be taken now (as ``Executor.can_execute``, without its locks).

    A mutually exclusive group reads its active entity directly: the answer is as stale the
    moment the group's lock is released in rclpy's own check, and the group's
    ``beginning_execution`` (under the lock) decides in the end.
    """
    if entity._executor_event:
        return False
    group = entity.callback_group
    if group is None:
        return False
    kind = type(group)
    if kind is ReentrantCallbackGroup:
        return True
    if kind is MutuallyExclusiveCallbackGroup:
        return group._active_entity is None
    return group.can_execute(entity)


def _is_ready(waitable, wait_set) -> bool:
    """Return ``waitable.is_ready(wait_set)``; False for a waitable destroyed since it was added."""
    try:
        return waitable.is_ready(wait_set)
    except InvalidHandle:
        return False


def _enter_handles(entities, entered: list) -> list:
    """Return ``(entity, handle)`` for each of ``entities``, its handle entered (one already destroyed: left out).

    Entered handles are appended to ``entered`` (to exit once no longer used: after the wait, or
    when the executor releases what it holds).
    """
    usable = []
    for entity in entities:
        handle = entity.handle
        try:
            handle.__enter__()
        except InvalidHandle:
            continue
        entered.append(handle)
        usable.append((entity, handle))
    return usable


_FIXED_SIZE_WAITABLES = (ActionServer, ActionClient)
"""Waitables whose number of entities never changes (an rcl action server or client): counted once."""


def _entity_counts(waitable) -> tuple:
    """Return ``waitable``'s entities: (subscriptions, guard conditions, timers, clients, services, events)."""
    count = waitable.get_num_entities()
    return (count.num_subscriptions, count.num_guard_conditions, count.num_timers, count.num_clients,
            count.num_services, count.num_events)


def _entity_lists(node) -> tuple:
    """Return copies of ``node``'s lists of timers, subscriptions, clients, services, guard conditions, waitables."""
    return (node._timers[:], node._subscriptions[:], node._clients[:], node._services[:], node._guards[:],
            node._Node__waitables[:])


class _HeldEntities:
    """One node's waitable entities as the executor last saw them, each one's handle held (entered).

    Building a wait set enters every entity's handle, so that no other thread can destroy the
    entity while the wait set uses it, and exits them after the wait: some 200 handles, each
    sorted by kind, for each of the 900 wait sets an onboarding episode builds. Here they are
    entered once, while the entity
    stays the node's (rclpy's ``Node.destroy_*`` take an entity off the node's lists, then ask its
    handle to be destroyed once no one uses it): the executor releases a node's handles when its
    lists change or it leaves the executor (:meth:`release`), in the executor's own thread, and the
    destruction happens then. An entity whose handle is already being destroyed is left out.
    """

    __slots__ = ('seen', 'timers', 'subscriptions', 'clients', 'services', 'infrastructure', 'guards',
                 'waitables', 'events', 'counts', '_held')

    def __init__(self, node):
        self.seen = _entity_lists(node)
        self._held = []
        try:
            self._hold(*self.seen)
        except BaseException:
            self.release()   # none left entered by a failure half-way
            raise

    def _hold(self, timers, subscriptions, clients, services, guards, waitables) -> None:
        """Enter the handles of the node's entities, sorted by kind (see the class)."""
        self.timers = self._enter(timers)
        self.subscriptions = self._enter(subscriptions)
        self.clients = self._enter(clients)
        self.services = self._enter(srv for srv in services if not _is_infrastructure(srv))
        self.infrastructure = self._enter(srv for srv in services if _is_infrastructure(srv))
        self.guards = self._enter(guards)
        self.waitables, self.events = [], []
        self.counts = {}   # waitable -> (subscriptions, guard conditions, timers, clients, services, events)
        for waitable in waitables:
            try:
                waitable.__enter__()
            except InvalidHandle:
                continue
            self._held.append(waitable)
            if type(waitable) is EventHandler:
                self.events.append(waitable)
            else:
                self.waitables.append(waitable)
                if isinstance(waitable, _FIXED_SIZE_WAITABLES):
                    self.counts[waitable] = _entity_counts(waitable)

    def _enter(self, entities) -> list:
        """Return ``(entity, handle)`` for each of ``entities`` whose handle could be entered (held)."""
        return _enter_handles(entities, self._held)

    def unchanged(self, node) -> bool:
        """Return whether ``node`` has the same entities as when they were held."""
        seen = self.seen
        return (seen[1] == node._subscriptions and seen[0] == node._timers and seen[2] == node._clients
                and seen[3] == node._services and seen[4] == node._guards and seen[5] == node._Node__waitables)

    def release(self) -> None:
        """Exit every held handle (an entity destroyed meanwhile is destroyed now); idempotent."""
        held, self._held = self._held, []
        for handle in reversed(held):
            handle.__exit__(None, None, None)


class TeamExecutor(MultiThreadedExecutor):
    """A ``MultiThreadedExecutor`` that hands each callback to its pool once and waits cheaply.

    Parameters
    ----------
    num_threads
        Worker threads in the pool (callbacks that block hold one each while they wait).
    context
        The rclpy context (``None``: the default one).
    """

    def __init__(self, num_threads: int | None = None, *, context=None):
        super().__init__(num_threads, context=context)
        self._queued: set = set()          # tasks handed to the pool that have not finished a run yet
        self._queued_lock = threading.Lock()
        self._drained = threading.Condition(self._queued_lock)   # notified when _queued becomes empty
        self._events_due = 0.0             # when the QoS event handlers are waited on next (monotonic s)
        self._held: dict = {}              # node -> its _HeldEntities (their handles entered)
        self._held_lock = threading.Lock()   # held by the thread that builds a wait set, until it is done

    # --- dispatch ---------------------------------------------------------------------------

    def _spin_once_impl(self, timeout_sec=None, wait_condition=lambda: False) -> None:
        try:
            handler, _entity, _node = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException, ConditionReachedException):
            return
        with self._queued_lock:
            if handler in self._queued:
                return
            self._queued.add(handler)
        self._executor.submit(self._run, handler)
        self._futures.append(handler)
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                future.result()  # raise any exceptions

    def _run(self, handler) -> None:
        """Run (or resume) ``handler`` in a worker; it may be handed over again once this run ends.

        A coroutine that awaits a future is resumed on a later pass, as rclpy's executors do.
        """
        try:
            handler()
        finally:
            with self._queued_lock:
                self._queued.discard(handler)
                if not self._queued:
                    self._drained.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no callback handed to the pool waits or runs, ``timeout_s`` wall s at most; return whether so.

        For a teardown: once the nodes are removed, the callbacks already handed over end before
        the executor's guard condition is destroyed.
        """
        with self._queued_lock:
            return self._drained.wait_for(lambda: not self._queued, timeout=timeout_s)

    def _make_handler(self, entity, node, take_from_wait_list):
        """Return the task that takes ``entity``'s data and runs its callback (as rclpy's executor does).

        rclpy's handler wakes the waiting thread twice: once the data is taken (so that the
        entity is waited on again) and once the callback ended (so that its mutually exclusive
        group may run the next one). Each wake rebuilds the wait set; here only the one that can
        change it does: for a mutually exclusive group, the entity cannot run again before the
        group is free, so the wake comes at the end; for a reentrant group, the end changes
        nothing, so the wake comes once the data is taken. Other groups get both.
        """
        entity._executor_event = True   # not waited on until its data is taken
        group = entity.callback_group
        wake_taken = type(group) is not MutuallyExclusiveCallbackGroup
        wake_ended = type(group) is not ReentrantCallbackGroup

        async def handler(entity, gc, is_shutdown, work_tracker):
            if is_shutdown or group is not None and not group.beginning_execution(entity):
                entity._executor_event = False   # the group is busy, or the executor stops
                gc.trigger()
                return
            with work_tracker:
                call_coroutine = take_from_wait_list(entity)
                entity._executor_event = False
                if wake_taken:
                    gc.trigger()
                try:
                    if call_coroutine is not None:
                        await call_coroutine()
                finally:
                    if group:
                        group.ending_execution(entity)
                    if wake_ended:
                        try:
                            gc.trigger()
                        except InvalidHandle:   # the executor was shut down from the callback
                            pass
        task = Task(handler, (entity, self._guard, self._is_shutdown, self._work_tracker), executor=self)
        with self._tasks_lock:
            self._tasks.append((task, entity, node))
        return task

    # --- waiting ------------------------------------------------------------------------------

    def _held_for(self, nodes) -> dict:
        """Return ``{node: its _HeldEntities}`` for ``nodes``, held anew where a node's entities changed (lock held).

        The handles of a node no longer in the executor are released (its entities destroyed
        meanwhile are destroyed now).
        """
        held = self._held
        out = {}
        for node in nodes:
            entry = held.get(node)
            if entry is None or not entry.unchanged(node):
                held[node] = _HeldEntities(node)   # (entered before the old ones are released)
                if entry is not None:
                    entry.release()
                entry = held[node]
            out[node] = entry
        if len(held) > len(out):   # (a node left: the executor had one more; or a subset was asked for)
            keep = set(self.get_nodes()).union(nodes)
            for node in [n for n in held if n not in keep]:
                held.pop(node).release()
        return out

    def _release_held(self) -> None:
        """Release every node's held handles (lock held): the executor stops spinning."""
        held, self._held = self._held, {}
        for entry in held.values():
            entry.release()

    def shutdown(self, timeout_sec: float | None = None, **kwargs) -> bool:
        """Shut down as ``MultiThreadedExecutor.shutdown`` does, then release the handles held for the wait sets.

        A thread that still builds or waits on a wait set releases them itself as it stops (it
        sees the shutdown); else they are released here.
        """
        done = super().shutdown(timeout_sec, **kwargs)
        if self._held_lock.acquire(timeout=1.0):
            try:
                self._release_held()
            finally:
                self._held_lock.release()
        return done

    def _wait_for_ready_callbacks(self, timeout_sec=None, nodes=None, condition=lambda: False):
        """Yield ``(task, entity, node)`` for every callback ready to run, as rclpy's executor does.

        The same passes as ``rclpy.executors.Executor._wait_for_ready_callbacks`` (tasks in
        progress first, then waitables, then per node timers, subscriptions, guard conditions,
        clients, services), without yielding a task already handed to the pool.

        Raises
        ------
        TimeoutException, ShutdownException, ConditionReachedException, ExternalShutdownException
            As rclpy's executor does.
        """
        timeout_timer = None
        timeout_nsec = timeout_sec_to_nsec(
            timeout_sec.timeout if isinstance(timeout_sec, TimeoutObject) else timeout_sec)
        if timeout_nsec > 0:
            timeout_timer = Timer(None, None, timeout_nsec, self._clock, context=self._context)

        yielded_work = False
        while not yielded_work and not self._is_shutdown and not condition():
            nodes_to_use = nodes if nodes is not None else self.get_nodes()

            # Tasks in progress (new callbacks, done callbacks of futures, coroutines that awaited)
            with self._tasks_lock:
                tasks = list(self._tasks)
            if tasks:
                queued = self._queued
                for task, entity, node in tasks:
                    if (not task.executing() and not task.done() and task not in queued
                            and (node is None or node in nodes_to_use)):
                        yielded_work = True
                        yield task, entity, node
                with self._tasks_lock:
                    self._tasks = [t for t in self._tasks if not t[0].done() and not t[0].cancelled()]

            # What may be waited on: per node, (entity, handle) of its timers, subscriptions,
            # clients and services; its guard conditions and waitables (their handles held: _held_for).
            now = time.monotonic()
            with_events = now >= self._events_due
            if with_events:
                self._events_due = now + EVENT_POLL_S
            per_node, guards, waitables = [], [], []
            n_subs = n_timers = n_clients = n_services = 0
            entered = []      # handles entered for this wait only (the executor's own, the context)
            ready_waitables = []
            with self._held_lock:
                try:
                    held_by = self._held_for(nodes_to_use)
                    for node, held in held_by.items():
                        kinds = ([e for e in held.timers if _can_execute(e[0])],
                                 [e for e in held.subscriptions if _can_execute(e[0])],
                                 [e for e in held.clients if _can_execute(e[0])],
                                 [e for e in held.services if _can_execute(e[0])])
                        if with_events:
                            kinds[3].extend(e for e in held.infrastructure if _can_execute(e[0]))
                        n_timers += len(kinds[0])
                        n_subs += len(kinds[1])
                        n_clients += len(kinds[2])
                        n_services += len(kinds[3])
                        per_node.append((node, kinds))
                        for gc, handle in held.guards:
                            if _can_execute(gc):
                                if gc._executor_triggered:   # triggered but not handled: trigger again
                                    gc.trigger()
                                guards.append((gc, handle))
                        for wt in held.waitables:
                            if _can_execute(wt):
                                waitables.append((wt, node))
                        if with_events:
                            waitables.extend((wt, node) for wt in held.events if _can_execute(wt))
                    extra_timers = _enter_handles([timeout_timer] if timeout_timer is not None else [], entered)
                    guards += _enter_handles([gc for gc in (self._guard, self._sigint_gc) if gc], entered)
                    n_timers += len(extra_timers)
                    n_gcs, n_events = len(guards), 0
                    for waitable, node in waitables:
                        if type(waitable) is EventHandler:
                            n_events += 1
                            continue
                        count = held_by[node].counts.get(waitable) or _entity_counts(waitable)
                        n_subs += count[0]
                        n_gcs += count[1]
                        n_timers += count[2]
                        n_clients += count[3]
                        n_services += count[4]
                        n_events += count[5]
                    if self._context.handle is None:
                        raise RuntimeError('Cannot enter context if context is None')
                    self._context.handle.__enter__()
                    entered.append(self._context.handle)

                    wait_set = _rclpy.WaitSet(n_subs, n_gcs, n_timers, n_clients, n_services, n_events,
                                              self._context.handle)
                    wait_set.clear_entities()
                    adders = (wait_set.add_timer, wait_set.add_subscription, wait_set.add_client,
                              wait_set.add_service)   # in the order of each node's kinds
                    for _node, kinds in per_node:
                        for entities, add in zip(kinds, adders):
                            for _entity, handle in entities:
                                add(handle)
                    for _entity, handle in extra_timers:
                        wait_set.add_timer(handle)
                    for _gc, handle in guards:
                        wait_set.add_guard_condition(handle)
                    waiting = []   # (waitable, its node) in the wait set
                    for waitable, node in waitables:
                        try:
                            waitable.add_to_wait_set(wait_set)
                        except InvalidHandle:   # (held: not destroyed; as rclpy's executor, should it be)
                            continue
                        waiting.append((waitable, node))

                    wait_nsec = timeout_nsec
                    if not with_events and timeout_nsec != 0:   # take QoS events and tools' requests up when due
                        due_nsec = timeout_sec_to_nsec(max(self._events_due - time.monotonic(), 0.0))
                        wait_nsec = due_nsec if timeout_nsec < 0 else min(timeout_nsec, due_nsec)
                    wait_set.wait(wait_nsec)
                    if self._is_shutdown:
                        raise ShutdownException()
                    if not self._context.ok():
                        raise ExternalShutdownException()

                    subs_ready = set(wait_set.get_ready_entities('subscription'))
                    guards_ready = set(wait_set.get_ready_entities('guard_condition'))
                    timers_ready = set(wait_set.get_ready_entities('timer'))
                    clients_ready = set(wait_set.get_ready_entities('client'))
                    services_ready = set(wait_set.get_ready_entities('service'))

                    for gc, handle in guards:   # guard conditions are taken by the wait
                        if handle.pointer in guards_ready:
                            gc._executor_triggered = True

                    for wt, node in waiting:   # checked while the wait set exists (only those in it)
                        if _is_ready(wt, wait_set) and wt.callback_group.can_execute(wt):
                            ready_waitables.append((wt, node))
                except (ShutdownException, ExternalShutdownException):
                    self._release_held()   # (the context shut down: no executor shutdown may follow)
                    raise
                finally:
                    for handle in reversed(entered):
                        handle.__exit__(None, None, None)

            for wt, node in ready_waitables:
                yielded_work = True
                yield self._make_handler(wt, node, self._take_waitable), wt, node

            for node, (node_timers, node_subs, node_clients, node_services) in per_node:
                for tmr, handle in node_timers:
                    # (is_timer_ready: rcl may report a cancelled timer as ready)
                    if (handle.pointer in timers_ready and handle.is_timer_ready()
                            and tmr.callback_group.can_execute(tmr)):
                        yielded_work = True
                        yield self._make_handler(tmr, node, self._take_timer), tmr, node
                for sub, handle in node_subs:
                    if handle.pointer in subs_ready and sub.callback_group.can_execute(sub):
                        yielded_work = True
                        yield self._make_handler(sub, node, self._take_subscription), sub, node
                for gc in node.guards:
                    if gc._executor_triggered and gc.callback_group and gc.callback_group.can_execute(gc):
                        yielded_work = True
                        yield self._make_handler(gc, node, self._take_guard_condition), gc, node
                for client, handle in node_clients:
                    if handle.pointer in clients_ready and client.callback_group.can_execute(client):
                        yielded_work = True
                        yield self._make_handler(client, node, self._take_client), client, node
                for srv, handle in node_services:
                    if handle.pointer in services_ready and srv.callback_group.can_execute(srv):
                        yielded_work = True
                        yield self._make_handler(srv, node, self._take_service), srv, node

            if timeout_nsec == 0 or (timeout_timer is not None and timeout_timer.handle.pointer in timers_ready):
                raise TimeoutException()
        if self._is_shutdown:   # (shutdown() releases the held handles once this thread is out)
            raise ShutdownException()
        if condition():
            raise ConditionReachedException()
