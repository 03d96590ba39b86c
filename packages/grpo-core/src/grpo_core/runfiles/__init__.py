"""The run folder: what ``grpo train`` writes into its ``output_dir``, each file's name and
format, and the functions that read and write those formats. It stands below the trainer
(which writes them) and below every reader (``grpo view``, ``grpo rollouts``, ``grpo eval``,
``grpo score --input``, the model card), so a reader never imports the trainer.

==================  =========================================  ===========================
file                what it holds                              read and written by
==================  =========================================  ===========================
``metrics.jsonl``   one JSON object a logged step (``step``,   :mod:`.jsonl` (lines),
                    ``reward``, every figure TRL and grpo      :mod:`.metrics` (figures)
                    log); a cut-off last line is skipped
``health.jsonl``    one JSON object a health warning           :mod:`.jsonl`
``progress.json``   ``{"format": 1, "stages": {NAME: {"done":  :mod:`.progress`
                    true, "steps": N, "final": DIR}}}``: a
                    stage is done once its final weights are
                    saved
``rollouts/``       the rollout log: one Parquet file a        :mod:`.rollouts`
                    logged step (and extra generation round),
                    one row a completion (columns there)
``config.yaml``     the configuration as resolved,             ``run/outputs.py`` writes,
                    re-runnable                                ``view/settings.py`` reads
``checkpoint-N/``   TRL's checkpoints (``trainer_state.json``)  :mod:`.progress`
==================  =========================================  ===========================

``FORMAT`` is the run folder's format version: progress.json and every rollout-log file
carry it (a file without one is format 1, written before it was recorded). A reader meeting
a newer format than its own says so (:func:`format_problem`) instead of misreading it.
"""

from __future__ import annotations

from typing import Any

FORMAT = 1  # the run folder's format: raise it when a file's meaning changes, not when a figure is added
METRICS = "metrics.jsonl"
HEALTH = "health.jsonl"
PLOT = "rewards.png"
PROGRESS = "progress.json"
RESOLVED = "config.yaml"
ROLLOUTS = "rollouts"
MANIFEST = "manifest.json"
RUN_FILES = (METRICS, HEALTH, PROGRESS, PLOT, RESOLVED, ROLLOUTS, MANIFEST, "adapter", "model", "merged")


def format_problem(found: Any, what: str) -> str | None:
    """A sentence when ``what`` was written in a run-folder format this grpo cannot read
    (a newer one, or not a whole number); None for ``FORMAT`` or older, and when absent."""
    if found is None:
        return None
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        return f"{what} names run-folder format {found!r:.40}, which is not a format grpo writes (1 to {FORMAT})."
    if found > FORMAT:
        return (f"{what} was written by a newer grpo (run-folder format {found}; this grpo-core reads up to "
                f"{FORMAT}): upgrade grpo-core to read it.")
    return None


__all__ = ["FORMAT", "METRICS", "HEALTH", "PLOT", "PROGRESS", "RESOLVED", "ROLLOUTS", "MANIFEST", "RUN_FILES",
           "format_problem"]
