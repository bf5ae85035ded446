"""The ground truth of a run and the strict rubric: the successes a team accepts that the world contradicts.

Hand-made records of the onboarding scenario (``rubric_records``), written as run folders with the
staff directory and scenario they ran with; no ROS. Each failure mode the published criteria do not
see (issue 26) must be a false success of :mod:`robot_team.evaluation.truth` and cost strict points,
while the published cells stay as they were.
"""

import json

import pytest
from rubric_records import (
    EDITS_SEEN_BY_THE_PUBLISHED_RUBRIC, check_in_failed, made_up_screen, nobody_escorted, onboarding_record,
    world_silent, write_run)

from robot_team.evaluation.rubric import CRITERIA, RUBRIC_POINTS, Metric, score_run, score_run_dir
from robot_team.evaluation.truth import (
    ARRIVAL_SLACK_S, HumanChoice, TruthInputError, audit, false_successes, load_run, load_truth, team_differences)
from robot_team.evaluation.truth import ScreenMember as Member
from robot_team.recorder import write_jsonl
from robot_team.contracts.reports import TaskType

NAV, INFO, DISPLAY = TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY
VIEWS = ('attempted', 'floor')


def _cells(view_score):
    return {(c.metric.value, c.task.value if c.task else None): c.score for c in view_score.cells}


def test_a_correct_run_has_no_false_success_and_full_marks_under_both_criteria(tmp_path):
    folder = write_run(tmp_path / 'run', onboarding_record())
    truth = load_truth(folder)
    assert [(t.task_id, t.succeeded) for t in truth.tasks] == [
        ('nav-1', False), ('nav-2', True), ('info-1', True), ('display-1', True)]
    assert 'never acknowledged' in truth.task('nav-1').reason    # #80 is busy: the failure the team reported
    assert truth.task('info-1').hcw_id == '90' and truth.task('info-1').staff_record.name == 'Dr. Lucas Brennan'
    assert [m.hcw_id for m in truth.task('display-1').care_team] == ['41', '55', '90']
    assert truth.episode.succeeded and truth.episode.outcome == 'success'
    assert false_successes(truth) == [] and false_successes(folder) == []
    score = score_run_dir(folder)
    for criteria in CRITERIA:
        for view in VIEWS:
            result = score.view(view, criteria)
            assert (result.criteria, result.points, result.max_points) == (criteria, RUBRIC_POINTS, RUBRIC_POINTS)
    assert score.false_successes == [] and score.world_success is True
    assert audit(folder).clean


FAILURES = {
    # the team accepts it: (edit, false successes (task IDs, '' the episode), strict cells that lose points)
    'navigation success, nobody acknowledged, followed or came': (
        nobody_escorted, ['nav-2', 'info-1', ''],
        {('completion_judgment', 'navigation'): 0.0, ('local_reasoning', 'navigation'): 0.0,
         ('report_compliance', 'navigation'): 0.0, ('completion_judgment', 'info_collection'): 0.0,
         ('local_reasoning', 'info_collection'): 0.0, ('report_compliance', 'info_collection'): 0.0,
         ('reflection_quality', None): 0.5}),
    'a technician escorted for a patient who needs a physician': (
        lambda _: onboarding_record('55'), [''],
        {('delegation_accuracy', 'navigation'): 0.0, ('issue_handling', 'navigation'): 0.0}),
    'info success although record_check_in failed': (
        check_in_failed, ['info-1', 'display-1', ''],
        {('completion_judgment', 'info_collection'): 0.0, ('local_reasoning', 'info_collection'): 0.0,
         ('report_compliance', 'info_collection'): 0.0, ('completion_judgment', 'display'): 0.0,
         ('local_reasoning', 'display'): 0.0, ('report_compliance', 'display'): 0.0,
         ('reflection_quality', None): 0.5}),
    "info success with another HCW's badge": (
        lambda _: onboarding_record(badge_of='91'), ['info-1', ''],
        {('completion_judgment', 'info_collection'): 0.0, ('local_reasoning', 'info_collection'): 0.0,
         ('report_compliance', 'info_collection'): 0.0, ('reflection_quality', None): 0.5}),
    'a screen showing made-up entries': (
        made_up_screen, ['display-1', ''],
        {('completion_judgment', 'display'): 0.0, ('local_reasoning', 'display'): 0.0,
         ('report_compliance', 'display'): 0.0, ('reflection_quality', None): 0.5}),
    'an episode success with none of it true': (
        world_silent, ['nav-2', 'info-1', 'display-1', ''],
        {(m, t): 0.0 for m in ('completion_judgment', 'local_reasoning', 'report_compliance')
         for t in ('navigation', 'info_collection', 'display')} | {('reflection_quality', None): 0.5}),
}


