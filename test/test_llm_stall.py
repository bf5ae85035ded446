"""No silent stall with LLM brains, through the real ROS graph and the real ``openai`` client.

Each test runs ``run_episode(..., brain='openai')`` on the embedded simulator with every brain
talking to a scripted loopback server, and a manager that fails in one way a real model did:
it answers in text only, it stops acting after a report (endless nudges), it sends a task type
outside the closed set, its endpoint dies mid-run. Each time the supervisor escalates within
its deadline (sim time, on the follow clock), the protocol brain takes over the manager's role,
and nothing goes unrecorded: every request has its reply or error, every invalid call its event,
the record has no gap, and the rubric's attempted view does not credit the LLM with the
fallback's work.
"""

import pytest

from llm_scripts import use_llm_server
from robot_team.contracts.clock_sync import DEFAULT_MAX_STEP_SIZE_S
from robot_team.contracts.config import OperatorAnswer, load_scenario
from robot_team.evaluation.rubric import score_run
from robot_team.llm import scripted
from robot_team.llm.fakeserver import Fault, ScriptedServer, text, tool_calls

pytest.importorskip('rclpy')
pytest.importorskip('robot_team.sim.motion_node')

CHECK_PERIOD_S = 0.5
"""The supervisor's deadline check period, sim s (a missed deadline is escalated within it)."""

LATENCY_S = 10 * DEFAULT_MAX_STEP_SIZE_S
"""Sim s the supervisor may take to serve a cue, or to record a miss: ten steps of the follow clock.

The episodes run on the follow clock, which steps only once every node (the supervisor too)
acknowledged the last step. A node acknowledges a step when it receives ``/clock``, not once it
has served every callback waiting for it, so on a busy machine a report may wait a few steps before
the supervisor serves it (3 beside the other xdist worker in a rehearsal, 2026-11-28). The deadline runs
from that moment (the ``started_s`` of its record), which the tests check exactly; this bound only
says that the supervisor took the cue up, and recorded the miss, soon: seconds, not minutes.
"""


@pytest.fixture
def llm_env(monkeypatch):
    """Point every node's LLM settings at a scripted server; fail fast when the endpoint is gone."""
    def use(server):
        use_llm_server(monkeypatch, server)
        monkeypatch.setenv('ROBOT_TEAM_LLM_MAX_RETRIES', '1')
        monkeypatch.setenv('ROBOT_TEAM_LLM_BACKOFF_S', '0.05')
        # the supervisor's deadlines are the backstop under test: the brain does not hand over by itself
        monkeypatch.setenv('ROBOT_TEAM_LLM_MANAGER_TAKEOVER_AFTER', '0')
    return use


def run(scenario, tmp_path, domain_id, **kw):
    from robot_team.run.episode import run_episode
    return run_episode(scenario, tmp_path / 'run', brain='openai', domain_id=domain_id,
                       brain_options={'kb': False}, clock='follow', **kw)


def of(result, kind, actor=None):
    return [e for e in result.events if e.kind == kind and (actor is None or e.actor == actor)]


def hospital_arrival(result):
    """The hospital's ``patient_arrival`` event: the supervisor's decision deadline runs from its receipt.

    The manager's observation of the arrival may be recorded later than the supervisor received it (a
    loaded machine), so the deadline's lower bound is measured from the hospital's event.
    """
    return next(e for e in of(result, 'sim') if e.data.get('what') == 'patient_arrival')


def assert_nothing_unrecorded(result):
    """Every LLM request has its reply or error; the record has no gap; the run ended with an outcome."""
    report = result.report
    assert report['events']['complete'], report['events']['sequence_gaps']
    for robot in {e.data['robot'] for e in of(result, 'llm_request')}:
        asked = [e for e in of(result, 'llm_request') if e.data['robot'] == robot]
        answered = [e for e in of(result, 'llm_reply') + of(result, 'llm_error') if e.data['robot'] == robot]
        assert len(asked) == len(answered), robot
    assert report['outcome'] not in ('timeout', 'interrupted')
    assert report['teardown']['clean'], report['teardown']


