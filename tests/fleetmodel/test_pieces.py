"""The second fleet model's ARC scrape cut into promtool's two-hour blocks as it is written:
the same pieces as the whole scrape cut afterwards."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetmodel import Case, plan, run
from fleetmodel.arc import Shape, write_openmetrics, write_pieces
from testkit.prometheus import split_by_block


@pytest.mark.parametrize("shape", list(Shape))
def test_pieces_written_are_the_whole_scrape_cut_at_its_blocks(
    tmp_path: Path, shape: Shape
) -> None:
    fleet = run(
        plan(Case.LOWERED_MAX, seed=2, types=3, end=datetime(2026, 11, 26, 10, 14, tzinfo=UTC))
    )
    whole = tmp_path / "whole.om"
    written = write_openmetrics(fleet, whole, shape)
    cut, samples = split_by_block(whole, tmp_path / "cut")
    pieces, as_written = write_pieces(fleet, tmp_path / "pieces", shape)
    assert as_written == written and samples == written.samples
    # One piece per day's stretch and block it crosses, each byte for byte the piece cut.
    assert [p.name for p in pieces] == [p.name for p in cut] and len(pieces) >= fleet.plan.days
    for mine, theirs in zip(pieces, cut, strict=True):
        assert mine.read_bytes() == theirs.read_bytes(), mine.name
