// The bfloat16 and float16 kernels of lstm and gru (and their grad ops)
// against the float32 kernels run on the same values: the 16-bit inputs
// converted to float32 exactly, the inputs the 16-bit kernels keep in
// float32 (Bias, C0) shared. Sequences of several lengths, forward and
// reverse, with and without initial states; oneDNN on and off.
//
// Tolerance. Both kernels compute the gates, the states and the sums in
// float32; the 16-bit kernel also rounds, each a relative error of at most
// u (2^-8 for bfloat16's 8 significant bits, 2^-11 for float16's 11): per
// step the hidden state as the GEMM's operand, oneDNN's product, the
// stored outputs, and backward the gates' gradient as the GEMMs' operand,
// four roundings of values within the scale max(|a|, |b|, 1) (the inputs
// are in [-1, 1] and the weights in [-1/4, 1/4], so that a step's product
// stays within the width D / 4 = 2 and an error is not amplified from step
// to step). An error entering at one step reaches the last, so we allow
// 4 L u relative to max(|a|, |b|, 1), L the longest sequence (6):
// 4.7e-2 for bfloat16, 5.9e-3 for float16.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/math/dnnl_context.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_checks.h"

namespace fluid {
namespace {

using testing::GradFeeds;
using testing::HalfClose;
using testing::HalfFeeds;
using testing::kHalfTypes;
using testing::MakeHalfFeeds;
using testing::RandomTensor;
using testing::RunOp;
using testing::Select;
using testing::TensorMap;

const LoD kLoD{0, 3, 4, 9, 11, 17};  // lengths 3, 1, 5, 2, 6
constexpr int64_t kRows = 17, kSeqs = 5, kLongest = 6, kWidth = 8;

double Tolerance(DataType dt) {
  const double u =
      dt == DataType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  return 4 * kLongest * u;
}

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

// What a check of one op names: the inputs kept float32 in the 16-bit run
// and the outputs (forward and gradient) that are float32 in it.
struct Slots {
  std::set<std::string> keep;
  std::set<std::string> f32_outputs;
};

void ExpectOutputsMatch(const std::string& what, const TensorMap& ref,
                        const TensorMap& got, DataType dt, const Slots& s) {
  for (const auto& kv : ref) {
    ASSERT_TRUE(got.count(kv.first)) << what << " lacks " << kv.first;
    const Tensor& g = got.at(kv.first);
    const DataType want =
        s.f32_outputs.count(kv.first) ? DataType::kFloat32 : dt;
    EXPECT_EQ(g.dtype(), want)
        << what << " output " << kv.first << " is " << DataTypeName(g.dtype());
    EXPECT_TRUE(HalfClose(kv.second, g, Tolerance(dt),
                          what + " output '" + kv.first + "'"));
  }
}

// `f` with the LoD of `inputs` (the conversions drop it).
HalfFeeds WithLoD(const TensorMap& inputs, HalfFeeds f) {
  for (const auto& kv : inputs) {
    f.half[kv.first].set_lod(kv.second.lod());
    f.ref[kv.first].set_lod(kv.second.lod());
  }
  return f;
}

// `op` on `inputs` (float32, rounded to each 16-bit type but for s.keep)
// against the float32 kernel on the same values, then each generated grad
// op, fed the 16-bit run's forward values and the same random output
// gradients.
void ExpectHalfMatchesFloat(const proto::OpDesc& op, const TensorMap& inputs,
                            const Slots& s, int threads = 1) {
  for (DataType dt : kHalfTypes) {
    const std::string what = op.type() + " " + DataTypeName(dt);
    const HalfFeeds f = WithLoD(inputs, MakeHalfFeeds(inputs, dt, s.keep));
    const TensorMap got = RunOp(op, f.half, threads);
    ExpectOutputsMatch(what, RunOp(op, f.ref, threads), got, dt, s);
    const HalfFeeds g = GradFeeds(f, got, 31);
    for (const proto::OpDesc& grad :
         OpRegistry::Global().Get(op.type()).grad_maker()(op)) {
      const auto names = OpInputNames(grad);
      ExpectOutputsMatch(what + " " + grad.type(),
                         RunOp(grad, Select(g.ref, names), threads),
                         RunOp(grad, Select(g.half, names), threads), dt, s);
    }
  }
}

using Slotted = std::vector<std::pair<std::string, std::vector<std::string>>>;

proto::OpDesc Lstm(bool peep, bool reverse, bool state) {
  Slotted in{{"Input", {"x"}}, {"Weight", {"w"}}, {"Bias", {"b"}}};
  if (state) {
    in.push_back({"H0", {"h0"}});
    in.push_back({"C0", {"c0"}});
  }
  return MakeOp("lstm", in,
                {{"Hidden", {"hidden"}},
                 {"Cell", {"cell"}},
                 {"BatchGate", {"gate"}},
                 {"BatchCellPreAct", {"pre"}}},
                {{"use_peepholes", peep}, {"is_reverse", reverse}});
}

TensorMap LstmInputs(bool peep, uint64_t seed) {
  const int64_t d = kWidth;
  TensorMap in{
      {"x", RandomTensor<float>({kRows, 4 * d}, -1, 1, seed)},
      {"w", RandomTensor<float>({d, 4 * d}, -0.25, 0.25, seed + 1)},
      {"b", RandomTensor<float>({1, (peep ? 7 : 4) * d}, -0.5, 0.5, seed + 2)},
      {"h0", RandomTensor<float>({kSeqs, d}, -1, 1, seed + 3)},
      {"c0", RandomTensor<float>({kSeqs, d}, -1, 1, seed + 4)}};
  in["x"].set_lod(kLoD);
  return in;
}

const Slots kLstmSlots{{"b", "c0"}, {"gate", "pre", "b@GRAD", "c0@GRAD"}};

TEST(HalfRecurrentOps, LstmMatchesFloat32) {
  uint64_t seed = 10;
  for (bool peep : {true, false}) {
    for (bool reverse : {false, true}) {
      for (bool state : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "peepholes " << peep << " reverse "
                                          << reverse << " H0/C0 " << state);
        TensorMap in = LstmInputs(peep, seed += 10);
        if (!state) {
          in.erase("h0");
          in.erase("c0");
        }
        ExpectHalfMatchesFloat(Lstm(peep, reverse, state), in, kLstmSlots);
      }
    }
  }
}

proto::OpDesc Gru(bool origin, bool reverse, bool state, bool bias) {
  Slotted in{{"Input", {"x"}}, {"Weight", {"w"}}};
  if (state) in.push_back({"H0", {"h0"}});
  if (bias) in.push_back({"Bias", {"b"}});
  return MakeOp("gru", in,
                {{"Hidden", {"hidden"}},
                 {"BatchGate", {"gate"}},
                 {"BatchResetHiddenPrev", {"reset"}},
                 {"BatchHidden", {"batch_hidden"}}},
                {{"origin_mode", origin}, {"is_reverse", reverse}});
}

TensorMap GruInputs(bool state, bool bias, uint64_t seed) {
  const int64_t d = kWidth;
  TensorMap in{{"x", RandomTensor<float>({kRows, 3 * d}, -1, 1, seed)},
               {"w", RandomTensor<float>({d, 3 * d}, -0.25, 0.25, seed + 1)}};
  if (state) in["h0"] = RandomTensor<float>({kSeqs, d}, -1, 1, seed + 2);
  if (bias) in["b"] = RandomTensor<float>({1, 3 * d}, -0.5, 0.5, seed + 3);
  in["x"].set_lod(kLoD);
  return in;
}

const Slots kGruSlots{{"b"}, {"gate", "batch_hidden", "b@GRAD"}};

TEST(HalfRecurrentOps, GruMatchesFloat32) {
  uint64_t seed = 200;
  for (bool origin : {false, true}) {
    for (bool reverse : {false, true}) {
      for (bool state : {true, false}) {
        const bool bias = state != origin;  // each with and without
        SCOPED_TRACE(::testing::Message()
                     << "origin_mode " << origin << " reverse " << reverse
                     << " H0 " << state << " Bias " << bias);
        ExpectHalfMatchesFloat(Gru(origin, reverse, state, bias),
                               GruInputs(state, bias, seed += 10), kGruSlots);
      }
    }
  }
}

// The float32 path of the 16-bit GEMMs (oneDNN off: the operands converted,
// float32 sums added to the gates) and two threads.
TEST(HalfRecurrentOps, WithoutDnnlAndThreaded) {
  for (bool dnnl : {false, true}) {
    DnnlSwitch on(dnnl);
    SCOPED_TRACE(dnnl ? "oneDNN" : "float32 GEMMs");
    ExpectHalfMatchesFloat(Lstm(true, false, true), LstmInputs(true, 500),
                           kLstmSlots, 2);
    ExpectHalfMatchesFloat(Gru(false, true, true, true),
                           GruInputs(true, true, 600), kGruSlots, 2);
  }
}

// A 16-bit Input with a 16-bit Bias or C0 (which must be float32), or with
// a Weight of another type, is refused, naming the slot and its variable.
TEST(HalfRecurrentOps, RefusesWrongDtypes) {
  const DataType bf = DataType::kBFloat16;
  const TensorMap lstm_in = LstmInputs(false, 700);
  TensorMap in = WithLoD(lstm_in, MakeHalfFeeds(lstm_in, bf, {"b", "c0"})).half;
  TensorMap bad = in;
  bad["b"] = testing::ToHalf(in.at("b"), bf);
  std::string err = testing::ErrorOf(Lstm(false, false, true), bad);
  EXPECT_NE(err.find("lstm: Bias 'b' is bfloat16 but must be float32"),
            std::string::npos)
      << err;
  bad = in;
  bad["c0"] = testing::ToHalf(in.at("c0"), bf);
  err = testing::ErrorOf(Lstm(false, false, true), bad);
  EXPECT_NE(err.find("lstm: C0 'c0' is bfloat16 but must be float32"),
            std::string::npos)
      << err;
  bad = in;
  bad["w"] = testing::ToFloat32(in.at("w"));
  err = testing::ErrorOf(Lstm(false, false, true), bad);
  EXPECT_NE(err.find("lstm: Weight 'w' is float32 but must be bfloat16"),
            std::string::npos)
      << err;
  const TensorMap gru_in = GruInputs(true, true, 800);
  TensorMap g = WithLoD(gru_in, MakeHalfFeeds(gru_in, bf, {})).half;
  err = testing::ErrorOf(Gru(false, false, true, true), g);
  EXPECT_NE(err.find("gru: Bias 'b' is bfloat16 but must be float32"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fluid
