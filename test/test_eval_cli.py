"""``robot-team eval``: trials of the protocol brain through the CLI, the outputs, and resuming."""

import csv
import json

from ros_helpers import reserve_domain_id
from typer.testing import CliRunner

from robot_team.cli import app


def test_eval_writes_tables_and_plot_then_resumes(tmp_path):
    out = tmp_path / 'eval'
    args = ['eval', '--trials', '2', '--condition', 'baseline', '--brain', 'protocol', '--scenario', 'onboarding',
            '--out', str(out), '--domain-id', str(reserve_domain_id()), '--quiet']
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
    condition = summary['conditions'][0]
    assert condition['success_rate'] == {'attempted': 1.0, 'floor': 1.0} and condition['cost_per_run_usd'] == 0.0
    assert summary['reference']['success_rate'] == {'baseline': 0.4529, 'kb': 0.7294}
    rows = list(csv.DictReader((out / 'runs.csv').open()))
    assert [r['points_attempted'] for r in rows] == ['17.0', '17.0']
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
            '--scenario', 'unknown_badge', '--out', str(out), '--domain-id', str(reserve_domain_id()), '--quiet']
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
    for scenario in ('onboarding', 'unknown_badge'):     # several scenarios: DIR/<scenario>/<condition>/trial-<k>
        trial = json.loads((out / scenario / 'baseline' / 'trial-1' / 'trial.json').read_text())
        assert trial['scenario'] == scenario and trial['outcome'] in ('success', 'escalated')
    rows = list(csv.DictReader((out / 'runs.csv').open()))
    assert [(r['scenario'], r['outcome'], r['as_expected']) for r in rows] == [
        ('onboarding', 'success', 'True'), ('unknown_badge', 'escalated', 'True')]
    markdown = (out / 'summary.md').read_text()
    assert '| unknown_badge | Baseline (no KB) | 1 | 1/1 (escalated) |' in markdown
    assert '| unknown_badge | baseline/trial-1 | escalated | escalated |' in markdown
    assert 'unknown_badge: Baseline (no KB) (attempted)' in markdown      # Table IV: a column per scenario
    assert {r['scenario'] for r in csv.DictReader((out / 'cells.csv').open())} == {'onboarding', 'unknown_badge'}

    # the same as one comma list: every trial reused
    again = CliRunner().invoke(app, [*args[:7], '--scenario', 'onboarding,unknown_badge', *args[11:]])
    assert again.exit_code == 0, again.output
    assert '2 trials (2 reused)' in again.output


def test_eval_scenario_all_is_every_listed_scenario_and_an_unknown_one_is_refused(tmp_path):
    from robot_team.config import scenario_names
    from robot_team.evaluation.cli import expand_scenarios
    assert expand_scenarios(['all']) == scenario_names() and len(scenario_names()) >= 4
    assert expand_scenarios(['no_path,onboarding', 'onboarding']) == ['no_path', 'onboarding']
    assert expand_scenarios(None) == ['onboarding']
    result = CliRunner().invoke(app, ['eval', '--scenario', 'onboarding,nope', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and 'nope' in result.output
    result = CliRunner().invoke(app, ['eval', '--model', '1.5b', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and '--brain local' in ' '.join(result.output.split())
