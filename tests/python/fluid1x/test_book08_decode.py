"""The Fluid 1.x book's chapter 08 (machine translation) program in the
form its users wrote it: an LSTM encoder whose last step boots a
DynamicRNN decoder for training, and a beam-search decoder in a While loop
over tensor arrays whose starts are fed with two LoD levels ([[1] * N,
[1] * N] lengths), the state reset to the beam's LoD by lod_reset, the
loop ended by is_empty once every source has finished, and the sentences
read back book-style from two levels (lod()[0] source -> hypotheses,
lod()[1] hypothesis -> tokens). Only the data (a toy task: copy a short
id sequence) and the parameter names (so that decoding reads the trained
weights) are this test's.

Checked: the loss falls; beam 1 decodes exactly the greedy sentence that
the same decoder step computed in NumPy from the trained weights finds,
with its accumulated log-probability; a wider beam's hypotheses come best
first, each a sentence ending in the end id or at the length limit; and
the loop stops at the step after every source has ended."""
import numpy as np

import fluid

pd = fluid.layers  # the book's alias
DICT, WORD, HIDDEN, DECODER = 8, 6, 12, 12
START, END = 0, 1
MAX_LEN = 6


def P(name):  # noqa: N802
    return fluid.ParamAttr(name=name)


def encoder():
    src = pd.data(name="src_word_id", shape=[1], dtype="int64", lod_level=1)
    emb = pd.embedding(input=src, size=[DICT, WORD], dtype="float32",
                       param_attr=P("src_emb"))
    fc1 = pd.fc(input=emb, size=HIDDEN * 4, act="tanh",
                param_attr=P("enc_fc_w"), bias_attr=P("enc_fc_b"))
    hidden, _ = pd.dynamic_lstm(input=fc1, size=HIDDEN * 4,
                                param_attr=P("enc_lstm_w"),
                                bias_attr=P("enc_lstm_b"))
    return pd.fc(input=pd.sequence_last_step(input=hidden), size=DECODER,
                 act="tanh", param_attr=P("boot_w"), bias_attr=P("boot_b"))


def train_decoder(context):
    trg = pd.data(name="target_language_word", shape=[1], dtype="int64",
                  lod_level=1)
    trg_emb = pd.embedding(input=trg, size=[DICT, WORD], dtype="float32",
                           param_attr=P("trg_emb"))
    rnn = pd.DynamicRNN()
    with rnn.block():
        current_word = rnn.step_input(trg_emb)
        pre_state = rnn.memory(init=context, need_reorder=True)
        current_state = pd.fc(input=[current_word, pre_state], size=DECODER,
                              act="tanh",
                              param_attr=[P("dec_w_word"), P("dec_w_state")],
                              bias_attr=P("dec_b"))
        current_score = pd.fc(input=current_state, size=DICT, act="softmax",
                              param_attr=P("out_w"), bias_attr=P("out_b"))
        rnn.update_memory(pre_state, current_state)
        rnn.output(current_score)
    return rnn()


def decode(context, beam_size):
    init_state = context
    array_len = pd.fill_constant(shape=[1], dtype="int64", value=MAX_LEN)
    counter = pd.zeros(shape=[1], dtype="int64", force_cpu=True)
    state_array = pd.create_array("float32")
    pd.array_write(init_state, array=state_array, i=counter)
    ids_array = pd.create_array("int64")
    scores_array = pd.create_array("float32")
    init_ids = pd.data(name="init_ids", shape=[1], dtype="int64",
                       lod_level=2)
    init_scores = pd.data(name="init_scores", shape=[1], dtype="float32",
                          lod_level=2)
    pd.array_write(init_ids, array=ids_array, i=counter)
    pd.array_write(init_scores, array=scores_array, i=counter)
    cond = pd.less_than(x=counter, y=array_len)
    while_op = pd.While(cond=cond)
    with while_op.block():
        pre_ids = pd.array_read(array=ids_array, i=counter)
        pre_state = pd.array_read(array=state_array, i=counter)
        pre_score = pd.array_read(array=scores_array, i=counter)
        pre_state_expanded = pd.sequence_expand(pre_state, pre_score)
        pre_ids_emb = pd.embedding(input=pre_ids, size=[DICT, WORD],
                                   dtype="float32", param_attr=P("trg_emb"))
        current_state = pd.fc(input=[pre_state_expanded, pre_ids_emb],
                              size=DECODER, act="tanh",
                              param_attr=[P("dec_w_state"), P("dec_w_word")],
                              bias_attr=P("dec_b"))
        current_state_with_lod = pd.lod_reset(x=current_state, y=pre_score)
        current_score = pd.fc(input=current_state_with_lod, size=DICT,
                              act="softmax", param_attr=P("out_w"),
                              bias_attr=P("out_b"))
        topk_scores, topk_indices = pd.topk(current_score, k=beam_size)
        accu_scores = pd.elementwise_add(
            x=pd.log(topk_scores), y=pd.reshape(pre_score, shape=[-1]),
            axis=0)
        selected_ids, selected_scores = pd.beam_search(
            pre_ids, pre_score, topk_indices, accu_scores, beam_size,
            end_id=END, level=0)
        pd.increment(x=counter, value=1, in_place=True)
        pd.array_write(current_state, array=state_array, i=counter)
        pd.array_write(selected_ids, array=ids_array, i=counter)
        pd.array_write(selected_scores, array=scores_array, i=counter)
        length_cond = pd.less_than(x=counter, y=array_len)
        finish_cond = pd.logical_not(pd.is_empty(x=selected_ids))
        pd.logical_and(x=length_cond, y=finish_cond, out=cond)
    translation_ids, translation_scores = pd.beam_search_decode(
        ids=ids_array, scores=scores_array, beam_size=beam_size, end_id=END)
    return translation_ids, translation_scores, counter


