#!/usr/bin/env python3
"""understand_sentiment, the book's text classifiers, on the quotations of
Debian's fortunes: which topic file (among the largest --topics) a
quotation comes from. Quotations are variable-length word sequences (a
lod_level=1 slot); --net conv is the book's convolution model (two
sequence_conv_pool branches, widths 3 and 4), --net lstm its stacked
bidirectional-in-turn LSTM (dynamic_lstm layers, then max pooling).

    /usr/bin/python3 examples/understand_sentiment.py --samples 2000
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/understand_sentiment.py --net lstm

(PYTHONPATH=build/python; as root add --allow-run-as-root.) Prints the
validation split's loss and accuracy.
"""
import fluid
from book_common import parse_args, train_and_test

EMB_DIM = 64
HID_DIM = 64
STACKED_NUM = 3


def args():
    def extra(ap):
        ap.add_argument("--net", choices=("conv", "lstm"), default="conv")
        ap.add_argument("--topics", type=int, default=8,
                        help="classes: the largest topic files")
        ap.add_argument("--min-count", type=int, default=2,
                        help="words seen fewer times become <unk>")
    return parse_args(__doc__, lr=0.002, batch_size=32, extra=extra)


def convolution_net(data, label, dict_dim, class_dim):
    emb = fluid.layers.embedding(input=data, size=[dict_dim, EMB_DIM],
                                 is_sparse=True)
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=HID_DIM,
                                           filter_size=3, act="tanh",
                                           pool_type="sqrt")
    conv_4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=HID_DIM,
                                           filter_size=4, act="tanh",
                                           pool_type="sqrt")
    return fluid.layers.fc(input=[conv_3, conv_4], size=class_dim,
                           act="softmax")


def stacked_lstm_net(data, label, dict_dim, class_dim):
    emb = fluid.layers.embedding(input=data, size=[dict_dim, EMB_DIM],
                                 is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=HID_DIM * 4)
    lstm1, _ = fluid.layers.dynamic_lstm(input=fc1, size=HID_DIM * 4)
    inputs = [fc1, lstm1]
    for i in range(2, STACKED_NUM + 1):
        fc = fluid.layers.fc(input=inputs, size=HID_DIM * 4)
        lstm, _ = fluid.layers.dynamic_lstm(input=fc, size=HID_DIM * 4,
                                            is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    return fluid.layers.fc(input=[fc_last, lstm_last], size=class_dim,
                           act="softmax")


def main():
    a = args()
    fortunes = fluid.datasets.fortunes
    if not fortunes.available():
        raise SystemExit("understand_sentiment: no fortunes: apt-get install "
                         "fortunes")
    vocab = fortunes.build_vocab("word", min_count=a.min_count)
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed  # the same initial weights on every rank
    with fluid.program_guard(main_p, startup):
        data = fluid.layers.data(name="words", shape=[1], dtype="int64",
                                 lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        net = convolution_net if a.net == "conv" else stacked_lstm_net
        prediction = net(data, label, len(vocab), a.topics)
        cost = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_cost = fluid.layers.mean(cost)
        accuracy = fluid.layers.accuracy(input=prediction, label=label)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.Adagrad(learning_rate=a.lr).minimize(avg_cost)
    samples = tuple(
        fortunes.topic_reader(split, "word", num_topics=a.topics, vocab=vocab)
        for split in ("train", "valid"))
    exe, _ = train_and_test(a, (main_p, startup, test_p), [data, label],
                            [avg_cost, accuracy], ["loss", "accuracy"],
                            samples=samples)
    if exe.rank == 0:
        print(f"{a.net} net, {a.topics} topics, vocabulary {len(vocab)} "
              f"words", flush=True)


if __name__ == "__main__":
    main()
