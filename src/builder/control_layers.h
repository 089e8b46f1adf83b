// The typed functions of the control-flow layers (control_layers.cc): what
// the registered layers of the same names build, and BuildWhile, which
// fluid.layers.While calls when its block ends, and BuildConditionalBlock
// (fluid.layers.cond, Switch, IfElse).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// `type` (less_than, ..., not_equal) of x and y: a bool var, `cond` when
// not empty (it must be a bool var).
std::string Compare(ProgramBuilder* b, const std::string& type,
                    const std::string& x, const std::string& y,
                    const std::string& cond);
// `type` (logical_and, _or, _xor; logical_not with y empty) into `out` when
// not empty, else a new bool var.
std::string Logical(ProgramBuilder* b, const std::string& type,
                    const std::string& x, const std::string& y,
                    const std::string& out);
// x + value into x (in_place) or a new var.
std::string Increment(ProgramBuilder* b, const std::string& x, double value,
                      bool in_place);
// Whether x has 0 elements: a bool [1] var, `cond` when not empty (it
// must be a bool var).
std::string IsEmpty(ProgramBuilder* b, const std::string& x,
                    const std::string& cond);
// A new LOD_TENSOR_ARRAY var of `dtype`, emptied by create_array.
std::string CreateArray(ProgramBuilder* b, DataType dtype);
// array[i] = x; a new array when `array` is empty. Returns the array.
std::string ArrayWrite(ProgramBuilder* b, const std::string& x,
                       const std::string& i, const std::string& array);
std::string ArrayRead(ProgramBuilder* b, const std::string& array,
                      const std::string& i);
std::string ArrayLength(ProgramBuilder* b, const std::string& array);

// Moves block 0's ops from `op_begin` on, and the temporaries declared from
// `var_begin` on, into a new block (parameters stay in block 0), and
// appends the while op running it while `cond` holds. Returns the while
// op's StepScopes var. A block that does not write `cond` is refused.
std::string BuildWhile(ProgramBuilder* b, int64_t op_begin, int64_t var_begin,
                       const std::string& cond, bool is_test);

// Moves block 0's ops from `op_begin` on, and the temporaries declared from
// `var_begin` on but those named in `keep` (the results read after the
// block), into a new block, and appends the conditional_block op running it
// once when `cond` (one bool; without is_scalar_condition, vars that must
// all have rows) holds. The ops at the indices in `stay` (IfElse's splits
// of its inputs) stay in block 0, before it. Returns the op's Scope var. A
// block writing its own condition is refused. fluid.layers.cond, Switch
// and IfElse call it.
std::string BuildConditionalBlock(ProgramBuilder* b, int64_t op_begin,
                                  int64_t var_begin,
                                  const std::vector<std::string>& cond,
                                  bool is_scalar_condition,
                                  const std::vector<std::string>& keep,
                                  const std::vector<int64_t>& stay);
// IfElse's parts: the rows of `input` where the bool `mask` holds, and the
// others (split_lod_tensor); and back, in the batch's order, with `x` the
// batch that was split (merge_lod_tensor).
std::vector<std::string> SplitLoDTensor(ProgramBuilder* b,
                                        const std::string& input,
                                        const std::string& mask);
std::string MergeLoDTensor(ProgramBuilder* b, const std::string& in_true,
                           const std::string& in_false, const std::string& x,
                           const std::string& mask);

}  // namespace layers
}  // namespace fluid
