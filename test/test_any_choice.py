"""Whatever the model chooses: seeded random-chooser episodes through the real nodes, held to the world.

A property over choices, not over transcripts seen: every brain of the team (manager and robots)
is the chance endpoint (``--brain random``, :mod:`robot_team.llm.chance`), each reply drawn at
random within its request's schema, and Hypothesis picks the scenario and the seed. Whatever is
drawn, the run's record, judged by the independent ground truth of
:mod:`robot_team.evaluation.truth` (the simulator's, the RTLS's and the directory's own record,
not the team's guards), must show:

- no task judged ``success`` and no episode ``success`` that the world contradicts;
- the scenario's expected outcome, or ``held_for_human`` (the team held on an escalation people
  were asked about and did not answer), or a ``success`` the world shows where the scenario
  expected an escalation (its failure is bound to one HCW, and the chooser escorted another of the
  specialty, as the gate allows: 2 of the benchmark's 50 unknown_badge episodes); never a plain
  ``timeout`` nor a ``failure`` that leaves the patient unserved with nobody asked;
- nothing lost from the record: every tool call answered, every delegation request answered or
  refused on the record, no gap in the event sequence.

CI runs a small derandomized subset (``ROBOT_TEAM_ANY_CHOICE_EXAMPLES``, default 2 examples); the
full run is the benchmark ``robot-team eval --brain random --trials 50 --scenario all --chance 0``
(docs/chance.md), whose strict false successes and outcomes say the same over 200 episodes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip('hypothesis')
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from ros_helpers import release_domain_ids, reserve_domain_id  # noqa: E402

from robot_team.contracts.config import load_scenario, scenario_names  # noqa: E402
from robot_team.evaluation.truth import audit  # noqa: E402
from robot_team.run_report import HELD_FOR_HUMAN  # noqa: E402
from robot_team.run.episode import run_episode  # noqa: E402

EXAMPLES = int(os.environ.get('ROBOT_TEAM_ANY_CHOICE_EXAMPLES', '2'))


@pytest.mark.timeout(300 * max(EXAMPLES, 1))
@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(scenario=st.sampled_from(scenario_names()), seed=st.integers(min_value=0, max_value=2 ** 31 - 1))
def test_whatever_the_model_chooses_the_world_decides(scenario, seed):
    loaded = load_scenario(scenario)
    domain = reserve_domain_id()
    try:
        with tempfile.TemporaryDirectory(prefix='any-choice-') as folder:
            out = Path(folder) / f'{scenario}-{seed}'
            result = run_episode(loaded, out, brain='random', seed=seed, domain_id=domain, log_level='error')
            found = audit(out)
            report = result.report
    finally:
        release_domain_ids(domain)
    where = f'{scenario} seed {seed}'
    assert found.false_successes == [], (where, [f.reason for f in found.false_successes])
    # a success is never false here (checked above): one where an escalation was expected is the world's too
    assert report['outcome'] in {loaded.expected_outcome or 'success', HELD_FOR_HUMAN, 'success'}, \
        (where, report['outcome'])
    assert not found.unanswered_tool_calls and not found.unanswered_requests, where
    assert report['events']['complete'], (where, report['events']['sequence_gaps'])
