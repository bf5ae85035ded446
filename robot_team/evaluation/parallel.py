"""Jobs side by side on Dask distributed: a local cluster of worker processes, or the cluster at a scheduler's address.

:func:`run_jobs` runs ``func(item, slot)`` for every item, at most ``jobs`` at once, and hands
each outcome to a callback as it finishes. ``slot`` (0 to ``jobs - 1``) is free while the job
runs: no other job running at the same time has it, so a job may derive from it what must be
distinct among concurrent jobs (``robot-team eval --jobs N``: a ROS domain ID). The cluster is a
:class:`distributed.LocalCluster` of ``jobs`` worker processes with one thread each (one job per
process at a time), or, with ``scheduler``, the workers of an existing Dask scheduler.

``distributed`` is imported only here, and only when jobs run (``robot-team eval --jobs 1``
never needs it).
"""

from __future__ import annotations

import logging
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from robot_team.run.lifecycle import Interrupt

SCHEDULER_TIMEOUT_S = 10.0
"""Wall seconds to wait for the scheduler at ``scheduler``'s address to answer."""
POLL_S = 0.25
"""Wall seconds between checks for a signal while jobs run."""


class SchedulerError(ValueError):
    """No Dask scheduler answered at the address given (``--scheduler``), or the address is malformed."""


class JobsInterrupted(RuntimeError):
    """SIGINT or SIGTERM arrived while jobs ran: the jobs were cancelled and the cluster closed.

    Attributes
    ----------
    signal_name : str
        ``'SIGINT'`` or ``'SIGTERM'``.
    """

    def __init__(self, signal_name: str):
        super().__init__(f'{signal_name} received: the jobs still running were cancelled')
        self.signal_name = signal_name


@dataclass
class JobOutcome:
    """How one job ended.

    Attributes
    ----------
    index : int
        The item's position in ``items``.
    slot : int
        The slot it ran in (0 to ``jobs - 1``).
    value : Any
        What ``func`` returned (None if it raised).
    error : BaseException | None
        What it raised, if it did (also a worker lost for good: ``distributed.KilledWorker``).
    traceback : str
        The error's traceback in the worker, '' if none.
    """

    index: int
    slot: int
    value: Any = None
    error: BaseException | None = None
    traceback: str = ''


def _connect(distributed, jobs: int, scheduler: str | None):
    """Return ``(client, cluster)``: a new local cluster's client, or (``cluster`` None) one of ``scheduler``.

    ``distributed``: the module (imported by :func:`run_jobs`, the one place that needs it).

    Raises
    ------
    SchedulerError
        If no scheduler answers at ``scheduler`` within :data:`SCHEDULER_TIMEOUT_S`, or the address
        cannot be parsed.
    """
    if scheduler is None:
        cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(scheduler, timeout=SCHEDULER_TIMEOUT_S), None
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise SchedulerError(f"--scheduler '{scheduler}': could not connect to a Dask scheduler there ({exc}); "
                             'expected the address of a running one, such as tcp://HOST:8786') from exc


def run_jobs(func: Callable[[Any, int], Any], items: Sequence, *, jobs: int, scheduler: str | None = None,
             on_submit: Callable[[int, int], None] | None = None,
             on_done: Callable[[JobOutcome], None] | None = None) -> list[JobOutcome]:
    """Run ``func(item, slot)`` for every item on Dask, at most ``jobs`` at once; return every outcome.

    Parameters
    ----------
    func
        A module-level function (the workers import it by name): ``func(item, slot)``; ``item``
        and its return value are pickled.
    items
        The jobs' inputs, submitted in order as slots free up.
    jobs
        Jobs at a time (>= 1): the local cluster's worker processes, or the jobs in flight on
        ``scheduler``'s workers.
    scheduler
        Address of a running Dask scheduler (``tcp://HOST:PORT``) whose workers run the jobs;
        None: a local cluster of ``jobs`` processes, closed at the end.
    on_submit
        ``on_submit(index, slot)``, before item ``index`` is submitted.
    on_done
        ``on_done(outcome)`` as each job ends (in this thread), raised errors included.

    Returns
    -------
    list[JobOutcome]
        One per item, in the order they ended.

    Raises
    ------
    ValueError
        If ``jobs`` is below 1.
    SchedulerError
        If the scheduler cannot be reached.
    JobsInterrupted
        On SIGINT or SIGTERM (handled in the main thread): jobs not finished are cancelled and the
        local cluster is closed (its workers end); the outcomes already handed to ``on_done`` stand.
        A job already running on ``scheduler``'s workers runs to its end there (Dask cannot stop
        a running task).
    """
    if jobs < 1:
        raise ValueError(f'jobs must be at least 1, got {jobs}')
    import distributed
    queue = deque(enumerate(items))
    free = list(range(jobs))
    pending: dict = {}
    outcomes: list[JobOutcome] = []
    with Interrupt() as interrupt:
        client, cluster = _connect(distributed, jobs, scheduler)
        try:
            ended: list[JobOutcome] = []
            while queue or pending or ended:
                while queue and free:      # fill the free slots first: the workers go on while outcomes are handled
                    index, item = queue.popleft()
                    slot = free.pop(0)
                    if on_submit is not None:
                        on_submit(index, slot)
                    pending[client.submit(func, item, slot, pure=False)] = (index, slot)
                for outcome in ended:
                    outcomes.append(outcome)
                    if on_done is not None:
                        on_done(outcome)
                ended = []
                if interrupt.is_set():
                    raise JobsInterrupted(interrupt.signal_name)
                if not pending:
                    continue
                try:
                    done = distributed.wait(list(pending), timeout=POLL_S, return_when='FIRST_COMPLETED').done
                except TimeoutError:
                    continue
                for future in done:
                    index, slot = pending.pop(future)
                    free.append(slot)
                    ended.append(_outcome(future, index, slot))
                free.sort()
                ended.sort(key=lambda o: o.index)
        finally:
            if pending:
                client.cancel(list(pending), force=True)
            client.close()
            if cluster is not None:
                cluster.close()
    return outcomes


def _outcome(future, index: int, slot: int) -> JobOutcome:
    """Return the outcome of a finished (or failed) future."""
    if future.status == 'finished':
        return JobOutcome(index=index, slot=slot, value=future.result())
    error = future.exception()
    tb = future.traceback()
    return JobOutcome(index=index, slot=slot, error=error,
                      traceback=''.join(traceback.format_tb(tb)) if tb is not None else '')
