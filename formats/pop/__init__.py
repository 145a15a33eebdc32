"""POP revive bodies (ck, ack, bAck): the parser with the broker's rules and its columnar numba twin."""
