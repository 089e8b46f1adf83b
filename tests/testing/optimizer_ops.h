// The optimizer ops as the tests build them: state vars p, g, lr, v (momentum)
// and m1, m2, b1p, b2p (adam). Outputs are bound to their inputs (in place),
// as the optimizer builder does, unless `suffix` renames them ("p_out", ...).
#pragma once

#include <string>

#include "src/framework/op_registry.h"

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

}  // namespace testing
}  // namespace fluid
