"""The 17-point rubric, cell by cell: a recorded protocol run, a hand-made record, failure modes injected.

One protocol-brain onboarding episode is recorded per module (a real ROS graph on a private
domain); every edge case is scored on that record and on the hand-made one, by editing events.
"""

import csv
import json

import pytest
from ros_helpers import reserve_domain_id
from rubric_records import (
    closed_after, failure_echoed, false_success, manager_prefetch, onboarding_record, placeholder_reflection,
    prefetched_context, redo_without_reason, refused_placeholder_first, skipped_step, without_reflection, write_run)

from robot_team.evaluation.judge import LLMReflectionJudge
from robot_team.evaluation.rubric import PUBLISHED_REFERENCE, RUBRIC_POINTS, Metric, score_run, score_run_dir
from robot_team.evaluation.truth import audit
from robot_team.contracts.events import TeamEventModel
from robot_team.recorder import read_jsonl
from robot_team.contracts.reports import TaskType

NAV, INFO, DISPLAY = TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY


@pytest.fixture(scope='module')
def recorded_dir(tmp_path_factory):
    """The run folder of one protocol-brain onboarding episode (the published case)."""
    from robot_team.run.episode import run_episode
    folder = tmp_path_factory.mktemp('onboarding')
    result = run_episode('onboarding', folder, domain_id=reserve_domain_id())
    assert result.report['outcome'] == 'success', json.dumps(result.report['tasks'], indent=1)[:2000]
    return folder


@pytest.fixture(scope='module')
def recorded(recorded_dir):
    """The event record of that episode."""
    return read_jsonl(recorded_dir / 'events.jsonl')


@pytest.fixture(params=['recorded', 'hand-made'])
def record(request):
    """A correct onboarding record: the recorded protocol run, or the hand-made one."""
    if request.param == 'recorded':
        return request.getfixturevalue('recorded')
    return onboarding_record()


def _scores(score):
    return {(view, c.metric.value, c.task.value if c.task else None): c.score
            for view in ('attempted', 'floor') for c in score.view(view).cells}


def test_protocol_run_scores_17_of_17_in_both_views(record):
    score = score_run(record)
    for view in ('attempted', 'floor'):
        result = score.view(view)
        assert (result.points, result.max_points, result.success_rate) == (RUBRIC_POINTS, RUBRIC_POINTS, 1.0), \
            [c for c in result.cells if c.score != 1.0]
        assert len(result.cells) == 19 and all(c.reason for c in result.cells)
        assert [c.task for c in result.cells if c.score is None] == [INFO, DISPLAY]
        assert all(c.metric is Metric.ISSUE_HANDLING for c in result.cells if c.score is None)
    assert score.outcome == 'success'
    assert score.usage.cost_usd == 0.0 and score.usage.prompt_tokens == 0
    assert 'alternative HCW #90' in score.attempted.cell(Metric.ISSUE_HANDLING, NAV).reason
    assert 'nav-1 judged a failure' in score.floor.cell(Metric.COMPLETION_JUDGMENT, NAV).reason


def test_protocol_run_is_true_to_the_world(recorded_dir):
    """The recorded protocol run: 17/17 under the strict criteria too, no false success, a clean audit."""
    score = score_run_dir(recorded_dir)
    for view in ('attempted', 'floor'):
        strict = score.view(view, 'strict')
        assert (strict.points, strict.max_points) == (RUBRIC_POINTS, RUBRIC_POINTS), \
            [c for c in strict.cells if c.score != 1.0]
    assert score.false_successes == [] and score.world_success is True
    assert audit(recorded_dir).clean, audit(recorded_dir)


def test_attempted_view_leaves_out_the_fallback_only_where_it_stood_in():
    """A taken-over navigation robot loses its own cells; the LLM manager that handled its reports does not."""
    events = onboarding_record()
    for e in events:
        if e.actor == 'navigation_robot' and e.kind in ('task_report', 'tool_call'):
            e.data['source'] = 'fallback'
    score = score_run(events)
    robot_cells = [(m, NAV) for m in (Metric.TOOL_USAGE, Metric.LOCAL_REASONING, Metric.REPORT_COMPLIANCE)]
    manager_cells = [(m, NAV) for m in (Metric.DELEGATION_ACCURACY, Metric.COMPLETION_JUDGMENT,
                                        Metric.ISSUE_HANDLING)]
    assert [score.attempted.cell(*c).score for c in robot_cells] == [0.0, 0.0, 0.0]
    assert [score.attempted.cell(*c).score for c in manager_cells] == [1.0, 1.0, 1.0]
    assert score.attempted.points == RUBRIC_POINTS - 3 and score.floor.points == RUBRIC_POINTS
    for e in events:   # and the other way round: a taken-over manager
        e.data.pop('source', None)
        if e.actor == 'manager' and e.kind in ('delegation_requested', 'judgment', 'reflection'):
            e.data['source'] = 'fallback'
    score = score_run(events)
    assert [score.attempted.cell(*c).score for c in robot_cells] == [1.0, 1.0, 1.0]
    assert [score.attempted.cell(*c).score for c in manager_cells] == [0.0, 0.0, 0.0]
    assert score.attempted.cell(Metric.REFLECTION_QUALITY).score == 0.0


