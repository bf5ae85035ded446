#!/usr/bin/env python3
r"""Extract the parameter names each Nav2 server declares, from navigation2's sources, per branch.

Reads a navigation2 git repository (a clone or a bare mirror; no work tree needed) and writes
``test/data/nav2_declared_params.json``: for each branch (default ``jazzy`` and ``kilted``) and
each Nav2 node that robot_team configures, the parameter names that node's code declares, with
the commit they were read from, and the default of ``enable_stamped_cmd_vel`` (the message type
Nav2's servers publish on ``cmd_vel`` unless told). ``test/test_gazebo_nav2.py`` checks every parameter of
``config/nav2/*.yaml`` against it. The table holds names only, no upstream code.

What is read: every ``.cpp``/``.hpp`` outside ``test/`` folders of the packages that make up a
node (:data:`NODE_PACKAGES`: the server, the plugins we configure, ``nav2_util``'s helpers such
as ``TwistPublisher``), and in them the first string argument of ``declare_parameter``,
``declare_parameter_if_not_declared``, ``declare_or_get_parameter``, ``add_parameter`` (AMCL) and
costmap layers' ``declareParameter``. A name built from a variable and literals (``plugin_name_ + ".lookahead_dist"``)
becomes a pattern with ``*`` for the variable (``*.lookahead_dist``); costmap layers'
``declareParameter("enabled")`` is relative to the layer (``*.enabled``). A ``*`` stands for one
or more dotted segments. Names built only from variables cannot be seen statically; they are
counted (``dynamic``) and the test's allow-list covers what the project sets of them.

Usage::

    python scripts/nav2_declared_params.py --repo /path/to/navigation2[.git] \
        [--branch jazzy --branch kilted] [--out test/data/nav2_declared_params.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NODE_PACKAGES: dict[str, tuple[str, ...]] = {
    'amcl': ('nav2_amcl',),
    'map_server': ('nav2_map_server',),
    'bt_navigator': ('nav2_bt_navigator', 'nav2_behavior_tree'),
    'controller_server': ('nav2_controller', 'nav2_regulated_pure_pursuit_controller',
                          'nav2_dwb_controller/nav_2d_utils'),  # its OdomSubscriber: odom_topic
    'local_costmap': ('nav2_costmap_2d',),
    'global_costmap': ('nav2_costmap_2d',),
    'planner_server': ('nav2_planner', 'nav2_navfn_planner'),
    'smoother_server': ('nav2_smoother',),
    'behavior_server': ('nav2_behaviors',),
    'waypoint_follower': ('nav2_waypoint_follower',),
    'velocity_smoother': ('nav2_velocity_smoother',),
    'collision_monitor': ('nav2_collision_monitor',),
    'docking_server': ('nav2_docking/opennav_docking',),
    'route_server': ('nav2_route',),
}
"""The navigation2 packages (folders) whose code declares each node's parameters; every node
also gets ``nav2_util`` (lifecycle node, ``TwistPublisher``/``TwistSubscriber`` helpers)."""

COMMON_PACKAGES = ('nav2_util',)
TWIST_PUBLISHER = 'nav2_util/include/nav2_util/twist_publisher.hpp'
"""Where the servers' cmd_vel publisher declares ``enable_stamped_cmd_vel`` and its default."""
CALLS = {  # call name -> index of the name argument
    'declare_parameter_if_not_declared': 1,
    'declare_or_get_parameter': 1,
    'declare_parameter': 0,
    'declareParameter': 0,
    'add_parameter': 0,           # nav2_util::LifecycleNode::add_parameter (AMCL)
}
CALL_RE = re.compile(r'\b(' + '|'.join(CALLS) + r')\s*(?:<[^<>()]*>)?\s*\(')
STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _strip_comments(text: str) -> str:
    """Remove // and /* */ comments, keeping string literals."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|("(?:[^"\\]|\\.)*")',
                  lambda m: m.group(1) or ' ', text, flags=re.S)


def _arguments(text: str, start: int) -> list[str]:
    """Return the top-level arguments of the call whose '(' is at ``start - 1``."""
    depth, args, current, i = 0, [], [], start
    while i < len(text):
        c = text[i]
        if c == '"':
            end = STRING_RE.match(text, i).end()
            current.append(text[i:end])
            i = end
            continue
        if c in '([{':
            depth += 1
        elif c in ')]}':
            if depth == 0:
                args.append(''.join(current).strip())
                return args
            depth -= 1
        elif c == ',' and depth == 0:
            args.append(''.join(current).strip())
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    return args


def _pattern(expr: str) -> str | None:
    """Return the name pattern of a C++ name expression; None when it has no literal part."""
    expr = re.sub(r'std::string\s*[({]\s*("(?:[^"\\]|\\.)*")\s*[)}]', r'\1', expr)
    parts = []
    for term in re.split(r'\+(?=(?:[^"]*"[^"]*")*[^"]*$)', expr):
        term = term.strip()
        literal = STRING_RE.fullmatch(term)
        parts.append(literal.group(1) if literal else '*')
    if all(p == '*' for p in parts):
        return None
    name = ''.join(parts)
    while '**' in name or '*.*' in name:
        name = name.replace('**', '*').replace('*.*', '*')
    return name


def declared(text: str) -> tuple[set[str], int]:
    """Return the name patterns declared in one C++ source and the count of names with no literal part."""
    text = _strip_comments(text)
    names, dynamic = set(), 0
    for match in CALL_RE.finditer(text):
        call = match.group(1)
        args = _arguments(text, match.end())
        index = CALLS[call]
        if call == 'declare_parameter' and args and not STRING_RE.search(args[0]) and len(args) > 1 \
                and STRING_RE.search(args[1]):
            index = 1          # nav2_util::declare_parameter(node, "name", ...) style
        if len(args) <= index:
            continue
        pattern = _pattern(args[index])
        if pattern is None:
            dynamic += 1
            continue
        if call == 'declareParameter' and not pattern.startswith('*'):
            pattern = '*.' + pattern  # costmap layer: relative to the layer's name
        names.add(pattern)
    return names, dynamic


def _git(repo: str, *args: str) -> str:
    return subprocess.run(['git', f'--git-dir={repo}', *args], check=True, capture_output=True,
                          text=True).stdout


def package_params(repo: str, commit: str, package: str) -> tuple[set[str], int]:
    """Return the patterns declared under ``package`` (a folder) at ``commit``, and the dynamic count."""
    files = [f for f in _git(repo, 'ls-tree', '-r', '--name-only', commit, '--', package).splitlines()
             if f.endswith(('.cpp', '.hpp', '.h')) and '/test/' not in f and not f.startswith('test/')]
    names, dynamic = set(), 0
    for path in files:
        found, n = declared(_git(repo, 'show', f'{commit}:{path}'))
        names |= found
        dynamic += n
    return names, dynamic


def extract(repo: str, branch: str) -> dict:
    """Return the table of one branch: its commit and, per node, the sorted patterns."""
    commit = _git(repo, 'rev-parse', branch).strip()
    cache: dict[str, tuple[set[str], int]] = {}
    nodes = {}
    for node, packages in NODE_PACKAGES.items():
        names, dynamic = set(), 0
        for package in packages + COMMON_PACKAGES:
            if package not in cache:
                cache[package] = package_params(repo, commit, package)
            names |= cache[package][0]
            dynamic += cache[package][1]
        nodes[node] = {'packages': list(packages + COMMON_PACKAGES), 'dynamic': dynamic, 'declared': sorted(names)}
    publisher = _strip_comments(_git(repo, 'show', f'{commit}:{TWIST_PUBLISHER}'))
    default = re.search(r'"enable_stamped_cmd_vel"\s*,\s*rclcpp::ParameterValue\s*[({]\s*(true|false)', publisher)
    return {'commit': commit, 'enable_stamped_cmd_vel_default': default.group(1) == 'true', 'nodes': nodes}


def main(argv: list[str] | None = None) -> int:
    """Write the table of declared Nav2 parameters for each branch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repo', required=True, help='navigation2 git directory (clone .git or bare mirror)')
    parser.add_argument('--branch', action='append', help='branch or commit (repeatable; default jazzy, kilted)')
    parser.add_argument('--out', default=str(ROOT / 'test' / 'data' / 'nav2_declared_params.json'))
    args = parser.parse_args(argv)
    repo = args.repo if Path(args.repo, 'HEAD').exists() else str(Path(args.repo) / '.git')
    table = {
        'source': 'https://github.com/ros-navigation/navigation2',
        'generated_by': 'scripts/nav2_declared_params.py',
        'note': 'Parameter names declared in the code of each node (names only; "*" = one or more '
                'dotted segments built from a variable, e.g. a plugin name).',
        'distributions': {branch: extract(repo, branch) for branch in args.branch or ['jazzy', 'kilted']},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=1, sort_keys=False) + '\n', encoding='utf-8')
    print(f'wrote {out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
