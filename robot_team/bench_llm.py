"""Benchmark of the LLM bridge: prompt tokens per onboarding run, and bridge overhead per tool call.

Plays the scripted well-behaved transcript (:mod:`robot_team.llm.scripted`) through the real
``openai`` client against the loopback server, with the whole team running the code the nodes
run (the ROS graph of ``robot-team run --brain openai``, in one process, on the embedded
simulator; ``ROBOT_TEAM_BENCH_DOMAIN_ID``, default 99), once without and once with the
knowledge base. Prompt tokens are counted with tiktoken cl100k_base (the server reports no
usage), tool definitions included. Bridge overhead: per tool call, from the model's tool call
(reply received) to the tool message it will see, excluding the tool's own (ROS) work.

Run: ``python -m robot_team.bench_llm`` (``--json`` for machine-readable output).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from robot_team.agents.robot_node import RobotNode
from robot_team.contracts.config import load_scenario
from robot_team.llm.fakeserver import ScriptedServer
from robot_team.llm.scripted import ideal_policies
from robot_team.run.episode import Episode


def run_once(kb: bool, domain_id: int | None = None) -> dict:
    """Run the onboarding transcript once through the team's ROS graph; return tokens, requests, overhead.

    The whole team runs in this process (``robot_team.run.episode.Episode``, in-process mode: the same
    node classes and cores as ``robot-team run``) on the embedded simulator, every brain an LLM
    brain whose ``openai`` client talks to the loopback scripted server. Tokens come from the
    ``llm_reply`` events of the record (as in ``report.json``); the bridge overhead from the
    robot brains of the nodes that ran.
    """
    domain_id = domain_id if domain_id is not None else int(os.environ.get('ROBOT_TEAM_BENCH_DOMAIN_ID', '99'))
    env = {'ROBOT_TEAM_LLM_API_KEY': 'bench', 'ROBOT_TEAM_LLM_MODEL': 'gpt-4o-mini',
           'ROBOT_TEAM_LLM_FALLBACK': 'fail', 'ROBOT_TEAM_LLM_TIMEOUT_S': '10'}
    saved = {k: os.environ.get(k) for k in [*env, 'ROBOT_TEAM_LLM_BASE_URL']}
    try:
        with ScriptedServer(ideal_policies()) as server, tempfile.TemporaryDirectory() as tmp:
            os.environ.update(env, ROBOT_TEAM_LLM_BASE_URL=server.base_url)
            episode = Episode(load_scenario('onboarding'), Path(tmp), brain='openai', domain_id=domain_id,
                              real_time_factor=40.0, brain_options={'kb': kb}, log_level='error')
            result = episode.run()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    replies = [e for e in result.events if e.kind == 'llm_reply']
    per_robot: dict[str, dict] = {}
    for e in replies:
        entry = per_robot.setdefault(e.data['robot'], {'requests': 0, 'prompt_tokens': 0})
        entry['requests'] += 1
        entry['prompt_tokens'] += e.data['prompt_tokens']
    bridge = [s for node in episode.nodes if isinstance(node, RobotNode) for s in node.brain.bridge_s]
    return {'kb': kb, 'outcome': result.report['outcome'], 'requests': len(replies),
            'prompt_tokens': sum(e.data['prompt_tokens'] for e in replies),
            'completion_tokens': sum(e.data['completion_tokens'] for e in replies),
            'cost_usd_gpt4o_mini': round(sum(e.data['cost_usd'] for e in replies), 6),
            'per_robot': per_robot, 'tool_calls': len(bridge),
            'bridge_overhead_ms_median': round(statistics.median(bridge) * 1000, 3) if bridge else None,
            'bridge_overhead_ms_max': round(max(bridge) * 1000, 3) if bridge else None,
            'tool_events': 'published with rclpy by the nodes'}


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark figures (no KB, then KB)."""
    argv = sys.argv[1:] if argv is None else argv
    figures = [run_once(False), run_once(True)]
    if '--json' in argv:
        print(json.dumps(figures, indent=2))
        return 0
    for f in figures:
        print(f"{'with KB   ' if f['kb'] else 'without KB'}: {f['prompt_tokens']:6d} prompt tokens in "
              f"{f['requests']} requests (target {'10,000' if f['kb'] else '4,000'}), "
              f"{f['completion_tokens']} completion tokens, outcome {f['outcome']}; per robot "
              + ', '.join(f"{r} {v['prompt_tokens']}/{v['requests']}" for r, v in f['per_robot'].items()))
        print(f"            bridge overhead per tool call: median {f['bridge_overhead_ms_median']} ms, "
              f"max {f['bridge_overhead_ms_max']} ms over {f['tool_calls']} tool calls (events "
              f"{f['tool_events']})")
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
