"""A run's LLM usage: requests, tokens, cost and choices offered, summed from its ``llm_*`` events."""

from __future__ import annotations

from pydantic import BaseModel, Field

from robot_team.contracts.events import EventKind, TeamEventModel


class LLMUsage(BaseModel):
    """LLM requests, tokens and cost of a run (``llm_*`` events; zero for the protocol brain)."""

    requests: int = 0
    replies: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = Field(0, description='Prompt tokens the endpoint took from its prompt cache (its '
                                      "usage's ``prompt_tokens_details.cached_tokens``; 0 where it reports none).")
    completion_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = Field(default_factory=list)
    cost_by_robot: dict[str, float] = Field(default_factory=dict)
    decisions_offered: int = Field(0, description='Requests that recorded what they offered (robot_team.llm.decoding).')
    choices_offered: int = Field(0, description='Choices offered, summed over those requests.')

    @property
    def choices_per_decision(self) -> float | None:
        """Mean number of choices a model was offered per decision (None: no request recorded its offer)."""
        return self.choices_offered / self.decisions_offered if self.decisions_offered else None


def llm_usage(events: list[TeamEventModel]) -> LLMUsage:
    """Sum the LLM requests, tokens and cost (``llm_reply`` ``cost_usd``) of a run."""
    usage = LLMUsage()
    models: dict[str, None] = {}
    for event in events:
        if event.kind == EventKind.LLM_REQUEST.value:
            usage.requests += 1
            offered = event.data.get('offered')
            if isinstance(offered, dict) and event.data.get('attempt', 1) == 1:
                usage.decisions_offered += 1
                usage.choices_offered += int(offered.get('choices') or 0)
        elif event.kind == EventKind.LLM_ERROR.value:
            usage.errors += 1
        elif event.kind == EventKind.LLM_REPLY.value:
            d = event.data
            usage.replies += 1
            usage.prompt_tokens += int(d.get('prompt_tokens') or 0)
            endpoint = d.get('usage') if isinstance(d.get('usage'), dict) else {}
            usage.cached_prompt_tokens += int((endpoint.get('prompt_tokens_details') or {}).get('cached_tokens') or 0)
            usage.completion_tokens += int(d.get('completion_tokens') or 0)
            cost = float(d.get('cost_usd') or 0.0)
            usage.cost_usd += cost
            robot = d.get('robot') or event.actor
            usage.cost_by_robot[robot] = usage.cost_by_robot.get(robot, 0.0) + cost
            if d.get('model'):
                models[str(d['model'])] = None
    usage.models = list(models)
    return usage
