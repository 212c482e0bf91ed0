"""Which Pi the core follows: today's Pi 1.6.0 by default, or v0.58.3 when asked.

Pi's session rules changed between v0.58.3 (March 2026) and 1.6.0 (November 2026): context
edits, system messages, usage entries, new compaction planning, a stricter reader. pinb
reproduces either release exactly. The choice is one value, :class:`Pi`, that every core
function takes as ``pi=`` and that a :class:`~pinb.core.session.Session` carries for all of
its operations::

    Session.open(path)               # today's Pi (1.6.0)
    Session.open(path, pi="0.58")    # Pi v0.58.3, as users of that release see the file
"""

from __future__ import annotations

import enum
from typing import Final, TypeAlias

__all__ = ["DEFAULT_PI", "Pi", "PiLike"]


class Pi(enum.Enum):
    """A Pi release whose session rules pinb follows.

    Members compare by release order, so a rule introduced in 1.x reads
    ``if pi >= Pi.V1_6``.
    """

    V0_58 = "0.58.3"
    V1_6 = "1.6.0"

    def __init__(self, value: str) -> None:
        # Compared in hot loops: keep the release order as a plain tuple on the member.
        self.rank = tuple(int(part) for part in value.split("."))

    @classmethod
    def resolve(cls, value: PiLike | None) -> Pi:
        """The release named by ``value``; ``None`` means today's Pi.

        Accepted names: ``"1.6"``, ``"1.6.0"``, ``"pi-1.6.0"``, ``"latest"``,
        ``"0.58"``, ``"0.58.3"``, ``"pi-0.58.3"`` (and the members themselves).

        Raises
        ------
        ValueError
            For any other name.
        """
        if value is None:
            return DEFAULT_PI
        if isinstance(value, Pi):
            return value
        name = str(value).strip().lower().removeprefix("pi-").removeprefix("pi").strip()
        found = _NAMES.get(name)
        if found is None:
            known = ", ".join(repr(n) for n in ("1.6", "0.58"))
            raise ValueError(f"unknown Pi release {value!r}: pinb follows {known}")
        return found

    def __ge__(self, other: object) -> bool:
        if other.__class__ is not Pi:
            return NotImplemented
        return self.rank >= other.rank

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not Pi:
            return NotImplemented
        return self.rank < other.rank

    def __str__(self) -> str:
        return f"Pi {self.value}"


#: A release, or one of its names (see :meth:`Pi.resolve`).
PiLike: TypeAlias = "Pi | str"

#: The release pinb follows unless told otherwise: the Pi people run today.
DEFAULT_PI: Final = Pi.V1_6

_NAMES: Final = {
    "1.6": Pi.V1_6,
    "1.6.0": Pi.V1_6,
    "latest": Pi.V1_6,
    "0.58": Pi.V0_58,
    "0.58.3": Pi.V0_58,
}
