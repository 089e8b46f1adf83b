"""Bad input to the image layers and the DataFeeder is refused with one
clear error naming the layer (or feed slot) and the argument: an unknown
activation, arguments of the wrong type, a shared parameter name reused
with another shape, a ragged minibatch."""
import numpy as np
import pytest

import fluid

L = fluid.layers


@pytest.fixture
def image():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        yield L.data("image", [1, 28, 28])


@pytest.mark.parametrize("build,layer,arg", [
    (lambda x: L.conv2d(x, 4, 3, act="selu"), "conv2d", "act"),
    (lambda x: L.batch_norm(x, act="swish"), "batch_norm", "act"),
    (lambda x: L.fc(x, 10, act="Relu"), "fc", "act"),
])
def test_unknown_activation(image, build, layer, arg):
    with pytest.raises(ValueError, match=(
            rf"layer '{layer}': argument '{arg}': unknown activation .*"
            r"known: .*relu")):
        build(image)


@pytest.mark.parametrize("build,layer,arg,kind", [
    (lambda x: L.conv2d(x, 2.5, 3), "conv2d", "num_filters", "an int"),
    (lambda x: L.conv2d(x, 4, "3"), "conv2d", "filter_size", None),
    (lambda x: L.fc(x, "10"), "fc", "size", "an int"),
    (lambda x: L.pool2d(x, 2, 3), "pool2d", "pool_type", "a string"),
    (lambda x: L.pool2d(x, 2, ceil_mode="yes"), "pool2d", "ceil_mode",
     "a bool"),
    (lambda x: L.dropout(x, "half"), "dropout", "dropout_prob", "a float"),
    (lambda x: L.scale(x, scale="2"), "scale", "scale", "a float"),
    (lambda x: L.batch_norm(x, is_test="no"), "batch_norm", "is_test",
     "a bool"),
])
def test_wrong_argument_types(image, build, layer, arg, kind):
    with pytest.raises((TypeError, ValueError)) as e:
        build(image)
    msg = str(e.value)
    assert layer in msg and arg in msg, msg
    if kind:
        assert f"must be {kind}" in msg, msg


def test_a_shared_parameter_name_with_another_shape(image):
    h = L.fc(image, 8, param_attr="w_shared")
    with pytest.raises(ValueError) as e:
        L.fc(h, 4, param_attr="w_shared")
    msg = str(e.value)
    assert "layer 'fc'" in msg and "'param_attr'" in msg, msg
    assert "'w_shared'" in msg and "[784, 8]" in msg and "[8, 4]" in msg, msg
    # The same shape shares it.
    L.fc(image, 8, param_attr="w_shared")


def test_a_shared_conv_filter_with_another_shape(image):
    L.conv2d(image, 4, 3, param_attr="f")
    with pytest.raises(ValueError, match=r"layer 'conv2d'.*'param_attr'.*'f'"):
        L.conv2d(image, 4, 5, param_attr="f")


def feeder():
    img = L.data("img", [1, 28, 28])
    lab = L.data("lab", [1], dtype="int64")
    return fluid.DataFeeder(feed_list=[img, lab], place=fluid.CPUPlace())


def test_data_feeder_ragged_minibatch():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        f = feeder()
        good = np.zeros((1, 28, 28), np.float32)
        with pytest.raises(ValueError, match=(
                r"slot 'img', sample 1: 756 element\(s\) of shape "
                r"\[1, 27, 28\].*784 per sample")):
            f.feed([(good, 1), (np.zeros((1, 27, 28), np.float32), 2)])
        with pytest.raises(ValueError, match=r"sample 1 has 1 entry.*2 slots"):
            f.feed([(good, 1), (good,)])
        with pytest.raises(ValueError, match=r"slot 'lab', sample 0"):
            f.feed([(good, [1, 2]), (good, [3])])
        batch = f.feed([(good, 1), (good, 2)])  # a well-formed one passes
        assert np.array(batch["img"]).shape == (2, 1, 28, 28)
