"""A restarted supervisor on a real ROS graph takes up its workflow from its SQLite store.

The first supervisor gets the patient cue and authorises a navigation task, then goes away
(nothing is saved at shutdown: the store is written after every change); a second one on the
same ``escalation_db`` must have the same tasks, deadlines and patient, announce no deadline
again, miss the onboarding deadline that passed while it was down at its first check, and
accept the running task's late report, meeting its deadline. The test publishes ``/clock``.
"""

import time

import pytest

from ros_helpers import wait_for

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402

from robot_team.contracts import names  # noqa: E402
from robot_team.contracts.config import load_scenario  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.ros.messages import reliable_qos, report_to_msg  # noqa: E402
from test_supervisor_node import GraphProbe, authorize  # noqa: E402


def start_supervisor(ros_context, executor, db):
    from robot_team.agents.supervisor_node import SupervisorNode
    supervisor = SupervisorNode(load_scenario('onboarding'), context=ros_context, parameter_overrides=[
        Parameter('use_sim_time', value=True), Parameter('onboarding_deadline_s', value=30.0),
        Parameter('escalation_db', value=str(db))])
    executor.add_node(supervisor)
    return supervisor


def stop(executor, node):
    executor.remove_node(node)
    node.destroy_node()


def test_a_restarted_supervisor_takes_up_tasks_deadlines_and_the_patient(ros_context, executor, tmp_path):
    from robot_team.msg import PatientArrival
    db = tmp_path / 'escalations.sqlite'
    probe = GraphProbe(ros_context)
    arrivals = probe.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
    executor.add_node(probe)
    first = start_supervisor(ros_context, executor, db)
    second = None
    try:
        probe.set_time(1.0, first)
        assert wait_for(lambda: probe.find('node_started'))
        assert wait_for(lambda: arrivals.get_subscription_count() >= 1)
        arrivals.publish(PatientArrival(patient_id='P-0001', room='ER-12', assigned_hcw_id='80'))
        assert wait_for(lambda: first.snapshot().patient_id == 'P-0001')
        probe.set_time(5.0, first)
        nav = authorize(probe, 'navigation', 'navigation_robot')
        assert nav.approved and nav.task_id == 'nav-1'
        before = first.snapshot()
        assert [(d.kind, d.state, d.due_s) for d in before.deadlines] == [
            ('decision', 'met', 121.0), ('onboarding', 'pending', 31.0), ('task', 'pending', 605.0)]
        stop(executor, first)
        first = None
        probe.events.clear()
        restarted_wall = time.time()   # an event of the first may still be on its way: told apart by its wall time

        second = start_supervisor(ros_context, executor, db)
        after = second.snapshot()   # taken up in __init__, before any callback
        assert after.tasks == before.tasks and after.deadlines == before.deadlines
        assert after.patient_id == 'P-0001' and [t.status for t in after.tasks] == ['running']
        assert wait_for(lambda: probe.find('workflow_restored'), timeout=30.0)
        [restored] = probe.find('workflow_restored')
        assert restored.data['restored_tasks'] == ['nav-1'] and restored.data['running_tasks'] == ['nav-1']
        assert [(d['deadline'], d['due_s']) for d in restored.data['restored_deadlines']] == [
            ('onboarding', 31.0), ('task', 605.0)]
        assert wait_for(lambda: [e for e in probe.find('node_started') if e.data.get('restored_tasks')])

        probe.set_time(40.0, second)   # the onboarding deadline (31 s) passed while nobody watched
        assert wait_for(lambda: probe.find('deadline_missed', deadline='onboarding'), timeout=30.0)
        late = TaskReportModel(task_id='nav-1', task_type='navigation', robot='navigation_robot',
                               status='success', summary='escorted HCW #80 to ER-12', stamp_s=40.0)
        answer = probe.submit(report_to_msg(late))
        assert answer.accepted, answer.explanation
        assert wait_for(lambda: probe.find('deadline_met', deadline='task', task_id='nav-1'))
        assert second.snapshot().task('nav-1').status == 'success'
        assert authorize(probe, 'info_collection', 'info_collection_robot').task_id == 'info-1'
        again = [e for e in probe.find('deadline_started') if e.wall_time >= restarted_wall]
        assert not [e for e in again if e.data.get('deadline') == 'onboarding']   # announced once, by the first
        assert not [e for e in again if e.data.get('deadline') == 'task' and e.data.get('task_id') == 'nav-1']
    finally:
        for node in (second, first, probe):
            if node is not None:
                stop(executor, node)


