"""A RocketMQ store directory, read and written as the broker does.

The loose modules here are the store as a whole: `storedir.Store` (the root and its parts, opened on demand),
`layout` (settings resolved in one place), `version`, `liveness` (lock, abort), `checkpoint`, and the write
path every writer shares (`appender`: putMessage; `dispatch`: ReputMessageService). The broker's parts live in
the packages beside them, named as in RocketMQ's own tree.
"""
