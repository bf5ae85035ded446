"""Schemas of the shared contracts: reports, reflections, scenarios (no ROS graph needed)."""

import pytest
from pydantic import ValidationError

from robot_team.contracts.config import ConfigError, load_scenario, scenario_names
from robot_team.contracts.reports import Reflection, ReportError, TaskOutcome, TaskReportModel, TaskStatus, TaskType
from robot_team.ros.messages import report_from_msg, report_to_msg


def test_failure_report_must_name_issue():
    with pytest.raises(ValidationError, match='must name its issue'):
        TaskReportModel(task_id='t1', task_type='navigation', robot='navigation_robot', status='failure')


def test_report_round_trips_through_msg():
    report = TaskReportModel(task_id='t1', task_type=TaskType.DISPLAY, robot='display_robot',
                             status=TaskStatus.SUCCESS, data={'layout': 'rows'}, evidence={'ok': True},
                             stamp_s=12.5)
    back = report_from_msg(report_to_msg(report))
    assert back == report


def test_report_with_bad_json_is_rejected_naming_field():
    msg = report_to_msg(TaskReportModel(task_id='t1', task_type='display', robot='display_robot', status='success'))
    msg.evidence_json = '{not json'
    with pytest.raises(ReportError, match='evidence_json'):
        report_from_msg(msg)
    msg.evidence_json = '{}'
    msg.status = 'done'
    with pytest.raises(ReportError, match='status'):
        report_from_msg(msg)


def test_reflection_missing_parts():
    outcome = TaskOutcome(task_type='navigation', status='failure', robot='navigation_robot', summary='#80 busy')
    reflection = Reflection(task_outcomes=[outcome], recovery_attempts=['TBD'], lessons_learned=['page early'])
    missing = reflection.missing_parts()
    assert 'task outcome for info_collection' in missing
    assert 'task outcome for display' in missing
    assert 'placeholder text instead of content' in missing


def test_all_shipped_scenarios_validate():
    names = scenario_names()
    assert {'onboarding', 'all_available', 'no_path', 'unknown_badge'} <= set(names)
    for name in names:
        assert load_scenario(name).name == name


def test_bad_scenarios_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="unknown scenario 'nope'"):
        load_scenario('nope')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('name: x\npatient: {room: ER-12}\n')
    with pytest.raises(ConfigError, match='patient.assigned_hcw_id'):
        load_scenario(str(bad))
    bad.write_text('- just\n- a list\n')
    with pytest.raises(ConfigError, match='expected a mapping'):
        load_scenario(str(bad))
