// sequence_pad and sequence_unpad against naive loops (sequences of
// different lengths, an empty one included; a scalar and a per-row pad
// value), each other's inverse, their gradients by the numeric checker in
// float64, and the errors naming the argument.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc Pad(int padded_length = -1) {
  return MakeOp("sequence_pad", {{"X", {"x"}}, {"PadValue", {"pad"}}},
                {{"Out", {"out"}}, {"Length", {"length"}}},
                {{"padded_length", int32_t{padded_length}}});
}

proto::OpDesc Unpad() {
  return MakeOp("sequence_unpad", {{"X", {"x"}}, {"Length", {"length"}}},
                {{"Out", {"out"}}});
}

const LoD kLoD{0, 2, 2, 5, 6};  // lengths 2, 0, 3, 1

Tensor Packed(uint64_t seed) {
  Tensor x = RandomTensor<double>({6, 2}, -1, 1, seed);
  x.set_lod(kLoD);
  return x;
}

TEST(SequencePadOp, MatchesNaiveWithScalarAndRowPadValues) {
  Tensor x = Packed(1);
  auto xv = ToVector<double>(x);
  for (const Tensor& pad :
       {MakeTensor<double>({1}, {-9}), MakeTensor<double>({2}, {-7, -8})}) {
    for (int padded : {-1, 4}) {
      TensorMap out = RunOp(Pad(padded), {{"x", x}, {"pad", pad}});
      const int64_t len = padded < 0 ? 3 : padded;
      ASSERT_EQ(out["out"].shape(), Shape({4, len, 2}));
      EXPECT_EQ(ToVector<int64_t>(out["length"]),
                (std::vector<int64_t>{2, 0, 3, 1}));
      auto got = ToVector<double>(out["out"]);
      auto pv = ToVector<double>(pad);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t t = 0; t < len; ++t)
          for (int64_t c = 0; c < 2; ++c) {
            const bool in = t < kLoD[i + 1] - kLoD[i];
            const double want =
                in ? xv[(kLoD[i] + t) * 2 + c] : pv[pad.numel() == 1 ? 0 : c];
            EXPECT_EQ(got[(i * len + t) * 2 + c], want)
                << "sequence " << i << " step " << t;
          }
    }
  }
}

TEST(SequencePadOp, UnpadInvertsPad) {
  Tensor x = Packed(2);
  TensorMap padded =
      RunOp(Pad(5), {{"x", x}, {"pad", MakeTensor<double>({1}, {0})}});
  Tensor back = RunOp(
      Unpad(), {{"x", padded["out"]}, {"length", padded["length"]}})["out"];
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(back.lod(), kLoD);
  EXPECT_EQ(ToVector<double>(back), ToVector<double>(x));
}

TEST(SequencePadOp, Gradients) {
  testing::GradCheckOptions o;
  o.wrt = {"x"};
  o.of = {"out"};
  EXPECT_TRUE(CheckGradient(
      Pad(4), {{"x", Packed(3)}, {"pad", MakeTensor<double>({1}, {0.5})}}, o));
  Tensor dense = RandomTensor<double>({3, 4, 2}, -1, 1, 4);
  EXPECT_TRUE(CheckGradient(
      Unpad(), {{"x", dense}, {"length", MakeTensor<int64_t>({3}, {4, 0, 2})}},
      o));
}

TEST(SequencePadOp, ErrorsNameTheArgument) {
  std::string err = ErrorOf(
      Pad(2), {{"x", Packed(5)}, {"pad", MakeTensor<double>({1}, {0})}});
  EXPECT_NE(err.find("padded_length"), std::string::npos) << err;
  EXPECT_NE(err.find("3 rows"), std::string::npos) << err;
  err = ErrorOf(
      Pad(), {{"x", Packed(5)}, {"pad", MakeTensor<double>({3}, {0, 0, 0})}});
  EXPECT_NE(err.find("PadValue 'pad'"), std::string::npos) << err;
  err = ErrorOf(Unpad(), {{"x", RandomTensor<double>({2, 3}, -1, 1, 6)},
                          {"length", MakeTensor<int64_t>({2}, {1, 4})}});
  EXPECT_NE(err.find("Length[1] is 4"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