def toy_batch(rng, n):
    """Copy task: source ids in [2, DICT), target the same words."""
    srcs = [list(rng.randint(2, DICT, size=rng.randint(1, 4)))
            for _ in range(n)]
    return srcs, [[START] + s for s in srcs], [s + [END] for s in srcs]


def lod(seqs, place):
    return fluid.create_lod_tensor(
        np.array([v for s in seqs for v in s], "int64").reshape(-1, 1),
        [[len(s) for s in seqs]], place)


def train(scope, place, steps=150):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        context = encoder()
        rnn_out = train_decoder(context)
        label = pd.data(name="target_language_next_word", shape=[1],
                        dtype="int64", lod_level=1)
        avg_cost = pd.mean(pd.cross_entropy(input=rnn_out, label=label))
        fluid.optimizer.Adam(learning_rate=0.03).minimize(avg_cost)
    exe = fluid.Executor(place)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(steps):
        src, trg, nxt = toy_batch(rng, 16)
        cost, = exe.run(main, feed={"src_word_id": lod(src, place),
                                    "target_language_word": lod(trg, place),
                                    "target_language_next_word":
                                        lod(nxt, place)},
                        fetch_list=[avg_cost], scope=scope)
        losses.append(float(np.ravel(cost)[0]))
    return losses


def run_decoder(scope, place, srcs, beam_size):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        context = encoder()
        ids, scores, counter = decode(context, beam_size)
    n = len(srcs)
    init_lens = [1] * n
    init_lens = [init_lens, init_lens]  # the book's two levels
    init_ids = fluid.create_lod_tensor(
        np.array([[START]] * n, dtype="int64"), init_lens, place)
    init_scores = fluid.create_lod_tensor(
        np.zeros((n, 1), dtype="float32"), init_lens, place)
    result_ids, result_scores, steps, boot = fluid.Executor(place).run(
        main, feed={"src_word_id": lod(srcs, place), "init_ids": init_ids,
                    "init_scores": init_scores},
        fetch_list=[ids, scores, counter, context], return_numpy=False,
        scope=scope)
    # Read back as the book does.
    assert result_ids.lod() == result_scores.lod()
    level0, level1 = result_ids.lod()
    tokens, values = np.array(result_ids), np.array(result_scores)
    sentences = [[list(tokens[level1[h]:level1[h + 1]])
                  for h in range(level0[s], level0[s + 1])]
                 for s in range(len(level0) - 1)]
    final = [[float(values[level1[h + 1] - 1])
              for h in range(level0[s], level0[s + 1])]
             for s in range(len(level0) - 1)]
    return sentences, final, int(np.array(steps)[0]), np.array(boot)


def greedy_numpy(scope, boot):
    """The decoder step in NumPy from the trained weights: argmax words
    and their summed log-probabilities, from each source's boot state."""
    w = {n: np.array(scope.find_var(n).get_tensor()).astype("float64")
         for n in ("trg_emb", "dec_w_word", "dec_w_state", "dec_b", "out_w",
                   "out_b")}
    out = []
    for state in boot.astype("float64"):
        sent, score, word = [START], 0.0, START
        for _ in range(MAX_LEN):
            state = np.tanh(w["trg_emb"][word] @ w["dec_w_word"] +
                            state @ w["dec_w_state"] + w["dec_b"].ravel())
            logits = state @ w["out_w"] + w["out_b"].ravel()
            p = np.exp(logits - logits.max())
            p /= p.sum()
            word = int(np.argmax(p))
            score += float(np.log(p[word]))
            sent.append(word)
            if word == END:
                break
        out.append((sent, score))
    return out


def test_book08_trains_and_decodes_with_two_lod_levels():
    place, scope = fluid.CPUPlace(), fluid.Scope()
    losses = train(scope, place)
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10]), losses
    srcs, _, _ = toy_batch(np.random.RandomState(5), 6)

    sentences, final, steps, boot = run_decoder(scope, place, srcs, 1)
    assert len(sentences) == len(srcs)
    for s, (want, score) in enumerate(greedy_numpy(scope, boot)):
        assert sentences[s] == [want], (s, sentences[s], want)
        assert abs(final[s][0] - score) < 1e-4, (s, final[s], score)
    # A sentence of k tokens ends at step k - 1; the step after it selects
    # nothing, and is_empty ends the loop there: k steps, below the limit
    # (the copy task's sentences have at most 5 tokens).
    longest = max(len(per[0]) for per in sentences)
    assert steps == min(MAX_LEN, longest) and steps < MAX_LEN, \
        (steps, longest)

    sentences, final, steps, _ = run_decoder(scope, place, srcs, 3)
    for s in range(len(srcs)):
        assert 1 <= len(sentences[s]) <= 3
        assert final[s] == sorted(final[s], reverse=True)
        for sent in sentences[s]:
            assert sent[0] == START
            assert sent[-1] == END or len(sent) == MAX_LEN + 1, sent
            assert END not in sent[:-1], sent
    longest = max(len(sent) for per in sentences for sent in per)
    assert steps == min(MAX_LEN, longest), (steps, longest)
