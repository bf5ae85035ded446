"""Benchmark of the LLM bridge: prompt tokens per onboarding run, and bridge overhead per tool call.

Plays the scripted well-behaved transcript (:mod:`robot_team.llm.scripted`) through the real
``openai`` client against the loopback server, with the real brains, toolboxes, workflow gate
and guards (:mod:`robot_team.llm.harness`), once without and once with the knowledge base.
Prompt tokens are counted with tiktoken cl100k_base (the server reports no usage), tool
definitions included. Bridge overhead: per tool call, from the model's tool call (reply
received) to the tool message it will see, excluding the tool's own work; the stub tools do
no physical action; their events are published on ``/team/events`` by real rclpy
EventEmitters (a private context, ``ROBOT_TEAM_BENCH_DOMAIN_ID``, default 99) when rclpy is
available.

Run: ``python -m robot_team.llm.bench`` (``--json`` for machine-readable output).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile


class _RosEvents:
    """Real EventEmitters on a private rclpy context, so tool events are published as in a run."""

    def __init__(self):
        import rclpy
        from rclpy.node import Node
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(os.environ.get('ROBOT_TEAM_BENCH_DOMAIN_ID', '99')))
        self.node = Node('llm_bench', context=self.context)
        self.emitters = {}

    def __call__(self, role: str):
        from robot_team.events import EventEmitter
        if role not in self.emitters:
            self.emitters[role] = EventEmitter(self.node, role)
        return self.emitters[role].emit

    def close(self) -> None:
        self.node.destroy_node()
        self.context.try_shutdown()


def run_once(kb: bool, ros: bool = True) -> dict:
    """Run the onboarding transcript once; return tokens, requests, overhead and outcome.

    With ``ros`` (and rclpy importable) the toolboxes publish their events on ``/team/events``
    through real EventEmitters, as in a run.
    """
    from robot_team.llm.brains import LLMManagerBrain, LLMRobotBrain
    from robot_team.llm.fakeserver import ScriptedServer
    from robot_team.llm.harness import InMemoryTeam, Recorder
    from robot_team.llm.scripted import ideal_policies
    from robot_team.llm.settings import LLMSettings
    record = Recorder()
    events = None
    if ros:
        try:
            events = _RosEvents()
        except ImportError:
            events = None
    with ScriptedServer(ideal_policies()) as server, tempfile.TemporaryDirectory():
        settings = LLMSettings(_env_file=None, base_url=server.base_url, api_key='bench', model='gpt-4o-mini',
                               fallback='fail')
        robots = {r: LLMRobotBrain(r, settings, record.emitter(r), kb=kb)
                  for r in ('navigation_robot', 'info_collection_robot', 'display_robot')}
        manager = LLMManagerBrain(settings, record.emitter('manager'), kb=kb)
        try:
            result = InMemoryTeam(manager, robots, record=record, tool_emitter=events).run()
        finally:
            if events is not None:
                events.close()
    replies = record.of('llm_reply')
    per_robot: dict[str, dict] = {}
    for e in replies:
        entry = per_robot.setdefault(e['data']['robot'], {'requests': 0, 'prompt_tokens': 0})
        entry['requests'] += 1
        entry['prompt_tokens'] += e['data']['prompt_tokens']
    bridge = [s for brain in robots.values() for s in brain.bridge_s]
    return {'kb': kb, 'outcome': result.outcome, 'requests': len(replies),
            'prompt_tokens': sum(e['data']['prompt_tokens'] for e in replies),
            'completion_tokens': sum(e['data']['completion_tokens'] for e in replies),
            'cost_usd_gpt4o_mini': round(sum(e['data']['cost_usd'] for e in replies), 6),
            'per_robot': per_robot, 'tool_calls': len(bridge),
            'bridge_overhead_ms_median': round(statistics.median(bridge) * 1000, 3) if bridge else None,
            'bridge_overhead_ms_max': round(max(bridge) * 1000, 3) if bridge else None,
            'tool_events': 'published with rclpy' if events is not None else 'in memory'}


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
