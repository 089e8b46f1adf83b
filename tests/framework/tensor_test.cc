#include "src/framework/tensor.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

TEST(Tensor, ResizeReusesBufferWhenLargeEnough) {
  Tensor t;
  float* p = t.mutable_data<float>(Shape{4, 8});
  EXPECT_EQ(t.numel(), 32);
  float* q = t.mutable_data<float>(Shape{2, 8});
  EXPECT_EQ(p, q) << "shrinking must not reallocate";
  float* r = t.mutable_data<float>(Shape{4, 8});
  EXPECT_EQ(p, r) << "growing back within capacity must not reallocate";
  t.mutable_data<float>(Shape{5, 8});
  EXPECT_EQ(t.numel(), 40);
}

TEST(Tensor, ViewsShareOneBuffer) {
  auto buffer = std::make_shared<Buffer>(10 * sizeof(float), Place::CPU());
  Tensor a, b;
  a.ShareBuffer(buffer, 0, DataType::kFloat32, Shape{4});
  b.ShareBuffer(buffer, 4 * sizeof(float), DataType::kFloat32, Shape{2, 3});
  for (int i = 0; i < 4; ++i) a.data<float>()[i] = float(i);
  for (int i = 0; i < 6; ++i) b.data<float>()[i] = float(10 + i);
  const float* base = static_cast<const float*>(buffer->data());
  EXPECT_EQ(base[3], 3.0f);
  EXPECT_EQ(base[4], 10.0f);
  EXPECT_EQ(base[9], 15.0f);
  // Writing through mutable_data with the same shape keeps the view.
  EXPECT_EQ(b.mutable_data<float>(), base + 4);
}

TEST(Tensor, ViewOutOfBoundsIsAnError) {
  auto buffer = std::make_shared<Buffer>(8, Place::CPU());
  Tensor t;
  EXPECT_THROW(t.ShareBuffer(buffer, 4, DataType::kFloat32, Shape{2}), Error);
}

TEST(Tensor, SliceIsAViewOfRows) {
  Tensor t;
  int64_t* p = t.mutable_data<int64_t>(Shape{5, 2});
  for (int i = 0; i < 10; ++i) p[i] = i;
  Tensor s = t.Slice(1, 3);
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(s.data<int64_t>()[0], 2);
  EXPECT_EQ(s.data<int64_t>(), p + 2);
  EXPECT_THROW(t.Slice(3, 6), Error);
}

TEST(Tensor, WrongTypeAccessIsAnError) {
  Tensor t;
  t.mutable_data<float>(Shape{3});
  EXPECT_THROW(t.data<double>(), Error);
  Tensor empty;
  EXPECT_THROW(empty.raw_data(), Error);
}

TEST(Tensor, CopyFromIsDeep) {
  Tensor a;
  double* p = a.mutable_data<double>(Shape{3});
  p[0] = 1;
  p[1] = 2;
  p[2] = 3;
  Tensor b;
  b.CopyFrom(a);
  p[0] = 42;
  EXPECT_EQ(b.data<double>()[0], 1);
  EXPECT_EQ(b.shape(), Shape({3}));
}

TEST(Shape, UnknownDimsAndMatching) {
  Shape s{-1, 784};
  EXPECT_EQ(s.numel(), -1);
  EXPECT_FALSE(s.IsFullyKnown());
  EXPECT_TRUE(ShapeMatches(s, Shape{64, 784}));
  EXPECT_FALSE(ShapeMatches(s, Shape{64, 783}));
  EXPECT_FALSE(ShapeMatches(s, Shape{64, 784, 1}));
  EXPECT_EQ(Shape({2, 3, 4}).Product(1, 3), 12);
  EXPECT_EQ(Shape({2, 3}).ToString(), "[2, 3]");
}

using testing::ErrorOf;

TEST(ShapeArithmetic, CheckedMulDetectsOverflow) {
  int64_t out = -7;
  EXPECT_TRUE(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, &out));
  EXPECT_EQ(out, int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 32, int64_t{1} << 31, &out));
  EXPECT_EQ(out, int64_t{1} << 62);  // untouched on overflow
  EXPECT_FALSE(CheckedMul(3, int64_t{1} << 62, &out));
  EXPECT_TRUE(CheckedMul(0, int64_t{1} << 62, &out));
  EXPECT_EQ(out, 0);
}

