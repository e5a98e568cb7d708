"""Rendering: domain objects become Block Kit messages through templates/. Pure, no I/O."""
