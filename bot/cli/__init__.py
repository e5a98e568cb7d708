"""The `queuebot` command line: serve, demo, render, diagnose, simulate, check."""

from bot.cli.main import main

__all__ = ["main"]
