// The table the allreduce benchmarks print, in the nccl-tests convention:
// per size, our op and the raw library call side by side. algbw = bytes /
// time (GB/s); busbw = algbw * 2 (n - 1) / n; #wrong counts elements that
// differ from the expected sum; ratio = op algbw / raw algbw.
#pragma once

#include <cstdint>
#include <cstdio>

namespace fluid {
namespace bench {

inline void PrintBandwidthHeader() {
  std::printf("%12s %12s | %10s %8s %8s %7s | %10s %8s %8s %7s | %6s\n",
              "size(B)", "count", "time(us)", "algbw", "busbw", "#wrong",
              "time(us)", "algbw", "busbw", "#wrong", "ratio");
}

// `t_op` and `t_raw` in seconds per call, over `ranks` ranks.
inline void PrintBandwidthRow(int64_t bytes, int64_t count, int ranks,
                              double t_op, int64_t wrong_op, double t_raw,
                              int64_t wrong_raw) {
  const double factor = 2.0 * (ranks - 1) / ranks;
  const double alg_op = bytes / t_op / 1e9, alg_raw = bytes / t_raw / 1e9;
  std::printf(
      "%12lld %12lld | %10.1f %8.3f %8.3f %7lld | %10.1f %8.3f "
      "%8.3f %7lld | %6.3f\n",
      static_cast<long long>(bytes), static_cast<long long>(count), t_op * 1e6,
      alg_op, alg_op * factor, static_cast<long long>(wrong_op), t_raw * 1e6,
      alg_raw, alg_raw * factor, static_cast<long long>(wrong_raw),
      alg_op / alg_raw);
}

}  // namespace bench
}  // namespace fluid
