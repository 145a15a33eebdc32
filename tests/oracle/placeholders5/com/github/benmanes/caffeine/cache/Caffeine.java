/* Stand-in: Caffeine's builder, as far as MessageStoreFetcherImpl.initCache calls it (5.3.3
 * tieredstore/.../core/MessageStoreFetcherImpl.java:85-98). The settings are accepted and not applied: the
 * stand-in cache neither expires nor evicts (see Cache). */
package com.github.benmanes.caffeine.cache;

import com.github.benmanes.caffeine.cache.stats.CacheStats;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class Caffeine<K, V> {
    private Caffeine() {
    }

    public static Caffeine<Object, Object> newBuilder() {
        return new Caffeine<>();
    }

    public Caffeine<K, V> scheduler(Scheduler scheduler) {
        return this;
    }

    public Caffeine<K, V> expireAfterAccess(long duration, TimeUnit unit) {
        return this;
    }

    public Caffeine<K, V> expireAfterWrite(long duration, TimeUnit unit) {
        return this;
    }

    public Caffeine<K, V> maximumWeight(long maximumWeight) {
        return this;
    }

    public Caffeine<K, V> maximumSize(long maximumSize) {
        return this;
    }

    @SuppressWarnings("unchecked")
    public <K1 extends K, V1 extends V> Caffeine<K1, V1> weigher(Weigher<? super K1, ? super V1> weigher) {
        return (Caffeine<K1, V1>) this;
    }

    public Caffeine<K, V> recordStats() {
        return this;
    }

    public <K1 extends K, V1 extends V> Cache<K1, V1> build() {
        return new MapCache<>();
    }

    static final class MapCache<K, V> implements Cache<K, V> {
        private final ConcurrentHashMap<Object, V> map = new ConcurrentHashMap<>();
        private final AtomicLong hits = new AtomicLong();
        private final AtomicLong misses = new AtomicLong();

        @Override
        public V getIfPresent(Object key) {
            V v = map.get(key);
            (v == null ? misses : hits).incrementAndGet();
            return v;
        }

        @Override
        public void put(K key, V value) {
            map.put(key, value);
        }

        @Override
        public void invalidate(Object key) {
            map.remove(key);
        }

        @Override
        public void invalidateAll() {
            map.clear();
        }

        @Override
        public long estimatedSize() {
            return map.size();
        }

        @Override
        public CacheStats stats() {
            return new CacheStats(hits.get(), misses.get());
        }
    }
}
