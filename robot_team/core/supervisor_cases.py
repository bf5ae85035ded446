"""The supervisor's cases: each kept case's workflow policy, the waiting and served patients (no rclpy).

:class:`SupervisorCases` is the supervisor's book of cases: the policy of the latest case opened,
the cases kept (the open ones, and closed ones with an escalation still open: a closed case is let
go once none is, so what is kept stays bounded over a shift), the arrivals of the waiting and open
cases, the patients served and those a person was asked to take. It answers which case a task or
an escalation belongs to (also a let-go one's, by its ID's prefix), what a robot or an HCW is busy
with in the other open cases, and which waiting case is next. It records nothing: the supervisor
core does (:class:`~robot_team.core.supervisor.SupervisorCore`). Times are ROS times, s.
"""

from __future__ import annotations

from typing import Callable

from robot_team.contracts.cases import WaitingCase, later_case_prefix, next_case
from robot_team.contracts.names import RobotId
from robot_team.core.supervisor_state import CaseArrival, SupervisorState
from robot_team.rules.workflow.policy import WorkflowPolicy
from robot_team.rules.workflow.rules import engaged_hcws
from robot_team.rules.workflow.state import TaskState


class SupervisorCases:
    """The supervisor's cases: their policies, the waiting, open, served and asked-about patients.

    Parameters
    ----------
    policy
        The first case's policy (the one the node gives before the first patient).

    Attributes
    ----------
    latest : WorkflowPolicy
        The policy of the latest case opened (``policy`` before the first patient).
    kept : dict[str, WorkflowPolicy]
        The cases kept, by patient, in the order kept: the open ones, closed ones with an escalation open.
    waiting : dict[str, CaseArrival]
        The cases waiting for a place, by patient, in arrival order.
    opened : dict[str, CaseArrival]
        The open cases' arrivals, by patient.
    served : list[str]
        The patients whose case was opened, in order.
    asked : set[str]
        The patients a person was asked to take (``patient_unserved``).
    """

    def __init__(self, policy: WorkflowPolicy):
        self.latest = policy
        self.kept: dict[str, WorkflowPolicy] = {}
        self.waiting: dict[str, CaseArrival] = {}
        self.opened: dict[str, CaseArrival] = {}
        self.served: list[str] = []
        self.asked: set[str] = set()

    @property
    def open_policies(self) -> list[WorkflowPolicy]:
        """The policies of the open cases (opened, reflection not recorded), in the order they opened."""
        return [p for p in self.kept.values() if not p.done]

    def live_policies(self) -> list[WorkflowPolicy]:
        """The open cases' policies, or the latest case's when none is open (before the first case, after the last)."""
        return self.open_policies or [self.latest]

    def full(self, cases_at_once: int) -> bool:
        """Whether ``cases_at_once`` cases are open (never with no limit, 0)."""
        return 0 < cases_at_once <= len(self.open_policies)

    def start(self, arrival: CaseArrival) -> WorkflowPolicy:
        """Open ``arrival``'s case: a fresh policy after the first case (the first keeps the given one); return it."""
        if self.served:   # a later case: a fresh policy; the first case keeps the one the node gave
            self.latest = WorkflowPolicy(self.latest.deadlines, id_prefix=later_case_prefix(arrival.patient_id))
        self.kept[arrival.patient_id] = self.latest
        self.served.append(arrival.patient_id)
        self.waiting.pop(arrival.patient_id, None)
        self.opened[arrival.patient_id] = arrival
        return self.latest

    def most_urgent_waiting(self) -> CaseArrival:
        """Return the waiting case the team serves next (:func:`~robot_team.contracts.cases.next_case`).

        Some case must wait.
        """
        chosen = next_case(WaitingCase(c.patient_id, c.esi_level, c.arrived_s) for c in self.waiting.values())
        return self.waiting[chosen.patient_id]

    def case_state(self, patient_id: str) -> str:
        """Return where ``patient_id``'s case is.

        ``'open'``, ``'closing'`` (an ``abort`` was decided, the reflection is not recorded yet),
        ``'closed'``, ``'waiting'`` or ``'unknown'`` (no case here).
        """
        if patient_id in self.waiting:
            return 'waiting'
        policy = self.kept.get(patient_id)
        if policy is None and patient_id and patient_id == self.latest.patient_id:
            policy = self.latest
        if policy is None:
            return 'closed' if patient_id in self.served else 'unknown'
        if policy.done:
            return 'closed'
        return 'closing' if policy.closed else 'open'

    def policy_of_task(self, task_id: str) -> WorkflowPolicy | None:
        """Return the policy of the case whose task ``task_id`` is (IDs are unique in a run).

        None when it names a case that closed and was let go; the latest case's for '' or an
        ID no case has (that policy refuses it).
        """
        if not task_id:
            return self.latest
        holder = self.holder(task_id)
        if holder is not None:
            return holder
        return None if self.closed_case_of(task_id) else self.latest

    def holder(self, item_id: str) -> WorkflowPolicy | None:
        """Return the policy kept (or the latest case's) that has a task or escalation ``item_id``; None if none."""
        if item_id:
            for policy in (self.latest, *reversed(self.kept.values())):
                snap = policy.snapshot()
                if snap.task(item_id) is not None or snap.escalation(item_id) is not None:
                    return policy
        return None

    def case_named(self, item_id: str) -> str:
        """Return the served patient whose case's ID prefix a task's or escalation's ID carries ('' none).

        A later case's IDs start with :func:`~robot_team.contracts.cases.later_case_prefix`; the first
        case's have no prefix.
        """
        item_id = str(item_id or '')
        later = [p for p in self.served[1:] if item_id.startswith(later_case_prefix(p))]
        if later:
            return max(later, key=len)
        return self.served[0] if item_id and self.served and '/' not in item_id else ''

    def closed_case_of(self, item_id: str) -> str:
        """Return the patient whose closed case a task or escalation ID belongs to ('' if open or none).

        A case is closed once its reflection was recorded: kept while an escalation of it is open,
        else let go. An ID no case has is placed by its prefix (e.g. ``P-0777/esc-2``: case ``P-0777``).
        """
        holder = self.holder(item_id)
        if holder is None:
            patient = self.case_named(item_id)
            holder = self.kept.get(patient) or (self.latest if patient and patient == self.latest.patient_id
                                                else None)
            if holder is None:   # served, neither kept nor the latest: closed and let go
                return patient
        return holder.patient_id if holder.done else ''

    def let_go(self, policy: WorkflowPolicy, settled: Callable[[str], bool] | None) -> bool:
        """Drop ``policy``'s case if it is kept, closed, and none of its escalations is open; return whether.

        Its patient stays served. An escalation ``settled`` says ended outside the workflow (the
        escalation desk expired it) is no longer open, though the workflow keeps it as it was.
        """
        if not policy.patient_id or self.kept.get(policy.patient_id) is not policy or not policy.done:
            return False
        settled = settled or (lambda _escalation_id: False)
        if any(e.is_open and not settled(e.escalation_id) for e in policy.snapshot().escalations):
            return False
        del self.kept[policy.patient_id]
        return True

    def keep(self, policy: WorkflowPolicy) -> None:
        """Keep ``policy``'s case again: a closed case let go has an escalation open (e.g. the latest case's)."""
        if policy.patient_id and policy.done:
            self.kept.setdefault(policy.patient_id, policy)

    def busy_elsewhere(self, robot: RobotId, policy: WorkflowPolicy | None) -> str:
        """Return the ID of a task ``robot`` runs for another open case than ``policy``'s ('' none)."""
        for other in self.open_policies:
            if other is policy:
                continue
            task = next((t for t in other.snapshot().tasks if t.status == 'running' and t.robot == robot), None)
            if task is not None:
                return task.task_id
        return ''

    def engaged_elsewhere(self, policy: WorkflowPolicy) -> dict[str, str]:
        """Return the HCWs the other open cases than ``policy``'s have.

        The rule is :func:`~robot_team.rules.workflow.rules.engaged_hcws`.
        """
        return engaged_hcws({p.patient_id: p.outlines() for p in self.open_policies if p is not policy})

    def gate_case(self) -> str:
        """Return the case a refusal by rule ``case`` names: the latest opened with no task yet, else the latest."""
        fresh = [p for p in self.open_policies if not p.snapshot().tasks]
        return (fresh[-1] if fresh else self.latest).patient_id

    def tasks(self) -> list[TaskState]:
        """Return the tasks of every open case, or of the latest case when none is open."""
        return [t for p in self.live_policies() for t in p.snapshot().tasks]

    def unasked_open(self, now_s: float, limit_s: float) -> list[CaseArrival]:
        """The open cases whose patient waited ``limit_s`` by ``now_s`` with no person asked about them."""
        unasked = []
        for policy in self.open_policies:
            arrival = self.opened.get(policy.patient_id)
            if arrival is None or now_s - arrival.arrived_s < limit_s:
                continue
            late_s = arrival.arrived_s + limit_s
            snap = policy.snapshot()
            missed = any(d.kind == 'onboarding' and d.state == 'missed' for d in snap.deadlines)
            asked = any(e.is_open or (e.closed_s is not None and e.closed_s >= late_s) for e in snap.escalations)
            if not missed and not asked:
                unasked.append(arrival)
        return unasked

    def state(self, directives: int, took_over: bool) -> SupervisorState:
        """Return what a restarted supervisor takes up, with the directives sent and whether it took over."""
        others = [p.state() for p in self.kept.values() if p is not self.latest]
        return SupervisorState(workflow=self.latest.state(), others=others, directives=directives,
                               took_over=took_over, waiting=list(self.waiting.values()),
                               opened=[self.opened[p.patient_id] for p in self.open_policies
                                       if p.patient_id in self.opened],
                               served=list(self.served), asked=sorted(self.asked))

    def restore(self, state: SupervisorState) -> None:
        """Take up the cases of a stored :class:`~robot_team.core.supervisor_state.SupervisorState` (a restart).

        Raises
        ------
        ValueError
            If the latest policy is not fresh or the workflow state is inconsistent (nothing changes then).
        """
        self.latest.restore(state.workflow)
        for other in state.others:
            policy = WorkflowPolicy(self.latest.deadlines, id_prefix=other.id_prefix)
            policy.restore(other)
            self.kept[other.patient_id] = policy
        if state.workflow.patient_id:
            self.kept[state.workflow.patient_id] = self.latest
        self.waiting = {c.patient_id: c.model_copy() for c in state.waiting}
        self.opened = {c.patient_id: c.model_copy() for c in state.opened}
        self.served = list(state.served)
        self.asked = set(state.asked)
