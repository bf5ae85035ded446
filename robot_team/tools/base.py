"""Tool ownership, enforced in code: a robot's brain reaches ROS only through its own Toolbox.

A :class:`Toolbox` holds the tools one robot owns, each with a pydantic input schema. Every
call is validated, executed and recorded (``tool_call`` then ``tool_result`` events); a call to
a tool the caller does not own is refused, recorded as ``tool_refused`` and never reaches ROS.
The toolbox keeps a per-task journal of results: the robot node attaches it to the report as
ground-truth evidence, so a brain cannot invent its tools' outputs.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from robot_team.catalog import (
    TOOL_OWNERS, TOOLS_BY_NAME, ClosedSet, RoleDecl, WorldFact, missing_prerequisites, outside_task, result_closes,
    task_closes)
from robot_team.contracts.config import ConfigError
from robot_team.contracts.decisions import DecisionSource
from robot_team.directory import StaffDirectory
from robot_team.contracts.errors import ToolAccessError, ToolError
from robot_team.contracts.events import EventKind, category_of, invalid_call
from robot_team.contracts.reports import explain_validation_error


def _owner_of(name: str) -> str | None:
    """Return the declared owner of tool ``name`` (``robot_team.catalog``), or None."""
    return TOOL_OWNERS.get(name)


_TASK_VALUES: contextvars.ContextVar[dict] = contextvars.ContextVar('robot_team_task_values', default={})


def task_value(kind: ClosedSet) -> str:
    """Return what the task of the tool call being run closes ``kind`` to ('' outside a call, or not closed).

    For an implementation that passes on what its task is about without the caller saying it
    (the paging integration names the task's room): the value is :meth:`Toolbox.task_values`'s.
    """
    return str(_TASK_VALUES.get().get(kind, ''))


@dataclass
class ToolSpec:
    """One tool: its name, what it does physically, its input schema and its implementation."""

    name: str
    description: str
    input_model: type[BaseModel]
    func: Callable[[Any], dict]
    owner: str


@dataclass
class ToolResult:
    """The outcome of one tool call, as recorded in the journal."""

    tool: str
    args: dict
    ok: bool
    output: dict = field(default_factory=dict)
    error: str = ''
    stamp_s: float = 0.0
    wall_duration_s: float = 0.0
    repeat_of: float | None = None
    """Stamp (s) of the earlier identical call whose result this is (not run again)."""
    answered: bool = False
    """Whether the tool ran and answered: a result or its own failure (a ``ToolError``); False when
    refused before it ran, when it crashed, or for a repeat answered from the journal."""

    def as_dict(self) -> dict:
        """Return this result as a JSON-ready dict."""
        return {'tool': self.tool, 'args': self.args, 'ok': self.ok, 'output': self.output,
                'error': self.error, 'stamp_s': self.stamp_s, 'answered': self.answered}


class Toolbox:
    """The tools one robot owns.

    Parameters
    ----------
    owner
        The robot's namespace, e.g. ``'navigation_robot'``.
    events
        The node's :class:`~robot_team.ros.emitter.EventEmitter` (``None``: record nothing, for
        unit tests without ROS).
    clock
        Callable returning ROS time in seconds (defaults to wall time).

    Notes
    -----
    Thread-safe; tool functions run in the caller's thread. A tool function returns a dict
    (JSON-ready) or a pydantic model and raises :class:`ToolError` on failure.

    A call of a ``once`` tool (catalog) that already succeeded in the same task with the same
    (validated) arguments is not run again: the earlier result is returned (``repeat_of``: its
    stamp), and a model's repeat is an ``invalid_call`` of category ``repeated_call``; a
    constrained LLM request does not offer the tool again (the same rule). For a ``final`` tool
    (an answer from data the task does not change) the same holds for an earlier failed call.

    A call that names another room or HCW than its task's where the catalog closes that argument
    to the task's (``closed``, :meth:`begin_task`) is not run: it fails with an error naming
    both, an ``invalid_call`` of category ``outside_task``; a constrained request offers only the
    task's value (the same rule, :func:`~robot_team.catalog.outside_task`).

    A call whose prerequisites (catalog ``requires``: tools that must have succeeded earlier in
    the same task) are missing is not run: it fails with an error naming them, and is an
    ``invalid_call`` of category ``missing_prerequisite`` (whoever decided it); a constrained
    request does not offer the tool until they hold (the same rule,
    :func:`~robot_team.catalog.missing_prerequisites`).
    """

    def __init__(self, owner: str, events=None, clock: Callable[[], float] | None = None):
        self.owner = owner
        self._events = events
        self._clock = clock or time.time
        self._tools: dict[str, ToolSpec] = {}
        self._journal: dict[str, list[ToolResult]] = {}
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()
        self.decision_source: Callable[[], str] | None = None
        """Returns who decides the calls now (``robot_team.contracts.decisions.DecisionSource``), recorded with each."""
        self._tasks: dict[str, dict[ClosedSet, str]] = {}   # task_id -> what it closes (begin_task)

    def begin_task(self, task_id: str, room: str = '', hcw_id: str = '') -> None:
        """Start ``task_id`` for the patient's ``room`` and the HCW ``hcw_id``: its calls may not leave them.

        A call whose room or HCW argument the catalog closes to the task's (:attr:`ToolDecl.closed`)
        and that names another is refused (:func:`~robot_team.catalog.outside_task`).
        """
        with self._lock:
            self._tasks[task_id] = task_closes(room, hcw_id)

    def task_values(self, task_id: str) -> dict[ClosedSet, str]:
        """Return what ``task_id`` closes arguments to: :meth:`begin_task`'s, then its successful calls'.

        The calls' values (:func:`~robot_team.catalog.result_closes`, e.g. the badge the scan read)
        in journal order, the latest winning. Empty for a task neither begun nor called.
        """
        with self._lock:
            values = dict(self._tasks.get(task_id, {}))
            for result in self._journal.get(task_id, []):
                if result.ok:
                    values.update(result_closes(result.tool, result.output))
            return values

    def end_task(self, task_id: str) -> None:
        """Forget ``task_id``'s journal and closed values once its report carries the journal.

        What the Toolbox keeps per task is then bounded by the tasks running at once, not by every
        task a deployed robot ever ran (the record keeps each call as a ``tool_result`` event, and
        the report the journal as evidence). A cancelled task stays cancelled (a late call for it
        is still refused; the robot node reads the flag until it has let the task go). A task not
        begun is a no-op.
        """
        with self._lock:
            self._journal.pop(task_id, None)
            self._tasks.pop(task_id, None)

    def cancel(self, task_id: str) -> None:
        """Refuse every further call made for ``task_id`` (the task was cancelled)."""
        with self._lock:
            self._cancelled.add(task_id)

    def cancelled(self, task_id: str) -> bool:
        """Return whether ``task_id`` was cancelled: its further calls are refused."""
        with self._lock:
            return task_id in self._cancelled

    def register(self, name: str, description: str, input_model: type[BaseModel],
                 func: Callable[[Any], Any]) -> None:
        """Add a tool this robot owns.

        Raises
        ------
        ValueError
            If the tool is registered twice or the tool catalog gives it to another role.
        """
        if name in self._tools:
            raise ValueError(f"tool '{name}' is already registered for {self.owner}")
        owner = _owner_of(name)
        if owner is not None and owner != self.owner:
            raise ValueError(f"tool '{name}' belongs to {owner}, not {self.owner}")
        self._tools[name] = ToolSpec(name, description, input_model, func, self.owner)

    def names(self) -> list[str]:
        """Return the names of the tools this robot owns."""
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """Return the tool specs of this robot (for function-calling schemas)."""
        return list(self._tools.values())

    def journal(self, task_id: str) -> list[ToolResult]:
        """Return the results of every call made for ``task_id``, in order."""
        with self._lock:
            return list(self._journal.get(task_id, []))

    def call(self, name: str, *, task_id: str = '', caller: str | None = None, **args) -> ToolResult:
        """Validate and run one tool call, recording it.

        Parameters
        ----------
        name
            Tool name.
        task_id
            Task the call serves (journal key).
        caller
            Who calls; defaults to the owner. A caller other than the owner is refused.
        **args
            Tool arguments, validated against the tool's input model.

        Returns
        -------
        ToolResult
            ``ok=False`` with ``error`` when the arguments do not validate or the tool fails.

        Raises
        ------
        ToolAccessError
            If the caller does not own a tool of that name; the call never reaches ROS.
        """
        caller = caller or self.owner
        spec = self._tools.get(name)
        if caller != self.owner or spec is None:
            owner = _owner_of(name)
            why = (f"{caller} does not own '{name}'" + (f' (owned by {owner})' if owner else ' (no such tool)')
                   + f"; {self.owner}'s tools are: {', '.join(self._tools) or 'none'}")
            self._emit(EventKind.TOOL_REFUSED, f'refused {caller} calling {name}', name, why,
                       task_id=task_id, args=args, caller=caller, owner=owner)
            raise ToolAccessError(why)
        self._emit(EventKind.TOOL_CALL, f'{caller} calls {name}', name, '', task_id=task_id, args=args)
        start = time.perf_counter()
        result = ToolResult(tool=name, args=args, ok=False, stamp_s=self._clock())
        cancelled = self.cancelled(task_id)
        try:   # validated once: the repeat check, the prerequisites and the run all use it
            parsed, invalid = spec.input_model.model_validate(args), None
        except ValidationError as exc:
            parsed, invalid = None, exc
        earlier = None if cancelled or parsed is None else self.repeated(spec, parsed, task_id)
        outside = [] if cancelled or parsed is None else \
            outside_task(name, parsed.model_dump(), self.task_values(task_id))
        missing = [] if cancelled or parsed is None or earlier is not None or outside \
            else self.missing_prerequisites(name, task_id)   # bad arguments are reported as such first
        if cancelled:
            result.error = f'task {task_id} was cancelled; {name} not run'
        elif invalid is not None:   # arguments that do not validate: an invalid call on the record
            result.error = f"invalid arguments for '{name}': {explain_validation_error(invalid)}"
            invalid_call(self._events.emit if self._events is not None else None, caller, name,
                         category_of(invalid), result.error, json.dumps(args, default=str), task_id=task_id)
        elif outside:   # another room or HCW than the task's: not this task's work
            result.error = f"{name} serves {task_id} only: {'; '.join(outside)}; not run"
            invalid_call(self._events.emit if self._events is not None else None, caller, name,
                         'outside_task', result.error, json.dumps(args, default=str), task_id=task_id)
        elif missing:
            result.error = (f"{name} needs a successful {' and '.join(missing)} earlier in {task_id}; "
                            f'not run: call {missing[0]} first')
            invalid_call(self._events.emit if self._events is not None else None, caller, name,
                         'missing_prerequisite', result.error, json.dumps(args, default=str), task_id=task_id,
                         missing=missing)
        elif earlier is not None:   # not run again: the earlier result, flagged as a repeat
            result.ok, result.output, result.error = earlier.ok, dict(earlier.output), earlier.error
            result.repeat_of = earlier.stamp_s
            if self.decision_source is None or self.decision_source() == DecisionSource.LLM.value:
                invalid_call(self._events.emit if self._events is not None else None, caller, name, 'repeated_call',
                             f"{name} already {'succeeded' if earlier.ok else 'failed'} in {task_id} with the same "
                             f'arguments (at {earlier.stamp_s:.1f} s); not run again, its result returned',
                             json.dumps(args, default=str), task_id=task_id)
        else:
            token = _TASK_VALUES.set(self.task_values(task_id))
            try:
                self._run(spec, parsed, result)
            finally:
                _TASK_VALUES.reset(token)
        result.wall_duration_s = time.perf_counter() - start
        with self._lock:
            self._journal.setdefault(task_id, []).append(result)
        repeat = {} if result.repeat_of is None else {'repeat_of': result.repeat_of}
        self._emit(EventKind.TOOL_RESULT, f"{name} {'succeeded' if result.ok else 'failed'}", name,
                   result.error, task_id=task_id, ok=result.ok, output=result.output, error=result.error, **repeat)
        return result

    def succeeded(self, task_id: str) -> set[str]:
        """Return the names of the tools with a successful call in ``task_id``."""
        return {r.tool for r in self.journal(task_id) if r.ok}

    def missing_prerequisites(self, name: str, task_id: str) -> list[str]:
        """Return the tools ``name`` requires that have not succeeded in ``task_id`` yet (catalog ``requires``)."""
        return missing_prerequisites(name, self.succeeded(task_id))

    def repeated(self, spec: ToolSpec, parsed: BaseModel, task_id: str) -> ToolResult | None:
        """Return the earlier call of ``spec`` in ``task_id`` with the same validated arguments that stands, if any.

        ``parsed``: this call's arguments, validated by ``spec``'s input model. A successful call
        stands for a tool the catalog marks ``once`` (its evidence is complete once it
        succeeded); a failed one that answered (its own ``ToolError``, not a crash), too, for a
        tool it marks ``final`` (its answer comes from data the task does not change). A
        physical action such as a Nav2 goal runs again (the robot may have moved since).
        """
        decl = TOOLS_BY_NAME.get(spec.name)
        if decl is not None and not decl.once:
            return None
        final = decl is not None and decl.final
        wanted = parsed.model_dump()
        for earlier in self.journal(task_id):
            if earlier.tool == spec.name and (earlier.ok or (final and earlier.answered)):
                try:
                    if spec.input_model.model_validate(earlier.args).model_dump() == wanted:
                        return earlier
                except ValidationError:
                    continue
        return None

    @staticmethod
    def _run(spec: ToolSpec, parsed: BaseModel, result: ToolResult) -> None:
        """Run one call with its validated arguments ``parsed`` into ``result`` (a tool error or crash is a failure)."""
        try:
            output = spec.func(parsed)
            result.output = output.model_dump() if isinstance(output, BaseModel) else dict(output or {})
            result.ok = result.answered = True
        except ToolError as exc:
            result.error = str(exc)
            result.output = exc.output
            result.answered = True
        except Exception as exc:  # noqa: BLE001 - a tool crash becomes a recorded failure
            result.error = f'{spec.name} crashed: {type(exc).__name__}: {exc}'

    def _emit(self, kind, summary, target, reason, **data):
        if self._events is not None:
            if self.decision_source is not None:
                data['source'] = self.decision_source()
            self._events.emit(kind, summary, target=target, reason=reason, **data)


def open_directory(path: str) -> StaffDirectory:
    """Open the staff directory at ``path``, turning a failure into a :class:`ToolError`."""
    try:
        return StaffDirectory(path)
    except ConfigError as exc:
        raise ToolError(f'staff directory unavailable: {exc}') from exc


def check_declared_fact(decl: RoleDecl, fact: WorldFact) -> None:
    """Check that a role's tools are asked about a fact its declaration names (``RoleDecl.world``).

    Raises
    ------
    ValueError
        If ``fact`` is not in ``decl.world``: that role's tools do not observe it.
    """
    if fact not in decl.world:
        raise ValueError(f"the {decl.role.value} observes {', '.join(f.value for f in decl.world)}, "
                         f'not {fact.value}')
