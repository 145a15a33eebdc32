"""`mqtool tiered ...`: commands on the tiered store plugin's tree and metadata (5.3.3, POSIX provider)."""