def assert_escalated_in_time(result, deadline_kind, cue_event, deadline_s):
    """The supervisor missed-deadline escalation came within ``deadline_s`` (+ its check period) of the cue."""
    missed = [e for e in of(result, 'deadline_missed', 'supervisor') if e.data['deadline'] == deadline_kind]
    assert missed, [e.summary for e in of(result, 'deadline_missed')]
    escalation = next(e for e in of(result, 'escalation', 'supervisor') if e.stamp_s >= missed[0].stamp_s)
    assert escalation.data['raised_by'] == 'supervisor'
    miss = missed[0].data
    # the deadline starts when the supervisor serves the cue, never before it; it is due deadline_s later
    assert 0.0 <= miss['started_s'] - cue_event.stamp_s <= LATENCY_S, (miss['started_s'], cue_event.stamp_s)
    assert miss['due_s'] == pytest.approx(miss['started_s'] + deadline_s) and miss['deadline_s'] == deadline_s
    # the escalation comes once it is due, never before, within a check period (and the latency) after
    assert miss['due_s'] <= escalation.stamp_s <= miss['due_s'] + CHECK_PERIOD_S + LATENCY_S
    [takeover] = of(result, 'takeover', 'manager')
    assert takeover.data['escalation_id'] == escalation.data['escalation_id']
    directive = of(result, 'safe_default', 'supervisor')[0]
    assert (directive.data['directive'], directive.data['deadline']) == ('takeover', deadline_kind)
    return escalation


MANAGER_CELLS = ('delegation_accuracy', 'completion_judgment', 'reflection_quality')


def assert_fallback_not_credited(result):
    """The manager's floor is right; the attempted view credits the LLM with none of the fallback's work."""
    score = score_run(result.events)
    floor = [c for c in score.floor.cells if c.metric.value in MANAGER_CELLS]
    assert all(c.score == 1.0 for c in floor), [(c.metric.value, c.reason) for c in floor if c.score != 1.0]
    assert score.attempted.cell('reflection_quality').score == 0.0          # the fallback wrote it
    assert score.decisions['fallback'] > 0 and score.takeovers == 1
    after = of(result, 'takeover')[0].stamp_s
    late = [e for e in result.events if e.actor == 'manager' and e.stamp_s > after
            and e.kind in ('delegation_requested', 'judgment', 'reflection')]
    assert late and {e.data['source'] for e in late} == {'fallback'}
    return score


def test_a_text_only_manager_is_escalated_and_taken_over_within_120_s(tmp_path, domain_id, llm_env):
    with ScriptedServer({**scripted.ideal_policies(),
                         'manager': lambda body: text('I will coordinate the team shortly.')}) as server:
        llm_env(server)
        result = run('onboarding', tmp_path, domain_id)
    arrival = of(result, 'observation', 'manager')[0]
    assert arrival.data['cue'] == 'patient_arrival'
    escalation = assert_escalated_in_time(result, 'decision', hospital_arrival(result), 120.0)
    assert escalation.data['task_id'] == '' and 'no delegation, escalation or reflection' in escalation.reason
    assert_nothing_unrecorded(result)
    assert len(of(result, 'llm_reply', 'manager')) >= 2   # the question and the nudge
    assert result.report['outcome'] == 'success' and result.report['takeovers'] == 1
    score = assert_fallback_not_credited(result)
    assert score.decisions['llm'] > 0                        # the robots' LLMs still decided their tasks
    assert score.attempted.cell('delegation_accuracy', 'navigation').score == 0.0


def test_a_text_only_manager_hands_its_role_to_the_protocol_brain_after_the_nudge(
        tmp_path, domain_id, llm_env, monkeypatch):
    with ScriptedServer({**scripted.ideal_policies(),
                         'manager': lambda body: text('I will coordinate the team shortly.')}) as server:
        llm_env(server)
        monkeypatch.setenv('ROBOT_TEAM_LLM_MANAGER_TAKEOVER_AFTER', '1')   # the default
        result = run('onboarding', tmp_path, domain_id)
    arrival = of(result, 'observation', 'manager')[0]
    [takeover] = of(result, 'takeover', 'manager')
    assert takeover.data['previous'] == 'LLMManagerBrain' and takeover.data['source'] == 'fallback'
    [unusable] = [e for e in of(result, 'brain_error', 'manager') if e.stamp_s <= takeover.stamp_s]
    assert unusable.data['attempt'] == 1
    assert takeover.stamp_s - arrival.stamp_s < 120.0        # before the supervisor's decision deadline
    assert not of(result, 'deadline_missed') and not of(result, 'escalation')   # nobody had to be paged
    assert len(server.requests_of('manager')) == 2           # the question and the nudge, then never again
    assert_nothing_unrecorded(result)
    assert result.report['outcome'] == 'success' and result.report['takeovers'] == 1
    assert_fallback_not_credited(result)


