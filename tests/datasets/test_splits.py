"""Split strings with slices, shared by every adapter."""

from __future__ import annotations

import pytest

from grpo_core.datafiles import SplitPart
from grpo_datasets import SplitError, parse_split


def test_parse_split():
    assert parse_split("train") == [SplitPart("train")]
    assert parse_split("train[:90%]") == [SplitPart("train", None, "90%")]
    assert parse_split("train[90%:]+test[:10]") == [
        SplitPart("train", "90%", None), SplitPart("test", None, "10"),
    ]


@pytest.mark.parametrize(
    ("part", "n", "bounds"),
    [
        (SplitPart("train", None, "90%"), 10, (0, 9)),
        (SplitPart("train", "90%", None), 10, (9, 10)),
        (SplitPart("train", None, "50%"), 5, (0, 3)),  # 2.5 rounds to 3 ...
        (SplitPart("train", "50%", None), 5, (3, 5)),  # ... on both sides: no row lost or doubled
        (SplitPart("train", "2", "5"), 10, (2, 5)),
        (SplitPart("train", "-3", None), 10, (7, 10)),
        (SplitPart("train", None, "200"), 10, (0, 10)),
    ],
)
def test_bounds(part, n, bounds):
    assert part.bounds(n) == bounds


@pytest.mark.parametrize("bad", ["", "train[", "train[1:2:3]", "train[:150%]", "tr ain", "train[a:]"])
def test_bad_split_is_a_clear_error(bad):
    with pytest.raises(SplitError, match="split"):
        parse_split(bad)
