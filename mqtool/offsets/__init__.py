"""`mqtool offsets`: consumer progress, reset plans (by time, to earliest/latest, from a file) and applying
them."""
