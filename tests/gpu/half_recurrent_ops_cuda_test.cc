// The bfloat16 and float16 CUDA kernels of lstm and gru against their CPU
// kernels, on the same inputs (16-bit, but Bias and C0 float32): each
// forward op and each generated grad op, fed the CPU forward values and the
// same random output gradients, through sequences of different lengths,
// forward and reverse.
//
// Tolerance: cuda_op_check's for the 16-bit type (2e-2 bfloat16, 4e-3
// float16), for the float32 outputs too. The CPU runs its 16-bit GEMMs in
// float32 here (oneDNN switched off) as cublasGemmEx does, so the two
// places differ only by the order of their float32 sums; a value near a
// rounding boundary may then round to the neighbouring 16-bit value (one
// unit in the last place, 2^-7 or 2^-10 relative) and carry that to the
// later steps, which is what the tolerance allows for.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/math/dnnl_context.h"
#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_checks.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::HalfFeeds;
using testing::kHalfTypes;
using testing::RandomTensor;
using testing::TensorMap;

const LoD kLoD{0, 3, 4, 8, 10};  // lengths 3, 1, 4, 2

// Restores the oneDNN switch when a test ends.
class DnnlSwitch {
 public:
  explicit DnnlSwitch(bool on) : was_(math::DnnlEnabled()) {
    math::SetDnnlEnabled(on);
  }
  ~DnnlSwitch() { math::SetDnnlEnabled(was_); }

 private:
  bool was_;
};

// `f` with the LoD of `inputs` (the conversions drop it).
HalfFeeds WithLoD(const TensorMap& inputs, HalfFeeds f) {
  for (const auto& kv : inputs) {
    f.half[kv.first].set_lod(kv.second.lod());
    f.ref[kv.first].set_lod(kv.second.lod());
  }
  return f;
}

// `op` on `inputs` (float32, rounded to each 16-bit type but for `keep`)
// on CUDA against the CPU, and each generated grad op.
void ExpectHalfCudaMatchesCpu(const proto::OpDesc& op, const TensorMap& inputs,
                              const std::set<std::string>& keep) {
  DnnlSwitch float32_gemms(false);
  for (DataType dt : kHalfTypes) {
    CudaCheckOptions opt;
    opt.grad = false;  // the grad ops are checked below, on 16-bit gradients
    opt.tolerance = dt == DataType::kBFloat16 ? 2e-2 : 4e-3;
    const std::string what = op.type() + " " + DataTypeName(dt);
    const HalfFeeds f =
        WithLoD(inputs, testing::MakeHalfFeeds(inputs, dt, keep));
    EXPECT_TRUE(CudaMatchesCpu(op, f.half, opt)) << what;
    const HalfFeeds g =
        testing::GradFeeds(f, testing::RunOp(op, f.half), opt.seed);
    for (const proto::OpDesc& grad :
         OpRegistry::Global().Get(op.type()).grad_maker()(op)) {
      EXPECT_TRUE(CudaMatchesCpu(
          grad, testing::Select(g.half, OpInputNames(grad)), opt))
          << what << " " << grad.type();
    }
  }
}

TEST(HalfRecurrentOpsCuda, Lstm) {
  REQUIRE_GPU();
  uint64_t seed = 40;
  const int64_t d = 4;
  for (bool peep : {true, false}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "peepholes " << peep << " reverse " << reverse);
      const auto op =
          MakeOp("lstm",
                 {{"Input", {"x"}},
                  {"Weight", {"w"}},
                  {"Bias", {"b"}},
                  {"H0", {"h0"}},
                  {"C0", {"c0"}}},
                 {{"Hidden", {"hidden"}},
                  {"Cell", {"cell"}},
                  {"BatchGate", {"gate"}},
                  {"BatchCellPreAct", {"pre"}}},
                 {{"use_peepholes", peep}, {"is_reverse", reverse}});
      TensorMap in{
          {"x", RandomTensor<float>({10, 4 * d}, -1, 1, seed++)},
          {"w", RandomTensor<float>({d, 4 * d}, -0.5, 0.5, seed++)},
          {"b", RandomTensor<float>({1, (peep ? 7 : 4) * d}, -1, 1, seed++)},
          {"h0", RandomTensor<float>({4, d}, -1, 1, seed++)},
          {"c0", RandomTensor<float>({4, d}, -1, 1, seed++)}};
      in["x"].set_lod(kLoD);
      ExpectHalfCudaMatchesCpu(op, in, {"b", "c0"});
    }
  }
}

TEST(HalfRecurrentOpsCuda, Gru) {
  REQUIRE_GPU();
  uint64_t seed = 80;
  const int64_t d = 4;
  for (bool origin : {false, true}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "origin_mode " << origin << " reverse " << reverse);
      std::vector<std::pair<std::string, std::vector<std::string>>> slots{
          {"Input", {"x"}}, {"Weight", {"w"}}, {"H0", {"h0"}}};
      if (!origin) slots.push_back({"Bias", {"b"}});
      const auto op =
          MakeOp("gru", slots,
                 {{"Hidden", {"hidden"}},
                  {"BatchGate", {"gate"}},
                  {"BatchResetHiddenPrev", {"reset"}},
                  {"BatchHidden", {"batch_hidden"}}},
                 {{"origin_mode", origin}, {"is_reverse", reverse}});
      TensorMap in{{"x", RandomTensor<float>({10, 3 * d}, -1, 1, seed++)},
                   {"w", RandomTensor<float>({d, 3 * d}, -0.5, 0.5, seed++)},
                   {"h0", RandomTensor<float>({4, d}, -1, 1, seed++)}};
      if (!origin) in["b"] = RandomTensor<float>({1, 3 * d}, -1, 1, seed++);
      in["x"].set_lod(kLoD);
      ExpectHalfCudaMatchesCpu(op, in, {"b"});
    }
  }
}

}  // namespace
}  // namespace fluid
