"""The tiered store of a 5.x broker (the `tieredstore` plugin, POSIX provider), read offline.

`settings`: where the tree is and whose it is (--tiered, broker.conf's tiered keys); `flatfile`: the metadata
file and each queue's COMMIT_LOG / CONSUME_QUEUE segments as `FlatFileStore` / `FlatMessageFile` see them.
Nothing here writes.
"""
