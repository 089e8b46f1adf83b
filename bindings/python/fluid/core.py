"""The names of fluid.core that scripts of the Fluid 1.x era touch."""
from .data_loader import EOFException
from .executor import (CPUPlace, CUDAPlace, Scope, cuda_device_count,
                       is_compiled_with_cuda)

__all__ = ["CPUPlace", "CUDAPlace", "EOFException", "Scope",
           "cuda_device_count", "is_compiled_with_cuda"]
