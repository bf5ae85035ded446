"""A team node lost and back, without ROS: the tracker, the workflow's recovery rule, the manager, the HCW.

The ROS side (DDS liveliness, a process killed, restarted) is in ``test_faults.py``.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_team.brains.base import Delegate, ManagerObservation, PatientInfo, SupervisorInstruction, TaskRecord
from robot_team.brains.protocol import ManagerProtocolBrain
from robot_team.contracts.config import ConfigError, Deadlines
from robot_team.core.manager import ManagerCore
from robot_team.core.manager_store import ManagerStore
from robot_team.core.supervisor import SupervisorCore
from robot_team.contracts.liveness import BackNotices, LivenessChange, LivenessTracker
from robot_team.llm.decoding import delegable, refused_hcws
from robot_team.contracts.reports import IssueCode, TaskReportModel, TaskType
from robot_team.rules.workflow.policy import WorkflowPolicy

from team_harness import InMemoryTeam, Recorder
from robot_team.brains.protocol import protocol_robot_brain
from test_sim_hospital import NAV, fetch, kinds, make_floor, run

NODE = 'navigation_robot'


# -- the tracker --------------------------------------------------------------------------------

OLD, NEW = 'gid-old', 'gid-new'   # the graph's IDs of the writers of the node's announcement


def test_a_killed_node_is_lost_once_and_back_as_a_new_incarnation_once_the_dead_one_left():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    assert tracker.state(NODE) == 'unknown'
    (seen,) = tracker.announced(NODE, 'a1', [OLD], 0.0)                # its first words: heard
    assert (seen.state, seen.instance_id) == ('seen', 'a1') and tracker.state(NODE) == 'alive'
    assert tracker.announced(NODE, 'a1', [OLD], 0.05) == []           # the same again: no news
    assert tracker.liveliness(NODE, 1, 0, 0, [OLD], 0.1) == []         # its liveliness asserted: no news
    (lost,) = tracker.liveliness(NODE, 0, 1, 1, [OLD], 5.0)            # lease ran out: not alive
    assert (lost.state, lost.instance_id, lost.noticed_by) == ('lost', 'a1', 'liveliness')
    assert tracker.liveliness(NODE, 0, 1, 0, [OLD], 5.5) == [] and tracker.lost() == [NODE]   # no second loss
    assert tracker.liveliness(NODE, 1, 1, 0, [OLD, NEW], 8.0) == []    # the new one beside the dead one
    assert tracker.announced(NODE, 'a2', [OLD, NEW], 8.01) == []       # its words: still not alone
    (back,) = tracker.liveliness(NODE, 1, 0, -1, [NEW], 9.0)           # DDS dropped the dead participant
    assert (back.state, back.instance_id, back.restarted) == ('back', 'a2', True)
    assert back.lost_for_s == pytest.approx(4.0) and tracker.state(NODE) == 'alive'


def test_a_lapse_its_own_writer_recovers_from_within_the_confirmation_is_no_loss():
    """CI (cb3ab05): the navigation robot's liveliness lapsed for 0.1 s on a starved host."""
    tracker = LivenessTracker([NODE], confirm_s=1.0)
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 1, 0, 0, [OLD], 0.1)
    assert tracker.liveliness(NODE, 0, 1, 1, [OLD], 5.0) == [] and tracker.lapsed() == [NODE]
    assert tracker.confirm(NODE, 5.5) == []                              # not yet
    assert tracker.liveliness(NODE, 1, 0, -1, [OLD], 5.1 + 0.4) == []    # its own writer again
    assert tracker.lapsed() == [] and tracker.confirm(NODE, 9.0) == [] and tracker.state(NODE) == 'alive'
    # a lapse that lasts is a loss, noticed by liveliness, and the node comes back as usual
    assert tracker.liveliness(NODE, 0, 1, 1, [OLD], 20.0) == []
    (lost,) = tracker.confirm(NODE, 21.0)
    assert (lost.state, lost.instance_id, lost.noticed_by) == ('lost', 'a1', 'liveliness') and not tracker.lapsed()
    assert tracker.liveliness(NODE, 1, 1, 0, [OLD, NEW], 22.0) == []
    assert tracker.announced(NODE, 'a2', [OLD, NEW], 22.1) == []
    (back,) = tracker.liveliness(NODE, 1, 0, -1, [NEW], 23.0)
    assert (back.state, back.instance_id, back.restarted) == ('back', 'a2', True)


