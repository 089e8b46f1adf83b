#!/usr/bin/env python3
"""word2vec, the book's N-gram language model, on the quotations of
Debian's fortunes: four words in, the fifth out. The four lookups share one
embedding table (param_attr "shared_w"), whose gradient is sparse rows
with --is-sparse (an allgather of the rows across ranks) and a dense table
without (an allreduce).

    /usr/bin/python3 examples/word2vec.py --samples 20000
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/word2vec.py \\
        --is-sparse

(PYTHONPATH=build/python; as root add --allow-run-as-root.) Prints the
validation split's loss and the perplexity per word, exp(loss).
"""
import math

import fluid
from book_common import parse_args, train_and_test

N = 5  # the model reads N - 1 words and predicts the N-th
EMBED_SIZE = 32
HIDDEN_SIZE = 256


def args():
    def extra(ap):
        ap.add_argument("--is-sparse", action="store_true",
                        help="sparse gradient rows for the embedding table")
        ap.add_argument("--min-count", type=int, default=3,
                        help="words seen fewer times become <unk>")
    return parse_args(__doc__, lr=0.5, batch_size=100, extra=extra)


def ngrams(split, vocab):
    """A reader creator of N-word windows (ids) over each quotation of
    `split`, ended by <eos>."""
    fortunes = fluid.datasets.fortunes
    eos = vocab[fluid.datasets.EOS]

    def reader():
        for _, text in fortunes.quotations(split):
            ids = list(fortunes.ids(fortunes.tokenize(text, "word"), vocab))
            ids.append(eos)
            for i in range(len(ids) - N + 1):
                yield tuple(ids[i:i + N])

    return reader


def network(dict_size, is_sparse):
    words = [fluid.layers.data(name=f"word_{i}", shape=[1], dtype="int64")
             for i in range(N)]
    embeds = [fluid.layers.embedding(input=w, size=[dict_size, EMBED_SIZE],
                                     dtype="float32", is_sparse=is_sparse,
                                     param_attr="shared_w")
              for w in words[:-1]]
    concat = fluid.layers.concat(input=embeds, axis=1)
    hidden = fluid.layers.fc(input=concat, size=HIDDEN_SIZE, act="sigmoid")
    predict = fluid.layers.fc(input=hidden, size=dict_size, act="softmax")
    cost = fluid.layers.cross_entropy(input=predict, label=words[-1])
    return words, fluid.layers.mean(cost)


def main():
    a = args()
    if not fluid.datasets.fortunes.available():
        raise SystemExit("word2vec: no fortunes: apt-get install fortunes")
    vocab = fluid.datasets.fortunes.build_vocab("word",
                                                min_count=a.min_count)
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed  # the same initial weights on every rank
    with fluid.program_guard(main_p, startup):
        words, avg_cost = network(len(vocab), a.is_sparse)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=a.lr).minimize(avg_cost)
    samples = (ngrams("train", vocab), ngrams("valid", vocab))
    exe, metrics = train_and_test(a, (main_p, startup, test_p), words,
                                  [avg_cost], ["loss"], samples=samples)
    if exe.rank == 0:
        print(f"perplexity {math.exp(metrics['loss']):.1f} per word; "
              f"vocabulary {len(vocab)} words, embedding "
              f"{'sparse' if a.is_sparse else 'dense'}", flush=True)


if __name__ == "__main__":
    main()
