"""fluid.contrib: the Fluid 1.x contrib names this product has
(mixed_precision)."""
from . import mixed_precision

__all__ = ["mixed_precision"]
