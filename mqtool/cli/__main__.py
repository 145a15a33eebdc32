"""`python -m mqtool.cli`: the console entry point."""

from mqtool.cli import main

main()
