"""The broker's HA services' state in a store (org.apache.rocketmq.store.ha): the controller mode's epoch
cache (`epochcache`)."""
