"""Offline data sets shipped with or wrapped by genprob: SMS spam and Palmer penguins."""

from importlib import resources

import numpy as np
import pandas as pd
import pytest

from genprob import datasets
from genprob.datasets import PENGUIN_FAMILIES, load, load_penguins, load_sms_spam


def test_sms_spam_is_shipped_raw_and_labelled():
    texts, labels = load_sms_spam()
    assert texts.shape == labels.shape == (5574,)
    assert texts.dtype == object and labels.dtype == object
    values, counts = np.unique(labels, return_counts=True)
    assert values.tolist() == ["ham", "spam"] and counts.tolist() == [4827, 747]
    assert texts[0].startswith("Go until jurong point, crazy..")
    assert labels[2] == "spam" and texts[2].startswith("Free entry in 2 a wkly comp")
    assert all(isinstance(t, str) and t for t in texts)
    # identical to the source file, line by line
    source = "/work/shared/data/SMSSpamCollection.tsv"
    try:
        with open(source, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        pytest.skip("source corpus not available")
    assert [f"{label}\t{text}" for label, text in zip(labels, texts, strict=True)] == lines


def test_sms_spam_dataset_carries_its_attribution():
    dataset = load_sms_spam(return_dataset=True)
    assert dataset.target_names == ["ham", "spam"] and dataset.feature_names == ["text"]
    for fact in ("CC BY 4.0", "Almeida", "DOCENG'11", "UCI"):
        assert fact in dataset.description
    readme = resources.files("genprob").joinpath("data", "README.md").read_text("utf-8")
    for fact in ("CC BY 4.0", "Almeida", "Gómez Hidalgo", "Yamakami", "dataset 228"):
        assert fact in readme


def test_penguins_drop_incomplete_rows_by_default():
    X, y = load_penguins()
    assert X.shape == (333, 7) and y.shape == (333,)
    assert X.dtype == object
    assert X[0].tolist() == ["Torgersen", 39.1, 18.7, 181.0, 3750.0, "male", 2007]
    assert sorted(set(y)) == ["Adelie", "Chinstrap", "Gentoo"]
    frame, target = load_penguins(as_frame=True)
    assert isinstance(frame, pd.DataFrame) and isinstance(target, pd.Series)
    assert list(frame.columns) == list(PENGUIN_FAMILIES)
    assert not frame.isna().any().any()
    assert target.value_counts().to_dict() == {"Adelie": 146, "Gentoo": 119, "Chinstrap": 68}
    full, _ = load_penguins(as_frame=True, dropna=False)
    assert len(full) == 344
    assert full.isna().sum().to_dict()["sex"] == 11
    assert full.isna().sum().to_dict()["bill_length_mm"] == 2


def test_new_loaders_are_registered():
    assert datasets.LOADERS["sms_spam"] is load_sms_spam
    assert datasets.LOADERS["penguins"] is load_penguins
    dataset = load("penguins", return_dataset=True)
    assert dataset.target_names == ["Adelie", "Chinstrap", "Gentoo"]
    assert dataset.feature_names == list(PENGUIN_FAMILIES)
    assert "dropna" in dataset.description
    texts, labels = load("sms_spam")
    assert len(texts) == len(labels) == 5574
