#!/usr/bin/env python3
"""machine_translation, the book's chapter 08 (a GRU encoder-decoder with
attention, the decoder a fluid.layers.DynamicRNN, decoded with
beam_search / beam_search_decode in a While loop over tensor arrays), on
the short quotations of Debian's fortunes.

The task: "translate" a quotation of 2 to 8 words into the same words in
reversed order. The data is already on the machine, and the target is a
deterministic function of the source, so the training loss and the
exact-match rate of the decoded sentences measure learning with no
reference translations to argue about. Reversal is a task for attention:
the first target word is the source's last, so the decoder must look at
the far end of the source rather than copy along the diagonal.

Words are lower-cased, the --vocab most common words kept (the others
become <unk>). The encoder is an embedding and a bidirectional
dynamic_gru; its states (forward and backward concatenated, one row per
source word) and their projection are LoD tensors, one sequence per
source. The decoder is a GRU cell of layers (fc + gru_unit) with
chapter 08's simple_attention: the decoder state, projected, is
sequence_expand-ed over the source's words, joined to their projections
and scored by an fc of size 1 (tanh); sequence_softmax weights the
words' states within each source and sequence_pool sums them into the
context. In the training DynamicRNN the encoder's tensors are
static_inputs: at each step they hold the whole source sentences of the
targets still running, in the rank order of the step's rows, with their
LoD. The same cell, with the same parameters, runs in the decoding loop,
where the state rows and the source sentences are repeated per
hypothesis with sequence_expand by the beam's scores, as chapter 08
does: the starts are fed with the beam's two LoD levels (source ->
prefixes -> rows), the loop ends once is_empty finds every source
finished, and the sentences are read from their two levels (lod()[0]
source -> hypotheses, lod()[1] hypothesis -> tokens).

    /usr/bin/python3 examples/machine_translation.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/machine_translation.py --distributed

(PYTHONPATH=build/python; as root add --allow-run-as-root.) One process
trains with fluid.Executor; --distributed with fluid.MPIExecutor, each
rank on its share of every global batch (--batch-size per rank). Prints
the training loss as it falls, a few source / reference / decoded lines
and the exact-match rate of greedy (beam 1) and beam decoding.
"""
import argparse
import collections
import os
import re

import numpy as np

import fluid

L = fluid.layers
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
START, END, UNK = 0, 1, 2
RESERVED = ("<s>", "<e>", "<unk>")


def parse_args():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=600,
                    help="training quotations (validation: a quarter)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--steps", type=int, default=None,
                    help="stop after this many steps (default: --epochs)")
    ap.add_argument("--batch-size", type=int, default=32,
                    help="sequences per step per rank")
    ap.add_argument("--max-len", type=int, default=8,
                    help="longest quotation kept, in words")
    ap.add_argument("--vocab", type=int, default=60,
                    help="words kept, the most common (others: <unk>)")
    ap.add_argument("--emb", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64,
                    help="the encoder's GRUs' and the decoder's width")
    ap.add_argument("--beam-size", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--dtype", choices=("float32", "float64"),
                    default="float32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=4,
                    help="decoded lines printed")
    ap.add_argument("--distributed", action="store_true",
                    help="train with fluid.MPIExecutor (under mpirun)")
    ap.add_argument("--save-params", default=None,
                    help="write this rank's parameters to DIR/rank<r>.npz")
    ap.add_argument("--save-decoded", default=None,
                    help="write greedy and beam-1 decodings to this .npz")
    return ap.parse_args()


