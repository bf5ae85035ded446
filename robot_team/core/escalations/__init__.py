"""Escalations to humans: lifecycle, policy, persistence and the team hold (no rclpy).

An escalation goes **open -> acknowledged -> resolved | expired**. :class:`EscalationDesk` runs
that lifecycle around the supervisor's :class:`~robot_team.core.supervisor.SupervisorCore`
(which keeps the workflow's side: tasks, rule 8, ``abort`` closing the episode):

- who may acknowledge, resolve and instruct (:class:`EscalationPolicy`, ``config/escalations.yaml``);
  anyone else is refused with the reason (:class:`Refusal`) and the attempt is recorded;
- deadlines per severity, re-notification of unacknowledged escalations, and the safe default
  when nobody answers (``hold`` the team, or ``abort``), recorded;
- escalations raised by a person: a concern, or stop-and-hold of the whole team;
- free-text instructions from a person to the team (published for the manager as advisory data);
- every step persisted in SQLite (:class:`EscalationStore`, ``escalations.sqlite`` beside the
  run's record), so a restarted supervisor takes up the open escalations and the holds again.

:class:`TeamHold` is the team's stop: while it is engaged, the robots' goals are cancelled
(through the injected :class:`DeskPorts`), the workflow gate refuses every delegation
(``WorkflowRule.HELD``), the supervisor's task deadlines are paused (and postponed by the held
time on release) and the manager is paused. Every hold belongs to a *hold escalation*; resolving
that escalation (any decision) releases it. :meth:`EscalationDesk.hold_team` is the one way to
engage it, for a person's stop-and-hold, for an expired escalation's safe default, or for any
other safe default of the supervisor.

All times are ROS times in s (sim time in runs) unless named ``*_wall`` (s since the Unix epoch).
"""

from robot_team.core.escalations.availability import StaffCheck, StaffEntry
from robot_team.core.escalations.desk import DeskPorts, EscalationDesk
from robot_team.core.escalations.hold import TeamHold
from robot_team.core.escalations.lifecycle import (
    HOLD_OPTIONS, RAISE_KINDS, RESOLVE_DECISIONS, Answer, Emit, EscalationStep, HoldState, InstructionRecord,
    Refusal)
from robot_team.core.escalations.policy import EscalationPolicy, SeverityBySource, load_escalation_policy
from robot_team.core.escalations.store import EscalationStore
from robot_team.contracts.escalation_model import (
    OPEN_STATES, TRANSITIONS, EscalationKind, EscalationRecord, LifecycleAction, LifecycleError, LifecycleState,
    Severity, transition)

__all__ = [
    'HOLD_OPTIONS', 'OPEN_STATES', 'RAISE_KINDS', 'RESOLVE_DECISIONS', 'TRANSITIONS', 'Answer', 'DeskPorts', 'Emit',
    'EscalationDesk', 'EscalationKind', 'EscalationPolicy', 'EscalationRecord', 'EscalationStep', 'EscalationStore',
    'HoldState', 'InstructionRecord', 'LifecycleAction', 'LifecycleError', 'LifecycleState', 'Refusal', 'Severity',
    'SeverityBySource', 'StaffCheck', 'StaffEntry', 'TeamHold', 'load_escalation_policy', 'transition']