def test_a_restart_during_a_lapse_is_a_loss_at_its_words_and_a_return_once_the_dead_one_left():
    tracker = LivenessTracker([NODE], confirm_s=1.0)
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 1, 0, 0, [OLD], 0.1)
    assert tracker.liveliness(NODE, 0, 1, 1, [OLD], 5.0) == []
    assert tracker.liveliness(NODE, 1, 1, 0, [OLD, NEW], 5.3) == []      # a new writer: no end of the lapse
    assert tracker.lapsed() == [NODE]
    (lost,) = tracker.announced(NODE, 'a2', [OLD, NEW], 5.4)             # a new incarnation's words
    assert (lost.instance_id, lost.noticed_by) == ('a1', 'heartbeat') and tracker.lapsed() == []
    (back,) = tracker.liveliness(NODE, 1, 0, -1, [NEW], 6.0)
    assert (back.instance_id, back.restarted) == ('a2', True)
    with pytest.raises(ValueError, match='confirm_s'):
        LivenessTracker([NODE], confirm_s=-1.0)


def test_a_node_killed_before_its_words_reached_the_watcher_is_never_lost_and_its_restart_is_heard():
    """CI (cb3ab05): a display robot killed 0.75 s after its start; the supervisor had not heard it."""
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    assert tracker.liveliness(NODE, 1, 0, 1, [OLD], 0.5) == []         # a writer matched, its words not read
    assert tracker.liveliness(NODE, 0, 1, 1, [OLD], 2.5) == []         # dead: nobody the watcher knew is lost
    assert tracker.state(NODE) == 'unknown' and tracker.lost() == []
    (seen,) = tracker.announced(NODE, 'a2', [NEW], 3.0)                # the restarted one's words
    assert (seen.state, seen.instance_id, seen.restarted) == ('seen', 'a2', False)
    assert tracker.state(NODE) == 'alive'
    (lost,) = tracker.liveliness(NODE, 0, 1, 1, [NEW], 9.0)            # from then on it is watched
    assert (lost.state, lost.instance_id) == ('lost', 'a2')


def test_a_restart_whose_announcement_comes_late_is_still_a_restart():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 0, 1, 1, [OLD], 2.0)
    assert tracker.liveliness(NODE, 1, 1, 0, [OLD, NEW], 2.5) == []
    (back,) = tracker.liveliness(NODE, 1, 0, -1, [NEW], 4.0)           # its writer is a new one
    assert back.restarted and back.instance_id == ''                   # its words are on their way
    assert tracker.announced(NODE, 'a2', [NEW], 7.0) == []             # and taken without a second loss
    assert tracker.state(NODE) == 'alive'
    (lost,) = tracker.liveliness(NODE, 0, 1, 1, [NEW], 9.0)
    assert lost.instance_id == 'a2'


def test_a_clean_shutdown_is_not_a_loss():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    assert tracker.liveliness(NODE, 0, 0, 0, [], 3.0) == []            # the publisher was deleted
    assert tracker.state(NODE) == 'alive'


def test_a_host_back_on_the_network_is_the_same_incarnation():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 1, 0, 0, [OLD], 0.1)
    tracker.liveliness(NODE, 0, 1, 1, [OLD], 2.0)                      # the link is down: lease ran out
    assert tracker.liveliness(NODE, 0, 0, -1, [], 5.0) == []           # its participant dropped
    (back,) = tracker.liveliness(NODE, 1, 0, 0, [OLD], 32.0)           # the link is up: the same writer
    assert (back.state, back.instance_id, back.restarted) == ('back', 'a1', False)
    assert back.lost_for_s == pytest.approx(30.0)


