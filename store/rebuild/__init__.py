"""Rebuild consume queues and index files from the commitlog as the broker's dispatch would have built them:
staging, comparison, atomic swap."""
