"""``robot-team eval``: trials of the protocol brain through the CLI, the outputs, and resuming."""

import csv
import json
import re
import socket

import pytest
from ros_helpers import reserve_domain_id, reserve_domain_ids
from typer.testing import CliRunner

from robot_team.cli import app
from robot_team.evaluation import parallel
from robot_team.evaluation.trials import run_trials


def test_eval_writes_tables_and_plot_then_resumes(tmp_path):
    out = tmp_path / 'eval'
    args = ['eval', '--trials', '2', '--condition', 'baseline', '--brain', 'protocol', '--scenario', 'onboarding',
            '--out', str(out), '--domain-id', str(reserve_domain_id()), '--quiet', '--chance', '0']
    runner = CliRunner()
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    for name in ('eval.json', 'runs.csv', 'cells.csv', 'metrics.csv', 'summary.md', 'summary.png'):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / 'eval.json').read_text())
    runs = [(r['condition'], r['trial'], r['reused']) for r in summary['runs']]
    assert runs == [('baseline', 1, False), ('baseline', 2, False)]
    for run in summary['runs']:
        assert run['score']['outcome'] == 'success'
        assert run['score']['attempted']['points'] == run['score']['floor']['points'] == 17.0
        assert run['score']['strict_attempted']['points'] == run['score']['strict_floor']['points'] == 17.0
        assert run['score']['false_successes'] == [] and run['score']['world_success'] is True
    condition = summary['conditions'][0]
    assert condition['success_rate'] == {'attempted': 1.0, 'floor': 1.0} and condition['cost_per_run_usd'] == 0.0
    assert summary['reference']['success_rate'] == {'baseline': 0.4529, 'kb': 0.7294}
    rows = list(csv.DictReader((out / 'runs.csv').open()))
    assert [r['points_attempted'] for r in rows] == ['17.0', '17.0']
    assert [(r['points_strict_floor'], r['false_successes']) for r in rows] == [('17.0', '0')] * 2
    assert '| - | Published, Baseline (no KB) (gpt-4o-2024-08-06) | 5 | - | 45.29%' in (out / 'summary.md').read_text()
    expected = [(r['scenario'], r['expected_outcome'], r['as_expected']) for r in rows]
    assert expected == [('onboarding', 'success', 'True')] * 2
    assert summary['scenarios'] == ['onboarding'] and summary['conditions'][0]['as_expected'] == 2
    assert (out / 'summary.png').read_bytes()[:4] == b'\x89PNG'
    events = (out / 'baseline' / 'trial-1' / 'events.jsonl').stat().st_mtime_ns

    again = runner.invoke(app, args)   # everything already ran: reused, nothing rerun
    assert again.exit_code == 0, again.output
    assert '2 trials (2 reused)' in again.output
    assert (out / 'baseline' / 'trial-1' / 'events.jsonl').stat().st_mtime_ns == events
    assert [r['reused'] for r in json.loads((out / 'eval.json').read_text())['runs']] == [True, True]


def test_eval_refuses_unknown_condition(tmp_path):
    result = CliRunner().invoke(app, ['eval', '--condition', 'nope', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and 'unknown condition' in result.output


def test_eval_across_scenarios_runs_each_scenario_and_checks_its_expected_outcome(tmp_path):
    out = tmp_path / 'eval'
    args = ['eval', '--trials', '1', '--condition', 'baseline', '--brain', 'protocol', '--scenario', 'onboarding',
            '--scenario', 'unknown_badge', '--out', str(out), '--domain-id', str(reserve_domain_id()), '--quiet',
            '--chance', '0']
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / 'eval.json').read_text())
    assert summary['scenarios'] == ['onboarding', 'unknown_badge']
    runs = [(r['scenario'], r['condition'], r['trial'], r['expected_outcome'], r['score']['outcome'])
            for r in summary['runs']]
    assert runs == [('onboarding', 'baseline', 1, 'success', 'success'),
                    ('unknown_badge', 'baseline', 1, 'escalated', 'escalated')]
    assert [(c['scenario'], c['condition'], c['runs'], c['as_expected']) for c in summary['conditions']] == [
        ('onboarding', 'baseline', 1, 1), ('unknown_badge', 'baseline', 1, 1)]
    badge = summary['runs'][1]['score']   # the human's abort closed the episode before display could start
    for view in ('attempted', 'floor'):
        cells = [c for c in badge[view]['cells'] if c['task'] == 'display']
        assert len(cells) == 6 and all(c['score'] is None for c in cells), cells
        assert all('closed the episode' in c['reason'] for c in cells if c['metric'] != 'issue_handling')
        assert badge[view]['max_points'] == 11, badge[view]['cells']   # navigation's 5, info's 5, the reflection
    for scenario in ('onboarding', 'unknown_badge'):     # several scenarios: DIR/<scenario>/<condition>/trial-<k>
        trial = json.loads((out / scenario / 'baseline' / 'trial-1' / 'trial.json').read_text())
        assert trial['scenario'] == scenario and trial['outcome'] in ('success', 'escalated')
    rows = list(csv.DictReader((out / 'runs.csv').open()))
    assert [(r['scenario'], r['outcome'], r['as_expected']) for r in rows] == [
        ('onboarding', 'success', 'True'), ('unknown_badge', 'escalated', 'True')]
    markdown = (out / 'summary.md').read_text()
    assert '| unknown_badge | Baseline (no KB) | 1 | 1/1 (escalated) |' in markdown
    assert '| unknown_badge | baseline/trial-1 | escalated | escalated | 11 / 11 of 11 | 11 / 11 of 11 | 0 |' \
        in markdown
    assert [(c['scenario'], c['false_successes'], c['strict_success_rate']['floor']) for c in summary['conditions']] \
        == [('onboarding', 0, 1.0), ('unknown_badge', 0, 1.0)]
    assert 'unknown_badge: Baseline (no KB) (attempted)' in markdown      # Table IV: a column per scenario
    assert {r['scenario'] for r in csv.DictReader((out / 'cells.csv').open())} == {'onboarding', 'unknown_badge'}

    # the same as one comma list: every trial reused
    again = CliRunner().invoke(app, [*args[:7], '--scenario', 'onboarding,unknown_badge', *args[11:]])
    assert again.exit_code == 0, again.output
    assert '2 trials (2 reused)' in again.output


