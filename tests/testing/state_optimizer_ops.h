// The state optimizer ops (adagrad, decayed_adagrad, rmsprop, adamax,
// adadelta, lars_momentum) as the tests build them: vars p, g, lr, b1p and
// one var per state slot named like the slot in lower case ("moment",
// "meansquare", ...). Outputs are bound to their inputs (in place) unless
// `suffix` renames them.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/op_registry.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

inline std::string StateVar(std::string slot) {
  std::transform(slot.begin(), slot.end(), slot.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return slot;
}

inline proto::OpDesc StateOptimizerOp(const std::string& type,
                                      const std::vector<std::string>& slots,
                                      const AttributeMap& attrs,
                                      const std::string& suffix = "") {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"Param", {"p"}}, {"Grad", {"g"}}};
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"ParamOut", {"p" + suffix}}};
  if (type != "adadelta") in.push_back({"LearningRate", {"lr"}});
  if (type == "adamax") in.push_back({"Beta1Pow", {"b1p"}});
  for (const auto& s : slots) {
    in.push_back({s, {StateVar(s)}});
    out.push_back({s + "Out", {StateVar(s) + suffix}});
  }
  return MakeOp(type, in, out, attrs);
}

// `count` gradients of `n` doubles in [-1, 1), from seeds seed, seed+1, ...
inline std::vector<Tensor> GradSteps(int64_t n, int count, uint64_t seed) {
  std::vector<Tensor> gs;
  for (int s = 0; s < count; ++s)
    gs.push_back(RandomTensor<double>(Shape{n}, -1, 1, seed + s));
  return gs;
}

inline std::vector<std::vector<double>> AsVectors(
    const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const auto& t : ts) out.push_back(ToVector<double>(t));
  return out;
}

// Every element of `got` within `rel` (relative, at least absolute) of
// `want`.
inline ::testing::AssertionResult AllNear(const std::vector<double>& got,
                                          const std::vector<double>& want,
                                          double rel) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, want " << want.size();
  for (size_t i = 0; i < want.size(); ++i)
    if (std::abs(got[i] - want[i]) > rel * std::max(1.0, std::abs(want[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace fluid
