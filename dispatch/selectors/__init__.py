"""Key_Shared consumer selectors: which consumer owns a sticky key hash (see :mod:`.base`)."""
from dispatch.selectors.auto_split import HashRangeAutoSplitSelector
from dispatch.selectors.base import (
    OwnerChange,
    StickyKeyConsumerSelector,
    diff_assignments,
    lost_ranges,
)
from dispatch.selectors.consistent_hashing import (
    DEFAULT_REPLICA_POINTS,
    ConsistentHashingSelector,
    ring_point,
)
from dispatch.selectors.sticky import HashRangeExclusiveSelector

__all__ = ["DEFAULT_REPLICA_POINTS", "ConsistentHashingSelector", "HashRangeAutoSplitSelector",
           "HashRangeExclusiveSelector", "OwnerChange", "StickyKeyConsumerSelector", "diff_assignments",
           "lost_ranges", "ring_point"]
