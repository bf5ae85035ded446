"""The documentation: the README is the front door, the rest is a Sphinx site that builds cleanly.

The site (docs/, Sphinx + MyST, the API reference generated from the docstrings) is built as CI
builds it, with warnings as errors, by the interpreter of the environment made by
``scripts/setup.sh --dev`` (requirements/docs.txt): a broken link, a page missing from the table of
contents or a docstring whose markup does not parse fails here. Every relative link of the README
and the pages must name a file of the repository, so that they work on GitHub as in the site.
"""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / 'docs'
README = ROOT / 'README.md'
README_MAX_LINES = 250
# The two commands of the README, exactly: newcomers copy them and CI (.ci/run) runs the second.
TWO_COMMANDS = (
    './scripts/setup.sh && .venv/bin/robot-team run --scenario onboarding --brain protocol --out runs/onboarding',
    './scripts/setup.sh --dev && ./scripts/test.sh',
)
# Subpackages of robot_team that are not ours to document: rosidl generates them into the package.
GENERATED = {'msg', 'srv', 'action'}

LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^(```|~~~)')
CODE_SPAN = re.compile(r'(`+).+?\1')


def markdown_files():
    """The README and every Markdown page of the site."""
    return [README] + sorted(DOCS.rglob('*.md'))


def relative_links(path):
    """``(line number, target)`` of every relative link or image in a Markdown file (not in code)."""
    links, in_fence = [], False
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        if FENCE.match(line.lstrip()):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in LINK.finditer(CODE_SPAN.sub('', line)):
            target = match.group(1) or match.group(2)
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I) or target.startswith('#'):
                continue  # a URL (https:, mailto:) or an anchor in the same page
            links.append((number, target))
    return links


def test_readme_is_the_front_door():
    text = README.read_text(encoding='utf-8')
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f'README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail to a page in docs/')
    for command in TWO_COMMANDS:
        assert command in lines, f'README.md must keep this command on a line of its own, exactly: {command}'
    for page in sorted(DOCS.glob('*.md')):
        if page.name not in ('index.md', 'readme.md'):
            assert f'(docs/{page.name}' in text, f'README.md\'s "where to go next" does not link {page.name}'


def test_relative_links_name_existing_files():
    broken = []
    for path in markdown_files():
        for number, target in relative_links(path):
            file_part = target.split('#', 1)[0]
            if file_part and not (path.parent / file_part).resolve().exists():
                broken.append(f'{path.relative_to(ROOT)}:{number}: {target}')
    assert not broken, 'links to files that do not exist:\n' + '\n'.join(broken)


def test_link_finder_sees_links_and_skips_code(tmp_path):
    page = tmp_path / 'page.md'
    page.write_text('See [a](a.md#x), ![img](img/p.png) and [web](https://example.org).\n'
                    '`[not](code.md)` in code\n```\n[not](fenced.md)\n```\n[b](<b c.md>) [here](#here)\n')
    assert relative_links(page) == [(1, 'a.md#x'), (1, 'img/p.png'), (6, 'b c.md')]


def test_every_subpackage_has_an_api_page():
    marked = set()
    for page in (DOCS / 'api').glob('*.md'):
        marked.update(re.findall(r'^<!-- api-modules: ([\w.]+)', page.read_text(encoding='utf-8'), re.M))
    packages = {'robot_team.' + p.parent.name for p in (ROOT / 'robot_team').glob('*/__init__.py')
                if p.parent.name not in GENERATED}
    missing = sorted(packages - marked)
    assert not missing, f'no page in docs/api/ documents {missing}: add docs/api/<name>.md as the others'
    assert 'robot_team' in marked, 'the package\'s own modules (docs/api/robot_team.md) are not documented'


@pytest.mark.timeout(600)   # about 90 s alone on 2 cores; several times that beside the suite's other worker
def test_the_site_builds_without_warnings(tmp_path):
    pytest.importorskip('sphinx', reason='Sphinx is not installed: scripts/setup.sh --dev installs it '
                                         '(requirements/docs.txt), so CI never skips this')
    pytest.importorskip('myst_parser', reason='myst-parser is not installed: scripts/setup.sh --dev installs '
                                              'it (requirements/docs.txt), so CI never skips this')
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-j', '1', '-q', '-b', 'html',
         '-d', str(tmp_path / 'doctrees'), str(DOCS), str(tmp_path / 'html')],
        cwd=ROOT, capture_output=True, text=True, timeout=560)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, (
        f'sphinx-build -W failed (exit {result.returncode}, {elapsed:.0f} s):\n{result.stdout}\n{result.stderr}')
    html = tmp_path / 'html'
    for page in ['index', 'readme', 'getting-started', 'api/index', 'api/core']:
        assert (html / f'{page}.html').is_file(), f'{page}.html was not written'
    # The API reference documents the real modules (autodoc imported them), not empty pages.
    core = (html / 'api' / 'core.html').read_text(encoding='utf-8')
    assert 'id="robot_team.core.supervisor.SupervisorCore"' in core
    assert 'id="robot_team.core.manager.ManagerCore"' in core
    print(f'site built in {elapsed:.1f} s')
