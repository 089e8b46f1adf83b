// Fluid 1.x's creation layers that build a tensor from a shape, a range or
// another tensor's shape (ones_like, zeros_like, the random fills, range,
// linspace, eye, diag) and the finiteness tests (has_inf, has_nan,
// isfinite); each is registered by name (REGISTER_LAYER in
// creation_layers.cc) for the Python package. Their outputs take no
// gradient.
//
// Random fills: a nonzero seed draws the same values on every rank and in
// every run; seed 0 derives the seed from the output var's name (the
// product's random ops, ops/random_op.cc), so the values are again the
// same on every rank and in every run, and differ between layers.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// x's shape filled with `value`, of x's dtype; written to `out` when given.
std::string FillLike(ProgramBuilder* b, const std::string& x, float value,
                     const std::string& out = "");

// The random fills: uniform in [min, max), or normal (mean, std).
struct RandomFill {
  bool gaussian = false;
  float a = -1.0f;  // min, or mean
  float b = 1.0f;   // max, or std
  int seed = 0;
  DataType dtype = DataType::kFloat32;
};
std::string RandomTensor(ProgramBuilder* b, const std::vector<int64_t>& shape,
                         const RandomFill& fill);
// ... of `shape` with dim output_dim_idx set to input's dim input_dim_idx.
std::string RandomBatchSizeLike(ProgramBuilder* b, const std::string& input,
                                const std::vector<int64_t>& shape,
                                int input_dim_idx, int output_dim_idx,
                                const RandomFill& fill);

// [start, start + step, ...) short of end; num values from start to stop.
std::string Range(ProgramBuilder* b, double start, double end, double step,
                  DataType dtype);
std::string Linspace(ProgramBuilder* b, double start, double stop, int64_t num,
                     DataType dtype);
// batch_shape copies of the [num_rows, num_columns] identity.
std::string Eye(ProgramBuilder* b, int64_t num_rows, int64_t num_columns,
                const std::vector<int64_t>& batch_shape, DataType dtype);
// The [n, n] matrix with `diagonal` [n] on its diagonal.
std::string Diag(ProgramBuilder* b, const std::string& diagonal);
// bool [1]: "isinf" (any infinity), "isnan" (any NaN), "isfinite" (all
// finite).
std::string FiniteTest(ProgramBuilder* b, const std::string& op,
                       const std::string& x);

}  // namespace layers
}  // namespace fluid
