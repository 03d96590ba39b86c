"""Split strings: ``train``, ``train[:90%]``, ``train[90%:]``, ``test[10:20]``, ``train+test``.

Parsed here rather than by ``datasets`` so that every adapter (hub, local files,
saved datasets, the synthetic generator) slices the same way. Percent bounds
round to the nearest row, so ``train[:90%]`` and ``train[90%:]`` are complementary.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import EmptyDatasetError, SplitError

if TYPE_CHECKING:
    import datasets

_PART = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9_.-]+)\s*"
    r"(?:\[\s*(?P<start>-?\d+(?:\.\d+)?%?)?\s*:\s*(?P<stop>-?\d+(?:\.\d+)?%?)?\s*\])?\s*$"
)


@dataclass(frozen=True)
class SplitPart:
    name: str
    start: str | None = None
    stop: str | None = None

    def bounds(self, n: int) -> tuple[int, int]:
        return _bound(self.start, n, 0), _bound(self.stop, n, n)

    def __str__(self) -> str:
        if self.start is None and self.stop is None:
            return self.name
        return f"{self.name}[{self.start or ''}:{self.stop or ''}]"


def _bound(text: str | None, n: int, default: int) -> int:
    if text is None:
        return default
    if text.endswith("%"):
        pct = float(text[:-1])
        value = int(abs(pct) * n / 100 + 0.5)
        value = n - value if pct < 0 else value
    else:
        value = int(float(text))
        value = n + value if value < 0 else value
    return max(0, min(n, value))


def parse_split(split: str) -> list[SplitPart]:
    """``"train[:90%]+test"`` -> ``[SplitPart("train", None, "90%"), SplitPart("test")]``."""
    if not isinstance(split, str) or not split.strip():
        raise SplitError(f"split must be a name such as 'train' or 'train[:90%]', got {split!r}.")
    parts = []
    for piece in split.split("+"):
        m = _PART.match(piece)
        if m is None:
            raise SplitError(
                f"cannot parse split {split!r} (at {piece.strip()!r}). Use a split name with an "
                f"optional slice: 'train', 'train[:90%]', 'train[90%:]', 'test[:100]', 'train+test'."
            )
        for bound in (m["start"], m["stop"]):
            if bound and bound.endswith("%") and abs(float(bound[:-1])) > 100:
                raise SplitError(f"split {split!r}: percent bound {bound} is outside -100%..100%.")
        parts.append(SplitPart(m["name"], m["start"], m["stop"]))
    return parts


def slice_dataset(ds: datasets.Dataset, part: SplitPart) -> datasets.Dataset:
    if part.start is None and part.stop is None:
        return ds
    start, stop = part.bounds(len(ds))
    return ds.select(range(start, max(start, stop)))


def load_split(split: str, load_base: Callable[[str], datasets.Dataset], what: str) -> datasets.Dataset:
    """Load each named split with ``load_base(name)``, slice it, concatenate the parts."""
    pieces = []
    for part in parse_split(split):
        pieces.append(slice_dataset(load_base(part.name), part))
    if len(pieces) == 1:
        ds = pieces[0]
    else:
        import datasets

        ds = datasets.concatenate_datasets(pieces)
    if len(ds) == 0:
        raise EmptyDatasetError(
            f"{what}: split {split!r} selects no rows. Widen the slice (e.g. 'train[:90%]' "
            f"rather than 'train[:0%]') or check that the source split is not empty."
        )
    return ds


__all__ = ["SplitPart", "parse_split", "slice_dataset", "load_split"]
