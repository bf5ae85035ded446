"""The LLM side of an episode: its brain kind, and the endpoint its LLM brains talk to.

:func:`check_brain` checks a brain kind (:data:`BRAINS`). :class:`EpisodeLLM` checks an
episode's brain, seed, LLM clock and model before anything starts, starts the endpoint of
``--brain local`` (the embedded model server, :class:`robot_team.llm.local.LocalServer`) or
``--brain random`` (the chance endpoint, :class:`robot_team.llm.chance.ChanceServer`), gives the
nodes its URL and model, stops it with the episode and reports it in ``report.json``.
"""

from __future__ import annotations

from robot_team.contracts.config import ConfigError
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.llm.chance import ChanceServer, check_seed
from robot_team.llm.factory import LLM_BRAINS, check_endpoint
from robot_team.llm.local import LocalServer, check_model, resolve_model
from robot_team.llm.lockstep import check_llm_clock
from robot_team.llm.settings import LLMSettings

BRAINS = ('protocol', *LLM_BRAINS)
"""Brain kinds of a run: the deterministic protocol brain, or an LLM brain (``random``: the chance endpoint)."""


def check_brain(brain: str, what: str = 'brain') -> str:
    """Return ``brain`` if it is a brain kind (:data:`BRAINS`).

    Raises
    ------
    ValueError
        If it is not, naming ``what`` (e.g. ``'--brain'``), the value and the kinds.
    """
    if brain not in BRAINS:
        raise ValueError(f"{what} '{brain}' is not a brain: expected one of {', '.join(BRAINS)}")
    return brain


class EpisodeLLM:
    """An episode's brain kind and LLM endpoint: checked, started, stopped and reported.

    ``local_llm``: a started :class:`robot_team.llm.local.LocalServer` to share across episodes
    (never stopped here); None: ``--brain local`` starts and stops its own, serving ``local_model``.
    ``seed``: the chance endpoint's (``--brain random`` only). ``llm_clock``: 'realtime' or
    'lockstep', as the episode's clock takes it.
    """

    def __init__(self, brain: str, llm_clock: str, *, seed: int | None = None, local_llm=None,
                 local_model: str | None = None):
        self.brain, self.llm_clock, self.seed = brain, llm_clock, seed
        self.local_llm, self._own_local_llm = local_llm, local_llm is None
        self.local_model = local_model
        self.chance: ChanceServer | None = None

    def check(self) -> None:
        """Raise ConfigError for a bad brain, seed or LLM clock, --brain openai without an endpoint, a bad local model.

        An endpoint error names the local one; a local model error names what to install.
        """
        try:
            check_brain(self.brain)
            if self.brain == 'random':
                check_seed(0 if self.seed is None else self.seed, 'seed (--seed)')
            elif self.seed is not None:
                raise ValueError(f"seed (--seed) {self.seed!r} is the random chooser's: use it with brain 'random' "
                                 f"(not '{self.brain}')")
            check_llm_clock(self.llm_clock, 'LLM clock (--llm-clock)')
            if self.brain == 'openai':
                check_endpoint(LLMSettings())
            if self.brain == 'local' and self.local_llm is None:
                check_model(resolve_model(self.local_model))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def start(self, brain_options: dict) -> None:
        """For ``--brain local`` or ``random``: start the endpoint, give the nodes its URL and model.

        Sets the node parameters ``llm_base_url`` and ``llm_model`` in ``brain_options`` (and, for
        every LLM brain, ``llm_clock``). ``random``: the chance endpoint of this episode's seed
        (:class:`robot_team.llm.chance.ChanceServer`, model ``chance-seed-<seed>``).
        """
        if self.brain in LLM_BRAINS:
            brain_options.setdefault('llm_clock', self.llm_clock)
        if self.brain == 'random':
            self.chance = ChanceServer(0 if self.seed is None else self.seed).start()
            brain_options['llm_base_url'] = self.chance.base_url
            brain_options['llm_model'] = self.chance.model
            return
        if self.brain != 'local':
            return
        if self.local_llm is None:
            self.local_llm = LocalServer(model=self.local_model).start()
        brain_options['llm_base_url'] = self.local_llm.base_url
        brain_options['llm_model'] = self.local_llm.model

    def stop(self) -> None:
        """Stop the endpoint this episode started (a ``local_llm`` given by the caller keeps running)."""
        if self.local_llm is not None and self._own_local_llm:
            self.local_llm.stop()
        if self.chance is not None:
            self.chance.stop()

    def clock_report(self, events: list[TeamEventModel]) -> dict:
        """Return the report's ``llm_clock``: its mode, the holds that expired (and ``step_s`` when lockstep)."""
        expired = [e for e in events if e.kind == EventKind.SIM.value and e.data.get('what') == 'clock_hold_expired']
        out: dict = {'mode': self.llm_clock, 'holds_expired': len(expired)}
        if self.llm_clock == 'lockstep':
            out['step_s'] = LLMSettings().lockstep_step_s   # as the clock source read it
        return out

    def endpoint_report(self) -> dict:
        """Return the report's ``local_llm`` (``--brain local``) or ``chance_llm`` (``random``), else nothing.

        ``chance_llm`` has the seed, the model name and the replies per caller.
        """
        out: dict = {}
        if self.local_llm is not None:
            out['local_llm'] = {'model': self.local_llm.model, 'base_url': self.local_llm.base_url,
                                'startup_s': round(self.local_llm.startup_s, 3),
                                'threads': self.local_llm.settings.threads}
        if self.chance is not None:
            out['chance_llm'] = {'model': self.chance.model, 'seed': self.chance.seed,
                                 'base_url': self.chance.base_url, 'replies': self.chance.replies()}
        return out