def test_eval_scenario_all_is_every_listed_scenario_and_an_unknown_one_is_refused(tmp_path):
    from robot_team.contracts.config import scenario_names
    from robot_team.evaluation.eval_command import expand_scenarios
    assert expand_scenarios(['all']) == scenario_names() and len(scenario_names()) >= 4
    assert expand_scenarios(['no_path,onboarding', 'onboarding']) == ['no_path', 'onboarding']
    assert expand_scenarios(None) == ['onboarding']
    result = CliRunner().invoke(app, ['eval', '--scenario', 'onboarding,nope', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and 'nope' in result.output
    result = CliRunner().invoke(app, ['eval', '--model', '1.5b', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and '--brain local' in ' '.join(result.output.split())


def _scores(out, condition: str) -> dict:
    """The rubric of a trial's score.json: outcome, points, decisions and every cell's score, per view."""
    score = json.loads((out / condition / 'trial-1' / 'score.json').read_text())
    views = {view: (score[view]['points'] if 'points' in score[view] else None,
                    [(c['metric'], c['task'], c['score']) for c in score[view]['cells']])
             for view in ('attempted', 'floor')}
    return {'outcome': score['outcome'], 'decisions': score['decisions'], **views}


def test_eval_jobs_2_scores_as_jobs_1_each_team_in_its_own_namespace_and_domain(tmp_path):
    base = reserve_domain_ids(2)
    args = ['eval', '--trials', '1', '--condition', 'baseline', '--condition', 'kb', '--brain', 'protocol',
            '--scenario', 'onboarding', '--domain-id', str(base), '--quiet', '--chance', '0']
    one = CliRunner().invoke(app, [*args, '--out', str(tmp_path / 'one')])
    assert one.exit_code == 0, one.output
    two = CliRunner().invoke(app, [*args, '--out', str(tmp_path / 'two'), '--jobs', '2'])
    assert two.exit_code == 0, two.output
    assert '2 trials (0 reused, 2 at a time)' in ' '.join(two.output.split())
    for condition in ('baseline', 'kb'):
        assert _scores(tmp_path / 'two', condition) == _scores(tmp_path / 'one', condition)
        assert _scores(tmp_path / 'two', condition)['attempted'][1]      # cells were compared
    reports = {c: json.loads((tmp_path / 'two' / c / 'trial-1' / 'report.json').read_text())
               for c in ('baseline', 'kb')}
    assert {(r['namespace'], r['domain_id']) for r in reports.values()} == {('/t1', base), ('/t2', base + 1)}
    trial = json.loads((tmp_path / 'two' / 'kb' / 'trial-1' / 'trial.json').read_text())
    assert trial['namespace'] == '/t2' and trial['domain_id'] == reports['kb']['domain_id']
    sequential = json.loads((tmp_path / 'one' / 'kb' / 'trial-1' / 'report.json').read_text())
    assert (sequential['namespace'], sequential['domain_id']) == ('/', base)
    summary = json.loads((tmp_path / 'two' / 'eval.json').read_text())
    runs = [(r['condition'], r['trial'], r['reused']) for r in summary['runs']]
    assert runs == [('baseline', 1, False), ('kb', 1, False)]
    assert summary['jobs'] == 2 and summary['scheduler'] is None
    again = CliRunner().invoke(app, [*args, '--out', str(tmp_path / 'two'), '--jobs', '2'])   # all reused
    assert again.exit_code == 0 and '2 trials (2 reused, 2 at a time)' in ' '.join(again.output.split())


def test_eval_on_a_scheduler_reports_a_failed_trial_and_keeps_the_others(tmp_path):
    distributed = pytest.importorskip('distributed')
    out = tmp_path / 'eval'
    (out / 'kb').mkdir(parents=True)
    (out / 'kb' / 'trial-1').write_text('a file where the trial folder goes: its episode fails in the worker')
    base = reserve_domain_ids(2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        result = CliRunner().invoke(app, ['eval', '--trials', '1', '--condition', 'baseline', '--condition', 'kb',
                                          '--scenario', 'onboarding', '--domain-id', str(base), '--jobs', '2',
                                          '--scheduler', cluster.scheduler_address, '--out', str(out), '--quiet',
                                          '--chance', '0'])
    output = ' '.join(result.output.split())
    assert result.exit_code == 1, result.output
    assert '1 trial(s) failed: kb trial 1: FileExistsError' in output and 'finished trials are kept' in output
    trial = json.loads((out / 'baseline' / 'trial-1' / 'trial.json').read_text())   # the other trial finished
    assert trial['complete'] and trial['outcome'] == 'success' and trial['namespace'] == '/t1'
    assert json.loads((out / 'baseline' / 'trial-1' / 'score.json').read_text())['outcome'] == 'success'


def test_eval_jobs_and_scheduler_refuse_bad_input(tmp_path, monkeypatch):
    runner = CliRunner()
    result = runner.invoke(app, ['eval', '--jobs', '0', '--out', str(tmp_path), '--quiet'])
    text = ' '.join(re.sub(r'\x1b\[[0-9;]*m', '', result.output).split())    # typer's error box may be styled
    assert result.exit_code == 2 and "Invalid value for '--jobs'" in text and 'greater than or equal to 1' in text
    result = runner.invoke(app, ['eval', '--jobs', '2', '--domain-id', '232', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2
    assert 'needs ROS domain IDs 232 to 233: expected them within 0 to 232' in ' '.join(result.output.split())
    with socket.socket() as sock:        # a port no scheduler listens on
        sock.bind(('127.0.0.1', 0))
        address = f'tcp://127.0.0.1:{sock.getsockname()[1]}'
    monkeypatch.setattr(parallel, 'SCHEDULER_TIMEOUT_S', 1.0)
    for bad in (address, 'no-port-here'):
        result = runner.invoke(app, ['eval', '--scheduler', bad, '--trials', '1', '--condition', 'baseline',
                                     '--out', str(tmp_path / 'eval'), '--quiet', '--chance', '0'])
        output = ' '.join(result.output.split())
        assert result.exit_code == 2, result.output
        assert f"--scheduler '{bad}': could not connect to a Dask scheduler there" in output
    assert not (tmp_path / 'eval' / 'baseline' / 'trial-1' / 'trial.json').exists()
    with pytest.raises(ValueError, match="loopback only"):
        run_trials('onboarding', tmp_path, brain='local', scheduler=address)
    with pytest.raises(ValueError, match='on_event cannot be used with parallel trials'):
        run_trials('onboarding', tmp_path, jobs=2, on_event=print)


def _write_trial(folder, spec, events):
    """A finished trial in ``folder``: its run folder and its trial.json (reused by run_trials: no ROS)."""
    from rubric_records import write_run
    from robot_team.evaluation.trials import TRIAL_FILE
    write_run(folder, events, spec['scenario'])
    (folder / TRIAL_FILE).write_text(json.dumps({**spec, 'complete': True, 'wall_time_s': 1.0}))


def test_a_chance_row_and_the_margin_over_it_beside_every_score(tmp_path):
    from rubric_records import false_success, onboarding_record, without_reflection

    from robot_team.evaluation.rubric import score_run
    from robot_team.evaluation.trials import _trial_spec, write_outputs
    for k in (1, 2):
        _write_trial(tmp_path / 'kb' / f'trial-{k}', _trial_spec('onboarding', 'protocol', 'kb'), onboarding_record())
    chance = {1: without_reflection(onboarding_record()), 2: false_success(onboarding_record())}
    for k, events in chance.items():   # DIR/chance/<condition>/trial-<k>, brain random with seed k
        _write_trial(tmp_path / 'chance' / 'kb' / f'trial-{k}',
                     _trial_spec('onboarding', 'random', 'kb', 'lockstep', seed=k), events)
    summary = run_trials('onboarding', tmp_path, conditions=['kb'], trials=2, chance=2)   # every trial reused
    assert [(r.trial, r.reused, r.chance, r.seed) for r in summary.runs] == [(1, True, False, None),
                                                                             (2, True, False, None)]
    assert [(r.trial, r.reused, r.chance, r.seed, r.brain) for r in summary.chance_runs] == [
        (1, True, True, 1, 'random'), (2, True, True, 2, 'random')]
    expected = {view: sum(score_run(e).view(view).points for e in chance.values()) / 2 for view in
                ('attempted', 'floor')}
    assert expected['attempted'] < 17
    kb = summary.conditions[0]
    assert kb.points_mean == {'attempted': 17.0, 'floor': 17.0} and kb.chance_runs == 2
    assert kb.chance_points_mean == pytest.approx(expected)
    assert kb.margin_points == pytest.approx({view: 17.0 - expected[view] for view in expected})
    assert kb.margin_success_rate['attempted'] == pytest.approx(1.0 - summary.chance[0].success_rate['attempted'])
    paths = write_outputs(summary, tmp_path)
    markdown = open(paths['summary.md']).read()
    assert '## Margin over chance (the random chooser)' in markdown
    margin = f"**{17.0 - expected['attempted']:+.2f}**"
    assert f"| onboarding | With KB | 2 | 2 | 17.00 | {expected['attempted']:.2f} | {margin} |" in markdown
    assert '| onboarding | chance/kb/trial-2 | 2 |' in markdown          # the chance runs, with their seeds
    assert '45.29%' in markdown                                          # the published reference row stays
    rows = list(csv.DictReader(open(paths['runs.csv'])))
    assert [(r['chance'], r['brain'], r['seed']) for r in rows] == [
        ('False', 'protocol', ''), ('False', 'protocol', ''), ('True', 'random', '1'), ('True', 'random', '2')]
    metrics = list(csv.DictReader(open(paths['metrics.csv'])))
    found = {(m['source'], m['view'], m['metric']): float(m['mean']) for m in metrics
             if m['metric'] in ('points_mean', 'success_rate') and m['condition'] == 'kb'}
    for view in ('attempted', 'floor'):
        assert found[('this evaluation', view, 'points_mean')] == 17.0
        assert found[('chance (random chooser)', view, 'points_mean')] == pytest.approx(expected[view], abs=1e-4)
        assert found[('margin over chance', view, 'points_mean')] == pytest.approx(17.0 - expected[view], abs=1e-4)
    assert {r['chance'] for r in csv.DictReader(open(paths['cells.csv']))} == {'False', 'True'}
    saved = json.loads(open(paths['eval.json']).read())
    assert saved['chance_trials'] == 2 and saved['conditions'][0]['margin_points']['floor'] == pytest.approx(
        17.0 - expected['floor'])
    # without the chance row: the same tables, a line saying so; the chance trials stay on disk
    plain = run_trials('onboarding', tmp_path, conditions=['kb'], trials=2)
    assert plain.conditions[0].margin_points is None and not plain.chance_runs
    assert 'No chance row (--chance 0).' in open(write_outputs(plain, tmp_path / 'plain')['summary.md']).read()


def test_the_random_chooser_evaluated_has_no_chance_row_and_a_trial_of_another_seed_is_not_reused(tmp_path):
    from rubric_records import onboarding_record

    from robot_team.evaluation.trials import _trial_spec, completed_trial, write_outputs
    spec = _trial_spec('onboarding', 'random', 'baseline', 'lockstep', seed=1)
    assert spec['model'] == 'chance-seed-1'
    _write_trial(tmp_path / 'baseline' / 'trial-1', spec, onboarding_record())
    summary = run_trials('onboarding', tmp_path, conditions=['baseline'], trials=1, brain='random')
    assert summary.runs[0].reused and summary.runs[0].seed == 1 and not summary.chance
    write_outputs(summary, tmp_path)
    assert 'This evaluation is the chance baseline' in (tmp_path / 'summary.md').read_text()
    assert completed_trial(tmp_path / 'baseline' / 'trial-1', _trial_spec(
        'onboarding', 'random', 'baseline', 'lockstep', seed=2)) is None   # seed 2 would run again
    with pytest.raises(ValueError, match='the random chooser is the chance baseline itself'):
        run_trials('onboarding', tmp_path, brain='random', chance=1)
    with pytest.raises(ValueError, match='--chance'):
        run_trials('onboarding', tmp_path, chance=-1)
