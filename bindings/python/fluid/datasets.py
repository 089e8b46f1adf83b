"""Data sets as NumPy arrays, and a batch reader that shards by rank; or
as sample-level reader creators for the fluid.io decorators."""
import numpy as np

from . import _core

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class fashion_mnist:
    """Fashion-MNIST from Debian's dataset-fashion-mnist (IDX, gzip):
    images float32 [N, 1, 28, 28] in [0, 1], labels int64 [N, 1].

    train() / test() return the arrays; train_reader() / test_reader()
    return reader creators over the same data, one (image, label) sample at
    a time: image a read-only float32 [1, 28, 28] array, label an int."""

    @staticmethod
    def train(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, True)

    @staticmethod
    def test(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, False)

    @staticmethod
    def train_reader(data_dir=FASHION_MNIST):
        return _sample_reader(data_dir, True)

    @staticmethod
    def test_reader(data_dir=FASHION_MNIST):
        return _sample_reader(data_dir, False)


def _sample_reader(data_dir, train):
    """A reader creator over the (image, label) samples of one split. The
    files are read on the first pass and kept for the next ones."""
    arrays = []

    def sample_reader():
        if not arrays:
            images, labels = _core.load_mnist_family(data_dir, train)
            images.flags.writeable = False
            arrays.extend((images, labels[:, 0].tolist()))
        images, labels = arrays
        for i, label in enumerate(labels):
            yield images[i], label

    return sample_reader


def reader(arrays, batch_size, rank=0, world_size=1, shuffle=True, seed=0,
           epoch=0):
    """Yields tuples of batches of `arrays` (same first dim) for this rank.
    The permutation comes from (seed, epoch) and is the same on every rank;
    it is padded by repeating its start so that every rank gets the same
    number of samples and batches (as torch's DistributedSampler)."""
    n = len(arrays[0])
    order = (np.random.RandomState((seed * 1000003 + epoch) % 2**32)
             .permutation(n) if shuffle else np.arange(n))
    per_rank = -(-n // world_size)
    order = np.resize(order, per_rank * world_size)[rank::world_size]
    for start in range(0, per_rank, batch_size):
        idx = order[start:start + batch_size]
        yield tuple(np.ascontiguousarray(a[idx]) for a in arrays)


FORTUNES = "/usr/share/games/fortunes"

# Reserved ids of every fortunes vocabulary.
PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"
_RESERVED = (PAD, UNK, EOS)

_WORD = None


def _word_pattern():
    global _WORD
    if _WORD is None:
        import re
        # A run of letters and digits, with an inner apostrophe kept
        # ("don't"), or any other single visible character.
        _WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]|_")
    return _WORD


