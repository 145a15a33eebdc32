/*
 * Stand-in for the concurrentlinkedhashmap-lru library (not in the oracle's jars): the POP long polling
 * maps (PopLongPollingService) are built with it. Called: an unbounded ConcurrentHashMap; its capacity (the
 * LRU eviction) is never reached by the few keys the harness polls.
 */
package com.googlecode.concurrentlinkedhashmap;

import java.util.concurrent.ConcurrentHashMap;

public class ConcurrentLinkedHashMap<K, V> extends ConcurrentHashMap<K, V> {
    public static final class Builder<K, V> {
        public Builder<K, V> maximumWeightedCapacity(long capacity) {
            return this;
        }

        public ConcurrentLinkedHashMap<K, V> build() {
            return new ConcurrentLinkedHashMap<>();
        }
    }
}
