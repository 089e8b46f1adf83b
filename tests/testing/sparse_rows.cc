#include "tests/testing/sparse_rows.h"

#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

SelectedRows MakeSelectedRows(int64_t height, const std::vector<int64_t>& rows,
                              const Tensor& values) {
  SelectedRows sr;
  sr.set_height(height);
  *sr.mutable_rows() = rows;
  sr.mutable_value()->CopyFrom(values, Place::CPU());
  return sr;
}

namespace {

template <typename T>
void AddRows(const SelectedRows& sr, Tensor* out) {
  Tensor host;
  host.CopyFrom(sr.value(), Place::CPU());
  const int64_t w = sr.row_width();
  T* o = out->mutable_data<T>(sr.dense_shape());
  std::fill_n(o, out->numel(), T(0));
  const T* v = host.data<T>();
  for (size_t i = 0; i < sr.rows().size(); ++i)
    for (int64_t j = 0; j < w; ++j) o[sr.rows()[i] * w + j] += v[i * w + j];
}

SelectedRows ToHost(const SelectedRows& sr) {
  SelectedRows out;
  out.set_height(sr.height());
  *out.mutable_rows() = sr.rows();
  out.mutable_value()->CopyFrom(sr.value(), Place::CPU());
  return out;
}

}  // namespace

Tensor Densify(const SelectedRows& sr) {
  Tensor out;
  if (sr.value().dtype() == DataType::kFloat64) {
    AddRows<double>(sr, &out);
  } else {
    AddRows<float>(sr, &out);
  }
  return out;
}

SparseRunResult RunOpSparse(const proto::OpDesc& op, const TensorMap& inputs,
                            const Place& place) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& kv : inputs)
    AddVarDesc(block, kv.first, kv.second.dtype(), kv.second.shape());
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  // Outputs persistable: they land in `scope`, where they are read back.
  std::vector<std::string> outs;
  for (const auto& n : OpOutputNames(op)) {
    if (n == kEmptyVarName) continue;
    FindMutableVarDesc(block, n)->set_persistable(true);
    outs.push_back(n);
  }
  Scope scope;
  Executor exe(place);
  FeedList feeds;
  for (const auto& kv : inputs) feeds.emplace_back(kv.first, kv.second);
  exe.RunOnce(program, &scope, feeds, {});
  SparseRunResult result;
  for (const auto& n : outs) {
    const Variable* v = scope.FindVar(n);
    if (v->IsSelectedRows()) {
      result.sparse[n] = ToHost(v->Get<SelectedRows>());
    } else {
      result.dense[n].CopyFrom(v->GetTensor(), Place::CPU());
    }
  }
  return result;
}

TensorMap RunSparseSteps(const proto::OpDesc& op, const TensorMap& state,
                         const std::string& grad_var,
                         const std::vector<SelectedRows>& grads,
                         const Place& place) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& kv : state)
    AddVarDesc(block, kv.first, kv.second.dtype(), kv.second.shape(), true);
  proto::VarDesc* g = AddVarDesc(block, grad_var, grads[0].value().dtype(),
                                 grads[0].dense_shape(), true);
  g->set_type(proto::VarDesc::SELECTED_ROWS);
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  Scope scope;
  for (const auto& kv : state)
    scope.Var(kv.first)->GetMutableTensor()->CopyFrom(kv.second, place);
  Executor exe(place);
  auto prepared = exe.Prepare(program, &scope);
  for (const SelectedRows& sr : grads) {
    SelectedRows* held = scope.Var(grad_var)->GetMutableSelectedRows();
    held->set_height(sr.height());
    *held->mutable_rows() = sr.rows();
    *held->mutable_value() = Tensor();
    held->mutable_value()->CopyFrom(sr.value(), place);
    exe.Run(prepared.get(), {});
  }
  TensorMap out;
  for (const auto& kv : state)
    out[kv.first].CopyFrom(scope.FindVar(kv.first)->GetTensor(), Place::CPU());
  return out;
}

}  // namespace testing
}  // namespace fluid
