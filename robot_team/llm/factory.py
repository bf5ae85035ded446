"""LLM brains as the nodes make them: settings per brain kind, endpoint check, lockstep clock holds.

Brain kinds (the nodes' ``brain`` parameter): ``openai`` (any OpenAI-compatible endpoint from the
LLM settings: ``config/llm.yaml``, ``ROBOT_TEAM_LLM_*``, ``OPENAI_BASE_URL``/``OPENAI_API_KEY``),
``local`` (the built-in local endpoint, :mod:`robot_team.llm.local`, whose URL the run gives
each node as its ``llm_base_url`` parameter, and the model it serves as ``llm_model``) and
``random`` (the chance endpoint, :mod:`robot_team.llm.chance`, given the same way; its model
``chance-seed-<seed>``). With the
``lockstep`` LLM clock (parameter ``llm_clock``) every request holds sim time (:mod:`robot_team.llm.lockstep`).
"""

from __future__ import annotations

from typing import Callable, ContextManager

from robot_team.catalog import OPERATIONAL_ROBOTS
from robot_team.llm.chance import chance_settings
from robot_team.llm.client import ChatClient
from robot_team.llm.decoding import DECODINGS
from robot_team.llm.local import local_settings
from robot_team.llm.lockstep import ClockHoldPublisher, check_llm_clock
from robot_team.llm.manager_brain import LLMManagerBrain
from robot_team.llm.robot_brain import LLMRobotBrain
from robot_team.llm.settings import LLMSettings
from robot_team.contracts.names import RobotId, Role

LLM_BRAINS = ('openai', 'local', 'random')
"""Brain kinds backed by an LLM endpoint (``random``: the chance endpoint, a random chooser)."""

ENDPOINT_BRAINS = ('local', 'random')
"""LLM brain kinds whose endpoint the run starts and gives each node (``llm_base_url``, ``llm_model``)."""

LOCAL_HINT = ('use the built-in local model instead: `robot-team run --brain local` (it starts and stops a '
              'llama.cpp server on 127.0.0.1), or `robot-team llm serve` and then OPENAI_BASE_URL=<the URL it '
              'prints>')


class NoEndpointError(ValueError):
    """``--brain openai`` with no endpoint configured; the message says how to configure one or use the local one."""


def check_endpoint(settings: LLMSettings) -> None:
    """Raise :class:`NoEndpointError` unless every robot has an endpoint (a base URL, or a key for api.openai.com)."""
    missing = [robot for robot in (Role.MANAGER.value, *OPERATIONAL_ROBOTS)
               if not (settings.for_robot(robot).base_url or settings.for_robot(robot).api_key)]
    if missing:
        raise NoEndpointError(
            f"--brain openai: no LLM endpoint configured for {', '.join(missing)} (set OPENAI_BASE_URL and "
            f'OPENAI_API_KEY, or base_url/api_key in config/llm.yaml or ROBOT_TEAM_LLM_BASE_URL); ' + LOCAL_HINT)


def brain_settings(kind: str, base_url: str = '', model: str = '', decoding: str = '') -> LLMSettings:
    """Return the LLM settings of brain ``kind`` (``base_url``: the node's ``llm_base_url`` parameter, may be '').

    ``model`` (the node's ``llm_model`` parameter, may be ''): for ``local``, the name the local
    endpoint serves (default: the configured ``local.model``'s); for ``random``, the chance
    endpoint's (``chance-seed-<seed>``, default seed 0); ignored for ``openai``.
    ``decoding`` (the node's ``llm_decoding`` parameter: ``constrained`` or ``free``; '' keeps the
    settings' value, :mod:`robot_team.llm.decoding`).

    Raises
    ------
    ValueError
        If ``kind`` is ``local`` or ``random`` and no ``base_url`` is given, or ``kind`` is not an LLM brain.
    """
    settings = LLMSettings()
    if decoding:
        settings = settings.model_copy(update={'decoding': check_decoding(decoding)})
    if kind == 'local':
        if not base_url:
            raise ValueError("brain 'local' needs the local endpoint's URL (parameter llm_base_url): run with "
                             '`robot-team run --brain local`, or start `robot-team llm serve` and pass its URL')
        return local_settings(base_url, settings, model)
    if kind == 'random':
        if not base_url:
            raise ValueError("brain 'random' needs the chance endpoint's URL (parameter llm_base_url): run with "
                             '`robot-team run --brain random`')
        return chance_settings(base_url, settings, model)
    if kind != 'openai':
        raise ValueError(f"unknown LLM brain '{kind}': expected {', '.join(LLM_BRAINS)}")
    return settings.model_copy(update={'base_url': base_url}) if base_url else settings


def check_decoding(decoding: str) -> str:
    """Return ``decoding`` if it is a decoding mode (``constrained``, ``free``).

    Raises
    ------
    ValueError
        If it is not, naming the parameter and the modes.
    """
    if decoding not in DECODINGS:
        raise ValueError(f"parameter llm_decoding is '{decoding}': expected one of {', '.join(DECODINGS)}")
    return decoding


def clock_hold(node, robot: RobotId, llm_clock: str) -> Callable[[], ContextManager] | None:
    """Return the ChatClient ``hold`` for robot ``robot`` (``node``, the holder) under ``llm_clock`` (None: realtime).

    Raises
    ------
    ValueError
        If ``llm_clock`` is not an LLM clock mode.
    """
    if check_llm_clock(llm_clock, 'parameter llm_clock') == 'realtime':
        return None
    return ClockHoldPublisher(node, robot)


def llm_robot_brain(role: Role, kind: str, *, emit=None, kb: bool = True, base_url: str = '', hold=None,
                    model: str = '', decoding: str = ''):
    """Return robot ``role``'s LLM brain of ``kind`` (see :func:`brain_settings`; ``hold`` from :func:`clock_hold`)."""
    settings = brain_settings(kind, base_url, model, decoding)
    return LLMRobotBrain(role, settings, emit, kb=kb, client=ChatClient(settings, role, emit, hold=hold))


def llm_manager_brain(kind: str, *, emit=None, kb: bool = True, base_url: str = '', hold=None, fallback_brain=None,
                      model: str = '', decoding: str = ''):
    """Return the manager's LLM brain of ``kind`` (as :func:`llm_robot_brain`)."""
    settings = brain_settings(kind, base_url, model, decoding)
    return LLMManagerBrain(settings, emit, kb=kb, client=ChatClient(settings, Role.MANAGER.value, emit, hold=hold),
                           fallback_brain=fallback_brain)
