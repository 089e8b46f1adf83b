// The optimizer ops as the tests build them: state vars p, g, lr, v (momentum)
// and m1, m2, b1p, b2p (adam). Outputs are bound to their inputs (in place),
// as the optimizer builder does, unless `suffix` renames them ("p_out", ...).
// Also the gradients and sizes the optimizers' CUDA tests step through.
#pragma once

#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

inline proto::OpDesc SgdOp(const std::string& suffix = "") {
  return MakeOp("sgd",
                {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                {{"ParamOut", {"p" + suffix}}});
}

inline proto::OpDesc MomentumOp(float mu, bool nesterov, float wd,
                                const std::string& suffix = "") {
  return MakeOp("momentum",
                {{"Param", {"p"}},
                 {"Grad", {"g"}},
                 {"Velocity", {"v"}},
                 {"LearningRate", {"lr"}}},
                {{"ParamOut", {"p" + suffix}}, {"VelocityOut", {"v" + suffix}}},
                {{"mu", mu}, {"use_nesterov", nesterov}, {"weight_decay", wd}});
}

inline proto::OpDesc AdamOp(const AttributeMap& attrs,
                            const std::string& suffix = "") {
  return MakeOp("adam",
                {{"Param", {"p"}},
                 {"Grad", {"g"}},
                 {"LearningRate", {"lr"}},
                 {"Moment1", {"m1"}},
                 {"Moment2", {"m2"}},
                 {"Beta1Pow", {"b1p"}},
                 {"Beta2Pow", {"b2p"}}},
                {{"ParamOut", {"p" + suffix}},
                 {"Moment1Out", {"m1" + suffix}},
                 {"Moment2Out", {"m2" + suffix}},
                 {"Beta1PowOut", {"b1p" + suffix}},
                 {"Beta2PowOut", {"b2p" + suffix}}},
                attrs);
}

// `steps` random gradients of `shape` in [-1, 1), from seeds `seed`,
// `seed` + 1, ...
inline std::vector<Tensor> RandomGrads(DataType dtype, const Shape& shape,
                                       int steps, uint64_t seed) {
  std::vector<Tensor> grads;
  for (int i = 0; i < steps; ++i)
    grads.push_back(RandomTensor(dtype, shape, -1, 1, seed + i));
  return grads;
}

// Parameter sizes from one element to several hundred CUDA blocks.
inline const std::vector<Shape>& OptimizerShapes() {
  static const std::vector<Shape> shapes = {Shape({1}), Shape({3, 4}),
                                            Shape({1000, 301})};
  return shapes;
}

}  // namespace testing
}  // namespace fluid
