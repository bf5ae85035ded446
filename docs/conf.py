"""Sphinx configuration of the robot_team documentation site (MyST Markdown, autodoc).

Build it as CI does (warnings are errors)::

    .venv/bin/sphinx-build -W --keep-going -b html docs /tmp/robot_team-docs

The API reference imports the real modules: run it with the interpreter of the environment made by
``scripts/setup.sh --dev`` (rclpy and the built robot_team interfaces importable), from any
directory. test/test_docs.py builds it the same way.
"""

import importlib
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The source checkout first, as pytest.ini's `pythonpath = .` does: robot_team/__init__.py extends
# its __path__, so the generated robot_team.msg/srv/action installed in the venv still import.
sys.path.insert(0, str(ROOT))

project = 'robot_team'
author = 'robot_team developers'
copyright = 'robot_team developers'  # noqa: A001 (Sphinx's name)
release = version = importlib.import_module('robot_team').__version__

extensions = [
    'myst_parser',
    'sphinx.ext.autodoc',
    'sphinx.ext.napoleon',
]

source_suffix = {'.md': 'markdown', '.rst': 'restructuredtext'}
root_doc = 'index'
exclude_patterns = ['_build', 'Thumbs.db', '.DS_Store']
html_theme = 'alabaster'
html_title = 'robot_team'
html_static_path = []

# MyST: GitHub-style anchors for headings up to level 3, so that links such as
# `evaluation.md#before-issue-26` resolve on GitHub and in the site alike.
myst_heading_anchors = 3
myst_enable_extensions = ['colon_fence']

# The docstrings are numpydoc style.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

autodoc_default_options = {
    'members': True,
    'show-inheritance': True,
    # A package's __all__ re-exports its modules' classes: document each once, in its module.
    'ignore-module-all': True,
}
autodoc_member_order = 'bysource'
# Type hints in the signatures: as field-list types ('description') each one is a fuzzy cross-reference
# search over every object, which made the build a third slower.
autodoc_typehints = 'signature'
autodoc_typehints_format = 'short'
# Optional dependencies that the embedded setup does not have (ROS 2's launch/launch_ros, rqt):
# the modules that need them are documented from their source with these names mocked.
autodoc_mock_imports = ['launch', 'launch_ros', 'rqt_gui', 'rqt_gui_py', 'qt_gui', 'python_qt_binding']


def _highlight_mermaid(app):
    """Show ```mermaid fences (rendered by GitHub) as plain text: Pygments has no such lexer."""
    from pygments.lexers.special import TextLexer
    from sphinx.highlighting import lexers
    lexers['mermaid'] = TextLexer()


# Module docstrings use numpydoc-style headings of their own ("Interfaces", "Parameters": a node's
# ROS parameters, "Threading model"). As docutils sections they would nest into the page's headings
# (and clash between modules on one page), and napoleon would read a node's "Parameters" as a
# function's: before napoleon (priority 500) they become rubrics, their bodies unchanged.
_UNDERLINE = re.compile(r'^\s*-{3,}\s*$')


def _module_headings_as_rubrics(app, what, name, obj, options, lines):
    if what != 'module':
        return
    out = []
    for line in lines:
        if _UNDERLINE.match(line) and out and out[-1].strip() and (len(out) < 2 or not out[-2].strip()):
            title = out.pop().strip()
            out.extend([f'.. rubric:: {title}', ''])
            continue
        out.append(line)
    lines[:] = out


# napoleon reads an attribute's first line `X: Y` as "type X, description Y" (Google's inline
# attribute type). Here attributes carry annotations and their docstrings are prose ("Event kind:
# ..."; 69 of them have such a colon): napoleon leaves attributes, data and properties alone.
_NO_NAPOLEON = ('attribute', 'data', 'property')


def _napoleon_but_attributes(app, what, name, obj, options, lines):
    from sphinx.ext.napoleon import _process_docstring
    if what not in _NO_NAPOLEON:
        _process_docstring(app, what, name, obj, options, lines)


def _wrap_napoleon(app):
    from sphinx.ext.napoleon import _process_docstring
    for listener in list(app.events.listeners['autodoc-process-docstring']):
        if listener.handler is _process_docstring:
            app.disconnect(listener.id)
            app.connect('autodoc-process-docstring', _napoleon_but_attributes, priority=listener.priority)
            return
    raise RuntimeError('sphinx.ext.napoleon is not connected to autodoc-process-docstring')


# -- the API reference: every module of a package, found at build time ---------------------------
# A page under api/ holds a marker `<!-- api-modules: PACKAGE -->` (every module of the package and
# its subpackages) or `<!-- api-modules: PACKAGE toplevel -->` (only the package's own modules that
# are not packages). It is replaced, when the page is read, by one section per module with its
# automodule directive, so a new module is in the reference without editing the docs.
# The generated interfaces (rosidl) have no docstrings of ours: robot_team.msg/srv/action are left out.
GENERATED = {'robot_team.msg', 'robot_team.srv', 'robot_team.action'}
MARKER = re.compile(r'^<!-- api-modules: (?P<package>[\w.]+)(?P<top> toplevel)? -->$', re.M)


def api_modules(package, toplevel=False):
    """Names of the modules documented under ``package`` (sorted; the package itself first)."""
    pkg = importlib.import_module(package)
    names = [] if toplevel else [package]
    for info in pkgutil.walk_packages(pkg.__path__, package + '.'):
        if any(info.name == g or info.name.startswith(g + '.') for g in GENERATED):
            continue
        if toplevel and (info.ispkg or info.name.count('.') != package.count('.') + 1):
            continue
        if Path(ROOT, *info.name.split('.')).with_suffix('.py').exists() \
                or Path(ROOT, *info.name.split('.'), '__init__.py').exists():
            names.append(info.name)
    return sorted(set(names), key=lambda n: (n != package, n))


def _module_sections(match):
    sections = []
    for name in api_modules(match['package'], bool(match['top'])):
        # eval-rst: autodoc's output (and the docstrings) are reStructuredText, not Markdown.
        sections.append(f'## `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n```\n')
    return '\n'.join(sections)


# The pages link to the README as `../README.md`, which works on GitHub and in an editor; the site
# has the README as the page `readme` (docs/readme.md includes it), so there the link goes to it.
_README_LINK = re.compile(r'\]\(\.\./README\.md(?=[#)])')


def _readme_links(app, docname, source):
    if docname != 'readme':
        source[0] = _README_LINK.sub('](readme.md', source[0])


def _expand_api_markers(app, docname, source):
    if docname.startswith('api/'):
        source[0] = MARKER.sub(_module_sections, source[0])


def setup(app):
    app.connect('builder-inited', _highlight_mermaid)
    app.connect('source-read', _expand_api_markers)
    app.connect('source-read', _readme_links)
    app.connect('autodoc-process-docstring', _module_headings_as_rubrics, priority=400)
    _wrap_napoleon(app)
    return {'parallel_read_safe': True}
