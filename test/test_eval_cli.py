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
    assert '| Published, Baseline (no KB) (gpt-4o-2024-08-06) | 5 | 45.29%' in (out / 'summary.md').read_text()
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