def test_a_restart_faster_than_the_lease_is_a_loss_at_once_and_a_return_once_the_dead_one_left():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 1, 0, 0, [OLD], 0.0)
    tracker.liveliness(NODE, 2, 0, 0, [OLD, NEW], 1.0)                 # the new one matched, the dead one's lease runs
    (lost,) = tracker.announced(NODE, 'a2', [OLD, NEW], 1.0)
    assert (lost.state, lost.noticed_by) == ('lost', 'heartbeat')
    assert tracker.liveliness(NODE, 1, 1, 1, [OLD, NEW], 2.5) == []    # the dead one's lease ran out
    (back,) = tracker.liveliness(NODE, 1, 0, -1, [NEW], 4.0)           # and its participant is gone
    assert (back.state, back.restarted, back.instance_id) == ('back', True, 'a2')


def test_a_dead_writer_the_graph_drops_after_its_last_liveliness_change_is_still_followed_by_a_return():
    # measured in CI: the change that counts the dead writer gone came while the graph still showed it
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    tracker.announced(NODE, 'a1', [OLD], 0.0)
    tracker.liveliness(NODE, 0, 1, 1, [OLD], 2.0)
    assert tracker.liveliness(NODE, 1, 1, 0, [OLD, NEW], 2.5) == []
    assert tracker.announced(NODE, 'a2', [OLD, NEW], 2.6) == []
    assert tracker.liveliness(NODE, 1, 0, -1, [OLD, NEW], 20.0) == []   # the graph lags: no change follows
    assert tracker.graph_seen(NODE, [OLD, NEW], 20.5) == [] and tracker.lost() == [NODE]
    (back,) = tracker.graph_seen(NODE, [NEW], 21.0)
    assert (back.state, back.restarted, back.instance_id) == ('back', True, 'a2')
    assert tracker.graph_seen(NODE, [NEW], 21.5) == [] and tracker.state(NODE) == 'alive'
    assert tracker.graph_seen('someone_else', [NEW], 22.0) == []


def test_unwatched_nodes_and_bad_announcements():
    tracker = LivenessTracker([NODE], confirm_s=0.0)   # lost as its liveliness runs out
    assert tracker.announced('someone_else', 'x', [OLD], 0.0) == []
    assert tracker.liveliness('someone_else', 0, 1, 1, [OLD], 1.0) == []
    with pytest.raises(ValueError, match="heartbeat of 'navigation_robot': expected a non-empty instance_id"):
        tracker.announced(NODE, '', [OLD], 0.0)


# -- the workflow's recovery rule ----------------------------------------------------------------

@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7)), max_size=40), st.randoms(use_true_random=False))
def test_the_team_never_hears_back_last_about_a_robot_that_is_lost(steps, rng):
    """Any interleaving of a robot's changes and its withheld back notices' ends (BackNotices, the supervisor's rule).

    A step is a change (lost and back alternate, as the tracker gives them; a lost one is announced
    at once, a back one waits) or the end of one waiting notice (any, in any order). Whenever the
    team hears "back", back is the robot's latest change; once every notice has ended, what it
    heard last is the robot's state. A notice is sent at most once.
    """
    notices = BackNotices()
    heard, waiting, state, latest = [], [], 'alive', [0]   # (latest[0]: the robot's latest change)

    def end(k):
        number = waiting.pop(k % len(waiting))
        sent = notices.announce_if_current(NODE, number, lambda: heard.append(('back', number)))
        assert sent == (latest[0] == number)
        if sent:
            assert state == 'back', 'heard back about a robot lost since'
    for change, pick in steps:
        if change or not waiting:
            state = 'lost' if state != 'lost' else 'back'
            latest[0] = notices.changed(NODE)
            if state == 'lost':
                heard.append(('lost', latest[0]))
            else:
                waiting.append(latest[0])
        else:
            end(pick)
    while waiting:
        end(rng.randrange(len(waiting)))
    if state != 'alive':
        assert heard and heard[-1][0] == state, (steps, heard)
    assert len({n for kind, n in heard if kind == 'back'}) == len([k for k, _ in heard if k == 'back'])


