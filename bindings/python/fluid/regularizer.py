"""Weight decay (Fluid's fluid.regularizer): pass one as `regularization=`
to an optimizer (every parameter) or as ParamAttr(regularizer=...) (that
parameter; it overrides the optimizer's). minimize() appends, between the
backward pass and the optimize ops, grad += coeff * param (L2Decay) or
grad += coeff * sign(param) (L1Decay); under MPI these ops run on the
averaged gradient. A sparse gradient (embedding(is_sparse=True)) is decayed
on the rows it touches only, each once, as in Fluid: a row the batch
misses gets no decay (docs/python.md, "Sparse gradients")."""

__all__ = ["L1Decay", "L2Decay", "L1DecayRegularizer", "L2DecayRegularizer"]


class WeightDecayRegularizer:
    """Base of L1Decay and L2Decay: the decay's coefficient
    (regularization_coeff, a number >= 0)."""

    _kind = None

    def __init__(self, regularization_coeff=0.0):
        if isinstance(regularization_coeff, bool) or not isinstance(
                regularization_coeff, (int, float)):
            raise TypeError(f"{type(self).__name__}: regularization_coeff "
                            "must be a number, got "
                            f"{type(regularization_coeff).__name__}")
        if regularization_coeff < 0:
            raise ValueError(f"{type(self).__name__}: regularization_coeff "
                             f"must be >= 0, got {regularization_coeff}")
        self._regularization_coeff = float(regularization_coeff)

    def to_dict(self):
        """The decay as the C++ builder reads it: {"kind": "l1" or "l2",
        "coeff": regularization_coeff}."""
        return {"kind": self._kind, "coeff": self._regularization_coeff}

    def __repr__(self):
        return (f"{type(self).__name__}(regularization_coeff="
                f"{self._regularization_coeff})")


class L2DecayRegularizer(WeightDecayRegularizer):
    """grad += regularization_coeff * param."""
    _kind = "l2"


class L1DecayRegularizer(WeightDecayRegularizer):
    """grad += regularization_coeff * sign(param)."""
    _kind = "l1"


L1Decay, L2Decay = L1DecayRegularizer, L2DecayRegularizer


def _as_dict(regularizer, where):
    if regularizer is None:
        return None
    if not isinstance(regularizer, WeightDecayRegularizer):
        raise TypeError(f"{where}: regularization must be a "
                        "fluid.regularizer.L1Decay or L2Decay, got "
                        f"{type(regularizer).__name__}")
    return regularizer.to_dict()
