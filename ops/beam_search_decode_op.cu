// CUDA kernel for beam_search_decode (schema in beam_search_decode_op.cc):
// the steps are read back to the host, walked back there by the CPU
// kernel's code (beam_search_decode_op.h) and the sentences copied to the
// device; the op is LoD bookkeeping (Fluid runs it on the CPU only).
#include "ops/beam_search_decode_op.h"

namespace fluid {
namespace ops {

REGISTER_FLOAT_KERNELS(beam_search_decode, kCUDA, BeamSearchDecodeKernel);

}  // namespace ops
}  // namespace fluid
