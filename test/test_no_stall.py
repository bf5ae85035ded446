"""No silent stall, in the team core (no ROS): the manager's deadlines, the supervisor's safe defaults,
the manager core's takeover and hold, the decision sources, the rubric's attempted view.

The ROS graphs and the real ``openai`` client are in ``test_llm_stall.py``.
"""

import time

import pytest

from robot_team.brains.base import ManagerBrain
from robot_team.brains.protocol import ManagerProtocolBrain, protocol_robot_brain
from robot_team.contracts.config import Deadlines
from robot_team.core.supervisor import SupervisorCore
from robot_team.contracts.decisions import count_decisions, without_fallback
from robot_team.contracts.events import TeamEventModel
from team_harness import InMemoryTeam, Recorder
from robot_team.contracts.reports import TaskReportModel
from robot_team.rules.workflow.policy import WorkflowPolicy

ROBOTS = ('navigation_robot', 'info_collection_robot', 'display_robot')


class Recording:
    def __init__(self):
        self.events = []

    def __call__(self, kind, summary, /, *, target='', reason='', **data):
        self.events.append({'kind': getattr(kind, 'value', kind), 'summary': summary, 'reason': reason, **data})

    def of(self, kind):
        return [e for e in self.events if e['kind'] == kind]


def supervisor(**deadlines):
    record, directives, escalations = Recording(), [], []
    core = SupervisorCore(WorkflowPolicy(Deadlines(**deadlines)), record, escalations.append, lambda _e: None,
                          publish_directive=directives.append)
    return core, record, directives, escalations


def report(core, task_id, task_type, robot, status, now_s, issue=''):
    return core.submit_report(TaskReportModel(task_id=task_id, task_type=task_type, robot=robot, status=status,
                                              issue=issue or ('went wrong' if status == 'failure' else '')), now_s)


def test_the_patient_cue_starts_the_first_step_and_onboarding_deadlines():
    core, record, directives, escalations = supervisor()
    assert core.on_patient_arrival('P-1', 1.0) and not core.on_patient_arrival('P-1', 5.0)   # once
    started = {e['deadline']: e for e in record.of('deadline_started')}
    assert started['decision']['due_s'] == 121.0 and started['onboarding']['due_s'] == 901.0
    assert core.check_deadlines(121.0) == []
    [esc] = core.check_deadlines(121.5)
    [missed] = record.of('deadline_missed')
    assert missed['deadline'] == 'decision' and 'no delegation, escalation or reflection' in missed['reason']
    assert (escalations[0].task_id, escalations[0].raised_by, escalations[0].options) == (
        '', 'supervisor', ['retry', 'abort'])
    [directive] = directives
    assert (directive.directive, directive.target, directive.escalation_id, directive.deadline) == (
        'takeover', 'manager', esc, 'decision')
    assert record.of('safe_default')[0]['directive'] == 'takeover'


def test_a_delegation_or_any_escalation_meets_the_decision_deadline():
    core, record, directives, _ = supervisor()
    core.on_patient_arrival('P-1', 1.0)
    assert core.authorize('navigation', 'navigation_robot', '', 'manager', 50.0, hcw_id='90').approved
    assert [e['met_by'] for e in record.of('deadline_met')] == ['delegation nav-1']
    # after a successful report, the next step is due within decision_s; none while a task runs
    report(core, 'nav-1', 'navigation', 'navigation_robot', 'success', 100.0)
    [decision] = [e for e in record.of('deadline_started') if e['deadline'] == 'decision' and e['started_s'] == 100.0]
    assert decision['cue'] == 'report nav-1' and decision['task_id'] == 'nav-1'
    ok, esc, _ = core.request_escalation('nav-1', 'the HCW looks unwell', ['abort'], 110.0)
    assert ok and record.of('deadline_met')[-1]['met_by'] == f'escalation {esc}'
    # a human decision is a cue too
    assert core.resolve(esc, 'retry', '', '', 'nurse', 150.0)[0]
    assert record.of('deadline_started')[-1]['cue'] == f'decision on {esc}'
    assert core.check_deadlines(269.0) == [] and len(core.check_deadlines(271.0)) == 1
    assert directives and directives[0].deadline == 'decision'


