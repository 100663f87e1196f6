"""``MessageId``, as pulsar-client's: ``MessageId(partition=-1, ledger_id=-1, entry_id=-1, batch_index=-1)``.

One class serves the broker and the client: :class:`broker_core.types.MessageId` (its docstring says how ids
are numbered, written and ordered), re-exported here, where the client's modules and users import it from.
"""
from __future__ import annotations

from broker_core.types import MessageId

__all__ = ["MessageId"]
