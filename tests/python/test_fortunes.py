"""fluid.datasets.fortunes: a fixed split, a deterministic tokenizer,
vocabularies from the training split, and the two readers."""
import numpy as np
import pytest

from fluid import datasets

fortunes = datasets.fortunes

pytestmark = pytest.mark.skipif(
    not fortunes.available(),
    reason="Debian's 'fortunes' package is not installed "
           "(/usr/share/games/fortunes)")


def test_split_is_fixed_disjoint_and_about_one_in_ten():
    train = fortunes.quotations("train")
    valid = fortunes.quotations("valid")
    everything = fortunes.quotations("all")
    assert len(train) + len(valid) == len(everything) > 10000
    assert 0.07 < len(valid) / len(everything) < 0.13
    assert not set(t for _, t in train) & set(t for _, t in valid)
    # A pure function of the text: the same on every call.
    assert fortunes.quotations("valid") == valid
    with pytest.raises(ValueError, match="split must be"):
        fortunes.quotations("test")


def test_quotations_are_text_without_separators():
    for topic, text in fortunes.quotations("all")[:500]:
        assert "." not in topic
        assert text.strip() and "\n%\n" not in text and text != "%"


def test_word_and_char_tokenizers():
    assert fortunes.tokenize("Don't PANIC, it's 42.") == [
        "don't", "panic", ",", "it's", "42", "."]
    assert fortunes.tokenize("ab c", "char") == ["a", "b", " ", "c"]
    with pytest.raises(ValueError, match="level must be"):
        fortunes.tokenize("x", "byte")


def test_vocab_is_ordered_and_from_the_training_split_only():
    vocab = fortunes.build_vocab("word")
    assert [vocab[t] for t in ("<pad>", "<unk>", "<eos>")] == [0, 1, 2]
    assert sorted(vocab.values()) == list(range(len(vocab)))
    # Tokens by falling count: punctuation and "the" lead.
    assert set(sorted(vocab, key=vocab.get)[3:7]) >= {".", ",", "the"}
    order = sorted(vocab, key=vocab.get)[3:]
    counts = {}
    for _, text in fortunes.quotations("train"):
        for t in fortunes.tokenize(text):
            counts[t] = counts.get(t, 0) + 1
    assert all(counts[a] >= counts[b] for a, b in zip(order, order[1:]))
    train_words = set()
    for _, text in fortunes.quotations("train"):
        train_words.update(fortunes.tokenize(text))
    valid_only = set()
    for _, text in fortunes.quotations("valid"):
        valid_only.update(set(fortunes.tokenize(text)) - train_words)
    assert valid_only, "expected some words seen only in validation"
    assert not valid_only & set(vocab)
    word = sorted(valid_only)[0]
    assert fortunes.ids([word], vocab).tolist() == [1]  # <unk>
    small = fortunes.build_vocab("word", max_size=100)
    assert len(small) == 100
    assert all(small[t] == vocab[t] for t in small)
    rare = fortunes.build_vocab("word", min_count=5)
    assert len(rare) < len(vocab)


def test_lm_reader_windows_are_shifted_by_one():
    vocab = fortunes.build_vocab("char")
    reader = fortunes.lm_reader("valid", "char", seq_len=16, vocab=vocab)
    windows = list(reader())
    assert len(windows) > 100
    for x, y in windows[:50]:
        assert x.dtype == np.int64 and x.shape == (16,) and y.shape == (16,)
        assert (x[1:] == y[:-1]).all()
    # Consecutive windows tile the stream.
    assert windows[1][0][0] == windows[0][1][-1]
    assert (np.concatenate([x for x, _ in windows]) == vocab["<eos>"]).any()
    assert [w[0].tolist() for w in reader()][:3] == \
        [w[0].tolist() for w in windows[:3]]


def test_topic_reader_labels_the_largest_topics():
    names = fortunes.topics(4)
    assert len(names) == 4
    counts = {}
    for topic, _ in fortunes.quotations("all"):
        counts[topic] = counts.get(topic, 0) + 1
    assert all(counts[n] >= c for n in names for t, c in counts.items()
               if t not in names)
    samples = list(fortunes.topic_reader("valid", num_topics=4)())
    assert samples
    labels = {label for _, label in samples}
    assert labels <= set(range(4)) and len(labels) > 1
    ids, _ = samples[0]
    assert ids.dtype == np.int64 and ids.ndim == 1
    train_n = sum(1 for _ in fortunes.topic_reader("train", num_topics=4)())
    assert train_n > 5 * len(samples)


def test_missing_directory_names_the_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install fortunes"):
        fortunes.quotations("all", data_dir=str(tmp_path / "none"))
