"""`mqtool query`: messages by key, msgId / UNIQ_KEY, queue offset and store time, with the index lookups and
the message view they share."""
