/* Stand-in: the part of Caffeine's Cache the 5.3.3 tiered store calls (MessageStoreFetcherImpl's read-ahead cache
 * of message buffers; TieredStoreMetricsManager's gauges). An in-memory map: it caches what was read from the
 * tiered files and never writes to a file, so it changes no byte on disk; it does not evict (the oracle's stores
 * are small). Caffeine itself is not on the oracle's classpath (pyspark ships none; Debian's 2.6.2 has no
 * Scheduler). */
package com.github.benmanes.caffeine.cache;

import com.github.benmanes.caffeine.cache.stats.CacheStats;

public interface Cache<K, V> {
    V getIfPresent(Object key);

    void put(K key, V value);

    void invalidate(Object key);

    void invalidateAll();

    long estimatedSize();

    CacheStats stats();
}
