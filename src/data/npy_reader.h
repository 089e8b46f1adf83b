// NumPy .npy files: one array per file.
//
// LoadNpy reads format versions 1.0, 2.0 and 3.0 (3.0 differs only in allowing
// a UTF-8 header), little-endian, C order, with dtypes
//   <f4 -> float32, <f8 -> float64, <i4 -> int32, <i8 -> int64,
//   |u1 -> int32 (bytes are widened: the framework has no uint8 type).
// A Fortran-order array, a big-endian or other dtype, a bad magic and a file
// shorter or longer than its header promises are errors naming the path.
//
// SaveNpy writes version 1.0 (2.0 when the header would not fit), in the
// layout numpy itself writes, so np.load reads the file back. It writes to a
// temporary file and renames it, so a reader never sees half a file.
//
// The functions are free of shared state and safe to call from any thread.
#pragma once

#include <string>

#include "src/framework/tensor.h"

namespace fluid {

Tensor LoadNpy(const std::string& path);
void SaveNpy(const std::string& path, const Tensor& tensor);

}  // namespace fluid