def test_a_lost_robots_task_ends_as_a_failure_and_issue_handling_starts_at_once():
    policy = WorkflowPolicy(Deadlines(issue_handling_s=60.0, task_s=600.0))
    auth = policy.authorize('navigation', NODE, '', 'manager', 10.0, hcw_id='90')
    task = policy.robot_lost(NODE, 25.0)
    assert (task.task_id, task.status, task.issue_code) == (auth.task_id, 'failure', IssueCode.ROBOT_LOST)
    deadlines = {d.kind: d for d in policy.snapshot().deadlines}
    assert deadlines['task'].state == 'met' and deadlines['task'].met_by == 'robot_lost'
    assert deadlines['issue_handling'].state == 'pending' and deadlines['issue_handling'].due_s == 85.0
    assert policy.robot_lost(NODE, 26.0) is None                       # nothing runs on it any more
    late = TaskReportModel(task_id=auth.task_id, task_type='navigation', robot=NODE, status='success')
    with pytest.raises(ValueError, match='already closed'):
        policy.record_report(late, 40.0)                               # the robot back on the network, late
    retry = policy.authorize('navigation', NODE, '', 'manager', 30.0, hcw_id='90')
    assert retry.approved and retry.explanation.startswith(f'approved nav-2 for {NODE}: retry of navigation')


def test_only_the_supervisor_closes_a_task_as_robot_lost():
    policy = WorkflowPolicy()
    auth = policy.authorize('navigation', NODE, '', 'manager', 0.0, hcw_id='90')
    claim = TaskReportModel(task_id=auth.task_id, task_type='navigation', robot=NODE, status='failure',
                            issue='I got lost', issue_code='robot_lost')
    with pytest.raises(ValueError, match="sets issue_code 'robot_lost': only the supervisor"):
        policy.record_report(claim, 1.0)
    assert policy.snapshot().task(auth.task_id).status == 'running'


def test_the_supervisor_records_the_loss_and_publishes_the_closed_task():
    record, published = Recorder(), []
    core = SupervisorCore(WorkflowPolicy(), record.emitter('supervisor'), lambda e: None, lambda e: None,
                          publish_report=published.append)
    auth = core.authorize('navigation', NODE, '', 'manager', 5.0, hcw_id='90')
    report = core.liveness_changed(LivenessChange(node=NODE, state='lost', instance_id='a1',
                                                  noticed_by='liveliness'), 9.0)
    assert published == [report] and report.task_id == auth.task_id and report.issue_code is IssueCode.ROBOT_LOST
    (lost,) = record.of('robot_lost')
    assert lost['data']['task_id'] == auth.task_id and lost['data']['noticed_by'] == 'liveliness'
    (closed,) = record.of('task_report', 'supervisor')
    assert closed['data']['issue_code'] == 'robot_lost' and closed['data']['robot'] == NODE
    assert core.liveness_changed(LivenessChange(node='manager', state='lost'), 10.0) is None   # holds no task
    assert core.liveness_changed(LivenessChange(node=NODE, state='back', restarted=True, lost_for_s=3.0),
                                 11.0) is None
    assert record.events[-1]['kind'] == 'robot_back' and record.events[-1]['data']['restarted'] is True


# -- the manager: wait for the robot, then the same task again ------------------------------------

PATIENT = PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='90')


def lost_nav():
    return TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot=NODE, hcw_id='90', state='failure',
                      issue='navigation_robot was lost', issue_code=IssueCode.ROBOT_LOST)


def test_the_protocol_manager_waits_for_the_lost_robot_then_retries_with_the_same_hcw():
    brain = ManagerProtocolBrain()
    assert brain.decide(ManagerObservation(patient=PATIENT, tasks=[lost_nav()], lost_robots=[NODE])) == []
    (retry,) = brain.decide(ManagerObservation(patient=PATIENT, tasks=[lost_nav()]))
    assert isinstance(retry, Delegate) and (retry.robot, retry.hcw_id, retry.handles_task_id) == (NODE, '90', 'nav-1')
    # nor does the next step go to a robot that is lost
    done = lost_nav().model_copy(update={'state': 'success', 'issue': '', 'issue_code': IssueCode.NONE})
    obs = ManagerObservation(patient=PATIENT, tasks=[done], lost_robots=['info_collection_robot'])
    assert brain.decide(obs) == []


