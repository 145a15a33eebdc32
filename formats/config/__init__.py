"""The broker's JSON config files: the fastjson dialect (parser, byte-exact writer) and a typed model per
file."""
