"""The hospital's paging system: pages sent to HCWs, when the available ones answer, and their replies.

An available HCW acknowledges a page ``response_delay_s`` after it was sent; a busy one never
does (nor one who became busy before answering: the engine decides that when the answer is due);
an off-shift HCW does not carry a pager (the page is not delivered). What an acknowledged page
sets in motion (the HCW following a robot) is :mod:`~robot_team.sim.hospital.hcw_motion`'s.

Events: ``page_delivered``, ``page_acknowledged``. Times in sim s. No rclpy here.
"""

from __future__ import annotations

from dataclasses import dataclass

from robot_team.contracts.names import RobotId
from robot_team.sim.common import EventLog, SimInputError


@dataclass
class Page:
    """A page sent to an HCW and what came of it (times in sim s)."""

    page_id: int
    hcw_id: str
    robot: RobotId
    message: str
    sent_at: float
    delivered: bool
    acknowledged: bool = False
    acknowledged_at: float | None = None
    reply: str = ''
    room: str = ''                # the room the HCW is needed in ('' unnamed)

    @property
    def response_time_s(self) -> float | None:
        """Sim seconds from the page to the acknowledgement (None if not acknowledged)."""
        return None if self.acknowledged_at is None else self.acknowledged_at - self.sent_at


class Pager:
    """The pages sent (:attr:`pages`, by ID from 1) and those whose answer is awaited (:attr:`pending`).

    Parameters
    ----------
    log
        Where the paging events go.
    response_delay_s
        Sim seconds an available HCW takes to acknowledge a page.

    Notes
    -----
    :attr:`pages` and :attr:`pending` are the changing state (a hospital checkpoint holds them).
    """

    def __init__(self, log: EventLog, response_delay_s: float):
        self._log = log
        self.response_delay_s = float(response_delay_s)
        self.pages: dict[int, Page] = {}
        self.pending: list[int] = []

    def send(self, hcw_id: str, availability: str, robot: RobotId, message: str, room: str, t: float) -> Page:
        """Page the HCW ``hcw_id`` (now ``availability``) at sim time ``t`` (s); return the page.

        It is delivered unless the HCW is ``off_shift``, and awaits an answer if they are ``available``.
        """
        page_id = len(self.pages) + 1
        delivered = availability != 'off_shift'
        page = Page(page_id, hcw_id, robot, message, t, delivered, room=room)
        self.pages[page_id] = page
        if delivered:
            self._log.emit('page_delivered', page_id=page_id, hcw_id=hcw_id, robot=robot, room=room,
                           message=message, availability=availability)
            if availability == 'available':
                self.pending.append(page_id)
        return page

    def status(self, page_id: int) -> Page:
        """Return the page ``page_id`` as it stands.

        Raises
        ------
        SimInputError
            If there is no such page.
        """
        try:
            return self.pages[page_id]
        except KeyError:
            raise SimInputError(f'unknown page {page_id}') from None

    def due(self, t: float) -> list[Page]:
        """Return (and stop awaiting) the pages whose answer is due at sim time ``t`` (s), in the order sent."""
        due = [self.pages[page_id] for page_id in self.pending
               if t >= self.pages[page_id].sent_at + self.response_delay_s - 1e-9]
        for page in due:
            self.pending.remove(page.page_id)
        return due

    def answer_times(self) -> list[float]:
        """Return when each awaited page will be answered (sim s), in the order sent."""
        return [self.pages[page_id].sent_at + self.response_delay_s for page_id in self.pending]

    def acknowledge(self, page: Page, t: float) -> None:
        """Record that the HCW acknowledged ``page`` at sim time ``t`` (s), with their reply."""
        page.acknowledged, page.acknowledged_at = True, t
        page.reply = (f'On my way — I will follow {page.robot}' if page.robot
                      else 'Acknowledged — on my way')
        self._log.emit('page_acknowledged', page_id=page.page_id, hcw_id=page.hcw_id, robot=page.robot,
                       reply=page.reply, response_time_s=page.response_time_s)
