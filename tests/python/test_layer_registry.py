"""fluid.layers and the C++ layer registry cannot drift apart.

Every layer is declared once, in C++ (src/builder/layers.cc), and reached
from Python through one generic entry, `Builder.layer(type, args)`. These
tests hold the two sides together: every public layer function of
fluid.layers is a registered layer of the same name, with the same argument
names in the same order and the same defaults, and every registered layer
has its Python function. Errors of the generic entry name the layer and the
argument.
"""
import inspect

import pytest

import fluid
from fluid import _core

L = fluid.layers
SCHEMAS = _core.layer_schemas()


# fluid.layers and the topic modules whose layers it re-exports, each a
# registered layer.
LAYER_MODULES = {L.__name__, "fluid.layers_control", "fluid.layers_crf",
                 "fluid.layers_image"}
LAYER_MODULES |= {"fluid.layers_tensor"}
LAYER_MODULES |= {"fluid.layers_loss"}
LAYER_MODULES |= {"fluid.layers_nn"}
LAYER_MODULES |= {"fluid.layers_decode"}
LAYER_MODULES |= {"fluid.layers_lod"}


def layer_functions():
    return {name: fn for name, fn in vars(L).items()
            if inspect.isfunction(fn) and fn.__module__ in LAYER_MODULES
            and not name.startswith("_")}


def test_python_layers_and_registered_layers_are_the_same_set():
    python = set(layer_functions())
    # A layer named with a leading underscore serves a public function (its
    # own Python function is private too).
    registered = {name for name in SCHEMAS if not name.startswith("_")}
    assert python - registered == set(), "Python layers with no C++ layer"
    assert registered - python == set(), "C++ layers with no Python function"


def test_schemas_describe_each_argument():
    kinds = {"var", "var list", "int", "int list", "float", "bool", "string",
             "param attr"}
    for name, schema in SCHEMAS.items():
        assert schema["args"], name
        for a in schema["args"]:
            assert a["kind"] in kinds, (name, a)
            if a["required"]:
                assert a["default"] is None, (name, a)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_python_signature_matches_the_registration(name):
    params = inspect.signature(getattr(L, name)).parameters
    args = SCHEMAS[name]["args"]
    assert list(params) == [a["name"] for a in args]
    for a in args:
        default = params[a["name"]].default
        if a["required"]:
            assert default is inspect.Parameter.empty, a["name"]
            continue
        assert default is not inspect.Parameter.empty, a["name"]
        # None stands for the C++ default; any other default is the same
        # value, of the same type (an int for a list of one int: Fluid's
        # stride=1 for [1, 1]).
        if a["kind"] == "int list" and type(default) is int:
            default = [default]
        if default is not None:
            assert (type(default), default) == \
                (type(a["default"]), a["default"]), a["name"]


class _Recorder:
    """Stands for the C++ builder: records what reaches the generic entry."""

    def __init__(self, outputs=1):
        self.calls = []
        self.outputs = outputs

    def layer(self, type, args):
        self.calls.append((type, dict(args)))
        return ["out"] * self.outputs


class _Program:
    def var(self, name):
        return f"Variable({name})"


# A value of each kind that the Python functions' own checks accept.
SAMPLES = {"var": "v", "var list": ["v", "w"], "int": 2, "int list": [2, 3],
           "float": 0.5, "bool": True, "string": "s", "param attr": None}