@pytest.mark.parametrize('case', list(FAILURES))
def test_an_accepted_success_the_world_contradicts_is_flagged_and_costs_strict_points(tmp_path, case):
    edit, flagged, lost = FAILURES[case]
    base = score_run_dir(write_run(tmp_path / 'base', onboarding_record()))
    folder = write_run(tmp_path / 'edited', edit(onboarding_record()))
    score = score_run_dir(folder)
    assert score.outcome == 'success'   # the team finished, judging every last task a success
    assert [f.task_id for f in score.false_successes] == flagged, score.false_successes
    assert all(f.reason for f in score.false_successes)
    assert score.world_success is False and not audit(folder).clean
    for view in VIEWS:
        published, strict = _cells(score.view(view)), _cells(score.view(view, 'strict'))
        assert published == _cells(base.view(view)), view      # the published criteria do not see it
        assert {k: v for k, v in strict.items() if v != published[k]} == lost, view
        assert score.view(view, 'strict').points == RUBRIC_POINTS - sum(1.0 - v for v in lost.values())
        for metric, task in lost:
            assert score.view(view, 'strict').cell(metric, task).reason.startswith('world: ')


def test_reasons_name_what_the_world_shows(tmp_path):
    score = score_run_dir(write_run(tmp_path / 'tech', onboarding_record('55')))
    floor = score.view('floor', 'strict')
    assert 'HCW #55 is a Technician; the patient needs a Physician' in floor.cell('delegation_accuracy', NAV).reason
    assert '#90 was available' in floor.cell('issue_handling', NAV).reason
    assert 'no HCW of the required specialty (Physician)' in score.false_successes[0].reason
    truth = load_truth(write_run(tmp_path / 'badge', onboarding_record(badge_of='91')))
    assert 'no check-in of #90 at ER-12' in truth.task('info-1').reason
    truth = load_truth(write_run(tmp_path / 'screen', made_up_screen(onboarding_record())))
    assert "'Working on it.'" in truth.task('display-1').reason
    assert 'not shown: #41 (Sofia Alvarez), #55 (Priya Raman), #90' in truth.episode.reason


def test_a_wrong_badge_read_at_the_door_is_no_info_success(tmp_path):
    events = onboarding_record()
    for e in events:
        if e.kind == 'sim' and e.data.get('what') == 'badge_scan':
            e.data['badge_id'] = 'ED-9999'    # the reader read something else than #90's badge
    truth = load_truth(write_run(tmp_path / 'run', events))
    assert not truth.task('info-1').succeeded
    assert "read badge 'ED-9999', not #90's badge 'ED-0090'" in truth.task('info-1').reason


def test_an_arrival_after_the_slack_is_no_escort(tmp_path):
    events = onboarding_record()
    arrived = next(e for e in events if e.kind == 'sim' and e.data.get('what') == 'hcw_arrived')
    report = next(e for e in events if e.kind == 'task_report' and e.data['task_id'] == 'nav-2')
    arrived.data['sim_time_s'] = report.stamp_s + ARRIVAL_SLACK_S - 1.0
    assert load_truth(write_run(tmp_path / 'in-time', events)).task('nav-2').succeeded
    arrived.data['sim_time_s'] = report.stamp_s + ARRIVAL_SLACK_S + 1.0
    truth = load_truth(write_run(tmp_path / 'late', events))
    assert not truth.task('nav-2').succeeded and 'did not arrive in ER-12' in truth.task('nav-2').reason


