#!/usr/bin/env python3
"""Generates text from the character language model transformer_lm.py
saved: loads the inference model (fluid.io.load_inference_model) and its
vocabulary, then draws one character at a time from the softmax of the
model's logits at the last position of the context (the last seq_len
characters after an <eos>, left-aligned and padded: the causal mask keeps
the padding out of every earlier position).

    /usr/bin/python3 examples/sample.py --model-dir /tmp/char_lm \\
        --prompt "The " --length 200 --temperature 0.8

(PYTHONPATH=build/python.) Stops at --length characters or at the end of
a quotation (<eos>).
"""
import argparse
import json
import os

import numpy as np

import fluid


def args():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--prompt", default="")
    ap.add_argument("--length", type=int, default=200)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.temperature <= 0:
        ap.error(f"--temperature must be positive, got {a.temperature}")
    return a


def load_vocab(model_dir):
    path = os.path.join(model_dir, "vocab.json")
    if not os.path.isfile(path):
        raise SystemExit(f"sample: no {path}: point --model-dir at a "
                         "directory transformer_lm.py --save-dir wrote")
    with open(path) as f:
        saved = json.load(f)
    return saved["tokens"], saved["seq_len"]


def main():
    a = args()
    tokens, seq_len = load_vocab(a.model_dir)
    ids = {t: i for i, t in enumerate(tokens)}
    unk, eos = ids[fluid.datasets.UNK], ids[fluid.datasets.EOS]
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(a.model_dir, exe)
    rng = np.random.RandomState(a.seed)
    # A quotation starts after <eos>, as in the training stream.
    context = [eos] + [ids.get(c, unk) for c in a.prompt]
    out = []
    while len(out) < a.length:
        window = context[-seq_len:]
        batch = np.zeros((1, seq_len, 1), np.int64)  # <pad> after the window
        batch[0, :len(window), 0] = window
        (logits,) = exe.run(program, feed={feeds[0]: batch},
                            fetch_list=fetches)
        last = logits[0, len(window) - 1].astype(np.float64)
        p = np.exp((last - last.max()) / a.temperature)
        nxt = int(rng.choice(len(p), p=p / p.sum()))
        if nxt == eos:
            break
        context.append(nxt)
        out.append(tokens[nxt] if nxt >= 3 else "?")
    print(a.prompt + "".join(out), flush=True)


if __name__ == "__main__":
    main()
