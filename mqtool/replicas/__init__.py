"""Two replicas of one broker (master and slave stores) compared, read-only (`mqtool replicas ...`)."""
