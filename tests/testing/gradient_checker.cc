#include "tests/testing/gradient_checker.h"

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

namespace {

bool IsFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64;
}

// A program holding `op`, with its inputs declared from their values.
proto::ProgramDesc ForwardProgram(const proto::OpDesc& op,
                                  const TensorMap& inputs) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& kv : inputs)
    AddVarDesc(block, kv.first, kv.second.dtype(), kv.second.shape());
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  return program;
}

FeedList Feeds(const TensorMap& values) {
  FeedList feeds;
  for (const auto& kv : values) feeds.emplace_back(kv.first, kv.second);
  return feeds;
}

double Dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  const double* pb = b.data<double>();
  if (a.dtype() == DataType::kFloat64) {
    const double* pa = a.data<double>();
    for (int64_t i = 0; i < a.numel(); ++i) s += pa[i] * pb[i];
  } else {
    const float* pa = a.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) s += pa[i] * pb[i];
  }
  return s;
}

double& At(Tensor* t, int64_t i) { return t->data<double>()[i]; }

// The inputs to differentiate with respect to: `options.wrt`, or every float
// input when it is empty. Each must be given as float64.
::testing::AssertionResult ChooseWrt(const proto::OpDesc& op,
                                     const TensorMap& inputs,
                                     const GradCheckOptions& options,
                                     std::vector<std::string>* wrt) {
  *wrt = options.wrt;
  if (wrt->empty())
    for (const auto& n : OpInputNames(op))
      if (inputs.count(n) && IsFloat(inputs.at(n).dtype())) wrt->push_back(n);
  for (const auto& n : *wrt)
    if (!inputs.count(n) || inputs.at(n).dtype() != DataType::kFloat64)
      return ::testing::AssertionFailure()
             << "input '" << n << "' must be given as float64";
  return ::testing::AssertionSuccess();
}

// The gradient fed for each output: its projection R_o, or zeros for the
// outputs not checked.
TensorMap OutputGradFeeds(const TensorMap& outputs,
                          const TensorMap& projections) {
  TensorMap feeds;
  for (const auto& kv : outputs) {
    std::string g = GradVarName(kv.first);
    if (projections.count(kv.first)) {
      feeds[g] = projections.at(kv.first);
    } else {
      Tensor zero;
      zero.set_dtype(kv.second.dtype());
      zero.Resize(kv.second.shape());
      std::memset(zero.raw_mutable_data(), 0, zero.bytes());
      feeds[g] = zero;
    }
  }
  return feeds;
}

// `op` followed by the grad ops its grad maker emits, with the output
// gradients declared as feeds and only the gradients of `wrt` computed.
proto::ProgramDesc GradProgram(const proto::OpDesc& op, const OpSchema& schema,
                               const TensorMap& inputs,
                               const TensorMap& outputs,
                               const std::vector<std::string>& wrt) {
  proto::ProgramDesc program = ForwardProgram(op, inputs);
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& kv : outputs)
    AddVarDesc(block, GradVarName(kv.first), kv.second.dtype(),
               kv.second.shape());
  std::set<std::string> want(wrt.begin(), wrt.end());
  for (proto::OpDesc g : schema.grad_maker()(op)) {
    for (auto& slot : *g.mutable_outputs()) {
      for (auto& name : *slot.mutable_arguments()) {
        std::string base = name.substr(0, name.rfind(kGradSuffix));
        if (!want.count(base)) {
          name = kEmptyVarName;
        } else if (FindVarDesc(*block, name) == nullptr) {
          AddVarDesc(block, name, DataType::kFloat64, inputs.at(base).shape());
        }
      }
    }
    *block->add_ops() = g;
    InferShapeAtCompileTime(g, block);
  }
  return program;
}

