"""`python -m bot` runs the command line, the same as the `queuebot` console script."""

from bot.cli import main

raise SystemExit(main())
