#include "src/framework/selected_rows.h"

#include <algorithm>
#include <numeric>

#include "src/framework/enforce.h"

namespace fluid {

int64_t SelectedRows::row_width() const {
  const Shape& s = value_.shape();
  return s.rank() <= 1 ? 1 : s.Product(1, s.rank());
}

Shape SelectedRows::dense_shape() const {
  Shape dims = value_.shape();
  if (dims.rank() == 0) dims.push_back(0);
  dims[0] = height_;
  return dims;
}

void RowMerge::Build(const std::vector<int64_t>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  order.resize(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&rows](int64_t a, int64_t b) { return rows[a] < rows[b]; });
  unique_rows.clear();
  offsets.clear();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[order[i]];
    if (unique_rows.empty() || unique_rows.back() != r) {
      unique_rows.push_back(r);
      offsets.push_back(i);
    }
  }
  offsets.push_back(n);
}

void CheckRowsInRange(const SelectedRows& sr, const std::string& what) {
  for (size_t i = 0; i < sr.rows().size(); ++i) {
    const int64_t r = sr.rows()[i];
    FLUID_ENFORCE(r >= 0 && r < sr.height(), what, " holds row ", r,
                  " at position ", i, ", outside [0, ", sr.height(), ")");
  }
}

}  // namespace fluid
