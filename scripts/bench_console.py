#!/usr/bin/env python3
"""The supervisor console's cost on a protocol episode's wall time, measured side by side (issue 29).

Usage: ``python scripts/bench_console.py [--rounds 5] [--base DIR] [--domain-id 122]``. Each round
runs the ``onboarding`` episode (protocol brains, in-process, ``robot-team run --quiet``) without a
console and with ``robot-team console`` (offscreen) attached in its own process, interleaved; with
``--base`` (a checkout of another commit, e.g. ``git worktree add --detach /tmp/base <commit>``,
sharing this ``.venv``) the same episode from that checkout first. Prints each run's wall time
(``report.json``'s ``wall_time_s``) and CPU time (user + sys of the run's process), the console
process's CPU, and the medians. On a loaded machine the spread is wide: run it when idle.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CONSOLE = '''import os, resource, signal, sys
from robot_team.cli import main
def report(*_):
    print(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), file=sys.stderr, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, report)
sys.argv = ["robot-team", "console", "--domain-id", sys.argv[1]]
main()'''


def children_cpu() -> float:
    """User + sys CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def episode(cwd: Path, domain: int, out: Path, env: dict) -> tuple[float, float]:
    """Run one onboarding episode from ``cwd``; return (wall_time_s from its report, CPU s of its process)."""
    before = children_cpu()
    subprocess.run([PY, '-m', 'robot_team.cli', 'run', '--scenario', 'onboarding', '--brain', 'protocol',
                    '--out', str(out), '--quiet', '--domain-id', str(domain)], cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return json.loads((out / 'report.json').read_text())['wall_time_s'], children_cpu() - before


def main() -> int:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--base', type=Path, default=None)
    parser.add_argument('--domain-id', type=int, default=122)
    args = parser.parse_args()
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE=os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST'))
    runs = {**({'base': args.base} if args.base else {}), 'no console': ROOT, 'console': ROOT}
    results = {name: {'wall': [], 'cpu': [], 'console_cpu': []} for name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            for name, cwd in runs.items():
                console = None
                if name == 'console':
                    console = subprocess.Popen([PY, '-c', CONSOLE, str(args.domain_id)], cwd=ROOT,
                                               env=dict(env, QT_QPA_PLATFORM='offscreen'),
                                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    time.sleep(4.0)    # the console is up (and idle) before the team starts
                try:
                    wall, cpu = episode(cwd, args.domain_id, Path(tmp) / f'{name}-{k}', env)
                finally:
                    if console is not None:
                        console.send_signal(signal.SIGTERM)
                        _, err = console.communicate(timeout=10)
                        results[name]['console_cpu'].append(float(err.strip().splitlines()[-1]))
                results[name]['wall'].append(wall)
                results[name]['cpu'].append(cpu)
                print(f'{name:10s} round {k}: wall {wall:.2f} s, cpu {cpu:.2f} s', flush=True)
    for name, r in results.items():
        console_cpu = (f", console process cpu median {statistics.median(r['console_cpu']):.2f} s"
                       if r['console_cpu'] else '')
        print(f"{name:10s} wall median {statistics.median(r['wall']):.2f} s {[round(w, 2) for w in r['wall']]}, "
              f"cpu median {statistics.median(r['cpu']):.2f} s{console_cpu}")
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