def test_hcw_choice_follows_specialty_shift_availability_and_a_humans_choice(tmp_path):
    truth = load_truth(write_run(tmp_path / 'run', onboarding_record()))
    busy = truth.hcw_choice('80', 1.0)     # assigned, busy (the scenario's override; then the RTLS says so)
    assert busy.suitable and not busy.available and busy.availability == 'busy'
    assert truth.hcw_choice('80', 100.0).availability_source == 'rtls'
    assert truth.hcw_choice('90', 1.0).available
    tech = truth.hcw_choice('55', 1.0)
    assert not tech.suitable and 'Technician' in tech.reason
    assert not truth.hcw_choice('999', 1.0).suitable and not truth.hcw_choice('', 1.0).suitable
    assert truth.alternatives(10.0, excluding={'80'}) == ['90']     # #91 is busy running triage
    truth.staff['90'].availability = 'off_shift'
    truth.seen = [s for s in truth.seen if s.hcw_id != '90']
    assert not truth.hcw_choice('90', 1.0).suitable and 'off shift' in truth.hcw_choice('90', 1.0).reason
    truth.human_choices.append(HumanChoice(at_s=5.0, hcw_id='55', escalation_id='esc-1'))   # a person chose #55
    assert truth.hcw_choice('55', 6.0).suitable and truth.hcw_choice('55', 6.0).human_choice
    assert not truth.hcw_choice('55', 1.0).suitable      # not before the human chose them


def test_team_differences_compare_ids_names_roles_and_shown_specialties():
    team = [Member(hcw_id='41', name='Sofia Alvarez', role='Primary nurse', specialty='Nurse')]
    assert team_differences([Member(hcw_id='41', name=' sofia alvarez ', role='PRIMARY NURSE')], team) == []
    assert team_differences([Member(hcw_id='41', name='Sofia Alvarez', role='Primary nurse',
                                    specialty='Physician')], team)
    assert team_differences([], team) == ['an empty care team shown'] and team_differences(None, team)
    assert 'shown twice' in ' '.join(team_differences(team * 2, team))
    assert team_differences(team, []) == ['the directory gives the room no care team']


def test_the_strict_criteria_never_score_above_the_published_ones(tmp_path):
    for k, edit in enumerate(EDITS_SEEN_BY_THE_PUBLISHED_RUBRIC):
        score = score_run_dir(write_run(tmp_path / f'run-{k}', edit(onboarding_record())))
        for view in VIEWS:
            published, strict = _cells(score.view(view)), _cells(score.view(view, 'strict'))
            assert all(strict[key] is None if published[key] is None else strict[key] <= published[key]
                       for key in published), (edit.__name__, view)


def test_without_its_ground_truth_a_run_is_scored_on_the_published_criteria_only():
    score = score_run(onboarding_record())
    assert score.strict_attempted is None and score.view('floor', 'strict') is None
    assert score.false_successes is None and score.world_success is None
    with pytest.raises(ValueError, match='unknown criteria'):
        score.view('floor', 'lenient')


def test_audit_finds_unanswered_calls_and_requests_and_a_plain_timeout(tmp_path):
    events = onboarding_record()
    result = next(i for i, e in enumerate(events) if e.kind == 'tool_result')
    request = max(i for i, e in enumerate(events) if e.kind == 'delegation_requested')
    delegation = next(i for i, e in enumerate(events) if e.kind == 'delegation' and i > request)
    kept = [e for i, e in enumerate(events) if i not in (result, delegation) and e.kind != 'episode_finished']
    found = audit(write_run(tmp_path / 'run', kept))
    assert found.timeout and found.outcome == 'timeout' and not found.clean
    assert len(found.unanswered_tool_calls) == 1 and 'locate_staff in nav-1' in found.unanswered_tool_calls[0]
    assert len(found.unanswered_requests) == 1 and 'display' in found.unanswered_requests[0]


