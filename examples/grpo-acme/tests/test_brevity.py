import grpo_acme
from grpo_core.contract import RewardContract


class TestBrevityContract(RewardContract):
    reward = "acme.brevity"
    plugin = grpo_acme


def test_brevity_values() -> None:
    assert grpo_acme.brevity(["", "x" * 100, "x" * 300], max_chars=200) == [1.0, 0.5, 0.0]