def test_a_manager_that_stops_acting_after_a_report_is_taken_over(tmp_path, domain_id, llm_env):
    ideal, stalled = scripted.IdealManager(), []

    def manager(body):   # the ideal manager until a task succeeds, then text to every update and nudge
        ideal.read(body)
        if stalled or any(t['state'] == 'success' for t in ideal.tasks.values()):
            stalled.append(body)
            return text('Noted. Standing by.')
        return ideal(body)
    with ScriptedServer({**scripted.ideal_policies(), 'manager': manager}) as server:
        llm_env(server)
        result = run('onboarding', tmp_path, domain_id)
    success = next(e for e in of(result, 'task_report', 'navigation_robot') if e.data['status'] == 'success')
    escalation = assert_escalated_in_time(result, 'decision', success, 120.0)
    assert escalation.reason.startswith('manager took no step within 120 s after report nav-2')
    nudges = [b for b in stalled if b['messages'][-1]['content'].startswith('Nothing is running')]
    assert len(stalled) >= 2 and len(nudges) == 1                  # asked once, then the supervisor acted
    assert_nothing_unrecorded(result)
    assert result.report['outcome'] == 'success'
    score = assert_fallback_not_credited(result)
    assert score.attempted.cell('delegation_accuracy', 'navigation').score == 1.0   # what the LLM did counts
    assert score.attempted.cell('delegation_accuracy', 'display').score == 0.0


def test_invalid_enum_values_are_recorded_and_the_run_escalates(tmp_path, domain_id, llm_env):
    bad = 'signs of confusion and distress'

    def manager(body):
        return tool_calls(('delegate_task', {'task_type': bad, 'robot': 'navigation_robot', 'hcw_id': '80',
                                             'reason': 'the patient is confused'}))
    with ScriptedServer({**scripted.ideal_policies(), 'manager': manager}) as server:
        llm_env(server)
        result = run('onboarding', tmp_path, domain_id)
    calls = [e for e in of(result, 'llm_reply', 'manager') if e.data['tool_calls'] == ['delegate_task']]
    invalid = [e for e in of(result, 'invalid_call', 'manager')
               if bad in e.reason and e.data['category'] == 'closed_set']
    assert calls and len(invalid) == len(calls)        # every invalid call is an event naming the value
    assert not [e for e in of(result, 'delegation', 'manager') if e.stamp_s < of(result, 'takeover')[0].stamp_s]
    assert_escalated_in_time(result, 'decision', hospital_arrival(result), 120.0)
    assert_nothing_unrecorded(result)
    assert result.report['outcome'] == 'success'
    assert_fallback_not_credited(result)


def test_an_endpoint_that_dies_mid_run_is_escalated_and_recorded(tmp_path, domain_id, llm_env):
    scenario = load_scenario('onboarding')
    scenario = scenario.model_copy(update={'operator_script': [OperatorAnswer(
        task_type='navigation', decision='abort', note='the team lost its reasoning service', delay_s=10.0)],
        'expected_outcome': 'escalated'})
    server = ScriptedServer(scripted.ideal_policies()).start()
    # the endpoint dies on the navigation robot's first request (a request, not a wall-time moment)
    server.add_fault('navigation_robot', Fault(dies=True))
    try:
        llm_env(server)
        result = run(scenario, tmp_path, domain_id)
    finally:
        server.stop()
    assert server.requests_of('navigation_robot'), 'the endpoint never died'
    errors = of(result, 'llm_error')
    assert errors and all(e.reason for e in errors)
    assert {e.data['robot'] for e in errors} >= {'manager', 'navigation_robot'}
    [failed] = [t for t in result.report['tasks'] if t['task_id'] == 'nav-1']
    assert failed['status'] == 'failure' and 'LLM endpoint unavailable' in failed['issue']
    report_event = next(e for e in of(result, 'task_report', 'navigation_robot') if e.data['task_id'] == 'nav-1')
    assert_escalated_in_time(result, 'issue_handling', report_event, 60.0)
    assert_nothing_unrecorded(result)
    assert result.report['outcome'] == 'escalated' and result.report['outcome_as_expected']
    assert result.report['escalations'][0]['decision'] == 'abort'
