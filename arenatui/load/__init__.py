"""Open-loop load runs (`arena load`): arrival processes, the driver, figures, process shards. No UI imports."""
