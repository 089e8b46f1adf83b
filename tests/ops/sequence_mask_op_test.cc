// sequence_mask against the definition (j < length), maxlen given and
// taken from the longest length, int32 and int64 lengths, each out_dtype.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc Mask(int maxlen, DataType dtype) {
  return MakeOp("sequence_mask", {{"X", {"x"}}}, {{"Y", {"y"}}},
                {{"maxlen", int32_t{maxlen}},
                 {"out_dtype", static_cast<int32_t>(dtype)}});
}

TEST(SequenceMaskOp, MatchesTheDefinition) {
  const std::vector<int64_t> lengths{3, 0, 5, 1};
  for (int maxlen : {-1, 6, 2}) {
    const int64_t cols = maxlen < 0 ? 5 : maxlen;
    Tensor y = RunOp(Mask(maxlen, DataType::kFloat64),
                     {{"x", MakeTensor<int64_t>({4}, lengths)}})["y"];
    ASSERT_EQ(y.shape(), Shape({4, cols}));
    auto got = ToVector<double>(y);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < cols; ++j)
        EXPECT_EQ(got[i * cols + j], j < lengths[i] ? 1.0 : 0.0)
            << "maxlen " << maxlen << " at " << i << ", " << j;
  }
}

TEST(SequenceMaskOp, Int32LengthsAndIntMasksKeepXsShape) {
  Tensor x = MakeTensor<int32_t>({2, 1}, {2, 1});
  Tensor y = RunOp(Mask(-1, DataType::kInt32), {{"x", x}})["y"];
  EXPECT_EQ(y.shape(), Shape({2, 1, 2}));
  EXPECT_EQ(ToVector<int32_t>(y), (std::vector<int32_t>{1, 1, 1, 0}));
  Tensor z = RunOp(Mask(3, DataType::kInt64), {{"x", x}})["y"];
  EXPECT_EQ(ToVector<int64_t>(z), (std::vector<int64_t>{1, 1, 0, 1, 0, 0}));
}

TEST(SequenceMaskOp, FloatLengthsAreAnError) {
  std::string err = ErrorOf(Mask(-1, DataType::kInt64),
                            {{"x", MakeTensor<float>({2}, {1, 2})}});
  EXPECT_NE(err.find("int32 or int64"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
