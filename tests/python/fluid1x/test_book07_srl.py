"""The Fluid 1.x book's chapter 07 (label semantic roles) program in the
form its users wrote it: nine LoD feeds (the word, five context words, the
predicate, the mark, the target), the word embeddings shared by name and
frozen (`trainable=False`, loaded from a pretrained table through
`global_scope().find_var(...).get_tensor().set(...)`), the predicate's by
a string `param_attr='vemb'`, fc + `sums` into a stack of dynamic_lstm
layers of alternating direction with relu candidates, a linear-chain CRF
cost whose transitions learn at their own rate, SGD on an
`exponential_decay` learning rate, `crf_decoding` and `chunk_eval`, fed by
a `DataFeeder` over the nine slots. Only the data (a synthetic corpus
with one argument chunk per sentence, placed after the marked predicate)
and the sizes are this test's.

Checked: the frozen embedding stays the loaded table, the others train,
the CRF cost falls, and the decoded chunks' F1 rises."""
import numpy as np

import fluid

WORDS, PREDS, LABELS, MARKS = 30, 5, 5, 2
WORD_DIM, MARK_DIM, HIDDEN, DEPTH = 8, 4, 16, 4
MIX_HIDDEN_LR = 1e-3
EMBEDDING_NAME = "emb"


def db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark):
    predicate_embedding = fluid.layers.embedding(
        input=predicate, size=[PREDS, WORD_DIM], dtype="float32",
        is_sparse=True, param_attr="vemb")
    mark_embedding = fluid.layers.embedding(
        input=mark, size=[MARKS, MARK_DIM], dtype="float32", is_sparse=True)
    word_input = [word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2]
    emb_layers = [
        fluid.layers.embedding(
            size=[WORDS, WORD_DIM], input=x,
            param_attr=fluid.ParamAttr(name=EMBEDDING_NAME, trainable=False))
        for x in word_input]
    emb_layers.append(predicate_embedding)
    emb_layers.append(mark_embedding)
    hidden_0_layers = [fluid.layers.fc(input=emb, size=HIDDEN, act="tanh")
                       for emb in emb_layers]
    hidden_0 = fluid.layers.sums(input=hidden_0_layers)
    lstm_0 = fluid.layers.dynamic_lstm(
        input=hidden_0, size=HIDDEN, candidate_activation="relu",
        gate_activation="sigmoid", cell_activation="sigmoid")
    input_tmp = [hidden_0, lstm_0]
    for i in range(1, DEPTH):
        mix_hidden = fluid.layers.sums(input=[
            fluid.layers.fc(input=input_tmp[0], size=HIDDEN, act="tanh"),
            fluid.layers.fc(input=input_tmp[1], size=HIDDEN, act="tanh")])
        lstm = fluid.layers.dynamic_lstm(
            input=mix_hidden, size=HIDDEN, candidate_activation="relu",
            gate_activation="sigmoid", cell_activation="sigmoid",
            is_reverse=((i % 2) == 1))
        input_tmp = [mix_hidden, lstm]
    return fluid.layers.sums(input=[
        fluid.layers.fc(input=input_tmp[0], size=LABELS, act="tanh"),
        fluid.layers.fc(input=input_tmp[1], size=LABELS, act="tanh")])


def synthetic(rng, n):
    """Sentences of 4-9 words with a predicate at a random position (mark
    1 there); the target: B-A0 (0) and I-A0 (1) over the two words after
    the predicate, B-V (2) on it, O (4) elsewhere (IOB, 2 chunk types)."""
    out = []
    for _ in range(n):
        length = rng.randint(4, 10)
        words = rng.randint(0, WORDS, size=length)
        p = rng.randint(0, length - 2)
        mark = np.zeros(length, "int64")
        mark[p] = 1
        target = np.full(length, 4, "int64")
        target[p], target[p + 1], target[p + 2] = 2, 0, 1
        ctx = [np.full(length, words[min(max(p + d, 0), length - 1)])
               for d in (-2, -1, 0, 1, 2)]
        pred = np.full(length, words[p] % PREDS)
        out.append(tuple([list(words)] + [list(c) for c in ctx] +
                         [list(pred), list(mark), list(target)]))
    return out


def test_book07_trains_and_decodes():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        names = ["word_data", "ctx_n2_data", "ctx_n1_data", "ctx_0_data",
                 "ctx_p1_data", "ctx_p2_data", "verb_data", "mark_data"]
        slots = [fluid.layers.data(name=n, shape=[1], dtype="int64",
                                   lod_level=1) for n in names]
        (word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, predicate,
         mark) = slots
        feature_out = db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0,
                              ctx_p1, ctx_p2, mark)
        target = fluid.layers.data(name="target", shape=[1], dtype="int64",
                                   lod_level=1)
        crf_cost = fluid.layers.linear_chain_crf(
            input=feature_out, label=target,
            param_attr=fluid.ParamAttr(name="crfw",
                                       learning_rate=MIX_HIDDEN_LR))
        avg_cost = fluid.layers.mean(crf_cost)
        sgd_optimizer = fluid.optimizer.SGD(
            learning_rate=fluid.layers.exponential_decay(
                learning_rate=0.1, decay_steps=100000, decay_rate=0.5,
                staircase=True))
        sgd_optimizer.minimize(avg_cost)
        crf_decode = fluid.layers.crf_decoding(
            input=feature_out, param_attr=fluid.ParamAttr(name="crfw"))
        (precision, recall, f1, _, _, _) = fluid.layers.chunk_eval(
            input=crf_decode, label=target, chunk_scheme="IOB",
            num_chunk_types=2)
    place = fluid.CPUPlace()
    feeder = fluid.DataFeeder(feed_list=slots + [target], place=place)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        pretrained = np.random.RandomState(4).uniform(
            -1, 1, (WORDS, WORD_DIM)).astype("float32")
        embedding_param = fluid.global_scope().find_var(
            EMBEDDING_NAME).get_tensor()
        embedding_param.set(pretrained, place)
        vemb0 = np.array(scope.find_var("vemb").get_tensor()).copy()
        rng = np.random.RandomState(5)
        costs, f1s = [], []
        for _ in range(60):
            batch = synthetic(rng, 8)
            cost, f = exe.run(main, feed=feeder.feed(batch),
                              fetch_list=[avg_cost, f1])
            costs.append(float(np.ravel(cost)[0]))
            f1s.append(float(np.ravel(f)[0]))
        emb = np.array(scope.find_var(EMBEDDING_NAME).get_tensor())
        vemb = np.array(scope.find_var("vemb").get_tensor())
    np.testing.assert_array_equal(emb, pretrained)   # trainable=False
    assert np.abs(vemb - vemb0).max() > 0            # the others train
    assert np.mean(costs[-10:]) < 0.7 * np.mean(costs[:10]), costs
    assert np.mean(f1s[-10:]) > np.mean(f1s[:10]) + 0.2, f1s