# Layers that need one of two optional arguments (as in Fluid): the one given.
EITHER = {"conv2d_transpose": {"filter_size": [2, 3]},
          "image_resize": {"out_shape": [2, 3]},
          "resize_bilinear": {"out_shape": [2, 3]},
          "resize_nearest": {"out_shape": [2, 3]},
          "lod_reset": {"target_lod": [0, 2]}}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_python_layer_reaches_its_registered_layer(name, monkeypatch):
    # auc builds six vars: (auc, batch_auc) and its four states;
    # chunk_eval six: its three rates and three counts.
    recorder = _Recorder(outputs=6 if name in ("auc", "chunk_eval") else 1)
    monkeypatch.setattr(L, "current_builder",
                        lambda: (recorder, _Program()))
    args = SCHEMAS[name]["args"]
    given = {a["name"]: SAMPLES[a["kind"]] for a in args if a["required"]}
    given.update(EITHER.get(name, {}))
    out = getattr(L, name)(**given)
    # split returns its pieces as a list, as Fluid's does; auc returns
    # (auc, batch_auc, [states]), as Fluid's does; chunk_eval a 6-tuple.
    v = "Variable(out)"
    assert out in (v, [v], (v, v, [v] * 4), (v,) * 6)
    assert len(recorder.calls) == 1
    layer, passed = recorder.calls[0]
    assert layer == name
    # Every argument is passed on by name; the required ones as given.
    assert set(passed) == {a["name"] for a in args}
    for key, value in given.items():
        assert passed[key] == value, key


def _program():
    main, startup = fluid.Program(), fluid.Program()
    return main, startup, fluid.program_guard(main, startup)


def test_generic_entry_errors_name_the_layer_and_the_argument():
    main, startup, guard = _program()
    with guard:
        x = L.data("x", [4])
        builder = main.builder(startup)
        with pytest.raises(ValueError, match=r"layer 'fc': argument 'size' "
                           r"must be an int, got a string"):
            L.fc(x, "3")
        with pytest.raises(ValueError, match=r"layer 'fc': argument 'act' "
                           r"must be a string, got an int"):
            L.fc(x, 3, act=1)
        with pytest.raises(ValueError, match=r"layer 'fc': unknown argument "
                           r"'sise'; its arguments: input, size"):
            builder.layer("fc", {"input": "x", "size": 3, "sise": 3})
        with pytest.raises(ValueError, match=r"layer 'fc': missing argument "
                           r"'size' \(an int\)"):
            builder.layer("fc", {"input": "x"})
        with pytest.raises(KeyError, match=r"unknown layer 'dense'; known "
                           r"layers: .*\bfc\b"):
            builder.layer("dense", {})
        with pytest.raises(KeyError, match=r"layer 'relu': argument 'x' "
                           r"names no variable of the program: 'nope'"):
            L.relu("nope")
        with pytest.raises(ValueError, match=r"layer 'reshape': argument "
                           r"'shape' must be a list of ints or of names; "
                           r"item 1 is of type 'float'"):
            L.reshape(x, [-1, 2.5])
        with pytest.raises(ValueError, match=r"layer 'fc': argument "
                           r"'param_attr': unknown key 'nmae'"):
            L.fc(x, 3, param_attr={"nmae": "w"})
        with pytest.raises(ValueError, match=r"layer 'data': argument "
                           r"'dtype': unknown dtype 'int8'"):
            L.data("y", [2], dtype="int8")
    # The failed calls appended nothing.
    assert main.op_types() == []
    assert startup.op_types() == []


def test_generic_entry_builds_what_the_layer_function_builds():
    """The same layer through Builder.layer with its C++ defaults and
    through fluid.layers with the Python ones: the same program."""
    programs = []
    for direct in (False, True):
        main, startup, guard = _program()
        main.random_seed = 3
        with guard, fluid.unique_name.guard():
            x = L.data("x", [3, 8, 8])
            if direct:
                b = main.builder(startup)
                h = b.layer("conv2d", {"input": "x", "num_filters": 4,
                                       "filter_size": 3})[0]
                b.layer("fc", {"input": h, "size": 5, "act": "relu"})
            else:
                L.fc(L.conv2d(x, 4, 3), 5, act="relu")
        # The two builds run from different lines: only where each op was
        # built (op_callstack) may differ.
        programs.append((main.desc.without_callstacks().serialize(),
                         startup.desc.without_callstacks().serialize()))
    assert programs[0] == programs[1]
