/* Stand-in: Caffeine's Scheduler, named by MessageStoreFetcherImpl.initCache only to pass to the builder. */
package com.github.benmanes.caffeine.cache;

public interface Scheduler {
    static Scheduler systemScheduler() {
        return new Scheduler() {
        };
    }
}
