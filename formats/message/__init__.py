"""The commitlog record (MessageDecoder's layout): decode, encode, properties, msgIds, compressed and
inner-batch bodies, quick struct walks."""
