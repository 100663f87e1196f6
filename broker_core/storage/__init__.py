"""Storage: the segmented managed log of a topic partition and its subscription cursors."""
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore
from broker_core.storage.log import ManagedLog, StoredEntry

__all__ = ["CursorStore", "ManagedCursor", "ManagedLog", "StoredEntry"]