def test_a_refused_delegation_does_not_meet_the_deadline_and_the_reflection_ends_the_onboarding():
    core, record, _, _ = supervisor(decision_s=30.0, onboarding_s=500.0)
    core.on_patient_arrival('P-1', 0.0)
    assert not core.authorize('signs of confusion and distress', 'navigation_robot', '', 'manager', 5.0).approved
    assert not core.authorize('display', 'display_robot', '', 'manager', 6.0).approved
    assert [d for d in core.policy.snapshot().deadlines if d.kind == 'decision'][0].state == 'pending'
    t = 10.0
    for task_type, robot in (('navigation', 'navigation_robot'), ('info_collection', 'info_collection_robot'),
                             ('display', 'display_robot')):
        auth = core.authorize(task_type, robot, '', 'manager', t, hcw_id='90')
        report(core, auth.task_id, task_type, robot, 'success', t + 5.0)
        t += 10.0
    auth = core.authorize('reflection', 'manager', 'all done', 'manager', t)
    assert auth.approved
    report(core, auth.task_id, 'reflection', 'manager', 'success', t + 1.0)
    states = {d.kind: d.state for d in core.policy.snapshot().deadlines if d.kind in ('onboarding',)}
    assert states == {'onboarding': 'met'}
    assert not [d for d in core.policy.snapshot().deadlines if d.state == 'pending']
    assert core.check_deadlines(10_000.0) == []


def test_an_unhandled_failure_gets_the_safe_default_once_then_escalations_only():
    core, record, directives, escalations = supervisor(issue_handling_s=60.0)
    core.on_patient_arrival('P-1', 0.0)
    core.authorize('navigation', 'navigation_robot', '', 'manager', 1.0, hcw_id='90')
    report(core, 'nav-1', 'navigation', 'navigation_robot', 'failure', 10.0, issue='HCW #80 unavailable')
    [esc] = core.check_deadlines(71.0)
    assert escalations[-1].task_id == 'nav-1' and escalations[-1].options == ['retry', 'reassign', 'abort']
    assert [d.directive for d in directives] == ['takeover']
    core.resolve(esc, 'reassign', '90', '', 'nurse', 80.0)
    assert core.check_deadlines(201.0)                        # nobody acted on the decision either
    assert [d.directive for d in directives] == ['takeover']  # the role was handed over already
    assert record.of('safe_default')[-1]['directive'] == 'escalate'


@pytest.mark.parametrize('safe_default', ['hold', 'escalate'])
def test_the_other_safe_defaults(safe_default):
    core, record, directives, _ = supervisor(safe_default=safe_default)
    core.on_patient_arrival('P-1', 0.0)
    [esc] = core.check_deadlines(121.0)
    assert [d.directive for d in directives] == (['hold'] if safe_default == 'hold' else [])
    assert record.of('safe_default')[0]['directive'] == safe_default
    assert record.of('safe_default')[0]['escalation_id'] == esc


# --- the manager core: takeover, hold, sources ---------------------------------------------------

class Mute(ManagerBrain):
    """A manager brain that never acts (a text-only LLM), saying it is an LLM."""

    def __init__(self):
        self.cancelled = 0

    def decide(self, observation):
        return []

    def cancel(self):
        self.cancelled += 1

    @property
    def decision_source(self):
        return 'llm'


def test_a_mute_manager_is_taken_over_by_the_protocol_brain_and_the_record_says_so():
    record = Recorder()
    mute = Mute()
    team = InMemoryTeam(mute, {r: protocol_robot_brain(r) for r in ROBOTS}, record=record)
    result = team.run()
    [takeover] = record.of('takeover')
    assert takeover['actor'] == 'manager' and takeover['data']['previous'] == 'Mute' and mute.cancelled == 1
    assert record.of('deadline_missed')[0]['data']['deadline'] == 'decision'
    assert result.outcome == 'success'
    sources = {e['data'].get('source') for e in record.events
               if e['kind'] in ('delegation_requested', 'judgment', 'reflection')}
    assert sources == {'fallback'}
    assert {e['data'].get('source') for e in record.of('task_report')} == {'protocol'}
    assert team.manager.take_over('esc-9') is False                    # once only
    assert record.of('observation')[-1]['data']['cue'] == 'takeover'


def test_a_held_manager_decides_again_after_the_human_decision():
    record = Recorder()
    team = InMemoryTeam(ManagerProtocolBrain(), {r: protocol_robot_brain(r) for r in ROBOTS}, record=record,
                        operator=[])
    team.manager.hold('esc-7', 'test')
    assert team.manager.step() is False and not record.of('delegation_requested')
    team.manager.on_decision('esc-7', 'retry')
    assert team.manager.step() and record.of('delegation_requested')
    assert 'hold_released' in [e['data']['cue'] for e in record.of('observation')]


