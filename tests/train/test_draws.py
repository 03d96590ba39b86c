"""Sampled tokens on a CPU drawn from one uniform number per row (``trainer.draws``):
the same distribution as ``torch.multinomial(probs, 1)``, zero-probability entries never
drawn, torch's own errors for rows that are not distributions, and the trainer's CPU
sampling inside it."""

from __future__ import annotations

import pytest
import torch

from grpo_core.trainer.draws import cumulative_draws, draw
from grpo_core.trainer.decoding import FastSampling, Sampling


def _counts(probs, rows: int) -> list[int]:
    torch.manual_seed(0)
    with cumulative_draws():
        picks = torch.multinomial(torch.tensor(probs).repeat(rows, 1), num_samples=1)
    assert picks.shape == (rows, 1) and picks.dtype == torch.int64
    return torch.bincount(picks.squeeze(1), minlength=len(probs)).tolist()


def test_draws_follow_the_distribution_and_never_a_zero_entry():
    # 40,000 rows of [0.1, 0.2, 0, 0.7]: expected 4,000 / 8,000 / 0 / 28,000; binomial SE
    # sqrt(n p (1-p)) = 60 / 80 / 0 / 91.7; each count within 4 SE
    counts = _counts([0.1, 0.2, 0.0, 0.7], 40_000)
    assert counts[2] == 0
    for got, want, se in zip(counts, (4000, 8000, 0, 28000), (60, 80, 0, 91.7)):
        assert abs(got - want) <= 4 * se, counts


def test_weights_need_not_sum_to_one():
    # weights 1 : 3 -> 0.25 / 0.75 of 20,000 = 5,000 / 15,000, SE sqrt(20000 * 0.25 * 0.75) = 61.2
    counts = _counts([1.0, 3.0], 20_000)
    assert abs(counts[0] - 5000) <= 4 * 61.2, counts


@pytest.mark.parametrize("probs, index", [([0.0, 1.0, 0.0], 1), ([1.0, 0.0, 0.0], 0), ([0.0, 0.0, 2.0], 2)])
def test_one_certain_entry_is_always_drawn(probs, index):
    assert _counts(probs, 500)[index] == 500


def test_a_uniform_of_exactly_zero_skips_leading_zero_entries(monkeypatch):
    """The uniform number lies in [0, total); at exactly 0 the first entry with probability
    above 0 is drawn, not a zero entry in front of it (a right-closed search would)."""
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.zeros(*a[0], dtype=k.get("dtype")))
    assert draw(torch.tensor([[0.0, 0.0, 0.5, 0.5]])).tolist() == [[2]]


def test_more_rows_than_one_chunk_each_draw_from_their_own_row():
    # 20 rows (chunks of 8, 8, 4), row i certain of index i
    probs = torch.eye(20)
    with cumulative_draws():
        assert torch.multinomial(probs, 1).squeeze(1).tolist() == list(range(20))


@pytest.mark.parametrize("row", [[0.0, 0.0], [0.5, -0.1], [float("nan"), 1.0], [float("inf"), 1.0]])
def test_rows_that_are_not_distributions_get_torchs_own_error(row):
    probs = torch.tensor([[0.5, 0.5], row])
    with pytest.raises(RuntimeError):
        torch.multinomial(probs, 1)  # torch's own refusal, outside
    with cumulative_draws(), pytest.raises(RuntimeError):
        torch.multinomial(probs, 1)


def test_calls_it_does_not_take_go_to_torch_and_torch_is_restored():
    original = torch.multinomial
    with cumulative_draws():
        assert torch.multinomial is not original
        two = torch.multinomial(torch.tensor([[0.5, 0.5, 0.0]]), 2)  # two samples: torch's own, without replacement
        assert sorted(two.squeeze(0).tolist()) == [0, 1]
        assert torch.multinomial(torch.tensor([0.0, 1.0]), 1).tolist() == [1]  # 1-D: torch's own shape
    assert torch.multinomial is original
    with pytest.raises(ValueError), cumulative_draws():
        raise ValueError("a failed generation")
    assert torch.multinomial is original


def test_the_trainers_cpu_sampling_draws_so_and_a_seed_repeats_its_draws():
    from transformers import GenerationConfig

    sampling = FastSampling(Sampling(), GenerationConfig(), 8)
    probs = torch.softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(3)), -1)
    runs = []
    for _ in range(2):
        torch.manual_seed(7)
        with sampling.context("cpu"):
            assert torch.multinomial.__module__ == "grpo_core.trainer.draws"
            runs.append(torch.multinomial(probs, 1))
    assert torch.equal(runs[0], runs[1])
    with sampling.context("cuda"):  # elsewhere torch's own (the context's device, not the tensor's)
        assert torch.multinomial.__module__ != "grpo_core.trainer.draws"
