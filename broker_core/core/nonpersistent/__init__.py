"""Non-persistent topic partitions: in memory only."""
