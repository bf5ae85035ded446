"""The published reference: the hand-scored figures of the paper (Tables III and IV), every output's reference row."""

from __future__ import annotations

from typing import Any


PUBLISHED_REFERENCE: dict[str, Any] = {
    'source': ('Bai, Ding, Taylor, "From Virtual Agents to Robot Teams: A Multi-Robot Framework Evaluation '
               'in High-Stakes Healthcare Context", Tables III and IV'),
    'model': 'gpt-4o-2024-08-06',
    'runs_per_condition': 5,
    'success_rate': {'baseline': 0.4529, 'kb': 0.7294},
    'cost_per_run_usd': {'baseline': 0.0772, 'kb': 0.1536},
    'metric_means': {
        'baseline': {'delegation_accuracy': 0.333, 'completion_judgment': 0.933, 'issue_handling': 0.0,
                     'reflection_quality': 0.3, 'tool_usage': 0.333, 'local_reasoning': 0.4,
                     'report_compliance': 0.467},
        'kb': {'delegation_accuracy': 0.733, 'completion_judgment': 0.967, 'issue_handling': 0.0,
               'reflection_quality': 0.8, 'tool_usage': 0.667, 'local_reasoning': 0.733,
               'report_compliance': 0.767},
    },
}
"""The published figures (hand-scored, 5 runs per condition): the reference row of every output."""
