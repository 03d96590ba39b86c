"""Stop (or skip) at the first non-finite value of a step, before it can spread.

A NaN in the loss or the gradients is written into the weights by the next
optimizer step; the next generation then samples from NaN logits and dies in a
device-side assert with no checkpoint. The guard looks at three places, each
with one device-to-host sync per optimizer step:

1. before the update: every micro-batch loss of the step and the gradient norm;
   a non-finite one drops the update (the gradients are set to None, so the
   optimizer leaves weights and moments as they were);
2. after the update: the trainable weights, finite and not blown up: the largest
   absolute trainable weight may not grow more than ``max_jump`` times (100) in
   one update. An absurd learning rate writes finite but wrecked weights (with
   Adam every weight moves by about the learning rate): caught at the update that
   does it, not one step later when the loss is already NaN;
3. the logits sampling reads, indirectly: weights that are finite but produce
   non-finite logits (an absurd learning rate) make the next loss non-finite,
   which (1) catches before another update, and generation is told to replace
   non-finite logits instead of asserting (``remove_invalid_values``).

When the current weights are suspect (a non-finite loss, or non-finite weights)
and a snapshot is kept, the weights from before the last update are put back.
The snapshot is a copy of the trainable parameters, taken before each update:
cheap for LoRA adapters, so on by default when trainable parameters are a small
share of the model or fit in 1 GiB. Every stop says which step's weights the saved
state holds. The optimizer's moments are not restored (Adam's update size
is bounded by the learning rate whatever the moments hold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SNAPSHOT_AUTO_SHARE = 0.1  # keep a snapshot when trainable params are at most this share
SNAPSHOT_AUTO_BYTES = 1 << 30  # ... or take at most this many bytes
MAX_JUMP = 100.0  # health.max_weight_jump: growth of the largest trainable weight in one update


@dataclass
class Event:
    step: int  # the optimizer step (1-based) whose values were non-finite
    metric: str  # "loss", "grad_norm", "weights" (non-finite) or "jump" (blown up)
    value: float  # the loss or gradient norm; for "jump", the growth factor
    learning_rate: float
    restored: bool  # the weights from before the last update were put back
    weights_of: int = -1  # the step whose finished weights the model holds now (0: the start)
    sizes: tuple[float, float] = (math.nan, math.nan)  # "jump": largest |weight| before and after
    # "grad_norm": (trainable tensors with a non-finite gradient, of how many, the first and last of them
    # in the model's order): a NaN made in layer k reaches the gradients of layers k and below only
    spread: tuple[int, int, str, str] | None = None

    @property
    def saves_checkpoint(self) -> bool:
        """A stop on this event saves a checkpoint: of the last sound state, never of
        non-finite or blown-up weights (those are saved only when the snapshot put them back)."""
        return self.metric not in ("weights", "jump") or self.restored

    def describe(self) -> str:
        if self.metric == "jump":
            before, after = self.sizes
            return (f"step {self.step}: the update blew up the trainable weights (largest |weight| {before:.3g} -> "
                    f"{after:.3g}, x{self.value:.3g} > health.max_weight_jump; learning rate "
                    f"{self.learning_rate:.3g})")
        what = {"loss": "the loss", "grad_norm": "the gradient norm",
                "weights": "the trainable weights after the update"}[self.metric]
        shown = "are non-finite" if self.metric == "weights" else f"is {self.value}"
        text = f"step {self.step}: {what} {shown} (learning rate {self.learning_rate:.3g})"
        if self.spread is not None:
            bad, of, first, last = self.spread
            text += f"; non-finite gradients in {bad} of {of} trainable tensors, " + (
                first if bad == 1 else f"from {first} to {last}")
        return text


@dataclass(frozen=True)
class GuardSettings:
    """The guard's settings (``health.on_nonfinite``, ``health.snapshot``,
    ``health.max_skips``, ``health.max_weight_jump``)."""

    policy: str = "stop"  # stop: a checkpoint of the last finite state, then the end; skip: drop the update
    snapshot: bool | str = "auto"  # keep the weights from before each update (auto: see wants_snapshot)
    max_skips: int = 10  # skip: updates dropped in a row before the run stops anyway
    max_jump: float = MAX_JUMP  # growth of the largest trainable weight in one update; 0: unchecked


class Guard:
    """Checks one optimizer step at a time; see the module docstring."""

    def __init__(self, params: list[torch.Tensor], *, policy: str = "stop", snapshot: bool = True,
                 max_skips: int = 10, max_jump: float = MAX_JUMP, names: list[str] | None = None):
        import torch

        if policy not in ("stop", "skip"):
            raise ValueError(f"policy {policy!r} is not stop or skip")
        names = names if names is not None else [f"tensor {i}" for i in range(len(params))]
        self.params = [p for p in params if p.requires_grad]
        self.names = [n for n, p in zip(names, params, strict=True) if p.requires_grad]
        self.policy = policy
        self.max_skips = max_skips
        self._snapshot = [torch.empty_like(p) for p in self.params] if snapshot else None
        self._has_snapshot = False
        self._snapshot_of = 0  # the step whose finished weights the snapshot holds
        self.max_jump = max_jump  # 0: no blow-up check
        self._before: float = math.nan  # largest |trainable weight| before the update just made
        self._loss_ok: torch.Tensor | None = None
        self._grad_sizes: tuple[list[int], torch.Tensor] | None = None  # (tensors with a gradient, their max |g|)
        self.events: list[Event] = []
        self.skips = 0
        self.consecutive = 0
        self.stop: Event | None = None  # set when training must stop
        self._reported = 0  # events already handed out by unreported()

    @classmethod
    def of(cls, settings: GuardSettings, params: list[torch.Tensor], names: list[str] | None = None) -> Guard:
        """The guard of a model's parameters (all of them: the snapshot's "auto" weighs
        the trainable share), ``names`` in the same order for the messages."""
        return cls(params, policy=settings.policy, max_skips=settings.max_skips, max_jump=settings.max_jump,
                   snapshot=wants_snapshot(settings.snapshot, params, sum(p.numel() for p in params)), names=names)

    def unreported(self) -> list[Event]:
        """The events since the last call (each handed out once)."""
        new = self.events[self._reported:]
        self._reported = len(self.events)
        return new

    @property
    def keeps_snapshot(self) -> bool:
        return self._snapshot is not None

    def observe_loss(self, loss: torch.Tensor) -> None:
        """Called for every micro-batch loss; no sync."""
        import torch

        ok = torch.isfinite(loss.detach()).all()
        self._loss_ok = ok if self._loss_ok is None else self._loss_ok & ok

    def observe_gradients(self) -> None:
        """Called before the gradients are clipped (clipping by a non-finite norm makes
        every gradient NaN): each trainable tensor's largest absolute gradient, kept on
        the device (one fused kernel, no sync) for :meth:`before_update` to name the
        tensors a non-finite value was in."""
        self._grad_sizes = None
        index = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not index:  # (DeepSpeed keeps its gradients elsewhere)
            return
        try:
            self._grad_sizes = (index, _max_abs([self.params[i].grad for i in index]))
        except (RuntimeError, TypeError, ValueError):  # gradients on several devices, sharded ones: not located
            pass

    def before_update(self, grad_norm, step: int, lr: float) -> bool:
        """True: apply the update. False: it was dropped (gradients set to None)."""
        import torch

        loss_ok = self._loss_ok if self._loss_ok is not None else torch.ones((), dtype=torch.bool)
        self._loss_ok = None
        norm = grad_norm if isinstance(grad_norm, torch.Tensor) else torch.tensor(
            math.nan if grad_norm is None else float(grad_norm))
        checks = [loss_ok.to(norm.device).float(), torch.isfinite(norm.detach().float()).float()]
        if self.max_jump and self.params:
            checks.append(self._largest().to(norm.device).float())
        flags = torch.stack(checks).tolist()
        self._before = flags[2] if len(flags) > 2 else math.nan
        if flags[0] and flags[1]:
            self.consecutive = 0
            self._take_snapshot(step - 1)
            return True
        metric = "loss" if not flags[0] else "grad_norm"
        spread = self._spread() if metric == "grad_norm" else None
        for p in self.params:
            p.grad = None
        restored = metric == "loss" and self._restore()
        self._record(Event(step, metric, float(norm) if metric == "grad_norm" else math.nan, lr,
                           restored=restored, weights_of=self._snapshot_of if restored else step - 1, spread=spread))
        return False

    def _spread(self) -> tuple[int, int, str, str] | None:
        """Which trainable tensors held a non-finite gradient before clipping, from
        :meth:`observe_gradients` (one sync; only on a dropped update)."""
        import torch

        observed, self._grad_sizes = self._grad_sizes, None
        if observed is None:
            return None
        index, sizes = observed
        finite = torch.isfinite(sizes).tolist()
        bad = [self.names[i] for i, ok in zip(index, finite) if not ok]
        return (len(bad), len(index), bad[0], bad[-1]) if bad else None

    def after_update(self, step: int, lr: float) -> bool:
        """True when every trainable weight is finite after the update."""
        if not self.params:
            return True
        after = float(self._largest())
        before, self._before = self._before, math.nan
        if not math.isfinite(after):
            event = Event(step, "weights", math.nan, lr, restored=False)
        elif self.max_jump and before > 0 and after > self.max_jump * before:
            event = Event(step, "jump", after / before, lr, restored=False, sizes=(before, after))
        else:
            return True
        event.restored = self._restore()
        event.weights_of = self._snapshot_of if event.restored else step
        self._record(event)
        if not event.restored:
            self.stop = event  # nothing sound to go on from
        return False

    def _largest(self) -> torch.Tensor:
        """The largest absolute trainable weight (NaN or inf when one is); no sync."""
        return _max_abs([p.detach() for p in self.params]).max()

    def _record(self, event: Event) -> None:
        self.events.append(event)
        self.skips += 1
        self.consecutive += 1
        if self.policy == "stop" or self.consecutive >= self.max_skips:
            self.stop = event

    def _take_snapshot(self, of_step: int) -> None:
        import torch

        if self._snapshot is not None:
            with torch.no_grad():
                torch._foreach_copy_(self._snapshot, [p.detach() for p in self.params])
            self._has_snapshot, self._snapshot_of = True, of_step

    def _restore(self) -> bool:
        import torch

        if not self._has_snapshot:
            return False
        with torch.no_grad():
            torch._foreach_copy_([p.data for p in self.params], self._snapshot)
        return True


def _max_abs(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Each tensor's largest absolute value (NaN or inf when it holds one), on the device:
    one fused kernel, no sync."""
    import torch

    return torch.stack([n.float() for n in torch._foreach_norm(tensors, math.inf)])


def wants_snapshot(setting: object, params: list[torch.Tensor], total: int) -> bool:
    """``health.snapshot``: true, false or auto (trainable share at most 10 %, or at most
    1 GiB of trainable weights: a LoRA adapter, or a full fine-tune of a small model)."""
    if isinstance(setting, bool):
        return setting
    trainable = [p for p in params if p.requires_grad]
    size = sum(p.numel() * p.element_size() for p in trainable)
    return total > 0 and (sum(p.numel() for p in trainable) <= SNAPSHOT_AUTO_SHARE * total
                          or size <= SNAPSHOT_AUTO_BYTES)


__all__ = ["Guard", "GuardSettings", "Event", "wants_snapshot"]
