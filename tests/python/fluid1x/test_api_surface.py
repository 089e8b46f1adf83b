"""Every public callable of the Fluid 1.x modules has a docstring: the
functions and classes of fluid.layers (the learning-rate schedules it
re-exports included), fluid.optimizer, fluid.io, fluid.clip,
fluid.regularizer, fluid.initializer and fluid.nets, and the public
methods of those classes. A name the module lists in __all__ is public;
a module without __all__ makes every name not starting with "_" public.
Only what the fluid package defines is checked (an imported numpy
function is not its to document)."""
import inspect
import types

import pytest

import fluid

MODULES = ["layers", "optimizer", "io", "clip", "regularizer",
           "initializer", "nets"]


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return sorted(names)


def ours(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "fluid"


def undocumented(module):
    """'module.name' (or 'module.Class.method') of each public callable
    the fluid package defines that has no docstring of its own (a class)
    or at all (a function, a method: an override may keep its base's)."""
    missing = []
    for name in public_names(module):
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not callable(obj) or not ours(obj):
            continue
        where = f"{module.__name__}.{name}"
        if inspect.isclass(obj):
            if not (obj.__dict__.get("__doc__") or "").strip():
                missing.append(where)
            for attr in dir(obj):
                member = getattr(obj, attr)
                if (attr.startswith("_") or not callable(member)
                        or not ours(member)):
                    continue
                if not (inspect.getdoc(member) or "").strip():
                    missing.append(f"{where}.{attr}")
        elif not (obj.__doc__ or "").strip():
            missing.append(where)
    return missing


@pytest.mark.parametrize("name", MODULES)
def test_every_public_callable_has_a_docstring(name):
    module = getattr(fluid, name)
    missing = undocumented(module)
    assert not missing, ("public callables without a docstring: "
                         + ", ".join(missing))


def test_the_check_sees_what_it_checks():
    """The surface is not empty, and a callable without a docstring is
    found (so that the test above cannot pass by checking nothing)."""
    assert len([n for n in public_names(fluid.layers)
                if callable(getattr(fluid.layers, n))]) >= 80
    assert "exponential_decay" in public_names(fluid.layers)

    probe = types.ModuleType("fluid.probe")

    def no_doc():
        pass

    class NoDocs:
        def method(self):
            pass

    for obj in (no_doc, NoDocs, NoDocs.method):
        obj.__module__ = "fluid.probe"
    probe.no_doc, probe.NoDocs, probe.helper = no_doc, NoDocs, no_doc
    probe.__all__ = ["NoDocs", "no_doc"]
    assert undocumented(probe) == ["fluid.probe.NoDocs",
                                   "fluid.probe.NoDocs.method",
                                   "fluid.probe.no_doc"]


def test_every_layer_docstring_shows_a_call():
    """Each layer function of fluid.layers (and each learning-rate
    schedule it re-exports) shows itself called in its docstring: a
    `>>>` or `...` line with the layer's name and "("."""
    lacking = []
    for name in public_names(fluid.layers):
        obj = getattr(fluid.layers, name)
        if not inspect.isfunction(obj) or obj.__module__ not in (
                "fluid.layers", "fluid.learning_rate_scheduler"):
            continue
        doc = obj.__doc__ or ""
        if not any(line.strip().startswith((">>>", "..."))
                   and name + "(" in line for line in doc.splitlines()):
            lacking.append(name)
    assert not lacking, "layers whose docstring shows no call: " + \
        ", ".join(lacking)
