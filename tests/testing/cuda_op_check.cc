#include "tests/testing/cuda_op_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fluid {
namespace testing {
namespace {

double DefaultTolerance(DataType dtype) {
  // 16-bit floats: a few units in the last place of their 8 (bf16) or 11
  // (fp16) significant bits, where CPU and CUDA round one sum differently.
  if (dtype == DataType::kBFloat16) return 2e-2;
  if (dtype == DataType::kFloat16) return 4e-3;
  return dtype == DataType::kFloat64 ? 1e-12 : 1e-5;
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[i];
    case DataType::kFloat64:
      return t.data<double>()[i];
    case DataType::kInt32:
      return t.data<int32_t>()[i];
    case DataType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kFloat16:
      return ToFloat(t.data<float16>()[i]);
    case DataType::kBFloat16:
      return ToFloat(t.data<bfloat16>()[i]);
    case DataType::kBool:
      return t.data<bool>()[i] ? 1 : 0;
  }
  return 0;
}

bool IsFloat(DataType t) { return IsFloatDtype(t); }

}  // namespace

::testing::AssertionResult TensorsClose(const Tensor& cpu, const Tensor& cuda,
                                        double tolerance,
                                        const std::string& what) {
  if (cpu.dtype() != cuda.dtype())
    return ::testing::AssertionFailure()
           << what << ": dtype " << DataTypeName(cuda.dtype()) << " on CUDA, "
           << DataTypeName(cpu.dtype()) << " on CPU";
  if (cpu.shape() != cuda.shape())
    return ::testing::AssertionFailure()
           << what << ": shape " << cuda.shape() << " on CUDA, " << cpu.shape()
           << " on CPU";
  if (tolerance < 0) tolerance = DefaultTolerance(cpu.dtype());
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double a = At(cpu, i), b = At(cuda, i);
    double scale = std::max({std::fabs(a), std::fabs(b), 1.0});
    if (!(std::fabs(a - b) <= tolerance * scale))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: CUDA " << b << " vs CPU " << a
             << " (tolerance " << tolerance << " relative)";
  }
  return ::testing::AssertionSuccess();
}

namespace {

// `op`'s outputs on the CPU and on the device agree, but those in
// options.skip.
::testing::AssertionResult OutputsMatch(const proto::OpDesc& op,
                                        const TensorMap& cpu,
                                        const TensorMap& cuda,
                                        const CudaCheckOptions& options) {
  for (const auto& kv : cpu) {
    if (std::find(options.skip.begin(), options.skip.end(), kv.first) !=
        options.skip.end())
      continue;
    auto r = TensorsClose(kv.second, cuda.at(kv.first), options.tolerance,
                          op.type() + " output '" + kv.first + "'");
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult CudaMatchesCpu(const proto::OpDesc& op,
                                          const TensorMap& inputs,
                                          const CudaCheckOptions& options) {
  TensorMap cpu = RunOp(op, inputs, 1, Place::CPU());
  auto r = OutputsMatch(op, cpu, RunOp(op, inputs, 1, Place::CUDA(0)), options);
  if (!r) return r;
  const OpSchema& schema = OpRegistry::Global().Get(op.type());
  if (!options.grad || !schema.has_grad()) return ::testing::AssertionSuccess();

  // Every value a grad op may read: the forward inputs and outputs (CPU
  // values) and one random gradient per float forward output.
  TensorMap known = inputs;
  for (const auto& kv : cpu) known[kv.first] = kv.second;
  uint64_t seed = options.seed;
  for (const auto& kv : cpu)
    if (IsFloat(kv.second.dtype()))
      known[GradVarName(kv.first)] =
          RandomTensor(kv.second.dtype(), kv.second.shape(), -1, 1, seed++);

  for (const proto::OpDesc& grad : schema.grad_maker()(op)) {
    TensorMap feeds;
    for (const auto& name : OpInputNames(grad)) {
      if (name == kEmptyVarName) continue;
      auto it = known.find(name);
      if (it == known.end())
        return ::testing::AssertionFailure()
               << grad.type() << " reads '" << name
               << "', which neither the forward op nor its outputs supply";
      feeds[name] = it->second;
    }
    auto g = OutputsMatch(grad, RunOp(grad, feeds, 1, Place::CPU()),
                          RunOp(grad, feeds, 1, Place::CUDA(0)), options);
    if (!g) return g;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult CudaStepsMatchCpu(const proto::OpDesc& op,
                                             const TensorMap& state,
                                             const std::string& grad_var,
                                             const std::vector<Tensor>& grads,
                                             double tolerance) {
  TensorMap cpu = RunSteps(op, state, grad_var, grads, Place::CPU());
  TensorMap cuda = RunSteps(op, state, grad_var, grads, Place::CUDA(0));
  for (const auto& kv : cpu) {
    auto r = TensorsClose(kv.second, cuda.at(kv.first), tolerance,
                          op.type() + " state '" + kv.first + "'");
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace fluid
