// What the host CPU offers the 16-bit matrix kernels, and which instruction
// set oneDNN runs them with, so that a benchmark line or the trainer's
// opening line can say what computed its numbers.
//
// The features are read once (cpuid, and whether the OS saves the AVX-512
// and AMX register state); every function is thread-safe.
#pragma once

#include <string>

namespace fluid {

struct CpuFeatures {
  bool avx512f = false;      // AVX-512 foundation, usable (OS saves zmm)
  bool avx512_bf16 = false;  // VDPBF16PS: bf16 dot products into float
  bool avx512_fp16 = false;  // native fp16 arithmetic
  bool amx_tile = false;     // AMX tiles, usable (OS saves tile data)
  bool amx_bf16 = false;     // TDPBF16PS: bf16 tile products into float
};

// The features of the CPU this process runs on.
const CpuFeatures& HostCpuFeatures();

// Whether AMX bfloat16 tile products (TDPBF16PS) are usable.
inline bool HasAmxBf16() {
  return HostCpuFeatures().amx_tile && HostCpuFeatures().amx_bf16;
}
// Whether AVX-512 bfloat16 dot products (VDPBF16PS) are usable.
inline bool HasAvx512Bf16() { return HostCpuFeatures().avx512_bf16; }

// The instruction set oneDNN dispatches to on this CPU (e.g.
// "avx512_core_amx"), "none (built without oneDNN)", or, while the 16-bit
// kernels are kept off oneDNN (math::SetDnnlEnabled(false), FLUID_DNNL=0,
// or by default on a CPU without AMX), the ISA followed by " (off: float32
// compute)" and, without AMX, why.
std::string DnnlIsaName();

// One line for logs: the oneDNN ISA and the CPU's 16-bit features, e.g.
// "oneDNN avx512_core_amx; cpu: amx_bf16 avx512_bf16 avx512_fp16".
std::string HalfComputeDescription();

}  // namespace fluid
