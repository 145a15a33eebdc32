"""The tiered store beside a broker's store (`store.tiered`): its queues' ranges next to the local ones
(`ranges`, for `mqtool info`) and the broker's fall-through read below the local minimum (`fetch`)."""
