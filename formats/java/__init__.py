"""Java's semantics where the broker's bytes depend on them: `hash` (String.hashCode, tags codes, HashMap
order), `props` (.properties text, Long.parseLong), `strings` (String.hashCode over Arrow string columns,
vectorised)."""
