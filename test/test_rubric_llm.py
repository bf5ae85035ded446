"""The rubric on a recorded LLM run: a scripted team that tries every known failure mode.

A loopback OpenAI-compatible server scripts the replies of the real ``openai`` client in every
node (``--brain openai``). The manager calls a robot's tool, echoes the navigation failure
without acting, skips info collection, passes a pre-fetched result, writes a placeholder
reflection first; the info robot claims a false success once. The guards keep the floor
correct; the attempted view loses the points the published hand scoring would take.
"""

import pytest

from llm_scripts import escalate_only, misbehaving_policies, use_llm_server
from robot_team.evaluation.rubric import Metric, score_run, score_run_dir
from robot_team.evaluation.truth import audit
from robot_team.contracts.reports import TaskType

pytest.importorskip('rclpy')
fakeserver = pytest.importorskip('robot_team.llm.fakeserver')

NAV, INFO, DISPLAY = TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY


def test_scripted_failure_modes_lose_the_expected_points(tmp_path, domain_id, monkeypatch):
    from robot_team.run.episode import run_episode
    with fakeserver.ScriptedServer(misbehaving_policies()) as server:
        use_llm_server(monkeypatch, server, handover=False)   # the echo is left to the deadline
        result = run_episode(escalate_only('onboarding'), tmp_path / 'run', brain='openai', domain_id=domain_id,
                             brain_options={'kb': False}, real_time_factor=40.0)
    assert result.report['outcome'] == 'success'   # the floor stayed correct
    score = score_run(result.events)
    attempted, floor = score.attempted, score.floor
    expected = {   # (metric, task): (attempted, floor)
        (Metric.DELEGATION_ACCURACY, NAV): (0.5, 1.0),    # the manager called navigate_to_pose itself
        (Metric.TOOL_USAGE, NAV): (0.0, 1.0),             # ... a tool only its owner may use
        (Metric.ISSUE_HANDLING, NAV): (0.0, 0.0),         # failure echoed: the supervisor's deadline escalated
        (Metric.DELEGATION_ACCURACY, INFO): (0.5, 1.0),   # pre-fetched name and specialty (stripped)
        (Metric.DELEGATION_ACCURACY, DISPLAY): (0.5, 1.0),  # display before info collection (refused)
        (Metric.REFLECTION_QUALITY, None): (0.0, 1.0),    # placeholder first (refused)
        (Metric.LOCAL_REASONING, INFO): (0.0, 1.0),       # false success claim (turned into a failure)
        (Metric.REPORT_COMPLIANCE, INFO): (0.0, 1.0),
        (Metric.COMPLETION_JUDGMENT, INFO): (1.0, 1.0),   # info-1 judged the failure it was, info-2 a success
    }
    for (metric, task), (want_attempted, want_floor) in expected.items():
        got = (attempted.cell(metric, task), floor.cell(metric, task))
        assert (got[0].score, got[1].score) == (want_attempted, want_floor), (metric, task, got)
    assert 'navigate_to_pose' in attempted.cell(Metric.TOOL_USAGE, NAV).reason
    assert 'deadline' in floor.cell(Metric.ISSUE_HANDLING, NAV).reason
    assert floor.points - attempted.points == 5.5   # the sum of the differences above
    assert score.usage.requests > 0 and score.usage.prompt_tokens > 0 and score.usage.cost_usd > 0
    # the guards kept the floor true to the world: every success the team accepted is one the world shows
    found = audit(tmp_path / 'run')
    assert found.false_successes == [] and not found.unanswered_tool_calls and not found.unanswered_requests, found
    strict = score_run_dir(tmp_path / 'run')
    assert strict.floor == floor and strict.view('floor', 'strict').points == floor.points