TEST(ShapeArithmetic, NumelThatOverflowsIsAnErrorNotAWrappedValue) {
  // 2^64 elements wrap to 0 in int64 arithmetic.
  Shape wraps_to_zero{int64_t{1} << 32, int64_t{1} << 32};
  std::string msg = ErrorOf([&] { (void)wraps_to_zero.numel(); });
  EXPECT_NE(msg.find("[4294967296, 4294967296] is too large"),
            std::string::npos)
      << msg;
  // 3 * 2^62 wraps to a negative number, once read as "unknown".
  Shape wraps_negative{3, int64_t{1} << 62};
  msg = ErrorOf([&] { (void)wraps_negative.Product(0, 2); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  EXPECT_EQ((Shape{-1, int64_t{1} << 62}).numel(), -1);
  EXPECT_EQ((Shape{int64_t{1} << 31, int64_t{1} << 31}).numel(),
            int64_t{1} << 62);
}

TEST(ShapeArithmetic, BytesThatOverflowAreAnError) {
  int64_t bytes = 0;
  // 2^62 elements fit, 2^62 * 4 bytes do not.
  Shape s{int64_t{1} << 31, int64_t{1} << 31};
  EXPECT_FALSE(ShapeBytes(s, DataType::kFloat32, &bytes));
  EXPECT_FALSE(ShapeBytes(Shape{int64_t{1} << 32, int64_t{1} << 30},
                          DataType::kFloat32, &bytes));
  EXPECT_TRUE(ShapeBytes(Shape{-1, 1 << 20}, DataType::kFloat64, &bytes));
  EXPECT_EQ(bytes, 8 << 20);  // unknown dims count as 1
  EXPECT_FALSE(
      ShapeBytes(Shape{-1, int64_t{1} << 61}, DataType::kFloat32, &bytes));
  EXPECT_EQ(TensorBytes(Shape{2, 3}, DataType::kInt64), 48);
  std::string msg =
      ErrorOf([&] { TensorBytes(s, DataType::kFloat32, "variable 'w'"); });
  EXPECT_NE(msg.find("variable 'w' of shape [2147483648, 2147483648] "
                     "(float32) is too large"),
            std::string::npos)
      << msg;
}

TEST(ShapeArithmetic, TensorTooLargeToAllocateSaysSo) {
  Tensor t(DataType::kFloat32, Shape{int64_t{1} << 31, int64_t{1} << 31});
  std::string msg = ErrorOf([&] { t.mutable_data<float>(); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  EXPECT_FALSE(t.initialized());
  Tensor u(DataType::kFloat32, Shape{3, int64_t{1} << 62});
  msg = ErrorOf([&] { u.mutable_data<float>(); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unknown"), std::string::npos) << msg;
  Tensor v(DataType::kFloat32, Shape{-1, 3});
  msg = ErrorOf([&] { v.mutable_data<float>(); });
  EXPECT_NE(msg.find("unknown shape [-1, 3]"), std::string::npos) << msg;
  // A view whose size wraps cannot pass the bounds check.
  Tensor small(DataType::kFloat32, Shape{4});
  small.mutable_data<float>();
  Tensor view;
  msg = ErrorOf([&] {
    view.ShareBuffer(small.buffer(), 0, DataType::kFloat32,
                     Shape{int64_t{1} << 31, int64_t{1} << 31});
  });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

// Eager deletion's release: the memory goes (once no view holds it), the
// dtype, shape and every LoD level stay for a reader of the shape alone.
TEST(Tensor, ReleaseBufferKeepsDtypeShapeAndLoD) {
  Tensor t;
  t.mutable_data<double>(Shape{3, 2});
  t.set_all_lod({{0, 1, 2}, {0, 2, 3}});
  Tensor view;
  view.ShareDataWith(t);
  const std::weak_ptr<Buffer> memory = t.buffer();
  t.ReleaseBuffer();
  EXPECT_FALSE(t.initialized());
  EXPECT_EQ(t.dtype(), DataType::kFloat64);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.all_lod(), (LoDLevels{{0, 1, 2}, {0, 2, 3}}));
  EXPECT_FALSE(memory.expired()) << "a view still holds the memory";
  view = Tensor();
  EXPECT_TRUE(memory.expired());
  t.mutable_data<double>();  // and takes memory again on the next write
  EXPECT_TRUE(t.initialized());
}

}  // namespace
}  // namespace fluid
