#!/usr/bin/env python3
"""dynamic_lstm against torch.nn.LSTM on the same model, batches and
thread count: topic classification of fortunes quotations (word ids,
variable lengths up to --max-len), embedding -> LSTM -> the last step's
hidden state -> fc -> softmax cross-entropy, Adam.

    /usr/bin/python3 benchmarks/lstm_bench.py --steps 100

Ours feeds each batch as one level-1 LoD tensor (the projection to the
four gates is an fc without bias; dynamic_lstm without peepholes carries
the bias), torch as a PackedSequence (pack_padded_sequence, unsorted).
Prints a Markdown table of sequences/s and tokens/s (median of --repeats
runs, interleaved, timed after the first 5 steps) and the ratio ours /
PyTorch. Each framework runs in its own process; PyTorch on OpenBLAS as in
compare_torch.py.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 5


def args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--embed", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--topics", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", choices=("fluid", "torch"),
                    help=argparse.SUPPRESS)
    return ap.parse_args()


def data(a):
    """(vocab size, batches: a list of (sequences, labels))."""
    import fluid
    f = fluid.datasets.fortunes
    vocab = f.build_vocab("word", min_count=2)
    samples = [(ids[:a.max_len], label) for ids, label in
               f.topic_reader("train", "word", a.topics, vocab)()
               if len(ids) > 0]
    order = np.random.RandomState(1).permutation(len(samples))
    order = np.resize(order, a.steps * a.batch)
    batches = [[samples[i] for i in order[s * a.batch:(s + 1) * a.batch]]
               for s in range(a.steps)]
    return len(vocab), batches


def timed(a, run_step):
    for i in range(a.steps):
        if i == SKIP:
            start = time.perf_counter()
        run_step(i)
    return time.perf_counter() - start


def fluid_worker(a, vocab, batches):
    import fluid
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        words = L.data("words", [1], dtype="int64", lod_level=1)
        label = L.data("label", [1], dtype="int64")
        emb = L.embedding(words, [vocab, a.embed])
        gates = L.fc(emb, 4 * a.hidden, bias_attr=False)
        hidden, _ = L.dynamic_lstm(gates, 4 * a.hidden, use_peepholes=False)
        logits = L.fc(L.sequence_last_step(hidden), a.topics)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Adam(1e-3).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace(), threads=a.threads)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feeder = fluid.DataFeeder([words, label], fluid.CPUPlace(), program=main)
    feeds = [feeder.feed(b) for b in batches]  # made outside the timing
    return timed(a, lambda i: exe.run(main, feed=feeds[i],
                                      fetch_list=[loss], scope=scope))


def torch_worker(a, vocab, batches):
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    emb = torch.nn.Embedding(vocab, a.embed)
    lstm = torch.nn.LSTM(a.embed, a.hidden, batch_first=True)
    head = torch.nn.Linear(a.hidden, a.topics)
    params = (list(emb.parameters()) + list(lstm.parameters()) +
              list(head.parameters()))
    opt = torch.optim.Adam(params, lr=1e-3)

    def tensors(batch):
        lengths = torch.tensor([len(s) for s, _ in batch])
        padded = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
        for j, (s, _) in enumerate(batch):
            padded[j, :len(s)] = torch.from_numpy(np.asarray(s))
        return padded, lengths, torch.tensor([y for _, y in batch])

    prepared = [tensors(b) for b in batches]

    def step(i):
        padded, lengths, labels = prepared[i]
        opt.zero_grad()
        packed = pack_padded_sequence(emb(padded), lengths, batch_first=True,
                                      enforce_sorted=False)
        _, (h, _) = lstm(packed)
        loss = torch.nn.functional.cross_entropy(head(h[-1]), labels)
        loss.backward()
        opt.step()

    return timed(a, step)


def worker(a):
    vocab, batches = data(a)
    run = fluid_worker if a.worker == "fluid" else torch_worker
    seconds = run(a, vocab, batches)
    timed_batches = batches[SKIP:]
    tokens = sum(len(s) for b in timed_batches for s, _ in b)
    print(json.dumps({"sequences_per_s": len(timed_batches) * a.batch /
                      seconds, "tokens_per_s": tokens / seconds}))


def launch(a, which):
    sys.path.insert(0, HERE)
    from compare_torch import torch_environment
    env = torch_environment() if which == "torch" else dict(os.environ)
    env["OMP_NUM_THREADS"] = str(a.threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", which] + [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items()
        if k not in ("worker", "repeats")]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    a = args()
    if a.worker:
        return worker(a)
    runs = {"fluid": [], "torch": []}
    for _ in range(a.repeats):  # interleaved against drift
        for which in runs:
            runs[which].append(launch(a, which))
            print(which, runs[which][-1], file=sys.stderr)
    med = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for w, rs in runs.items()}
    print("| framework | sequences/s | tokens/s |")
    print("|---|---|---|")
    for w, name in (("fluid", "ours (dynamic_lstm)"),
                    ("torch", "PyTorch 1.13 + OpenBLAS (nn.LSTM, packed)")):
        print(f"| {name} | {med[w]['sequences_per_s']:.1f} | "
              f"{med[w]['tokens_per_s']:.0f} |")
    print(f"\nsequences/s ours / PyTorch: "
          f"{med['fluid']['sequences_per_s'] / med['torch']['sequences_per_s']:.2f}")


if __name__ == "__main__":
    main()
