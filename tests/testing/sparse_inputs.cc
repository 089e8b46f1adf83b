#include "tests/testing/sparse_inputs.h"

#include <cstring>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

SparseRunResult RunOpOnSparse(const proto::OpDesc& op, const TensorMap& dense,
                              const SparseMap& sparse, const Place& place) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  // Every var persistable: the inputs are set in `scope` before the run
  // and the outputs read back from it.
  for (const auto& [name, t] : dense)
    AddVarDesc(block, name, t.dtype(), t.shape(), true);
  for (const auto& [name, sr] : sparse)
    AddVarDesc(block, name, sr.value().dtype(), sr.dense_shape(), true)
        ->set_type(proto::VarDesc::SELECTED_ROWS);
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  std::vector<std::string> outs;
  for (const auto& n : OpOutputNames(op)) {
    if (n == kEmptyVarName) continue;
    FindMutableVarDesc(block, n)->set_persistable(true);
    outs.push_back(n);
  }
  Scope scope;
  for (const auto& [name, t] : dense)
    scope.Var(name)->GetMutableTensor()->CopyFrom(t, place);
  for (const auto& [name, sr] : sparse) {
    SelectedRows* held = scope.Var(name)->GetMutableSelectedRows();
    held->set_height(sr.height());
    *held->mutable_rows() = sr.rows();
    held->mutable_value()->CopyFrom(sr.value(), place);
  }
  Executor exe(place);
  auto prepared = exe.Prepare(program, &scope);
  exe.Run(prepared.get(), {});
  SparseRunResult result;
  for (const auto& n : outs) {
    const Variable* v = scope.FindVar(n);
    if (v->IsSelectedRows()) {
      const SelectedRows& sr = v->Get<SelectedRows>();
      result.sparse[n] = MakeSelectedRows(sr.height(), sr.rows(), sr.value());
    } else {
      result.dense[n].CopyFrom(v->GetTensor(), Place::CPU());
    }
  }
  return result;
}

std::string SparseErrorOf(const proto::OpDesc& op, const TensorMap& dense,
                          const SparseMap& sparse) {
  return ErrorOf([&] { RunOpOnSparse(op, dense, sparse); });
}

Tensor GatherRows(const Tensor& t, const std::vector<int64_t>& rows) {
  Tensor host;
  host.CopyFrom(t, Place::CPU());
  Shape shape = host.shape();
  const size_t row_bytes = host.bytes() / static_cast<size_t>(shape[0]);
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out;
  out.set_dtype(host.dtype());
  out.Resize(shape);
  char* dst = static_cast<char*>(out.raw_mutable_data(Place::CPU()));
  const char* src = static_cast<const char*>(host.raw_data());
  for (size_t k = 0; k < rows.size(); ++k)
    std::memcpy(dst + k * row_bytes, src + rows[k] * row_bytes, row_bytes);
  return out;
}

}  // namespace testing
}  // namespace fluid