EDGE_CASES = {
    # edit: {(view, metric, task): expected score} -- every other cell keeps its full score
    'missing reflection': (without_reflection, {('attempted', 'reflection_quality', None): 0.0,
                                                ('floor', 'reflection_quality', None): 0.0}),
    'placeholder reflection': (placeholder_reflection, {('attempted', 'reflection_quality', None): 0.0,
                                                        ('floor', 'reflection_quality', None): 0.0}),
    'placeholder refused, then a good one': (refused_placeholder_first,
                                             {('attempted', 'reflection_quality', None): 0.0}),
    'manager pre-fetch (tool refused)': (manager_prefetch,
                                         {('attempted', 'delegation_accuracy', 'info_collection'): 0.5,
                                          ('attempted', 'tool_usage', 'info_collection'): 0.0}),
    'pre-fetched result in the delegation': (prefetched_context,
                                             {('attempted', 'delegation_accuracy', 'info_collection'): 0.5}),
    'redo of a succeeded task without reason': (redo_without_reason,
                                                {('attempted', 'completion_judgment', 'info_collection'): 0.5}),
    'failure echoed without action': (failure_echoed, {('attempted', 'issue_handling', 'navigation'): 0.0,
                                                       ('floor', 'issue_handling', 'navigation'): 0.0}),
    'skipped step after the failure': (skipped_step, {('attempted', 'issue_handling', 'navigation'): 0.0}),
    'false success claim': (false_success, {('attempted', 'local_reasoning', 'info_collection'): 0.0,
                                            ('attempted', 'report_compliance', 'info_collection'): 0.0}),
}


@pytest.mark.parametrize('case', list(EDGE_CASES))
def test_edge_case_loses_the_expected_points(record, case):
    edit, expected = EDGE_CASES[case]
    base, score = _scores(score_run(record)), score_run(edit(record))
    got = _scores(score)
    changed = {key: value for key, value in got.items() if value != base[key]}
    assert changed == expected, {k: score.view(k[0]).cell(k[1], k[2]).reason for k in set(changed) | set(expected)}
    for view in ('attempted', 'floor'):
        lost = sum(1.0 - v for k, v in expected.items() if k[0] == view)
        assert score.view(view).points == RUBRIC_POINTS - lost
    for view, metric, task in expected:
        assert score.view(view).cell(metric, task).reason   # says why


def test_a_task_a_humans_abort_closed_before_it_could_start_does_not_apply(record):
    """Closed after the first navigation failed: info and display are N/A (the gate's order rule at the abort).

    Closed after the escort succeeded instead: info collection could have started and was not
    delegated (0), display could not (N/A).
    """
    score = score_run(closed_after(record, 'nav-1'))
    assert score.outcome == 'escalated'
    for view in ('attempted', 'floor'):
        result = score.view(view)
        na = [(c.metric, c.task) for c in result.cells if c.score is None]
        assert {t for _, t in na} == {INFO, DISPLAY} and len(na) == 12, na   # 2 were N/A already
        assert all('abort on esc-1' in c.reason and 'navigation nav-1 failed' in c.reason
                   for c in result.cells if c.score is None and c.metric is not Metric.ISSUE_HANDLING)
        assert result.max_points == 7   # navigation's six cells (its issue escalated) and the reflection
        assert result.cell(Metric.ISSUE_HANDLING, NAV).score == 1.0
    score = score_run(closed_after(record, 'nav-2'))
    for view in ('attempted', 'floor'):
        result = score.view(view)
        assert result.cell(Metric.DELEGATION_ACCURACY, INFO).score == 0.0
        assert result.cell(Metric.TOOL_USAGE, INFO).score == 0.0
        assert {c.task for c in result.cells if c.score is None} == {INFO, DISPLAY}   # info's issue handling
        assert all(c.score is None for c in result.cells if c.task is DISPLAY)
        assert result.max_points == 12
    # not closed by a human: a task never delegated still scores 0
    unclosed = [e for e in closed_after(record, 'nav-1') if e.kind != 'human_decision']
    assert score_run(unclosed).floor.max_points == RUBRIC_POINTS


def test_reasons_name_what_went_wrong(record):
    score = score_run(manager_prefetch(record))
    assert 'lookup_staff_by_badge' in score.attempted.cell(Metric.TOOL_USAGE, INFO).reason
    score = score_run(failure_echoed(record))
    assert 'deadline' in score.floor.cell(Metric.ISSUE_HANDLING, NAV).reason
    score = score_run(redo_without_reason(record))
    assert 'without a reason' in score.attempted.cell(Metric.COMPLETION_JUDGMENT, INFO).reason


