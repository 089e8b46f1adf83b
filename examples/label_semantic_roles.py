#!/usr/bin/env python3
"""label_semantic_roles, the book's chapter 07 tagger (word and context
embeddings, an fc, stacked dynamic_lstm layers in alternating directions,
a linear-chain CRF cost and Viterbi decoding with crf_decoding), on the
quotations of Debian's fortunes.

The task: tag each token of a quotation with the BIO chunks of its runs
of capitalised words (B: a capitalised word starting a run, I: one
continuing it, O: anything else, punctuation included). The tags are
computed from the text; the network sees the lower-cased words only, so
it must learn what is written with a capital from the words and their
context: sentence starts (after ".", "?", "!", a quote), the pronoun "I",
names and titles. The chunks have the structure semantic-role labels
have (I only follows B or I), which is what the CRF's transitions model.

    /usr/bin/python3 examples/label_semantic_roles.py --samples 2000
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/label_semantic_roles.py --distributed

(PYTHONPATH=build/python; as root add --allow-run-as-root.) One process
trains with fluid.Executor; --distributed trains with fluid.MPIExecutor,
each rank on its share of every global batch (--batch-size sequences per
rank). Prints the validation split's loss before and after training, the
training loss as it falls, the tagging accuracy of the decoded tags, and
the precision, recall and F1 of the decoded chunks (fluid.layers.
chunk_eval, summed over the validation batches by fluid.metrics.
ChunkEvaluator).
"""
import argparse
import os
import re

import numpy as np

import fluid

# Fluid's IOB tag ids for one chunk type: B=0, I=1, O=2 (chunk_eval's).
TAGS = ("B", "I", "O")
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]|_")


def parse_args():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=2000,
                    help="training quotations (validation: a quarter)")
    ap.add_argument("--steps", type=int, default=None,
                    help="stop after this many steps (default: one epoch)")
    ap.add_argument("--batch-size", type=int, default=16,
                    help="sequences per step per rank")
    ap.add_argument("--max-len", type=int, default=40,
                    help="longest quotation kept, in tokens")
    ap.add_argument("--emb", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64,
                    help="each LSTM's width (the book's hidden_dim / 4)")
    ap.add_argument("--depth", type=int, default=4,
                    help="stacked LSTMs (the book's 8)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--dtype", choices=("float32", "float64"),
                    default="float32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--distributed", action="store_true",
                    help="train with fluid.MPIExecutor (under mpirun)")
    ap.add_argument("--save-params", default=None,
                    help="write this rank's parameters to DIR/rank<r>.npz")
    return ap.parse_args()


def tag(tokens):
    """IOB tag ids of the runs of capitalised words among `tokens`."""
    tags, prev = [], False
    for t in tokens:
        cap = t[0].isalpha() and t[0].isupper()
        tags.append(2 if not cap else (1 if prev else 0))
        prev = cap
    return tags


def samples(split, count, vocab, max_len):
    """[(words, previous words, next words, tags)] int64 arrays of the
    first `count` quotations of `split` with 2..max_len tokens."""
    unk = vocab[fluid.datasets.UNK]
    eos = vocab[fluid.datasets.EOS]
    out = []
    for _, text in fluid.datasets.fortunes.quotations(split):
        tokens = WORD.findall(text)
        if not 2 <= len(tokens) <= max_len:
            continue
        ids = np.array([vocab.get(t.lower(), unk) for t in tokens], np.int64)
        prev = np.concatenate([[eos], ids[:-1]]).astype(np.int64)
        nxt = np.concatenate([ids[1:], [eos]]).astype(np.int64)
        out.append((ids, prev, nxt, np.array(tag(tokens), np.int64)))
        if len(out) == count:
            break
    return out


def db_lstm(word, prev, nxt, vocab_size, a):
    """The book's db_lstm: shared embeddings of the word and its context,
    an fc, then `depth` LSTMs, each on an fc of the last fc and LSTM,
    alternating direction; the emission scores of the tags."""
    emb_attr = fluid.ParamAttr(name="emb")
    embs = [fluid.layers.embedding(x, size=[vocab_size, a.emb],
                                   param_attr=emb_attr, dtype=a.dtype)
            for x in (word, prev, nxt)]
    hidden = fluid.layers.fc(input=embs, size=4 * a.hidden, act="tanh")
    lstm, _ = fluid.layers.dynamic_lstm(
        hidden, size=4 * a.hidden, candidate_activation="relu",
        gate_activation="sigmoid", cell_activation="sigmoid", dtype=a.dtype)
    inputs = [hidden, lstm]
    for i in range(1, a.depth):
        hidden = fluid.layers.fc(input=inputs, size=4 * a.hidden, act="tanh")
        lstm, _ = fluid.layers.dynamic_lstm(
            hidden, size=4 * a.hidden, candidate_activation="relu",
            gate_activation="sigmoid", cell_activation="sigmoid",
            is_reverse=(i % 2) == 1, dtype=a.dtype)
        inputs = [hidden, lstm]
    return fluid.layers.fc(input=inputs, size=len(TAGS), act="tanh")


