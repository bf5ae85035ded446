"""What a trial runs and where: the conditions, the chance row's brain, a trial's folder and its ``trial.json``.

A trial's spec (:func:`trial_spec`: scenario, brain, condition, LLM clock, model, seed) is written
to its ``trial.json``; a finished trial whose ``trial.json`` matches the spec asked for is reused
(:func:`completed_trial`).
"""

from __future__ import annotations

import json
from pathlib import Path

from robot_team.llm.chance import chance_model_name, check_seed
from robot_team.llm.factory import LLM_BRAINS


CONDITIONS: dict[str, dict] = {'baseline': {'kb': False}, 'kb': {'kb': True},
                               'baseline-free': {'kb': False, 'llm_decoding': 'free'},
                               'kb-free': {'kb': True, 'llm_decoding': 'free'}}
"""Conditions and the brain options each passes: the published comparison (knowledge base off/on), with
constrained decoding (LLM settings default, ``robot_team.llm.decoding``), and the same with ``free``
decoding (the full schemas, as the published free-running team had)."""

CONDITION_LABELS = {'baseline': 'Baseline (no KB)', 'kb': 'With KB',
                    'baseline-free': 'Baseline (no KB), free decoding', 'kb-free': 'With KB, free decoding'}
TRIAL_FILE = 'trial.json'
CHANCE_DIR = 'chance'
"""The folder of an evaluation's chance trials (``DIR/chance/...``)."""
CHANCE_BRAIN = 'random'
"""The brain of the chance trials: the random chooser."""


def default_llm_clock(brain: str) -> str:
    """Return the LLM clock of trials of ``brain``: 'lockstep' for LLM brains (decisions, not latency).

    Other brains: 'realtime'.
    """
    return 'lockstep' if brain in LLM_BRAINS else 'realtime'


def trial_dir(out: Path, condition: str, trial: int, scenario: str = '') -> Path:
    """Return the folder of trial ``trial`` (from 1) of ``condition``, under ``scenario`` when given.

    ``DIR/<condition>/trial-<k>`` for an evaluation of one scenario (``scenario`` ''),
    ``DIR/<scenario>/<condition>/trial-<k>`` for several.
    """
    return Path(out) / scenario / condition / f'trial-{trial}'


def trial_spec(scenario: str, brain: str, condition: str, llm_clock: str = 'realtime',
               model: str | None = None, seed: int | None = None) -> dict:
    """Return what a trial of ``brain`` in ``condition`` runs, as its ``trial.json`` records it (and reuse compares)."""
    spec = {'scenario': scenario, 'brain': brain, 'condition': condition, 'brain_options': CONDITIONS[condition]}
    if brain in LLM_BRAINS:
        spec['llm_clock'] = llm_clock
    if brain == 'local' and model:
        spec['model'] = model
    if brain == CHANCE_BRAIN:
        spec['seed'] = check_seed(seed, 'the chance seed')
        spec['model'] = chance_model_name(seed)
    return spec


def completed_trial(folder: Path, spec: dict) -> dict | None:
    """Return the ``trial.json`` of a finished trial in ``folder`` that ran ``spec``, else None."""
    try:
        info = json.loads((Path(folder) / TRIAL_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not (Path(folder) / 'events.jsonl').is_file() or not info.get('complete'):
        return None
    return info if all(info.get(k) == v for k, v in spec.items()) else None
