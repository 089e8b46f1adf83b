#!/usr/bin/env python3
"""A character-level language model on the quotations of Debian's
fortunes: a decoder-only transformer (learned position embeddings, pre-LN
blocks of causal multi-head self-attention and a GELU feed-forward layer,
a final layer_norm and a projection onto the vocabulary), trained with
Adam, a linear warmup into a cosine decay, and global-norm clipping.
Prints the validation split's loss and perplexity per character, and
saves an inference model (with its vocabulary) that sample.py generates
text from.

    /usr/bin/python3 examples/transformer_lm.py --samples 2000 \\
        --save-dir /tmp/char_lm
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/transformer_lm.py
    /usr/bin/python3 examples/sample.py --model-dir /tmp/char_lm \\
        --prompt "The "

(PYTHONPATH=build/python; as root add --allow-run-as-root.) --samples
counts windows of --seq-len characters.
"""
import json
import math
import os

import numpy as np

import fluid
from book_common import executor, parse_args, train_and_test

L = fluid.layers


def args():
    def extra(ap):
        ap.add_argument("--seq-len", type=int, default=128)
        ap.add_argument("--width", type=int, default=128)
        ap.add_argument("--heads", type=int, default=4)
        ap.add_argument("--layers", type=int, default=4)
        ap.add_argument("--warmup-steps", type=int, default=100)
        ap.add_argument("--clip-norm", type=float, default=1.0)
        ap.add_argument("--save-dir", default=None,
                        help="rank 0 saves the inference model here")
    return parse_args(__doc__, lr=1e-3, batch_size=16, extra=extra)


def _fc(x, size, act=None):
    return L.fc(x, size, num_flatten_dims=2, act=act)


def block(x, seq_len, width, heads):
    """x + attention(ln(x)), then + fc(gelu(fc(ln(.))))."""
    h = L.layer_norm(x, begin_norm_axis=2)
    q, k, v = _fc(h, width), _fc(h, width), _fc(h, width)
    mask = L.causal_attention_mask(seq_len)
    a = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads,
                                                additive_mask=mask)
    h = L.elementwise_add(x, _fc(a, width))
    f = L.layer_norm(h, begin_norm_axis=2)
    return L.elementwise_add(h, _fc(_fc(f, 4 * width, act="gelu"), width))


def network(a, vocab_size):
    """Feeds "ids" and "next_ids" [B, seq_len, 1]; returns them, the
    logits [B, seq_len, vocab] and the mean loss per character."""
    ids = L.data("ids", [a.seq_len, 1], dtype="int64")
    next_ids = L.data("next_ids", [a.seq_len, 1], dtype="int64")
    normal = fluid.initializer.Normal(0.0, 0.02)
    x = L.embedding(ids, size=[vocab_size, a.width],
                    param_attr=fluid.ParamAttr(name="token_embedding",
                                               initializer=normal))
    pos = L.create_parameter([a.seq_len, a.width], "float32",
                             name="position_embedding",
                             default_initializer=normal)
    x = L.elementwise_add(x, pos)
    for _ in range(a.layers):
        x = block(x, a.seq_len, a.width, a.heads)
    logits = _fc(L.layer_norm(x, begin_norm_axis=2), vocab_size)
    loss = L.mean(L.softmax_with_cross_entropy(logits, next_ids))
    return [ids, next_ids], logits, loss


def schedule(a, steps):
    """Linear warmup to a.lr over a.warmup_steps, then (on the same step
    count) the cosine of a.lr / 2 * (cos(pi * step / steps) + 1), which
    reaches 0 at `steps`."""
    decay = L.cosine_decay(a.lr, step_each_epoch=1, epochs=max(steps, 1))
    return L.linear_lr_warmup(decay, a.warmup_steps, 0.0, a.lr)


def save(a, exe, test_p, logits, vocab):
    fluid.io.save_inference_model(a.save_dir, ["ids"], [logits], exe,
                                  main_program=test_p)
    tokens = sorted(vocab, key=vocab.get)
    with open(os.path.join(a.save_dir, "vocab.json"), "w") as f:
        json.dump({"tokens": tokens, "seq_len": a.seq_len}, f)
    print(f"saved the inference model in {a.save_dir}", flush=True)


def main():
    a = args()
    fortunes = fluid.datasets.fortunes
    if not fortunes.available():
        raise SystemExit("transformer_lm: no fortunes: apt-get install "
                         "fortunes")
    vocab = fortunes.build_vocab("char")
    samples = tuple(fortunes.lm_reader(split, "char", a.seq_len, vocab)
                    for split in ("train", "valid"))
    windows = sum(1 for _ in samples[0]())
    if a.samples is not None:
        windows = min(windows, a.samples)
    exe = executor(a)
    steps = a.epochs * (windows // exe.world_size // a.batch_size)
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed  # the same initial weights on every rank
    with fluid.program_guard(main_p, startup):
        feeds, logits, loss = network(a, len(vocab))
        test_p = main_p.clone(for_test=True)
        fluid.clip.set_gradient_clip(
            fluid.clip.GradientClipByGlobalNorm(a.clip_norm))
        fluid.optimizer.Adam(learning_rate=schedule(a, steps)).minimize(loss)

    def mapper(sample):
        return tuple(np.asarray(s).reshape(a.seq_len, 1) for s in sample)

    exe, metrics = train_and_test(a, (main_p, startup, test_p), feeds,
                                  [loss], ["loss"], mapper=mapper,
                                  samples=samples, exe=exe)
    if exe.rank == 0:
        print(f"perplexity {math.exp(metrics['loss']):.3f} per character; "
              f"vocabulary {len(vocab)}, {steps} steps scheduled",
              flush=True)
        if a.save_dir:
            save(a, exe, test_p, logits, vocab)


if __name__ == "__main__":
    main()
