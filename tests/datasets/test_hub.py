"""hub: any dataset id with field mapping; offline through path= or a stubbed load_dataset."""

from __future__ import annotations

import pytest

from grpo_datasets import DatasetError, DatasetLoadError


def test_local_copy_with_mapping(write, load, tmp_path):
    rows = [{"instruction": "Add 2 and 5.", "output": "7", "lang": "en"},
            {"instruction": "Ajoute 1 et 1.", "output": "2", "lang": "fr"}]
    root = tmp_path / "repo"
    write.parquet(root / "data" / "train-00000-of-00001.parquet", rows)
    write.parquet(root / "data" / "validation-00000-of-00001.parquet", rows[:1])
    ds = load("hub", dataset_id="acme/tiny", path=str(root), question_field="instruction",
              answer_field="output", filters={"lang": "en"})
    assert (ds["question"], ds["answer"]) == (["Add 2 and 5."], ["7"])
    ds = load("hub", path=str(root), split="validation", question_field="instruction", answer_field="output")
    assert ds["answer"] == ["7"]


def test_hub_arguments_and_remote_code_off(load, monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        return datasets.Dataset.from_list([{"q": "1+1?", "a": 2}, {"q": "2+2?", "a": 4}])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    ds = load("hub", dataset_id="acme/sums", config="easy", split="validation[:1]", revision="v2",
              question_field="q", answer_field="a")
    assert ds["answer"] == ["2"]
    assert calls == [("acme/sums", "easy", {"split": "validation", "revision": "v2", "trust_remote_code": False})]


def test_offline_without_a_copy_is_a_clear_error(load, monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'acme/none' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetLoadError, match=r"'acme/none'.*split 'train'.*HF_HUB_OFFLINE=1.*path="):
        load("hub", dataset_id="acme/none")


def test_needs_an_id_or_a_path(load):
    with pytest.raises(DatasetError, match="dataset_id="):
        load("hub")
