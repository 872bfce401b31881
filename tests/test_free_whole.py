"""``GpuHoldings.free_whole`` (model/gpus.py): the indices below the node's GPU count that hold
neither a whole-GPU pod nor a share with thousandths left held, in index order, as a plain scan
gives them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.model.gpus import GpuHoldings


def _plain(holdings: GpuHoldings, gpus: int) -> tuple[int, ...]:
    held = {index for ids in holdings.whole.values() for index in ids}
    return tuple(i for i in range(gpus) if i not in held and not holdings.share_milli.get(i))


@pytest.mark.parametrize(
    ("whole", "share_milli", "gpus", "free"),
    [
        ({}, {}, 4, (0, 1, 2, 3)),
        ({"a": (0, 2)}, {}, 4, (1, 3)),
        ({}, {1: 500}, 4, (0, 2, 3)),
        ({}, {1: 0}, 4, (0, 1, 2, 3)),  # a share entry with nothing held leaves its GPU whole
        ({"a": (5,)}, {7: 100}, 4, (0, 1, 2, 3)),  # indices beyond the node's count change nothing
        ({"a": (0,), "b": (1,)}, {2: 250, 3: 750}, 4, ()),
        ({}, {}, 0, ()),
    ],
)
def test_free_whole(
    whole: dict[str, tuple[int, ...]], share_milli: dict[int, int], gpus: int, free: tuple[int, ...]
) -> None:
    holdings = GpuHoldings(whole=dict(whole), share_milli=dict(share_milli))
    assert holdings.free_whole(gpus) == free
    assert holdings.whole == whole and holdings.share_milli == share_milli  # read, not changed


@given(
    st.dictionaries(st.text(max_size=2), st.lists(st.integers(0, 9), max_size=3).map(tuple), max_size=4),
    st.dictionaries(st.integers(0, 9), st.integers(0, 1000), max_size=4),
    st.integers(0, 8),
)
def test_free_whole_is_the_plain_scan(
    whole: dict[str, tuple[int, ...]], share_milli: dict[int, int], gpus: int
) -> None:
    holdings = GpuHoldings(whole=whole, share_milli=share_milli)
    assert holdings.free_whole(gpus) == _plain(holdings, gpus)
