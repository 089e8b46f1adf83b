#include "tests/testing/op_cases.h"

#include <sstream>

#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

const std::vector<BroadcastCase>& BroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{3, 4}, {3, 4}, -1},       // same shape
      {{5, 7}, {7}, -1},          // fc bias: post == 1
      {{1, 1}, {1}, -1},          // size-1 everything
      {{2, 3, 4, 5}, {3}, 1},     // conv bias: pre, n, post
      {{2, 3, 4, 5}, {3, 4}, 1},  // middle run of dims
      {{2, 3, 4}, {3, 1}, 1},     // trailing 1 of Y dropped
      {{3, 4}, {4, 1}, 1},        // same, at the last dim
      {{4, 6}, {1}, -1},          // one scalar for all: n == 1
      {{2, 3, 5}, {2}, 0},        // leading dim, post > 1
      {{2, 3, 5}, {2, 3}, 0},     // leading run
      {{6, 1, 3}, {1, 3}, 1},     // size-1 dim inside the run
      {{3, 1}, {3, 1}, -1},       // same shape with a trailing 1
      {{4, 5, 6}, {5, 6}, -1},    // default axis, post == 1
      {{7, 3, 2}, {3}, 1},        // small post
  };
  return cases;
}

std::vector<int64_t> BroadcastIndex(const Shape& xs, const Shape& ys,
                                    int axis) {
  if (axis == -1) axis = xs.rank() - ys.rank();
  int yr = ys.rank();
  while (yr > 0 && ys[yr - 1] == 1) --yr;
  std::vector<int64_t> idx(xs.rank()), out;
  for (int64_t flat = 0; flat < xs.numel(); ++flat) {
    int64_t r = flat;
    for (int d = xs.rank() - 1; d >= 0; --d) {
      idx[d] = r % xs[d];
      r /= xs[d];
    }
    int64_t yi = 0;
    for (int j = 0; j < yr; ++j) yi = yi * ys[j] + idx[axis + j];
    out.push_back(yi);
  }
  return out;
}

proto::OpDesc ElementwiseOp(const std::string& type, int axis,
                            const std::string& out) {
  return MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {out}}},
                {{"axis", axis}});
}

Shape StoredShape(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  Shape s;
  if (batch > 0) s.push_back(batch);
  s.push_back(transposed ? cols : rows);
  s.push_back(transposed ? rows : cols);
  return s;
}

proto::OpDesc MatMulOp(bool tx, bool ty, float alpha) {
  return MakeOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"transpose_X", tx}, {"transpose_Y", ty}, {"alpha", alpha}});
}

std::string Describe(const ConvCase& k) {
  std::ostringstream os;
  os << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w << " M" << k.m
     << " k" << k.kh << "x" << k.kw << " s" << k.stride_h << "," << k.stride_w
     << " p" << k.pad_h << "," << k.pad_w << " d" << k.dil_h << "," << k.dil_w;
  if (k.groups != 1) os << " g" << k.groups;
  return os.str();
}

Shape FilterShape(const ConvCase& k) {
  return Shape{k.m, k.c / k.groups, k.kh, k.kw};
}

proto::OpDesc Conv2dOp(const ConvCase& k, const std::string& x,
                       const std::string& w) {
  return MakeOp("conv2d", {{"Input", {x}}, {"Filter", {w}}},
                {{"Output", {"y"}}},
                {{"strides", std::vector<int32_t>{k.stride_h, k.stride_w}},
                 {"paddings", std::vector<int32_t>{k.pad_h, k.pad_w}},
                 {"dilations", std::vector<int32_t>{k.dil_h, k.dil_w}},
                 {"groups", int32_t{k.groups}}});
}

std::string Describe(const PoolCase& k) {
  std::ostringstream os;
  os << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w << " k" << k.kh
     << "x" << k.kw << " s" << k.stride_h << "," << k.stride_w << " p"
     << k.pad_h << "," << k.pad_w;
  return os.str();
}

proto::OpDesc Pool2dOp(const PoolCase& k, const std::string& type,
                       bool exclusive, const std::string& x, bool global) {
  return MakeOp("pool2d", {{"X", {x}}}, {{"Out", {"y"}}},
                {{"pooling_type", type},
                 {"ksize", std::vector<int32_t>{k.kh, k.kw}},
                 {"strides", std::vector<int32_t>{k.stride_h, k.stride_w}},
                 {"paddings", std::vector<int32_t>{k.pad_h, k.pad_w}},
                 {"exclusive", exclusive},
                 {"global_pooling", global}});
}

Tensor Labels(const std::vector<int64_t>& v) {
  return MakeTensor<int64_t>({static_cast<int64_t>(v.size()), 1}, v);
}

std::vector<int64_t> SomeLabels(int64_t rows, int64_t classes, int every,
                                int64_t ignore) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < rows; ++i)
    v.push_back(every > 0 && i % every == 1 ? ignore : (i * 7 + 2) % classes);
  return v;
}

proto::OpDesc CrossEntropyOp(const std::string& label, int ignore_index) {
  return MakeOp("cross_entropy", {{"X", {"x"}}, {"Label", {label}}},
                {{"Y", {"y"}}}, {{"ignore_index", ignore_index}});
}

proto::OpDesc SoftmaxCeOp(const std::string& label, int ignore_index) {
  return MakeOp("softmax_with_cross_entropy",
                {{"Logits", {"logits"}}, {"Label", {label}}},
                {{"Softmax", {"softmax"}}, {"Loss", {"loss"}}},
                {{"ignore_index", ignore_index}});
}

proto::OpDesc AccuracyOp(const std::string& label, bool counts) {
  if (!counts)
    return MakeOp("accuracy", {{"Out", {"scores"}}, {"Label", {label}}},
                  {{"Accuracy", {"acc"}}});
  return MakeOp(
      "accuracy", {{"Out", {"scores"}}, {"Label", {label}}},
      {{"Accuracy", {"acc"}}, {"Correct", {"correct"}}, {"Total", {"total"}}});
}

}  // namespace testing
}  // namespace fluid
