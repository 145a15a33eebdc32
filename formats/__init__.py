"""RocketMQ store file formats: bytes in, records out, and back (the lowest layer of mqtool)."""
