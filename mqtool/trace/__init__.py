"""`mqtool trace` and `mqtool dump trace`: one message's whole history across broker stores, from its trace
records (the client's message trace, `formats.trace`) and the store facts about every copy of it.

Modules: `records` (the trace topics' records of one store: all of them, or those about one message),
`lookup` (what one store knows about a message: its records, their delay / timer / transaction / POP state,
which groups' offsets passed them, its trace records), `timeline` (the findings of several stores joined
into one timeline per message, with the gaps named), `fleet` (the stores of a query: several roots, a
directory of stores, URLs; read in parallel), `spark` (the same lookups as Spark tasks), `html` (the report
page).
"""