def test_bad_input_is_a_clear_error_naming_the_file(tmp_path):
    folder = write_run(tmp_path / 'run', onboarding_record())
    (folder / 'staff.sqlite').unlink()
    with pytest.raises(TruthInputError, match=r'staff\.sqlite.*no such file'):
        load_run(folder)
    folder = write_run(tmp_path / 'run', onboarding_record())
    (folder / 'scenario.json').write_text(json.dumps({'name': 'x'}))
    with pytest.raises(TruthInputError, match=r'scenario\.json: expected a scenario'):
        load_truth(folder)
    folder = write_run(tmp_path / 'run', onboarding_record())
    (folder / 'events.jsonl').write_text('{"not": "an event"}\n')
    with pytest.raises(TruthInputError, match=r'events\.jsonl: expected one team event'):
        audit(folder)
    events = onboarding_record()
    next(e for e in events if e.kind == 'sim').data['sim_time_s'] = 'soon'
    write_jsonl(events, folder / 'events.jsonl')
    with pytest.raises(TruthInputError, match=r"events\.jsonl: sim event of hospital_systems.*'soon'"):
        load_truth(folder)
    write_run(folder, onboarding_record())
    scenario = json.loads((folder / 'scenario.json').read_text())
    scenario['staff_directory'] = str(tmp_path / 'gone.yaml')
    (folder / 'scenario.json').write_text(json.dumps(scenario))
    with pytest.raises(TruthInputError, match='staff seed.*gone.yaml'):
        load_truth(folder)
    with pytest.raises(TruthInputError, match=r'events\.jsonl: no such file'):
        load_truth(tmp_path / 'nowhere')


def test_metric_names_of_the_failure_table_are_the_rubrics():
    names = {m.value for m in Metric}
    assert {metric for _, _, lost in FAILURES.values() for metric, _ in lost} <= names
    assert {t for _, _, lost in FAILURES.values() for _, t in lost} <= {None, NAV.value, INFO.value, DISPLAY.value}


def test_an_escort_of_another_case_served_at_once_is_not_this_cases(tmp_path):
    """Cases at once: info-1's escorted HCW is its own case's (#90), not that of a later escort of another case."""
    events = onboarding_record()
    for e in events:
        if e.kind in ('delegation', 'delegation_authorized') and e.data.get('task_id'):
            e.data['case_id'] = 'P-0001'
    nav2 = [i for i, e in enumerate(events) if e.data.get('task_id') == 'nav-2']
    info1 = next(i for i, e in enumerate(events) if e.kind == 'delegation' and e.data.get('task_id') == 'info-1')
    other = []   # the same escort, as another case's: #41 to ER-3, between nav-2 and info-1
    for e in events[nav2[0]:info1]:
        text = json.dumps(e.data).replace('"nav-2"', '"P-0777/nav-1"').replace('"90"', '"41"') \
            .replace('ER-12', 'ER-3').replace('"P-0001"', '"P-0777"')
        other.append(e.model_copy(update={'data': json.loads(text), 'target': e.target.replace('ER-12', 'ER-3')}))
    assert any(e.kind == 'sim' and e.data.get('what') == 'hcw_arrived' for e in other)
    events = events[:info1] + other + events[info1:]
    truth = load_truth(write_run(tmp_path / 'run', events))
    assert truth.task('P-0777/nav-1').succeeded and truth.task('P-0777/nav-1').hcw_id == '41'
    assert truth.task('info-1').succeeded and truth.task('info-1').hcw_id == '90'   # its own case's escort
    assert 'info-1' not in [f.task_id for f in false_successes(truth)]