def load(a):
    """(vocabulary list, train pairs, valid pairs): (source ids, reversed
    ids) int64 arrays of the quotations with 2..max_len words."""
    split = {}
    counts = collections.Counter()
    for name in ("train", "valid"):
        split[name] = [w for w in (
            WORD.findall(text.lower())
            for _, text in fluid.datasets.fortunes.quotations(name))
            if 2 <= len(w) <= a.max_len]
    for words in split["train"]:
        counts.update(words)
    kept = sorted(counts, key=lambda t: (-counts[t], t))[:a.vocab]
    words = list(RESERVED) + kept
    index = {w: i for i, w in enumerate(words)}
    out = {}
    for name, count in (("train", a.samples),
                        ("valid", max(1, a.samples // 4))):
        pairs = []
        for sent in split[name][:count]:
            ids = np.array([index.get(w, UNK) for w in sent], np.int64)
            pairs.append((ids, ids[::-1].copy()))
        out[name] = pairs
    return words, out["train"], out["valid"]


def encoder(src, vocab_size, a):
    """The bidirectional GRU encoder: (encoded_vector, the states of the
    source words [words, 2 * hidden], and encoded_proj, their projection
    for the attention [words, hidden], both with the sources' LoD; the
    decoder's first state [N, hidden])."""
    h = a.hidden
    emb = L.embedding(src, size=[vocab_size, a.emb], dtype=a.dtype,
                      param_attr=fluid.ParamAttr(name="src_emb"))
    P = fluid.ParamAttr  # noqa: N806
    fwd = L.dynamic_gru(
        L.fc(emb, 3 * h, param_attr=P(name="enc_fw_x"),
             bias_attr=P(name="enc_fw_xb")), size=h,
        param_attr=P(name="enc_fw_w"), bias_attr=P(name="enc_fw_b"))
    bwd = L.dynamic_gru(
        L.fc(emb, 3 * h, param_attr=P(name="enc_bw_x"),
             bias_attr=P(name="enc_bw_xb")), size=h, is_reverse=True,
        param_attr=P(name="enc_bw_w"), bias_attr=P(name="enc_bw_b"))
    encoded_vector = L.concat([fwd, bwd], axis=1)  # keeps fwd's LoD
    encoded_proj = L.fc(encoded_vector, h, bias_attr=False,
                        param_attr=P(name="att_enc"))
    boot = L.fc(L.sequence_pool(bwd, "first"), h, act="tanh",
                param_attr=P(name="boot_w"), bias_attr=P(name="boot_b"))
    return encoded_vector, encoded_proj, boot


def attention(encoder_vec, encoder_proj, decoder_state, a):
    """Chapter 08's simple_attention: score each source word by an fc of
    its projection and the (projected) decoder state, softmax the scores
    over each source sentence, and sum the words' states by the weights.
    encoder_vec and encoder_proj hold one source sentence (a LoD
    sequence) per row of decoder_state."""
    decoder_state_proj = L.fc(decoder_state, a.hidden, bias_attr=False,
                              param_attr=fluid.ParamAttr(name="att_q"))
    decoder_state_expand = L.sequence_expand(x=decoder_state_proj,
                                             y=encoder_proj)
    # encoder_proj first: concat keeps X[0]'s LoD, the source sentences.
    concated = L.concat([encoder_proj, decoder_state_expand], axis=1)
    attention_weights = L.fc(concated, 1, act="tanh", bias_attr=False,
                             param_attr=fluid.ParamAttr(name="att_v"))
    attention_weights = L.sequence_softmax(attention_weights)
    weights_reshape = L.reshape(attention_weights, shape=[-1])
    scaled = L.elementwise_mul(x=encoder_vec, y=weights_reshape, axis=0)
    return L.sequence_pool(scaled, pool_type="sum")


def cell(word_emb, prev, encoder_vec, encoder_proj, a):
    """One decoder step: attention of the state over the encoder's
    states, then a GRU step on the word and the context."""
    h = a.hidden
    context = attention(encoder_vec, encoder_proj, prev, a)
    gates = L.fc([word_emb, context], 3 * h, bias_attr=False,
                 param_attr=[fluid.ParamAttr(name="dec_x"),
                             fluid.ParamAttr(name="dec_c")])
    new, _, _ = L.gru_unit(gates, prev, 3 * h,
                           param_attr=fluid.ParamAttr(name="dec_gru_w"),
                           bias_attr=fluid.ParamAttr(name="dec_gru_b"))
    return new


def target_emb(ids, vocab_size, a):
    """The target words' embedding (shared by training and decoding)."""
    return L.embedding(ids, size=[vocab_size, a.emb], dtype=a.dtype,
                       param_attr=fluid.ParamAttr(name="trg_emb"))


def word_probs(state, vocab_size):
    """The softmax over the vocabulary of a decoder state."""
    return L.fc(state, vocab_size, act="softmax",
                param_attr=fluid.ParamAttr(name="out_w"),
                bias_attr=fluid.ParamAttr(name="out_b"))


def build_train(vocab_size, a):
    """The teacher-forced training program: (main, startup, test, feeds,
    average cost per sentence, the words' probabilities)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = a.seed  # the same initial weights on every rank
    with fluid.program_guard(main, startup):
        feeds = [L.data(n, shape=[1], dtype="int64", lod_level=1)
                 for n in ("src", "trg_in", "trg_out")]
        encoded_vector, encoded_proj, boot = encoder(feeds[0], vocab_size,
                                                     a)
        trg = target_emb(feeds[1], vocab_size, a)
        rnn = L.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(trg)
            # The source sentences of the running targets, ranked as
            # their rows, each a whole LoD sequence.
            encoder_vec = rnn.static_input(encoded_vector)
            encoder_proj = rnn.static_input(encoded_proj)
            prev = rnn.memory(init=boot, need_reorder=True)
            new = cell(word, prev, encoder_vec, encoder_proj, a)
            rnn.update_memory(prev, new)
            rnn.output(word_probs(new, vocab_size))
        probs = rnn()
        cost = L.cross_entropy(probs, feeds[2])
        # Per sentence: the batch's summed cost over its --batch-size
        # sentences (cross_entropy's output carries no LoD to pool by).
        avg_cost = L.scale(L.reduce_sum(cost), scale=1.0 / a.batch_size)
        test = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=a.lr).minimize(avg_cost)
    return main, startup, test, feeds, avg_cost, probs


def build_decoder(vocab_size, a, beam_size):
    """Chapter 08's decoding loop on the trained parameters: (program,
    sentence ids, sentence scores)."""
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        src = L.data("src", shape=[1], dtype="int64", lod_level=1)
        # The beam's two LoD levels, as the book feeds them: source ->
        # prefixes -> rows (one start per source at first).
        init_ids = L.data("init_ids", [1], dtype="int64", lod_level=2)
        init_scores = L.data("init_scores", [1], dtype="float32",
                             lod_level=2)
        encoded_vector, encoded_proj, boot = encoder(src, vocab_size, a)
        counter = L.fill_constant([1], "int64", 0)
        limit = L.fill_constant([1], "int64", a.max_len + 1)
        arrays = {k: L.create_array(t) for k, t in (
            ("ids", "int64"), ("scores", "float32"), ("state", a.dtype),
            ("vec", a.dtype), ("proj", a.dtype))}
        for k, v in (("ids", init_ids), ("scores", init_scores),
                     ("state", boot), ("vec", encoded_vector),
                     ("proj", encoded_proj)):
            L.array_write(v, i=counter, array=arrays[k])
        cond = L.less_than(counter, limit)
        loop = L.While(cond, is_test=True)
        with loop.block():
            pre_ids = L.array_read(arrays["ids"], counter)
            pre_score = L.array_read(arrays["scores"], counter)
            # Per hypothesis: each previous hypothesis's state row and
            # source sentence (a LoD sequence of the encoder's states)
            # repeated as often as the last beam_search extended it
            # (pre_score's LoD).
            rows = {k: L.sequence_expand(L.array_read(arrays[k], counter),
                                         pre_score)
                    for k in ("state", "vec", "proj")}
            new = cell(target_emb(pre_ids, vocab_size, a), rows["state"],
                       rows["vec"], rows["proj"], a)
            probs = word_probs(new, vocab_size)
            if a.dtype != "float32":
                probs = L.cast(probs, "float32")
            top_scores, top_ids = L.topk(probs, k=beam_size)
            accu = L.elementwise_add(L.log(top_scores),
                                     L.reshape(pre_score, [-1]), axis=0)
            sel_ids, sel_scores = L.beam_search(
                pre_ids, pre_score, top_ids, accu, beam_size, end_id=END)
            L.increment(counter, value=1, in_place=True)
            for k, v in (("ids", sel_ids), ("scores", sel_scores),
                         ("state", new), ("vec", rows["vec"]),
                         ("proj", rows["proj"])):
                L.array_write(v, i=counter, array=arrays[k])
            # On while below the limit and some source still searching.
            L.logical_and(L.less_than(counter, limit),
                          L.logical_not(L.is_empty(sel_ids)), out=cond)
        sent_ids, sent_scores = L.beam_search_decode(
            arrays["ids"], arrays["scores"], beam_size, end_id=END)
    return prog, sent_ids, sent_scores


def lod_feed(seqs, place):
    """int64 sequences as one LoD tensor of [rows, 1]."""
    flat = np.concatenate(seqs).astype(np.int64).reshape(-1, 1)
    return fluid.create_lod_tensor(flat, [[len(s) for s in seqs]], place)


def beam_decode(exe, prog, fetches, sources, place):
    """The best hypothesis of each source, <s> and <e> stripped."""
    n = len(sources)
    starts = [[1] * n, [1] * n]  # two levels: one start per source
    feed = {"src": lod_feed(sources, place),
            "init_ids": fluid.create_lod_tensor(
                np.full((n, 1), START, "int64"), starts, place),
            "init_scores": fluid.create_lod_tensor(
                np.zeros((n, 1), "float32"), starts, place)}
    ids, _ = exe.run(prog, feed=feed, fetch_list=fetches,
                     return_numpy=False)
    # As the book reads them: lod()[0] source -> hypotheses (best first),
    # lod()[1] hypothesis -> tokens.
    tokens = np.array(ids).ravel()
    by_source, by_hyp = ids.lod()
    best = []
    for s in range(n):
        h = by_source[s]  # the source's first hypothesis, if it has any
        best.append(strip(tokens[by_hyp[h]:by_hyp[h + 1]])
                    if by_source[s + 1] > h else [])
    return best


def strip(sent):
    """Drop the leading <s> and everything from the first <e>."""
    sent = [int(t) for t in sent]
    if sent and sent[0] == START:
        sent = sent[1:]
    return sent[:sent.index(END)] if END in sent else sent


def greedy_decode(exe, test, fetch, sources, max_len, place):
    """Greedy decoding with the teacher-forced program: feed each source's
    words so far, take the argmax of the last step's probabilities."""
    n = len(sources)
    out = [[START] for _ in range(n)]
    done = [False] * n
    for _ in range(max_len + 1):
        feed = {"src": lod_feed(sources, place),
                "trg_in": lod_feed(out, place),
                "trg_out": lod_feed(out, place)}
        probs, = exe.run(test, feed=feed, fetch_list=[fetch])
        ends = np.cumsum([len(o) for o in out]) - 1
        for s in range(n):
            if not done[s]:
                nxt = int(np.argmax(probs[ends[s]]))
                out[s].append(nxt)
                done[s] = nxt == END
    return [strip(o) for o in out]


def params(program):
    """The trainable parameters of `program`, by name, as arrays."""
    names = sorted(v["name"] for v in program.desc.vars()
                   if v["persistable"] and v["trainable"])
    scope = fluid.global_scope()
    return {n: np.array(scope.get(n)) for n in names}


def report(name, sources, refs, decoded, words, show):
    """Print a few lines and the exact-match rate; return the rate."""
    rate = float(np.mean([list(r) == d for r, d in zip(refs, decoded)]))
    text = lambda ids: " ".join(words[int(t)] for t in ids)  # noqa: E731
    for i in range(min(show, len(sources))):
        print(f"  [{name}] source: {text(sources[i])} | reference: "
              f"{text(refs[i])} | decoded: {text(decoded[i])}")
    print(f"{name}: exact match {rate:.4f} on {len(sources)} validation "
          "sentences", flush=True)
    return rate


def with_targets(pairs):
    """(source, <s> + target, target + <e>) per pair: the decoder's input
    and the words it must predict."""
    return [(s, np.concatenate([[START], t]), np.concatenate([t, [END]]))
            for s, t in pairs]


def valid_loss(exe, a, test, feeds, avg_cost, data):
    """The validation split's cost per sentence."""
    feeder = fluid.DataFeeder(feed_list=feeds, place=fluid.CPUPlace(),
                              program=test)
    total = 0.0
    for start in range(0, len(data), a.batch_size):
        batch = with_targets(data[start:start + a.batch_size])
        c, = exe.run(test, feed=feeder.feed(batch), fetch_list=[avg_cost])
        total += float(np.ravel(c)[0]) * a.batch_size  # the batch's sum
    return total / len(data)


def train(exe, a, main_p, feeds, avg_cost, data, rank, world):
    """Adam steps over global batches of --batch-size per rank."""
    feeder = fluid.DataFeeder(feed_list=feeds, place=fluid.CPUPlace(),
                              program=main_p)
    per_step = a.batch_size * world
    rng = np.random.RandomState(a.seed)
    per_epoch = len(data) // per_step
    steps = per_epoch * a.epochs if a.steps is None else a.steps
    order = []
    for step in range(steps):
        if step % per_epoch == 0:
            order = rng.permutation(len(data))
        j = step % per_epoch
        batch = [data[i] for i in order[j * per_step:(j + 1) * per_step]]
        mine = with_targets(batch[rank * a.batch_size:
                                  (rank + 1) * a.batch_size])
        cost, = exe.run(main_p, feed=feeder.feed(mine), fetch_list=[avg_cost])
        if rank == 0 and (step % 20 == 0 or step == steps - 1):
            print(f"step {step}: train loss {float(np.ravel(cost)[0]):.4f}",
                  flush=True)
    return steps


def main():
    a = parse_args()
    if not fluid.datasets.fortunes.available():
        raise SystemExit("machine_translation: no fortunes: apt-get install "
                         "fortunes")
    words, train_data, valid = load(a)
    main_p, startup, test_p, feeds, avg_cost, probs = build_train(
        len(words), a)
    if a.distributed:
        exe = fluid.MPIExecutor(fluid.CPUPlace())
        rank, world = exe.rank, exe.world_size
    else:
        exe, rank, world = fluid.Executor(fluid.CPUPlace()), 0, 1
    exe.run(startup)
    if a.samples < a.batch_size * world:
        raise SystemExit(f"machine_translation: --samples={a.samples} is "
                         f"less than one global batch ({a.batch_size} x "
                         f"{world} ranks)")
    before = valid_loss(exe, a, test_p, feeds, avg_cost, valid)
    if rank == 0:
        print(f"before training: valid loss {before:.4f}", flush=True)
    steps = train(exe, a, main_p, feeds, avg_cost, train_data, rank, world)
    after = valid_loss(exe, a, test_p, feeds, avg_cost, valid)
    if rank == 0:
        print(f"after {steps} steps: valid loss {after:.4f}", flush=True)
    if a.distributed:
        exe.check_consistency()  # every rank holds the same parameters
    if a.save_params:
        np.savez(os.path.join(a.save_params, f"rank{rank}.npz"),
                 **params(main_p))
    if rank == 0:
        place = fluid.CPUPlace()
        local = fluid.Executor(place)
        sources = [s for s, _ in valid]
        refs = [t for _, t in valid]
        greedy = greedy_decode(local, test_p, probs, sources, a.max_len,
                               place)
        found = {}
        for beam in sorted({1, a.beam_size}):
            prog, ids, scores = build_decoder(len(words), a, beam)
            found[beam] = beam_decode(local, prog, [ids, scores], sources,
                                      place)
        report("greedy", sources, refs, greedy, words, a.show)
        for beam, decoded in found.items():
            report(f"beam {beam}", sources, refs, decoded, words, a.show)
        same = sum(g == b for g, b in zip(greedy, found[1]))
        print(f"beam 1 equals greedy on {same} of {len(sources)}",
              flush=True)
        if a.save_decoded:
            np.savez(a.save_decoded,
                     greedy=np.array([" ".join(map(str, g)) for g in greedy]),
                     beam1=np.array([" ".join(map(str, b))
                                     for b in found[1]]))
    print(f"rank {rank}: trained {steps} steps on {world} rank(s)",
          flush=True)


if __name__ == "__main__":
    main()
