#include "src/framework/tensor.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fluid
