// CUDA kernel for beam_search (schema in beam_search_op.cc): the inputs are
// read back to the host, selected there by the CPU kernel's code
// (beam_search_op.h) and the outputs copied to the device, as the op is LoD
// bookkeeping over a few rows (Fluid runs it on the CPU only).
#include "ops/beam_search_op.h"

namespace fluid {
namespace ops {

REGISTER_FLOAT_KERNELS(beam_search, kCUDA, BeamSearchKernel);

}  // namespace ops
}  // namespace fluid
