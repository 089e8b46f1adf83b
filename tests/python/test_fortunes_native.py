"""The C++ fortunes reader (src/data/fortunes.h, which `trainer --model
transformer|textcnn` trains on) against fluid.datasets.fortunes on Debian's
files: the same quotations and split, char vocabulary, language-model
windows, topics and topic samples."""
import numpy as np
import pytest

from fluid import _core, datasets

fortunes = datasets.fortunes
DIR = datasets.FORTUNES
VOCAB = 256  # the text models' vocabulary size

pytestmark = pytest.mark.skipif(
    not fortunes.available(),
    reason="Debian's 'fortunes' package is not installed "
           "(/usr/share/games/fortunes)")


@pytest.fixture(scope="module")
def vocab():
    return fortunes.build_vocab("char", max_size=VOCAB)


def test_quotations_and_split_match():
    for split in ("all", "train", "valid"):
        native = [tuple(q) for q in _core.fortunes_quotations(DIR, split)]
        assert native == fortunes.quotations(split), split


def test_char_vocab_matches(vocab):
    assert _core.fortunes_char_vocab(DIR, VOCAB) == list(vocab)[3:]
    full = fortunes.build_vocab("char")
    assert _core.fortunes_char_vocab(DIR, 0) == list(full)[3:]


@pytest.mark.parametrize("split", ["train", "valid"])
def test_lm_windows_match(vocab, split):
    tokens, nxt = _core.fortunes_lm_windows(DIR, split, 128, VOCAB)
    windows = list(fortunes.lm_reader(split, "char", 128, vocab)())
    assert tokens.shape == (len(windows), 128, 1)
    assert nxt.shape == tokens.shape
    want_tokens = np.stack([w[0] for w in windows])
    want_next = np.stack([w[1] for w in windows])
    np.testing.assert_array_equal(tokens[:, :, 0], want_tokens)
    np.testing.assert_array_equal(nxt[:, :, 0], want_next)


@pytest.mark.parametrize("split", ["train", "valid"])
def test_topic_samples_match(vocab, split):
    max_len = 512
    topics, words, length, label = _core.fortunes_topic_samples(
        DIR, split, 8, max_len, VOCAB)
    assert topics == fortunes.topics(8)
    samples = list(fortunes.topic_reader(split, "char", 8, vocab)())
    assert words.shape == (len(samples), max_len, 1)
    want_words = np.zeros((len(samples), max_len), dtype=np.int64)
    for i, (ids, _) in enumerate(samples):
        want_words[i, :min(len(ids), max_len)] = ids[:max_len]
    np.testing.assert_array_equal(words[:, :, 0], want_words)
    np.testing.assert_array_equal(
        length, [min(len(ids), max_len) for ids, _ in samples])
    np.testing.assert_array_equal(label[:, 0], [y for _, y in samples])


def test_bad_split_is_an_error():
    with pytest.raises(Exception, match="split must be"):
        _core.fortunes_quotations(DIR, "test")