def test_the_llm_managers_repeat_rule_does_not_count_a_lost_robot():
    obs = ManagerObservation(patient=PATIENT, tasks=[lost_nav()])
    assert refused_hcws('navigation', obs) == set()
    failed = lost_nav().model_copy(update={'issue_code': IssueCode.NONE, 'issue': 'HCW #90 unavailable'})
    assert refused_hcws('navigation', ManagerObservation(patient=PATIENT, tasks=[failed])) == {'90'}


class LosingHarness(InMemoryTeam):
    """The team harness whose navigation robot is lost during its first task, then restarts."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.supervisor._publish_report = self.manager.on_task_closed
        self.lost_once = False

    def send_task(self, robot, task, done):
        if robot == NODE and not self.lost_once:
            self.lost_once = True
            self.t += 5.0
            lost = LivenessChange(node=NODE, state='lost', instance_id='a1', noticed_by='liveliness')
            closed = self.supervisor.liveness_changed(lost, self.t)
            self.manager.on_liveness(NODE, 'lost', False, closed.task_id)
            assert self.manager.step() is True and self.supervisor.policy.snapshot().tasks[-1].task_id == task.task_id
            self.t += 3.0
            self.supervisor.liveness_changed(LivenessChange(node=NODE, state='back', instance_id='a2',
                                                            restarted=True, lost_for_s=3.0), self.t)
            self.manager.on_liveness(NODE, 'back', True, '')
            return   # the goal went to the process that died: no result ever comes
        super().send_task(robot, task, done)


def test_a_team_recovers_the_task_of_a_robot_lost_mid_task_by_the_workflow_rules():
    robots = {role: protocol_robot_brain(role) for role in (NODE, 'info_collection_robot', 'display_robot')}
    harness = LosingHarness(ManagerProtocolBrain(), robots)
    harness.world.staff['80']['availability'] = 'available'
    harness.world.scan_badge = 'ED-0080'
    outcome = harness.run()
    assert outcome.outcome == 'success'
    tasks = outcome.workflow.snapshot().tasks
    assert [(t.task_id, t.status, t.issue_code.value) for t in tasks[:2]] == [
        ('nav-1', 'failure', 'robot_lost'), ('nav-2', 'success', '')]
    events = outcome.record.events
    nav = [e for e in outcome.record.of('delegation') if e['data']['task_type'] == 'navigation']
    assert [e['data']['hcw_id'] for e in nav] == ['80', '80'] and nav[1]['data']['handles_task_id'] == 'nav-1'
    lost_at = events.index(outcome.record.of('robot_lost')[0])
    back_at = events.index(outcome.record.of('robot_back')[0])
    assert lost_at < back_at < events.index(nav[1])                    # waited for the robot to be back
    assert not outcome.record.of('deadline_missed') and not outcome.record.of('escalation')


# -- the HCW being escorted waits, and is found again ---------------------------------------------

def test_an_escorted_hcw_waits_where_they_are_and_follows_the_robot_again():
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    assert hospital.hcw('90').state == 'following'
    motion.start_goal(NAV, motion.world.room('ER-12').entry)
    run(motion, hospital, 8.0)
    assert hospital.robot_lost(NAV) == ['90']
    (waiting,) = kinds(hospital.drain_events(), 'hcw_waiting')
    assert waiting.data['robot'] == NAV and hospital.hcw('90').state == 'idle'
    motion.cancel_goal(NAV)
    events = run(motion, hospital, 10.0)
    assert hospital.hcw('90').state == 'idle' and not kinds(events, 'badge_scan')   # stays put, next to the robot
    assert hospital.robot_lost('display_robot') == []                 # it escorted nobody
    fetch(motion, hospital, '90')                                      # the restarted robot pages and picks up
    motion.start_goal(NAV, motion.world.room('ER-12').entry)
    events = run(motion, hospital, 150)
    assert hospital.hcw('90').state == 'arrived'
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']


class EagerBrain(ManagerProtocolBrain):
    """A manager that delegates the same task again at once, lost robot or not (as a careless LLM might)."""

    def decide(self, obs):
        return self._next(obs)


def test_the_manager_guard_holds_a_delegation_to_a_lost_robot_and_the_llm_is_not_offered_it():
    robots = {role: protocol_robot_brain(role) for role in (NODE, 'info_collection_robot', 'display_robot')}
    team = InMemoryTeam(EagerBrain(), robots)
    team.supervisor._publish_report = team.manager.on_task_closed
    team.manager.on_liveness(NODE, 'lost', False, '')
    assert team.manager.step() is True
    (refused,) = team.record.of('delegation_refused', 'manager')
    assert refused['target'] == NODE and 'is lost' in refused['reason']
    assert team.workflow.snapshot().tasks == []                       # never reached the supervisor's gate
    obs = team.manager.snapshot()
    assert obs.lost_robots == [NODE] and delegable(obs) == []          # nor offered to an LLM manager
    team.manager.on_liveness(NODE, 'back', True, '')
    assert delegable(team.manager.snapshot()) == [TaskType.NAVIGATION]


def test_the_console_shows_a_lost_node_until_it_is_back():
    from robot_team.console.presenter import ConsolePresenter
    console = ConsolePresenter(port=None, operator_id='charge_nurse')
    before = console.version
    console.on_liveness(NODE, 'lost', task_id='nav-2', noticed_by='liveliness')
    assert console.lost_nodes() == {NODE: f'{NODE} lost (liveliness): nav-2 closed as a failure'}
    assert console.status().level == 'error' and console.version > before and console.heard('liveness')
    console.on_liveness(NODE, 'back', restarted=True)
    assert console.lost_nodes() == {} and console.status().text == f'{NODE} back (restarted)'


# -- a restarted manager takes up its record -------------------------------------------------------

class ManagerKilledMidTask(InMemoryTeam):
    """The team harness whose manager dies while the navigation robot runs its first task."""

    def __init__(self, *args, store=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.store = store
        self.manager = ManagerCore(self.manager.brain, self, self.record.emitter('manager'), list(self.robots),
                                   store=store)
        self.manager.on_arrival(PatientInfo(patient_id='P-0001', room='ER-12', assigned_hcw_id='80',
                                            required_specialty='Physician'))
        self.pending = None

    def send_task(self, robot, task, done):
        if self.pending is None and robot == NODE:
            self.pending = (robot, task)   # the goal is out; the manager dies before its result
            return
        super().send_task(robot, task, done)


def test_a_restarted_manager_takes_up_its_tasks_and_gets_the_running_ones_from_the_supervisor(tmp_path):
    robots = {role: protocol_robot_brain(role) for role in (NODE, 'info_collection_robot', 'display_robot')}
    team = ManagerKilledMidTask(ManagerProtocolBrain(), robots, store=ManagerStore(tmp_path / 'manager.sqlite'))
    team.world.staff['80']['availability'] = 'available'
    team.world.scan_badge = 'ED-0080'
    assert team.manager.step() and team.pending is not None
    assert team.manager.restored == {}
    # the manager's process dies; a new one starts on the same record
    restarted = ManagerCore(ManagerProtocolBrain(), team, team.record.emitter('manager'), list(robots),
                            store=ManagerStore(tmp_path / 'manager.sqlite'))
    assert restarted.restored['tasks'] == ['nav-1'] and restarted.restored['running'] == ['nav-1']
    assert restarted.snapshot().patient.patient_id == 'P-0001'
    assert restarted.step() is True and team.workflow.snapshot().tasks[-1].task_id == 'nav-1'   # waits: nothing new
    team.manager = restarted
    robot, task = team.pending
    report = team.robots[robot].run(task, lambda *_: None)      # the robot finishes and reports to the supervisor,
    team.supervisor.submit_report(report, team.t + 30.0)       # which republishes it on team/task_reports
    restarted.on_task_closed(report)
    assert team.run().outcome == 'success'
    assert [t.task_id for t in team.workflow.snapshot().tasks] == ['nav-1', 'info-1', 'display-1', 'reflection-1']
    assert [e['data']['judged_status'] for e in team.record.of('judgment')][:1] == ['success']


def test_a_corrupt_manager_store_is_a_clear_error(tmp_path):
    bad = tmp_path / 'manager.sqlite'
    bad.write_text('not sqlite at all, just text' * 100)
    with pytest.raises(ConfigError, match='manager.sqlite: not a manager store'):
        ManagerStore(bad)


def test_the_same_report_twice_is_recorded_once_and_accepted():
    record = Recorder()
    core = SupervisorCore(WorkflowPolicy(), record.emitter('supervisor'), lambda e: None, lambda e: None)
    auth = core.authorize('navigation', NODE, '', 'manager', 0.0, hcw_id='90')
    report = TaskReportModel(task_id=auth.task_id, task_type='navigation', robot=NODE, status='success',
                             summary='escorted')
    assert core.submit_report(report, 5.0)[0] is True
    accepted, why = core.submit_report(report, 20.0)                   # asked again: its first answer was lost
    assert accepted and 'already recorded' in why and not record.of('report_rejected')
    other = report.model_copy(update={'summary': 'something else'})
    assert core.submit_report(other, 21.0)[0] is False and record.of('report_rejected')


class StubbornBrain(ManagerProtocolBrain):
    """Always asks for info collection first (the gate refuses it: navigation comes first)."""

    def decide(self, obs):
        return [self._delegate(obs, TaskType.INFO_COLLECTION)]


def test_the_same_refusal_twice_does_not_loop_the_manager_against_the_gate():
    robots = {role: protocol_robot_brain(role) for role in (NODE, 'info_collection_robot', 'display_robot')}
    team = InMemoryTeam(StubbornBrain(), robots)
    assert team.manager.step() is True                                  # refused: the brain hears why...
    assert team.manager.step() is True                                  # ...and asks the same again: refused
    assert team.manager.step() is False                                 # no loop: it waits for news
    assert len([e for e in team.record.of('workflow_violation')]) == 2
    (repeat,) = [e for e in team.record.of('observation', 'manager') if e['data'].get('cue') == 'repeated_refusal']
    team.manager.on_instruction(SupervisorInstruction(instruction_id='ins-1', operator_id='charge_nurse',
                                                      text='navigation first'))
    assert team.manager.step() is True                                  # news: it decides again


def test_a_restarted_nodes_events_are_a_new_incarnation_of_its_sequence():
    from robot_team.contracts.events import TeamEventModel, sequence_gaps

    def ev(seq, wall, actor=NODE):
        return TeamEventModel(stamp_s=0.0, wall_time=wall, seq=seq, actor=actor, kind='observation')
    first, second = [ev(1, 1.0), ev(2, 2.0), ev(3, 3.0)], [ev(1, 10.0), ev(2, 11.0), ev(4, 13.0)]
    assert sequence_gaps(first + second) == {f'{NODE}#2': [3]}
    assert sequence_gaps(list(reversed(first + second[:2]))) == {}     # any order: wall time tells them apart
    assert sequence_gaps([ev(2, 1.0), ev(1, 5.0)]) == {NODE: [1]}       # a lost first event is still a gap


def test_a_hospital_checkpoint_takes_up_the_floor_as_it_was():
    motion, hospital = make_floor()
    fetch(motion, hospital, '90')
    motion.start_goal(NAV, motion.world.room('ER-12').entry)
    run(motion, hospital, 8.0)
    saved = hospital.checkpoint()
    _, restarted = make_floor()
    restarted.restore(saved)
    assert restarted.t == hospital.t and restarted.arrived
    assert restarted.hcw('90').state == 'following' and restarted.hcw('90').pose == hospital.hcw('90').pose
    events = run(motion, restarted, 150)                               # the escort goes on as if nothing happened
    assert restarted.hcw('90').state == 'arrived'
    assert [s.data['reader_id'] for s in kinds(events, 'badge_scan')] == ['er_12_door']
    with pytest.raises(ValueError, match='not a hospital checkpoint'):
        restarted.restore(b'garbage')
    assert restarted.hcw('90').state == 'arrived'                      # unchanged by the bad input
