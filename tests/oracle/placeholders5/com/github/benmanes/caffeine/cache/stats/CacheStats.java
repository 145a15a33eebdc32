/* Stand-in: Caffeine's CacheStats, as far as TieredStoreMetricsManager's gauges read it. */
package com.github.benmanes.caffeine.cache.stats;

public final class CacheStats {
    private final long hitCount;
    private final long missCount;

    public CacheStats(long hitCount, long missCount) {
        this.hitCount = hitCount;
        this.missCount = missCount;
    }

    public long hitCount() {
        return hitCount;
    }

    public long missCount() {
        return missCount;
    }

    public long loadCount() {
        return 0L;
    }
}
