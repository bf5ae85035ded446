"""Robot profiles and the knowledge base (KB), read from ``config/``.

Profiles (``config/profiles.yaml``): role, goal and backstory per robot. The KB
(``config/kb/*.md``, written by us) is Markdown: files in name order, ``## `` sections, each
followed by a ``<!-- for: robot, robot -->`` line naming who receives it (``all`` for
everyone). Each robot is given only its sections.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from pydantic import BaseModel

from robot_team.catalog import REPORT_TOOL, ROLES_BY_NAME, TASK_OWNER, ManagerTool, tools_of
from robot_team.contracts.config import ConfigError, load_yaml, share_dir
from robot_team.contracts.names import Role
from robot_team.contracts.reports import OPERATIONAL_TASKS

_FOR = re.compile(r'^<!--\s*for:\s*(.*?)\s*-->\s*$')


class Profile(BaseModel):
    """A robot's profile for its LLM brain."""

    role: str
    goal: str
    backstory: str = ''

    def prompt(self) -> str:
        """Return the profile as the opening of a system prompt."""
        return f'You are the {self.role}. Goal: {self.goal} {self.backstory}'.strip()


@functools.lru_cache(maxsize=4)
def load_profiles(path: str | None = None) -> dict[str, Profile]:
    """Return every robot's profile from ``config/profiles.yaml`` (or ``path``).

    Raises
    ------
    ConfigError
        If the file is missing or an entry lacks role or goal.
    """
    file = Path(path) if path else share_dir() / 'config' / 'profiles.yaml'
    data = load_yaml(file, 'profiles file')
    try:
        return {name: Profile.model_validate(entry) for name, entry in data.items()}
    except Exception as exc:  # noqa: BLE001 - pydantic ValidationError or a non-mapping entry
        raise ConfigError(f'profiles file {file}: {exc}') from exc


def parse_kb(text: str) -> list[tuple[str, set[str], str]]:
    """Split one KB file into ``(title, audience, body)`` sections (``'## '`` headings)."""
    sections: list[tuple[str, set[str], str]] = []
    title, audience, body = None, {'all'}, []
    for line in text.splitlines() + ['## ']:
        if line.startswith('## '):
            if title is not None and ''.join(body).strip():
                sections.append((title, audience, '\n'.join(body).strip()))
            title, audience, body = line[3:].strip(), {'all'}, []
            continue
        match = _FOR.match(line.strip())
        if match and title is not None and not body:
            audience = {a.strip() for a in match.group(1).split(',') if a.strip()}
        elif title is not None:
            body.append(line)
    return sections


@functools.lru_cache(maxsize=16)
def kb_for(role: Role | str, folder: str | None = None) -> str:
    """Return the KB sections meant for role ``role`` (or ``all``) as compact Markdown, then its worked example."""
    root = Path(folder) if folder else share_dir() / 'config' / 'kb'
    parts = []
    for file in sorted(root.glob('*.md')):
        for title, audience, body in parse_kb(file.read_text(encoding='utf-8')):
            if role in audience or 'all' in audience:
                parts.append(f'{title}:\n{body}')
    example = worked_example(role)
    if example:
        parts.append(example)
    return '\n'.join(parts)


def worked_example(role: Role | str) -> str:
    """Return role ``role``'s worked example, generated from the catalog and the workflow ('' for an unknown role).

    An operational robot: its tools in the catalog's order, one call per reply, then the report,
    with what a success report needs (the catalog's proofs). The manager: the workflow's task
    types in order with their owners, what to do after a failure, then the reflection.
    """
    if role == Role.MANAGER.value:
        steps = [f'{ManagerTool.DELEGATE_TASK.value} {{task_type: {kind.value}, robot: {TASK_OWNER[kind]}, '
                 f'hcw_id: {"the assigned HCW" if kind is OPERATIONAL_TASKS[0] else "the escorted HCW"}}}, '
                 f'then wait for its report' for kind in OPERATIONAL_TASKS]
        steps.append(f'after a failure report: {ManagerTool.DELEGATE_TASK.value} the same task type with another '
                     f'available HCW (handles_task_id: the failed task) or {ManagerTool.ESCALATE_TO_SUPERVISOR.value}')
        steps.append(f'when every task succeeded (or a human decided): {ManagerTool.SUBMIT_REFLECTION.value} with '
                     f'one outcome per task type, as the record says')
    elif role in ROLES_BY_NAME:
        decls = tools_of(role)
        steps = [f'{d.name}: {d.usage or d.text}' for d in decls]
        proofs = '; '.join(d.proof.text for d in decls if d.proof is not None)
        steps.append(f'{REPORT_TOOL} success only when {proofs}, with data from the results; otherwise '
                     f'{REPORT_TOOL} failure naming the issue (e.g. the error of the call that failed)')
    else:
        return ''
    return 'Worked example, one call per reply:\n' + '\n'.join(f'{i}. {step}' for i, step in enumerate(steps, 1))