def test_a_request_sent_again_to_a_restarted_supervisor_gets_the_answer_it_had_and_is_not_served_twice(
        ros_context, executor, tmp_path):
    """The first supervisor serves and stores the manager's delegation, then never answers (it dies).

    The manager's own call (:func:`robot_team.ros.util.call_service`) sends the request again to the
    supervisor that takes its place: the answer must be the approval the first gave (nav-1), not a
    refusal because nav-1 now runs (the tree before this rule answered ``running``), and the
    request is recorded as answered again.
    """
    import threading

    from robot_team.msg import PatientArrival
    from robot_team.ros.util import call_service
    from robot_team.srv import AuthorizeTask
    db = tmp_path / 'escalations.sqlite'
    probe = GraphProbe(ros_context)
    arrivals = probe.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
    executor.add_node(probe)
    first = start_supervisor(ros_context, executor, db)
    second, answers = None, []
    served, release, returned = threading.Event(), threading.Event(), threading.Event()
    stored_answer = first._answer

    def serve_then_die(*args):   # served and stored, as before a crash; its response never leaves
        response = stored_answer(*args)
        served.set()
        release.wait(60.0)
        returned.set()
        return response
    first._answer = serve_then_die
    caller = threading.Thread(target=lambda: answers.append(call_service(
        probe, probe.authorize, AuthorizeTask.Request(task_type='navigation', robot='navigation_robot',
                                                      requested_by='manager', hcw_id='90', request_id='req-1'),
        30.0, 'the authorization')))
    try:
        probe.set_time(1.0, first)
        assert wait_for(lambda: arrivals.get_subscription_count() >= 1)
        arrivals.publish(PatientArrival(patient_id='P-0001', room='ER-12', assigned_hcw_id='80'))
        assert wait_for(lambda: first.snapshot().patient_id == 'P-0001')
        assert probe.authorize.wait_for_service(timeout_sec=10.0)
        caller.start()
        assert served.wait(20.0)
        assert [t.task_id for t in first.snapshot().tasks] == ['nav-1']

        second = start_supervisor(ros_context, executor, db)
        caller.join(30.0)
        assert answers, 'the call was not answered'
        [answer] = answers
        assert (answer.approved, answer.task_id, answer.rule) == (True, 'nav-1', 'ok'), answer.explanation
        assert wait_for(lambda: probe.find('request_answered_again'))   # (the record's topic, not the response's)
        assert [(e.data['service'], e.data['request_id'], e.data['answer']['task_id'])
                for e in probe.find('request_answered_again')] == [(names.AUTHORIZE_TASK, 'req-1', 'nav-1')]
        assert [t.task_id for t in second.snapshot().tasks] == ['nav-1']
    finally:
        release.set()
        caller.join(30.0) if caller.is_alive() else None
        returned.wait(10.0) if served.is_set() else None
        time.sleep(0.2)   # the late response leaves before its node is destroyed
        for node in (second, first, probe):
            if node is not None:
                stop(executor, node)


@pytest.mark.multiprocess
def test_kill_9_of_the_supervisor_mid_task_in_a_whole_episode(domain_id, tmp_path):
    """The whole team in processes; the supervisor is killed (SIGKILL) as the first task's goal is sent.

    The test starts a new supervisor process with the same command line itself (automatic
    restart is the runner's business); the new one must take up ``nav-1`` running, accept its
    report and the onboarding must still end in success. On the follow clock (uncapped) sim time
    waits for the supervisor, one of its followers: it holds while the supervisor is down (for
    ``follower_timeout_s``, then at most at real time), so the new one (about 3 wall s to start) is
    up before nav-1 reports (its page waits 30 sim s). A report sent to the dead supervisor is lost
    (the robot gives up after its timeout), which is the robot's recovery to build, not the store's.
    """
    import os
    import subprocess
    from pathlib import Path

    import robot_team
    from robot_team.run.episode import Episode
    scenario = load_scenario('onboarding')
    episode = Episode(scenario, tmp_path, processes=True, domain_id=domain_id)
    restarted = {}

    def kill_and_restart(event):
        if event.kind != 'delegation' or restarted:
            return
        old = episode._children['supervisor']
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED='1',
                   PYTHONPATH=os.pathsep.join(filter(None, [str(Path(robot_team.__path__[0]).parent),
                                                            os.environ.get('PYTHONPATH')])))
        with open(tmp_path / 'logs' / 'supervisor-restarted.log', 'w') as log:
            restarted['proc'] = subprocess.Popen(old.args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                 cwd=tmp_path)
        restarted['task_id'] = event.data.get('task_id')
        old.kill()   # SIGKILL: nothing saved at exit; the new process replaces it in the episode's teardown
        old.wait()
        episode._children['supervisor'] = restarted['proc']

    episode.on_event = kill_and_restart
    result = episode.run()
    assert restarted and restarted['task_id'] == 'nav-1'
    [taken_up] = [e for e in result.events if e.kind == 'workflow_restored']
    assert 'nav-1' in taken_up.data['restored_tasks']
    assert result.report['outcome'] == 'success', result.report.get('outcome')
    assert [t['task_id'] for t in result.report['tasks']][:1] == ['nav-1']
    supervisor = [e for e in result.events if e.actor == 'supervisor']
    assert [e.kind for e in supervisor].count('node_started') == 2
    after = [e for e in supervisor if e.wall_time >= taken_up.wall_time]   # the restarted one's (on the wall clock)
    # nav-1's report reached the restarted supervisor, which had its deadline: met, not announced again
    task_deadline = [(e.kind, e.data.get('met_by')) for e in after
                     if e.data.get('deadline') == 'task' and e.data.get('task_id') == 'nav-1']
    assert task_deadline == [('deadline_met', 'report')]
