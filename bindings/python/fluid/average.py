"""fluid.average: a running weighted mean over batches, as Fluid 1.x's
WeightedAverage (a Python-side accumulator; fluid.metrics has the
metrics proper).

    avg = fluid.average.WeightedAverage()
    for batch in reader():
        loss, = exe.run(main, feed=batch, fetch_list=[loss_var])
        avg.add(value=loss, weight=len(batch))
    print(avg.eval())
"""
import numpy as np

__all__ = ["WeightedAverage"]


def _number_or_array(value, what):
    if isinstance(value, (int, float, np.integer, np.floating)) and \
            not isinstance(value, bool):
        return value
    if isinstance(value, np.ndarray):
        return value
    raise ValueError(f"WeightedAverage.add({what}=...): a number or a "
                     f"numpy array, got {type(value).__name__}")


class WeightedAverage:
    """sum(value * weight) / sum(weight) over what add() was given."""

    def __init__(self):
        self.reset()

    def reset(self):
        """Forgets every value added so far."""
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        """Adds `value` (a number or an array, e.g. a fetched loss) with
        `weight` (a number or an array of value's shape)."""
        value = _number_or_array(value, "value")
        weight = _number_or_array(weight, "weight")
        if self.numerator is None:
            self.numerator = value * weight
            self.denominator = weight
        else:
            self.numerator = self.numerator + value * weight
            self.denominator = self.denominator + weight

    def eval(self):
        """The weighted mean; ValueError before anything was added."""
        if self.numerator is None or np.all(self.denominator == 0):
            raise ValueError("WeightedAverage.eval(): nothing was added "
                             "(or every weight was 0) since the last reset")
        return self.numerator / self.denominator
