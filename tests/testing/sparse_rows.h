// Test helpers for sparse rows (SelectedRows): building them, densifying
// them by a naive loop, and running ops that write or read them through the
// executor on either place.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/framework/selected_rows.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

SelectedRows MakeSelectedRows(int64_t height, const std::vector<int64_t>& rows,
                              const Tensor& values);

// The dense tensor `sr` stands for (copies of a row summed in list order),
// in host memory, by a plain loop.
Tensor Densify(const SelectedRows& sr);

// The outputs of one run of `op` on `inputs`: tensors by name, and the
// outputs that hold sparse rows (values in host memory).
struct SparseRunResult {
  TensorMap dense;
  std::map<std::string, SelectedRows> sparse;
};
SparseRunResult RunOpSparse(const proto::OpDesc& op, const TensorMap& inputs,
                            const Place& place = Place::CPU());

// As RunSteps, with a sparse gradient: `op` runs once per entry of `grads`
// (set as `grad_var`, a SELECTED_ROWS var) on persistable `state`; returns
// the final state.
TensorMap RunSparseSteps(const proto::OpDesc& op, const TensorMap& state,
                         const std::string& grad_var,
                         const std::vector<SelectedRows>& grads,
                         const Place& place = Place::CPU());

}  // namespace testing
}  // namespace fluid
