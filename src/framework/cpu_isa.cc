#include "src/framework/cpu_isa.h"

#include <cpuid.h>

#include <cstdint>

#include "src/framework/math/dnnl_context.h"

namespace fluid {
namespace {

// XCR0: the register state the OS saves on a context switch.
uint64_t ReadXcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures Detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1u;
  if (!osxsave || __get_cpuid_max(0, nullptr) < 7) return f;
  const uint64_t xcr0 = ReadXcr0();
  // opmask, upper zmm halves and zmm16-31 (bits 5-7) with sse/avx (1-2).
  const bool zmm_saved = (xcr0 & 0xe6u) == 0xe6u;
  // XTILECFG and XTILEDATA (bits 17-18).
  const bool tiles_saved = (xcr0 & 0x60000u) == 0x60000u;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx512f = zmm_saved && ((b >> 16) & 1u);
  f.avx512_fp16 = f.avx512f && ((d >> 23) & 1u);
  f.amx_tile = tiles_saved && ((d >> 24) & 1u);
  f.amx_bf16 = f.amx_tile && ((d >> 22) & 1u);
  __cpuid_count(7, 1, a, b, c, d);
  f.avx512_bf16 = f.avx512f && ((a >> 5) & 1u);
  return f;
}

}  // namespace

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

std::string DnnlIsaName() {
  if (!math::DnnlBuilt()) return "none (built without oneDNN)";
  std::string isa = math::DnnlCpuIsa();
  if (!math::DnnlEnabled())
    isa += math::DnnlFasterHere()
               ? " (off: float32 compute)"
               : " (off: float32 compute, faster than oneDNN without AMX)";
  return isa;
}

std::string HalfComputeDescription() {
  const CpuFeatures& f = HostCpuFeatures();
  std::string line = "oneDNN " + DnnlIsaName() + "; cpu:";
  if (HasAmxBf16()) line += " amx_bf16";
  if (f.avx512_bf16) line += " avx512_bf16";
  if (f.avx512_fp16) line += " avx512_fp16";
  if (!HasAmxBf16() && !f.avx512_bf16 && !f.avx512_fp16)
    line += " no 16-bit float instructions";
  return line;
}

}  // namespace fluid
