"""fluid.layers names some layers as Python builtins (range, slice, abs,
pow), as Fluid does. Inside the modules that define or import them, the
name is the layer: a call meant for the builtin would build a layer
instead. This test fails when a layers*.py module binds a builtin's name
at module level and also reads that name anywhere (use builtins.range
etc. there), or when a function reads a parameter named as a builtin as
if it were the builtin (calls it)."""
import ast
import builtins
import glob
import os

import pytest

import fluid

PACKAGE = os.path.dirname(fluid.__file__)
MODULES = sorted(glob.glob(os.path.join(PACKAGE, "layers*.py")))
BUILTINS = set(dir(builtins))


def _module_bindings(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def test_the_modules_are_found():
    assert any(m.endswith("layers_tensor.py") for m in MODULES)


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_no_builtin_shadowed_by_a_layer_is_used_as_the_builtin(path):
    tree = ast.parse(open(path).read())
    shadowed = _module_bindings(tree) & BUILTINS
    reads = sorted({(n.id, n.lineno) for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and n.id in shadowed and
                    isinstance(n.ctx, ast.Load)})
    assert reads == [], (
        f"{os.path.basename(path)} binds {sorted(shadowed)} (layers named as "
        "builtins) and reads them: use builtins.<name> for the builtin")


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_no_parameter_named_as_a_builtin_is_called(path):
    tree = ast.parse(open(path).read())
    calls = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        a = fn.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
        calls += [(fn.name, n.func.id, n.lineno) for n in ast.walk(fn)
                  if isinstance(n, ast.Call) and
                  isinstance(n.func, ast.Name) and
                  n.func.id in params & BUILTINS]
    assert calls == []