class fortunes:
    """Quotations from Debian's `fortunes` package (one file per topic under
    /usr/share/games/fortunes, quotations separated by lines holding "%").

    Everything here is a pure function of the files: the split (about one
    quotation in ten goes to validation, chosen by a CRC-32 of its text, so
    it does not depend on file order), the tokenizer and the vocabularies
    (built from the training split only) are the same on every rank and
    every machine.

    - quotations(split): [(topic, text)] of "train", "valid" or "all";
    - tokenize(text, level): "word" (lower-cased words, punctuation marks as
      tokens) or "char" (Unicode characters);
    - build_vocab(level, min_count, max_size): {token: id}, ids 0-2 being
      <pad>, <unk>, <eos>, then tokens by falling count, ties by token;
    - lm_reader(split, level, seq_len, vocab): a reader creator of
      (input ids, next ids) windows over the split's quotations joined by
      <eos>, each an int64 array of seq_len; unknown tokens become <unk>;
    - topics(num_topics): the largest topic files, by quotation count;
    - topic_reader(split, level, num_topics, vocab): a reader creator of
      (token ids, label) samples, the label the quotation's topic among
      topics(num_topics); token ids an int64 array of any length.
    """

    VALID_PERCENT = 10

    @staticmethod
    def available(data_dir=FORTUNES):
        import os
        return os.path.isdir(data_dir)

    @staticmethod
    def quotations(split="train", data_dir=FORTUNES):
        if split not in ("train", "valid", "all"):
            raise ValueError(f"fortunes.quotations: split must be 'train', "
                             f"'valid' or 'all', got {split!r}")
        out = []
        for topic, text in _all_quotations(data_dir):
            if split == "all" or (split == "valid") == _is_valid(text):
                out.append((topic, text))
        return out

    @staticmethod
    def tokenize(text, level="word"):
        if level == "word":
            return _word_pattern().findall(text.lower())
        if level == "char":
            return list(text)
        raise ValueError(f"fortunes.tokenize: level must be 'word' or "
                         f"'char', got {level!r}")

    @staticmethod
    def build_vocab(level="word", min_count=1, max_size=None,
                    data_dir=FORTUNES):
        from collections import Counter
        counts = Counter()
        for _, text in fortunes.quotations("train", data_dir):
            counts.update(fortunes.tokenize(text, level))
        kept = sorted((t for t, c in counts.items() if c >= min_count),
                      key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max(0, max_size - len(_RESERVED))]
        vocab = {t: i for i, t in enumerate(_RESERVED)}
        for t in kept:
            vocab[t] = len(vocab)
        return vocab

    @staticmethod
    def ids(tokens, vocab):
        unk = vocab[UNK]
        return np.array([vocab.get(t, unk) for t in tokens], dtype=np.int64)

    @staticmethod
    def lm_reader(split="train", level="char", seq_len=64, vocab=None,
                  data_dir=FORTUNES):
        if seq_len < 1:
            raise ValueError(f"fortunes.lm_reader: seq_len must be >= 1, "
                             f"got {seq_len}")
        vocab = vocab or fortunes.build_vocab(level, data_dir=data_dir)
        stream = []

        def reader():
            if not stream:
                eos = vocab[EOS]
                parts = []
                for _, text in fortunes.quotations(split, data_dir):
                    parts.append(fortunes.ids(fortunes.tokenize(text, level),
                                              vocab))
                    parts.append(np.array([eos], dtype=np.int64))
                stream.append(np.concatenate(parts))
            ids = stream[0]
            for start in range(0, len(ids) - seq_len - 1 + 1, seq_len):
                yield (ids[start:start + seq_len],
                       ids[start + 1:start + seq_len + 1])

        return reader

    @staticmethod
    def topics(num_topics=8, data_dir=FORTUNES):
        from collections import Counter
        counts = Counter(topic for topic, _ in _all_quotations(data_dir))
        ranked = sorted(counts, key=lambda t: (-counts[t], t))
        return ranked[:num_topics]

    @staticmethod
    def topic_reader(split="train", level="word", num_topics=8, vocab=None,
                     data_dir=FORTUNES):
        names = fortunes.topics(num_topics, data_dir)
        label = {t: i for i, t in enumerate(names)}
        vocab = vocab or fortunes.build_vocab(level, data_dir=data_dir)

        def reader():
            for topic, text in fortunes.quotations(split, data_dir):
                if topic in label:
                    yield (fortunes.ids(fortunes.tokenize(text, level), vocab),
                           label[topic])

        return reader


_QUOTATIONS = {}


def _all_quotations(data_dir):
    """[(topic, text)] over every topic file, topics in name order and
    quotations in file order; read once per directory."""
    import os
    if data_dir in _QUOTATIONS:
        return _QUOTATIONS[data_dir]
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(
            f"no fortunes in {data_dir}: install Debian's 'fortunes' package "
            "(apt-get install fortunes)")
    out = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if "." in name or os.path.islink(path) or not os.path.isfile(path):
            continue  # .dat indexes and .u8 links
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        for quote in text.split("\n%\n"):
            quote = quote.strip("\n")
            if quote and quote != "%":
                out.append((name, quote))
    _QUOTATIONS[data_dir] = out
    return out


def _is_valid(text):
    import zlib
    return zlib.crc32(text.encode("utf-8")) % 100 < fortunes.VALID_PERCENT
