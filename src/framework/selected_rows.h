// SelectedRows: a sparse gradient of a [height, ...] table, as the rows it
// touches and their values (Fluid's SelectedRows).
//
// `rows` may repeat a row (each lookup of an id contributes a copy): the
// dense tensor it stands for is the sum of the copies, zero elsewhere.
// `value` is [rows.size(), row dims...] and lives where the kernel that
// wrote it ran; `rows` always lives on the host. A SelectedRows is held by
// a Variable next to Tensor (VarDesc type SELECTED_ROWS); it is a
// temporary of a step, never persistable. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/tensor.h"

namespace fluid {

class SelectedRows {
 public:
  int64_t height() const { return height_; }
  void set_height(int64_t height) { height_ = height; }
  const std::vector<int64_t>& rows() const { return rows_; }
  std::vector<int64_t>* mutable_rows() { return &rows_; }
  const Tensor& value() const { return value_; }
  Tensor* mutable_value() { return &value_; }
  // Elements per row (the product of value's dims past the first).
  int64_t row_width() const;
  // The shape of the dense tensor this stands for: [height, row dims...].
  Shape dense_shape() const;

 private:
  std::vector<int64_t> rows_;
  Tensor value_;
  int64_t height_ = 0;
};

// The duplicate-free form of a row list: its distinct rows in ascending
// order and, for each, the positions of its copies in the list (ascending),
// so that a merged row is the sum of its copies taken in list order, the
// same on every run. Vectors keep their capacity across Build calls.
struct RowMerge {
  std::vector<int64_t> unique_rows;
  std::vector<int64_t> offsets;  // unique_rows.size() + 1 entries
  std::vector<int64_t> order;    // positions into the row list
  void Build(const std::vector<int64_t>& rows);
  int64_t size() const { return static_cast<int64_t>(unique_rows.size()); }
};

// Checks that every row lies in [0, height); `what` names the variable.
void CheckRowsInRange(const SelectedRows& sr, const std::string& what);

}  // namespace fluid