def build(vocab_size, a):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = a.seed  # the same initial weights on every rank
    with fluid.program_guard(main, startup):
        feeds = [fluid.layers.data(name, shape=[1], dtype="int64",
                                   lod_level=1)
                 for name in ("word", "prev", "next", "target")]
        emission = db_lstm(*feeds[:3], vocab_size, a)
        crf_cost = fluid.layers.linear_chain_crf(
            emission, feeds[3], param_attr=fluid.ParamAttr(name="crfw"))
        avg_cost = fluid.layers.mean(crf_cost)
        marks = fluid.layers.crf_decoding(
            emission, param_attr=fluid.ParamAttr(name="crfw"),
            label=feeds[3])
        accuracy = fluid.layers.mean(fluid.layers.cast(marks, "float32"))
        path = fluid.layers.crf_decoding(
            emission, param_attr=fluid.ParamAttr(name="crfw"))
        chunks = fluid.layers.chunk_eval(path, feeds[3], chunk_scheme="IOB",
                                         num_chunk_types=1)
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=a.lr).minimize(avg_cost)
    # With the accuracy, the batch's chunk counts: inferred, labelled,
    # correct.
    return main, startup, test, feeds, avg_cost, [accuracy] + list(chunks[3:])


def evaluate(exe, test, feeder, data, fetches):
    """Token-weighted validation loss (per sequence), tag accuracy, and
    the chunks' (precision, recall, F1) over every batch."""
    loss = correct = tokens = 0.0
    chunks = fluid.metrics.ChunkEvaluator()
    for start in range(0, len(data), 200):
        batch = data[start:start + 200]
        c, acc, *counts = exe.run(test, feed=feeder.feed(batch),
                                  fetch_list=fetches)
        n = sum(len(s[0]) for s in batch)
        loss += float(np.ravel(c)[0]) * len(batch)
        correct += float(np.ravel(acc)[0]) * n
        tokens += n
        chunks.update(*counts)
    return loss / len(data), correct / tokens, chunks.eval()


def main():
    a = parse_args()
    fortunes = fluid.datasets.fortunes
    if not fortunes.available():
        raise SystemExit("label_semantic_roles: no fortunes: apt-get install "
                         "fortunes")
    vocab = fortunes.build_vocab("word", min_count=2)
    train = samples("train", a.samples, vocab, a.max_len)
    valid = samples("valid", max(1, a.samples // 4), vocab, a.max_len)
    main_p, startup, test_p, feeds, avg_cost, metrics = build(len(vocab), a)
    if a.distributed:
        exe = fluid.MPIExecutor(fluid.CPUPlace())
        rank, world = exe.rank, exe.world_size
    else:
        exe, rank, world = fluid.Executor(fluid.CPUPlace()), 0, 1
    exe.run(startup)
    feeder = fluid.DataFeeder(feed_list=feeds, place=fluid.CPUPlace(),
                              program=main_p)
    before = evaluate(exe, test_p, feeder, valid, [avg_cost] + metrics)
    if rank == 0:
        print(f"before training: valid loss {before[0]:.4f}, tagging "
              f"accuracy {before[1]:.4f}", flush=True)
    per_step = a.batch_size * world
    order = np.random.RandomState(a.seed).permutation(len(train))
    steps = len(train) // per_step
    if a.steps is not None:
        steps = min(steps, a.steps)
    for step in range(steps):
        picked = order[step * per_step:(step + 1) * per_step]
        batch = [train[i] for i in picked]
        mine = batch[rank * a.batch_size:(rank + 1) * a.batch_size]
        cost, = exe.run(main_p, feed=feeder.feed(mine), fetch_list=[avg_cost])
        if rank == 0 and (step % 10 == 0 or step == steps - 1):
            print(f"step {step}: train loss {float(np.ravel(cost)[0]):.4f}",
                  flush=True)
    if a.distributed:
        exe.check_consistency()  # every rank holds the same parameters
    after = evaluate(exe, test_p, feeder, valid, [avg_cost] + metrics)
    if rank == 0:
        share = np.mean(np.concatenate([s[3] for s in valid]) == 2)
        print(f"after {steps} steps: valid loss {after[0]:.4f}, tagging "
              f"accuracy {after[1]:.4f} (all O: {share:.4f}); vocabulary "
              f"{len(vocab)} words", flush=True)
        p, r, f1 = after[2]
        print(f"chunks after {steps} steps: precision {p:.4f}, recall "
              f"{r:.4f}, F1 {f1:.4f} (before training: F1 "
              f"{before[2][2]:.4f})", flush=True)
    if a.save_params:
        names = sorted(v["name"] for v in main_p.desc.vars()
                       if v["persistable"] and v["trainable"])
        scope = fluid.global_scope()
        np.savez(os.path.join(a.save_params, f"rank{rank}.npz"),
                 **{n: np.array(scope.get(n)) for n in names})
    print(f"rank {rank}: trained {steps} steps on {world} rank(s)",
          flush=True)


if __name__ == "__main__":
    main()
