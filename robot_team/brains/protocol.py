"""The protocol brain: a deterministic reference policy that follows the ED workflow exactly.

It is the offline default, the evaluation baseline and the LLM fallback. Each robot brain uses
only its robot's tools; the manager brain only delegates, judges, handles issues (proposes an
alternative HCW or escalates) and writes the reflection.

Workflow (Bai, Ding, Taylor, ED onboarding case): navigation (locate, page and escort the HCW
to the room) -> info collection (badge scan -> ID, name, specialty) -> display (care team
layout on the room screen) -> reflection.

Each operational robot's brain lives in its role's package (``robot_team.roles.<role>.protocol``:
:class:`~robot_team.roles.navigation.protocol.NavigationProtocolBrain`,
:class:`~robot_team.roles.info_collection.protocol.InfoCollectionProtocolBrain`,
:class:`~robot_team.roles.display.protocol.DisplayProtocolBrain`, importable from here too);
:func:`protocol_robot_brain` returns the one of a robot. The manager's is here.
"""

from __future__ import annotations

from robot_team.brains.base import (
    Delegate,
    Escalate,
    Finish,
    ManagerAction,
    ManagerBrain,
    ManagerObservation,
    Reflect,
    RobotBrain,
    TaskRecord,
)
from robot_team.catalog import TASK_OWNER, Tool
from robot_team.contracts.escalation_model import closing_abort
from robot_team.contracts.names import Role, role_robots
from robot_team.contracts.reports import OPERATIONAL_TASKS, IssueCode, Reflection, TaskOutcome, TaskStatus, TaskType
from robot_team.roles.display.protocol import DisplayProtocolBrain
from robot_team.roles.info_collection.protocol import InfoCollectionProtocolBrain
from robot_team.roles.navigation.protocol import NavigationProtocolBrain


def _steps(step: ManagerAction | None) -> list[ManagerAction]:
    """Return ``step`` as the actions of a decision (none: the case waits)."""
    return [] if step is None else [step]


def _unavailable(task: TaskRecord) -> bool:
    """Return whether ``task`` failed because its HCW could not come and others of their specialty can.

    A failed navigation whose report names ``alternatives`` (available HCWs of the same specialty,
    from the RTLS), unless it says the page was never delivered (``page_delivered`` false: the
    pager is down, so paging another HCW would fail too). Reports of any brain carry these fields
    or not; the issue's words are never read.
    """
    return task.state == 'failure' and task.task_type is TaskType.NAVIGATION \
        and bool(task.data.get('alternatives')) and task.data.get('page_delivered') is not False


