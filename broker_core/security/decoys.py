"""What an unknown user's password is checked against, so that a refusal's time does not tell whether the
user exists.

A refusal costs what hashing the password costs, and that depends on the stored hash's
:class:`~broker_core.security.password_hashes.HashCost` (SHA-512-crypt ~6-15 ms, APR1 ~1.5-3.5 ms, more with
``rounds=``). Checking unknown users against one fixed hash would time them all alike, and unlike every
user whose hash costs something else. So :class:`Decoys` holds one decoy hash per cost found in the users
file (:func:`~broker_core.security.password_hashes.decoy`: same scheme, rounds and salt length), and gives
each unknown name one of them, picked by a keyed hash of the name in proportion to how many users have
that cost: unknown names fall in each cost as often as users do, and a given name always in the same one.
The key is a digest of the stored hashes, as secret as the file and the same at every start with it.

Example, users ``alice`` (``$6$``), ``bob`` (``$6$``), ``root`` (``$apr1$``)::

    decoys = Decoys({"alice": "$6$...", "bob": "$6$...", "root": "$apr1$..."})
    decoys.for_name("nobody")      # a $6$ decoy for about two names in three, an $apr1$ one for the rest;
    decoys.for_name("nobody")      # the same decoy every time for the same name
"""
from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from typing import Mapping

from broker_core.security.password_hashes import HashCost, cost_of, decoy


class Decoys:
    def __init__(self, users: Mapping[str, str]) -> None:
        """``users``: name -> stored hash (at least one, well-formed)."""
        counts = Counter(cost_of(stored) for stored in users.values())
        self._costs = sorted(counts.items())  # a fixed order, for the same pick at every start
        self._total = sum(counts.values())
        self._hashes = {cost: decoy(cost) for cost in counts}
        self._key = hashlib.sha256("\n".join(sorted(users.values())).encode("utf-8")).digest()

    @property
    def costs(self) -> dict[HashCost, int]:
        """Each cost found in the users file, and how many users' hashes have it."""
        return dict(self._costs)

    def cost_for(self, name: str) -> HashCost:
        """The cost whose decoy ``name`` is checked against when it is no user."""
        digest = hmac.new(self._key, name.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        point = int.from_bytes(digest[:8], "big") % self._total
        for cost, count in self._costs:
            if point < count:
                return cost
            point -= count
        raise AssertionError("unreachable: point < total")

    def for_name(self, name: str) -> str:
        """The decoy hash ``name`` is checked against when it is no user."""
        return self._hashes[self.cost_for(name)]
