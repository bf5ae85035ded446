"""``robot-team shift``: a shift file runs on one team and writes shift.json, summary.md, summary.png (issue 27).

One short shift on a real graph (two patients, the second arriving while the first is served, in
another room for another specialty); the generator and the summary's arithmetic are tested
without ROS in ``test_shift_generator.py``.
"""

import json

from matplotlib.image import imread
from typer.testing import CliRunner

from robot_team.cli import app
from robot_team.contracts.config import PatientSpec, load_scenario
from robot_team.evaluation.shift import write_shift


def test_a_two_patient_shift_file_runs_and_scores_every_case(domain_id, tmp_path):
    base = load_scenario('onboarding')
    later = PatientSpec(patient_id='P-0778', room='ER-5', esi_level=1, assigned_hcw_id='41',
                        required_specialty='Nurse', arrival_time_s=20.0, presentation='chest pain')
    shift = base.model_copy(update={'name': 'two-patients', 'arrivals': [later]})
    write_shift(shift, tmp_path / 'shift.yaml')
    out = tmp_path / 'run'
    result = CliRunner().invoke(app, ['shift', '--shift', str(tmp_path / 'shift.yaml'), '--out', str(out),
                                      '--domain-id', str(domain_id)])
    assert result.exit_code == 0, result.output
    content = json.loads((out / 'shift.json').read_text())
    cases = {c['patient_id']: c for c in content['cases']}
    assert {p: (c['outcome'], c['expected_outcome']) for p, c in cases.items()} == {
        'P-0001': ('success', 'success'), 'P-0778': ('success', 'success')}
    # the published rubric per case: every applicable point, as the onboarding episode scores
    assert all(c['attempted'] == c['floor'] == c['rubric_max'] >= 16 for c in cases.values()), cases
    assert cases['P-0778']['started_s'] >= cases['P-0001']['closed_s'] - 1.0   # one case at a time
    assert content['summary']['as_expected'] == 2 and content['summary']['priority_inversions'] == []
    assert (content['cases_at_once'], content['lessons']) == (1, True)   # the conditions it ran under
    busy = content['robots']['navigation_robot']
    assert busy['tasks'] >= 3 and 0 < busy['busy_s'] <= content['sim_time_s']
    assert content['summary']['false_successes'] == []        # the world audit of the whole run
    assert 'P-0778' in (out / 'summary.md').read_text()
    assert '- False successes (world audit): none' in (out / 'summary.md').read_text()
    assert imread(out / 'summary.png').shape[2] in (3, 4)
    # the record read by MCAP's own reader: chunked, compressed and indexed, every event in it
    from mcap.reader import make_reader
    with open(out / 'events.mcap', 'rb') as f:
        summary = make_reader(f).get_summary()
    events = (out / 'events.jsonl').read_text().count('\n')
    assert summary.chunk_indexes and all(c.compression == 'zstd' for c in summary.chunk_indexes)
    [channel] = [c.id for c in summary.channels.values() if c.topic == '/team/events']
    assert summary.statistics.channel_message_counts[channel] == events   # Foxglove's scene and log beside it


def test_the_shift_command_refuses_both_or_neither_source(tmp_path):
    for args in ([], ['--shift', 'x.yaml', '--hours', '1']):
        result = CliRunner().invoke(app, ['shift', *args, '--out', str(tmp_path)])
        assert result.exit_code == 2 and 'shift file' in result.output


def test_eval_shift_scores_every_case_of_each_trial(domain_id, tmp_path):
    base = load_scenario('onboarding')
    later = PatientSpec(patient_id='P-0778', room='ER-5', esi_level=2, assigned_hcw_id='41',
                        required_specialty='Nurse', arrival_time_s=10.0, presentation='chest pain')
    write_shift(base.model_copy(update={'name': 'two-at-once', 'arrivals': [later], 'cases_at_once': 0}),
                tmp_path / 'shift.yaml')
    out = tmp_path / 'eval'
    result = CliRunner().invoke(app, ['eval', '--shift', str(tmp_path / 'shift.yaml'), '--trials', '1', '--condition',
                                      'baseline', '--chance', '0', '--out', str(out), '--domain-id', str(domain_id),
                                      '--quiet'])
    assert result.exit_code == 0, result.output
    [run] = json.loads((out / 'eval.json').read_text())['runs']
    assert [c['patient_id'] for c in run['cases']] == ['P-0001', 'P-0778']
    assert all(c['attempted'] == c['floor'] == c['rubric_max'] >= 16 for c in run['cases']), run['cases']
    assert json.loads((out / 'baseline' / 'trial-1' / 'cases.json').read_text()) == run['cases']
    assert 'P-0778 ' in result.output