def test_the_attempted_view_leaves_out_what_the_fallback_decided():
    from robot_team.evaluation.rubric import score_run
    record = Recorder()
    InMemoryTeam(Mute(), {r: protocol_robot_brain(r) for r in ROBOTS}, record=record).run()
    events = [TeamEventModel(stamp_s=float(i), wall_time=0.0, seq=i + 1, actor=e['actor'], kind=e['kind'],
                             target=e.get('target', ''), summary=e['summary'], reason=e['reason'], data=e['data'])
              for i, e in enumerate(record.events)]
    score = score_run(events)
    assert score.takeovers == 1 and score.decisions['fallback'] > 0 and score.decisions['llm'] == 0
    manager_cells = [c for c in score.attempted.cells if c.metric.value in (
        'delegation_accuracy', 'completion_judgment', 'reflection_quality')]
    assert all(c.score == 0.0 for c in manager_cells), [(c.metric, c.reason) for c in manager_cells]
    assert score.floor.points > score.attempted.points
    assert len(without_fallback(events)) < len(events)
    assert count_decisions(events) == score.decisions


def display_core(record, brain, world=None):
    """A display robot's core on the stub floor (``world``, default the stub's), with ``brain``, into ``record``."""
    from robot_team.core.robot import RobotCore
    from team_harness import World, build_toolbox, observer
    world = world or World()
    toolbox = build_toolbox('display_robot', world, record.emitter('display_robot'))
    return RobotCore('display_robot', brain, toolbox, record.emitter('display_robot'), lambda: 0.0, observer(world))


def display_task(n):
    from robot_team.brains.base import TaskSpec
    return TaskSpec(task_id=f'display-{n}', task_type='display', room='ER-12')


def test_a_robot_brain_past_its_llm_budget_reports_failure_with_the_issue():
    from robot_team.llm.robot_brain import LLMRobotBrain
    from robot_team.llm.fakeserver import ScriptedServer, text
    from robot_team.llm.settings import LLMSettings
    record = Recorder()

    def slow(body):   # a slow model that talks instead of calling its tools
        time.sleep(0.4)
        return text('Let me think about the care team...')
    with ScriptedServer({'display_robot': slow}) as server:
        settings = LLMSettings(_env_file=None, base_url=server.base_url, api_key='k', fallback='fail',
                               task_budget_s=0.2, max_report_retries=5, max_retries=0, robot_takeover_after=2)
        brain = LLMRobotBrain('display_robot', settings, record.emitter('display_robot'), kb=False)
        core = display_core(record, brain)
        report = core.run(display_task(1), lambda *_: None)
        assert not record.of('takeover')
        assert len(server.requests_of('display_robot')) == 1      # no request after the budget ran out
        # the second non-compliant task reaches robot_takeover_after (2): the protocol brain finishes it
        retry = core.run(display_task(2), lambda *_: None)
        later = core.run(display_task(3), lambda *_: None)
        brain.close()
    assert report.status.value == 'failure'
    assert 'budget of 0.2 s' in report.issue and report.issue.startswith('non-compliance')
    assert record.of('task_report')[0]['data']['source'] == 'llm'
    assert [e['data']['task_id'] for e in record.of('brain_error')] == ['display-1', 'display-2']
    [takeover] = record.of('takeover')
    assert takeover['actor'] == 'display_robot' and takeover['data']['role'] == 'display_robot'
    assert takeover['data']['task_id'] == 'display-2'
    assert retry.status.value == 'success' and later.status.value == 'success'
    assert [e['data']['source'] for e in record.of('task_report')] == ['llm', 'fallback', 'fallback']
    assert len(server.requests_of('display_robot')) == 2          # the LLM is not asked after the takeover


def test_the_llm_budget_counts_the_time_waiting_on_the_llm_not_the_robots_physical_work():
    from robot_team.llm import scripted
    from robot_team.llm.robot_brain import LLMRobotBrain
    from robot_team.llm.fakeserver import ScriptedServer, tool_calls
    from robot_team.llm.settings import LLMSettings
    record = Recorder()

    def quick(body):   # a quick model: one call, then its report
        if scripted.results(body):
            return scripted.report('failure', 'the care team is empty')
        return tool_calls(('fetch_care_team', {'room': 'ER-12'}))
    with ScriptedServer({'display_robot': quick}) as server:
        settings = LLMSettings(_env_file=None, base_url=server.base_url, api_key='k', fallback='fail',
                               task_budget_s=0.3, max_retries=0)
        brain = LLMRobotBrain('display_robot', settings, record.emitter('display_robot'), kb=False)
        from team_harness import World
        core = display_core(record, brain, World(care_team=[]))   # an empty care team: the model's failure holds
        spec = core.toolbox._tools['fetch_care_team']
        work = spec.func
        spec.func = lambda args: (time.sleep(0.6), work(args))[1]   # a slow tool (e.g. a long Nav2 goal)
        report = core.run(display_task(1), lambda *_: None)
        brain.close()
    assert report.status.value == 'failure' and report.issue == 'the care team is empty'   # the model's own report
    assert not record.of('brain_error')