def test_llm_cost_and_tokens_are_summed():
    events = onboarding_record()
    for k, robot in enumerate(('manager', 'navigation_robot', 'manager')):
        events.append(TeamEventModel(stamp_s=100 + k, wall_time=0.0, seq=100 + k, actor=robot, kind='llm_request'))
        events.append(TeamEventModel(stamp_s=100 + k, wall_time=0.0, seq=200 + k, actor=robot, kind='llm_reply',
                                     data={'robot': robot, 'model': 'gpt-4o-2024-08-06', 'prompt_tokens': 1000,
                                           'completion_tokens': 50, 'cost_usd': 0.003,
                                           # the endpoint's own usage (llama.cpp: its prompt cache; k=0: none)
                                           'usage': {'prompt_tokens': 1000, 'prompt_tokens_details':
                                                     {'cached_tokens': 400 * k} if k else None}}))
    usage = score_run(events).usage
    assert (usage.requests, usage.replies, usage.prompt_tokens, usage.completion_tokens) == (3, 3, 3000, 150)
    assert usage.cached_prompt_tokens == 400 + 800
    assert usage.cost_usd == pytest.approx(0.009)
    assert usage.cost_by_robot['manager'] == pytest.approx(0.006)
    assert usage.models == ['gpt-4o-2024-08-06']


class _FakeCompletions:
    def __init__(self, content):
        self.content, self.calls = content, []

    def create(self, **kwargs):
        from types import SimpleNamespace
        self.calls.append(kwargs)
        message = SimpleNamespace(content=self.content)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)],
                               usage=SimpleNamespace(prompt_tokens=900, completion_tokens=20))


def _fake_client(content):
    from types import SimpleNamespace
    completions = _FakeCompletions(content)
    return SimpleNamespace(chat=SimpleNamespace(completions=completions)), completions


def test_llm_judge_can_only_lower_the_structural_score():
    client, completions = _fake_client('{"score": 0.5, "reason": "lessons are generic"}')
    judge = LLMReflectionJudge(model='judge-model', client=client)
    score = score_run(onboarding_record(), judge=judge, judge_name='llm')
    cell = score.attempted.cell(Metric.REFLECTION_QUALITY)
    assert (cell.score, score.judge) == (0.5, 'llm') and 'lessons are generic' in cell.reason
    request = json.loads(completions.calls[0]['messages'][1]['content'])
    assert {t['task_id'] for t in request['record']['tasks']} == {'nav-1', 'nav-2', 'info-1', 'display-1'}
    assert judge.requests == 1 and judge.prompt_tokens == 900   # one request for both views
    # a garbage verdict leaves the structural score and is counted
    client, _ = _fake_client('not json')
    judge = LLMReflectionJudge(model='judge-model', client=client)
    assert score_run(onboarding_record(), judge=judge).floor.cell(Metric.REFLECTION_QUALITY).score == 1.0
    assert judge.errors == 1


def test_published_reference_row_in_outputs(tmp_path):
    from robot_team.evaluation.trials import TRIAL_FILE, _trial_spec, run_trials, write_outputs
    for condition, edit in (('baseline', failure_echoed), ('kb', lambda e: e)):
        folder = write_run(tmp_path / condition / 'trial-1', edit(onboarding_record()))
        (folder / TRIAL_FILE).write_text(json.dumps({**_trial_spec('onboarding', 'protocol', condition),
                                                     'complete': True, 'wall_time_s': 1.0}))
    summary = run_trials('onboarding', tmp_path, trials=1)   # both trials exist: reused, no ROS
    assert [r.reused for r in summary.runs] == [True, True]
    assert summary.conditions[0].success_rate['attempted'] == pytest.approx(16 / 17)
    paths = write_outputs(summary, tmp_path)
    markdown = open(paths['summary.md']).read()
    for figure in ('45.29%', '72.94%', '0.0772', '0.1536', 'gpt-4o-2024-08-06', '94.12%', '100.00%'):
        assert figure in markdown
    rows = [line for line in markdown.splitlines() if line.startswith('| Delegation accuracy')]
    assert rows and rows[0].endswith('| 0.333 | 0.733 |')
    assert json.loads(open(paths['eval.json']).read())['reference'] == PUBLISHED_REFERENCE
    metrics = open(paths['metrics.csv']).read()
    assert 'published (gpt-4o-2024-08-06),kb,hand-scored,reflection_quality,0.8' in metrics
    assert open(paths['summary.png'], 'rb').read(8) == b'\x89PNG\r\n\x1a\n'
    # the strict criteria beside the published ones, named, with the false successes
    assert summary.conditions[0].strict_success_rate['attempted'] == pytest.approx(16 / 17)
    assert summary.conditions[1].false_successes == 0
    assert '| Strict success rate (attempted) | Strict success rate (floor) | False successes |' in markdown
    assert 'Baseline (no KB) (strict, attempted)' in markdown and 'None: every success' in markdown
    assert 'this evaluation,kb,floor,success_rate,1.0,onboarding,strict' in metrics
    runs = list(csv.DictReader(open(paths['runs.csv'])))
    assert [(r['points_strict_attempted'], r['false_successes'], r['world_success']) for r in runs] == [
        ('16.0', '0', 'True'), ('17.0', '0', 'True')]
    cells = list(csv.DictReader(open(paths['cells.csv'])))
    assert {r['criteria'] for r in cells} == {'published', 'strict'} and len(cells) == 2 * 2 * 2 * 19
