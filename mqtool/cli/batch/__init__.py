"""The CLI of the Spark audit: `mqtool audit` and its terminal rendering."""
