// Whether the 16-bit (bfloat16, float16) matrix kernels run on oneDNN.
//
// The kernels of mul, matmul and conv2d for the 16-bit types first ask
// oneDNN (math/dnnl_gemm.h, math/dnnl_conv.h); where oneDNN is not built in,
// is switched off, or has no implementation for the type on this CPU (e.g.
// float16 in oneDNN 2.6), they compute in float32: the inputs converted, the
// float32 kernel run, the results rounded once. Both paths are tested.
//
// Thread-safe. The switch is for tests and benchmarks: flipping it while
// kernels run changes which path later calls take, nothing else.
#pragma once

#include <string>

namespace fluid {
namespace math {

// Whether this build links oneDNN (CMake option FLUID_WITH_DNNL).
bool DnnlBuilt();

// Whether the 16-bit kernels may use oneDNN: built in, and as the
// environment says (FLUID_DNNL, read once: 0 off, 1 on; unset or "auto",
// DnnlFasterHere(); anything else is an error naming it) unless
// SetDnnlEnabled has said otherwise since.
bool DnnlEnabled();

// Whether oneDNN runs the 16-bit products on AMX tiles on this CPU, the
// only instruction set on which it measures faster than the float32 path.
// On AVX512-BF16 without AMX (avx512_core_bf16) oneDNN 2.6's bfloat16
// products ran at 0.6x and its forward convolution at 0.63x the float32
// kernels' rate, its backward convolution at the same rate
// (benchmarks/bf16_matrix_bench, docs/mixed_precision.md).
bool DnnlFasterHere();

// Switches oneDNN on or off for the 16-bit kernels (on is a no-op without
// oneDNN).
void SetDnnlEnabled(bool enabled);

// The threads oneDNN's next primitive on the calling thread runs with (the
// 16-bit kernels set it to their context's thread count before each
// call); 1 for a sequential oneDNN, 0 without oneDNN.
int DnnlThreads();

// The instruction set oneDNN dispatches to on this CPU, e.g.
// "avx512_core_amx"; "none" without oneDNN.
std::string DnnlCpuIsa();

}  // namespace math
}  // namespace fluid