class ManagerProtocolBrain(ManagerBrain):
    """Delegate the workflow in order, handle failures, write the reflection.

    Parameters
    ----------
    issue_handling
        ``'propose_alternative'`` (default): after a navigation failure with an available
        alternative HCW, delegate again with that HCW, else escalate; ``'escalate'``: always
        escalate; ``'ignore'``: do nothing (lets tests show the supervisor's deadline).
    """

    def __init__(self, issue_handling: str = 'propose_alternative'):
        self.issue_handling = issue_handling

    def decide(self, obs: ManagerObservation) -> list[ManagerAction]:
        """Return the next workflow step for ``obs`` (none while a task runs or its robot is lost).

        A delegation to a robot the supervisor noticed lost (every robot of its role, with a
        fleet) waits until it is back (the manager's deadlines bound the wait: the supervisor
        escalates a robot that does not come back). An HCW another open case has
        (``obs.engaged_hcws``) is replaced by an available HCW of the specialty from the staff
        board, or waited for; an alternative proposed after a failure is never one of them.
        """
        actions = self._next(obs)
        if any(isinstance(a, Delegate) and set(role_robots(a.robot, obs.robots)) <= set(obs.lost_robots)
               for a in actions):
            return []
        return actions

    def _next(self, obs: ManagerObservation) -> list[ManagerAction]:
        if obs.patient is None:
            return []
        if obs.reflection_done:
            return [Finish(outcome=self._outcome(obs), reason='reflection written')]
        if any(t.state == 'running' for t in obs.tasks):
            return []
        if closing_abort(obs.escalations):
            return [Reflect(reflection=self.reflection(obs))]
        for task_type in OPERATIONAL_TASKS:
            latest = obs.latest(task_type)
            if latest is None:
                return _steps(self._delegate(obs, task_type))
            if latest.state == 'failure':
                return self._handle_failure(obs, latest)
        return [Reflect(reflection=self.reflection(obs))]

    # -- steps --

    def _delegate(self, obs: ManagerObservation, task_type: TaskType, hcw_id: str = '',
                  reason: str = '', handles: str = '') -> Delegate | None:
        patient = obs.patient
        nav = obs.latest(TaskType.NAVIGATION)
        if not hcw_id:
            hcw_id = nav.hcw_id if (nav and task_type is not TaskType.NAVIGATION) else patient.assigned_hcw_id
        if task_type is TaskType.NAVIGATION and hcw_id in obs.engaged_hcws:   # with another case's patient
            stand_in = next((s.hcw_id for s in obs.staff if s.hcw_id not in obs.engaged_hcws
                             and s.availability == 'available'
                             and s.specialty.casefold() == patient.required_specialty.casefold()), '')
            if not stand_in:
                return None   # no one else of the specialty: wait until that case lets them go
            reason = (f'HCW #{hcw_id} is with case {obs.engaged_hcws[hcw_id]}; #{stand_in}, an available '
                      f'{patient.required_specialty or "HCW"}, instead')
            hcw_id = stand_in
        instructions = {
            TaskType.NAVIGATION: f'Find HCW #{hcw_id} and escort them to {patient.room}.',
            TaskType.INFO_COLLECTION: f'Read the badge scan at {patient.room} and report ID, name, specialty.',
            TaskType.DISPLAY: f'Show the care team of {patient.room} on its screen.',
        }[task_type]
        return Delegate(task_type=task_type, robot=TASK_OWNER[task_type], room=patient.room, hcw_id=hcw_id,
                        instructions=instructions, handles_task_id=handles,
                        reason=reason or f'next step of the onboarding workflow for patient {patient.patient_id}',
                        context={'patient_id': patient.patient_id, 'presentation': patient.presentation,
                                 'required_specialty': patient.required_specialty})

    def _handle_failure(self, obs: ManagerObservation, failed: TaskRecord) -> list[ManagerAction]:
        escalation = next((e for e in reversed(obs.escalations) if e.task_id == failed.task_id), None)
        if escalation is not None:
            if not escalation.resolved:
                return []
            if escalation.decision == 'reassign' and escalation.hcw_id:
                return _steps(self._delegate(obs, failed.task_type, escalation.hcw_id, handles=failed.task_id,
                                             reason=f'human decision on {escalation.escalation_id}: assign '
                                                    f'#{escalation.hcw_id} ({escalation.note or "no note"})'))
            if escalation.decision == 'retry':
                return _steps(self._delegate(obs, failed.task_type, failed.hcw_id, handles=failed.task_id,
                                             reason=f'human decision on {escalation.escalation_id}: retry'))
            return []   # abort: handled by closing_abort above
        if self.issue_handling == 'ignore':
            return []
        if failed.issue_code is IssueCode.TASK_DEADLINE:   # the supervisor escalates it itself: a person decides
            return []
        if failed.issue_code is IssueCode.ROBOT_LOST:   # nothing wrong with the HCW or the floor: the robot went
            return _steps(self._delegate(obs, failed.task_type, failed.hcw_id, handles=failed.task_id,
                                         reason=f'{failed.task_id} ended because {failed.robot} was lost; '
                                                f'{failed.robot} is back: the same task again'))
        # the available HCWs the robot found, but those another open case has
        alternatives = [a for a in failed.data.get('alternatives') or [] if a['hcw_id'] not in obs.engaged_hcws]
        if self.issue_handling == 'propose_alternative' and _unavailable(failed) and alternatives:
            alt = alternatives[0]
            return _steps(self._delegate(
                obs, TaskType.NAVIGATION, alt['hcw_id'], handles=failed.task_id,
                reason=(f"{failed.task_id} failed ({failed.issue}); proposing alternative "
                        f"{alt['specialty'].lower()} #{alt['hcw_id']}, available in {alt['area']}")))
        return [Escalate(task_id=failed.task_id, reason=f'{failed.task_type.value} failed: {failed.issue}',
                         options=self._options(failed))]

    @staticmethod
    def _options(failed: TaskRecord) -> list[str]:
        options = [f"reassign:{a['hcw_id']}" for a in failed.data.get('alternatives') or []]
        return options + ['retry', 'abort']

    def _outcome(self, obs: ManagerObservation) -> str:
        if closing_abort(obs.escalations):
            return 'escalated'
        finals = [obs.latest(t) for t in OPERATIONAL_TASKS]
        return 'success' if all(f is not None and f.state == 'success' for f in finals) else 'failure'

    def reflection(self, obs: ManagerObservation) -> Reflection:
        """Write the reflection from the record: outcomes, recovery attempts, lessons learned."""
        outcomes, recovery, lessons = [], [], []
        for task_type in OPERATIONAL_TASKS:
            attempts = [t for t in obs.tasks if t.task_type is task_type]
            if not attempts:
                outcomes.append(TaskOutcome(task_type=task_type, status=TaskStatus.FAILURE,
                                            robot=TASK_OWNER[task_type],
                                            summary='not attempted: the onboarding was stopped earlier'))
                continue
            final = attempts[-1]
            status = TaskStatus.SUCCESS if final.state == 'success' else TaskStatus.FAILURE
            text = final.summary or final.issue or f'{final.task_id} reported {final.state} without a summary'
            if len(attempts) > 1:
                text += f' (after {len(attempts) - 1} failed attempt(s))'
            outcomes.append(TaskOutcome(task_type=task_type, status=status, robot=final.robot, summary=text))
            for failed, nxt in zip(attempts, attempts[1:] + [None]):
                if failed.state != 'failure':
                    continue
                if nxt is not None:
                    recovery.append(f'{failed.task_id} failed ({failed.issue}); recovered with {nxt.task_id} '
                                    f'(HCW #{nxt.hcw_id}), which ended in {nxt.state}.')
                else:
                    recovery.append(f'{failed.task_id} failed ({failed.issue}); no further attempt.')
        for esc in obs.escalations:
            recovery.append(f'{esc.escalation_id} raised by {esc.raised_by} ({esc.reason}); human decision: '
                            f'{esc.decision or "none yet"}{" #" + esc.hcw_id if esc.hcw_id else ""}.')
        failed_tools = {t.data.get('failed_tool') for t in obs.tasks if t.state == 'failure'}
        if any(_unavailable(t) for t in obs.tasks):
            lessons.append('Check the assigned HCW\'s availability and page early; keep an available '
                           'alternative of the same specialty ready before escorting.')
        if failed_tools & {Tool.PLAN_PATH.value, Tool.NAVIGATE_TO_POSE.value}:
            lessons.append('Verify the route to the room on the live floor; a closed door blocks escorts.')
        if Tool.LOOKUP_STAFF_BY_BADGE.value in failed_tools:
            lessons.append('Unregistered badges stop identification; escalate to the badge office early.')
        if not recovery:
            recovery.append('No recovery was needed: every task succeeded on its first attempt.')
        lessons.append('Delegating each task to the robot that owns it, in workflow order, with explicit '
                       'status and issue in every report, kept the team accountable.')
        return Reflection(task_outcomes=outcomes, recovery_attempts=recovery, lessons_learned=lessons)


def protocol_robot_brain(role: Role | str) -> RobotBrain:
    """Return the protocol brain of robot ``role`` (namespace).

    Raises
    ------
    ValueError
        If ``role`` is not an operational robot.
    """
    brains = {Role.NAVIGATION.value: NavigationProtocolBrain,
              Role.INFO_COLLECTION.value: InfoCollectionProtocolBrain, Role.DISPLAY.value: DisplayProtocolBrain}
    if role not in brains:
        raise ValueError(f"no protocol brain for robot '{role}': expected one of {', '.join(brains)}")
    return brains[role]()
