"""What trials running side by side each get: a ROS domain per slot, and their share of the local endpoint."""

from __future__ import annotations

import os

from robot_team.llm.settings import LLMSettings, LocalServerSettings


MAX_DOMAIN_ID = 232
"""The largest ROS domain ID (on Linux; DDS ports overflow above it)."""


def parallel_domains(domain_id: int | None, jobs: int) -> range:
    """Return the ROS domain IDs of trials running side by side: the base domain plus each slot (0 to ``jobs - 1``).

    The base is ``domain_id``, else ``$ROS_DOMAIN_ID``, else 0.

    Raises
    ------
    ValueError
        If ``jobs`` is below 1, ``$ROS_DOMAIN_ID`` is not an integer, or a domain ID falls outside
        0 to :data:`MAX_DOMAIN_ID` (the message names the option and the range it needs).
    """
    if jobs < 1:
        raise ValueError(f'--jobs must be at least 1, got {jobs}')
    if domain_id is None:
        text = os.environ.get('ROS_DOMAIN_ID', '') or '0'
        try:
            domain_id = int(text)
        except ValueError:
            raise ValueError(f"ROS_DOMAIN_ID '{text}' is not an integer (expected 0 to {MAX_DOMAIN_ID})") from None
    domains = range(domain_id, domain_id + jobs)
    if domain_id < 0 or domains[-1] > MAX_DOMAIN_ID:
        raise ValueError(f'--domain-id {domain_id} with --jobs {jobs} needs ROS domain IDs {domain_id} to '
                         f'{domains[-1]}: expected them within 0 to {MAX_DOMAIN_ID}')
    return domains


def shared_local_settings(jobs: int, settings: LocalServerSettings | None = None) -> LocalServerSettings:
    """Return the local endpoint's settings for ``jobs`` teams at once: ``jobs`` times the slots and the context.

    One slot per robot of every team running, each with the context a slot has for one team
    (``ctx_size / parallel``), so no team waits for another's slot; llama.cpp decodes the slots
    in one batch on the same ``threads``, so requests are slower as more run at once.
    """
    settings = settings or LLMSettings().local
    return settings.model_copy(update={'parallel': settings.parallel * jobs, 'ctx_size': settings.ctx_size * jobs})