def test_by_default_the_protocol_brain_finishes_the_first_task_an_llm_robot_leaves():
    from robot_team.llm.robot_brain import LLMRobotBrain
    from robot_team.llm.fakeserver import ScriptedServer, text
    from robot_team.llm.settings import LLMSettings
    record = Recorder()
    with ScriptedServer({'display_robot': lambda body: text('Let me think about the care team...')}) as server:
        settings = LLMSettings(_env_file=None, base_url=server.base_url, api_key='k', max_retries=0)
        assert settings.robot_takeover_after == 1
        brain = LLMRobotBrain('display_robot', settings, record.emitter('display_robot'), kb=False)
        report = display_core(record, brain).run(display_task(1), lambda *_: None)
        brain.close()
    assert len(server.requests_of('display_robot')) == settings.max_report_retries + 1   # then it gave up
    [error] = record.of('brain_error')
    assert error['data']['task_id'] == 'display-1' and 'without a tool call' in error['reason']
    [takeover] = record.of('takeover')
    assert takeover['data']['task_id'] == 'display-1'
    assert record.events.index(takeover) > record.events.index(error)
    assert report.status.value == 'success' and record.of('task_report')[0]['data']['source'] == 'fallback'
    assert [e['data']['source'] for e in record.of('tool_call')] == ['fallback'] * len(record.of('tool_call'))


def test_a_robot_does_not_start_a_task_while_the_team_is_held():
    from robot_team.brains.protocol import protocol_robot_brain
    record = Recorder()
    core = display_core(record, protocol_robot_brain('display_robot'))
    held = core.run(display_task(1), lambda *_: None, held_by='esc-2')
    assert held.status.value == 'failure' and held.issue == 'not started: the team is held by esc-2'
    assert not record.of('tool_call')                     # the brain was not asked
    assert [e['data']['task_id'] for e in record.of('task_report')] == ['display-1']
    released = core.run(display_task(2), lambda *_: None)
    assert released.status.value == 'success' and record.of('tool_call')


def test_on_the_lockstep_clock_a_slow_model_keeps_its_task_no_wall_budget_applies():
    """The same slow model as above, but each request holds sim time: the decision is the model's, not the load's."""
    import contextlib

    from robot_team.llm.robot_brain import LLMRobotBrain
    from robot_team.llm.client import ChatClient
    from robot_team.llm.fakeserver import ScriptedServer, text
    from robot_team.llm.settings import LLMSettings
    from robot_team.llm import scripted
    from robot_team.llm.fakeserver import tool_calls
    record = Recorder()
    holds = []

    def slow_then_report(body):   # slow (past the wall budget), then the model reports the empty care team
        time.sleep(0.4)
        if scripted.results(body):
            return scripted.report('failure', 'the care team is empty')
        return text('Let me think about the care team...') if len(body['messages']) < 3 else \
            tool_calls(('fetch_care_team', {'room': 'ER-12'}))

    @contextlib.contextmanager
    def hold():
        holds.append(1)
        yield
    with ScriptedServer({'display_robot': slow_then_report}) as server:
        settings = LLMSettings(_env_file=None, base_url=server.base_url, api_key='k', fallback='fail',
                               task_budget_s=0.2, max_report_retries=5, max_retries=0)
        client = ChatClient(settings, 'display_robot', record.emitter('display_robot'), hold=hold)
        assert client.holds_sim_time
        brain = LLMRobotBrain('display_robot', settings, record.emitter('display_robot'), kb=False, client=client)
        from team_harness import World
        report = display_core(record, brain, World(care_team=[])).run(display_task(1), lambda *_: None)
        brain.close()
    asked = len(server.requests_of('display_robot'))
    assert asked >= 2 and len(holds) == asked        # on past 0.4 s of wall time (realtime: 1 request, failure)
    assert report.status.value == 'failure' and report.issue == 'the care team is empty'   # the model's own report
    assert not record.of('brain_error')
