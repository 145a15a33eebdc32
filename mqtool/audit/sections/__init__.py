"""The audit's result sections computed on the driver: the assembled document, the driver-side sections (lag,
delay, POP, timer, transactions), duplicates, the message trace."""
