"""Before the 3 a.m. call: `retention` (what the broker's clean services delete next, and when), `bundle` (a
support bundle of a store), `secrets` (broker.conf values redacted)."""
