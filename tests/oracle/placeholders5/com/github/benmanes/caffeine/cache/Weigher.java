/* Stand-in: Caffeine's Weigher (MessageStoreFetcherImpl.initCache weighs a buffer by its size). */
package com.github.benmanes.caffeine.cache;

@FunctionalInterface
public interface Weigher<K, V> {
    int weigh(K key, V value);
}