// Analytic gradients of f = sum <o, R> with respect to `wrt`, in that order:
// the forward op and its grad ops run once, fed R as the output gradients.
::testing::AssertionResult AnalyticGradients(
    const proto::OpDesc& op, const OpSchema& schema, const TensorMap& inputs,
    const TensorMap& outputs, const TensorMap& projections,
    const std::vector<std::string>& wrt, int threads,
    std::vector<Tensor>* analytic) {
  proto::ProgramDesc program = GradProgram(op, schema, inputs, outputs, wrt);
  TensorMap feeds = inputs;
  for (auto& kv : OutputGradFeeds(outputs, projections))
    feeds[kv.first] = std::move(kv.second);
  std::vector<std::string> grad_names;
  for (const auto& n : wrt) grad_names.push_back(GradVarName(n));
  Scope scope;
  Executor exe(Place::CPU(), threads);
  try {
    exe.RunOnce(program, &scope, Feeds(feeds), grad_names, analytic);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "grad run failed: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

// Compares `analytic` (the gradients of `wrt`) with central differences of
// f = sum over `of` of <o, R_o>, element by element; names the first five
// elements that differ.
::testing::AssertionResult CompareWithNumeric(
    const proto::OpDesc& op, const TensorMap& inputs,
    const std::vector<std::string>& wrt, const std::vector<std::string>& of,
    const TensorMap& projections, const std::vector<Tensor>& analytic,
    const GradCheckOptions& options) {
  proto::ProgramDesc fwd = ForwardProgram(op, inputs);
  Scope fscope;
  Executor exe(Place::CPU(), options.threads);
  auto prepared = exe.Prepare(fwd, &fscope);
  TensorMap perturbed;
  for (const auto& kv : inputs) perturbed[kv.first].CopyFrom(kv.second);
  auto f = [&]() {
    std::vector<Tensor> got;
    exe.Run(prepared.get(), Feeds(perturbed), of, &got);
    double s = 0;
    for (size_t i = 0; i < of.size(); ++i)
      s += Dot(got[i], projections.at(of[i]));
    return s;
  };
  std::ostringstream failures;
  int bad = 0;
  for (size_t w = 0; w < wrt.size(); ++w) {
    Tensor* x = &perturbed[wrt[w]];
    const Tensor& a = analytic[w];
    if (a.shape() != x->shape())
      return ::testing::AssertionFailure()
             << "gradient of '" << wrt[w] << "' has shape " << a.shape()
             << ", input has " << x->shape();
    for (int64_t i = 0; i < x->numel(); ++i) {
      double orig = At(x, i);
      if (options.kink_range >= 0 &&
          std::fabs(orig - options.kink) < options.kink_range)
        continue;
      At(x, i) = orig + options.step;
      double fp = f();
      At(x, i) = orig - options.step;
      double fm = f();
      At(x, i) = orig;
      double numeric = (fp - fm) / (2 * options.step);
      double got = a.data<double>()[i];
      double scale = std::max({std::fabs(got), std::fabs(numeric), 1.0});
      if (std::fabs(got - numeric) > options.tolerance * scale) {
        if (++bad <= 5)
          failures << "\n  d/d " << wrt[w] << "[" << i << "]: analytic " << got
                   << ", numeric " << numeric;
      }
    }
  }
  if (bad > 0)
    return ::testing::AssertionFailure()
           << "op '" << op.type() << "': " << bad
           << " gradient element(s) differ:" << failures.str();
  return ::testing::AssertionSuccess();
}

}  // namespace

Tensor RandomTensor(DataType dtype, const Shape& shape, double lo, double hi,
                    uint64_t seed) {
  FLUID_ENFORCE(IsFloat(dtype), "RandomTensor: ", DataTypeName(dtype),
                " is not a float type");
  if (dtype == DataType::kFloat64)
    return RandomTensor<double>(shape, lo, hi, seed);
  return RandomTensor<float>(shape, lo, hi, seed);
}

Tensor FilledTensor(DataType dtype, const Shape& shape, double value) {
  FLUID_ENFORCE(IsFloat(dtype), "FilledTensor: ", DataTypeName(dtype),
                " is not a float type");
  const size_t n = static_cast<size_t>(shape.numel());
  if (dtype == DataType::kFloat64)
    return MakeTensor<double>(shape, std::vector<double>(n, value));
  return MakeTensor<float>(shape,
                           std::vector<float>(n, static_cast<float>(value)));
}

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string ErrorOf(const proto::OpDesc& op, const TensorMap& inputs) {
  return ErrorOf([&] { RunOp(op, inputs); });
}

Error ErrorThrownBy(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no fluid::Error was thrown";
  return Error(ErrorCode::kInternal, "");
}

TensorMap RunOp(const proto::OpDesc& op, const TensorMap& inputs, int threads,
                const Place& place) {
  proto::ProgramDesc program = ForwardProgram(op, inputs);
  std::vector<std::string> outs;
  for (const auto& n : OpOutputNames(op))
    if (n != kEmptyVarName) outs.push_back(n);
  Scope scope;
  Executor exe(place, threads);
  std::vector<Tensor> fetched;
  exe.RunOnce(program, &scope, Feeds(inputs), outs, &fetched);
  TensorMap result;
  for (size_t i = 0; i < outs.size(); ++i) result[outs[i]] = fetched[i];
  return result;
}

TensorMap RunSteps(const proto::OpDesc& op, const TensorMap& state,
                   const std::string& grad_var,
                   const std::vector<Tensor>& grads, const Place& place) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& kv : state)
    AddVarDesc(block, kv.first, kv.second.dtype(), kv.second.shape(), true);
  AddVarDesc(block, grad_var, grads[0].dtype(), grads[0].shape());
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  Scope scope;
  for (const auto& kv : state)
    scope.Var(kv.first)->GetMutableTensor()->CopyFrom(kv.second, place);
  Executor exe(place);
  auto prepared = exe.Prepare(program, &scope);
  for (const Tensor& g : grads) exe.Run(prepared.get(), {{grad_var, g}});
  TensorMap out;
  for (const auto& kv : state)
    out[kv.first].CopyFrom(scope.FindVar(kv.first)->GetTensor(), Place::CPU());
  return out;
}

::testing::AssertionResult CheckGradient(const proto::OpDesc& op,
                                         const TensorMap& inputs,
                                         const GradCheckOptions& options) {
  const OpSchema& schema = OpRegistry::Global().Get(op.type());
  if (!schema.has_grad())
    return ::testing::AssertionFailure()
           << "op '" << op.type() << "' has no grad maker";
  std::vector<std::string> wrt;
  ::testing::AssertionResult ok = ChooseWrt(op, inputs, options, &wrt);
  if (!ok) return ok;

  // Forward once to learn the outputs' shapes and pick projections R.
  TensorMap outputs = RunOp(op, inputs, options.threads);
  std::vector<std::string> of = options.of;
  if (of.empty())
    for (const auto& kv : outputs)
      if (IsFloat(kv.second.dtype())) of.push_back(kv.first);
  TensorMap projections;
  uint64_t seed = options.seed;
  for (const auto& n : of)
    projections[n] =
        RandomTensor<double>(outputs.at(n).shape(), -1.0, 1.0, seed++);

  std::vector<Tensor> analytic;
  ok = AnalyticGradients(op, schema, inputs, outputs, projections, wrt,
                         options.threads, &analytic);
  if (!ok) return ok;
  return CompareWithNumeric(op, inputs, wrt, of, projections, analytic,
                            options);
}

}  // namespace testing
}  // namespace fluid
