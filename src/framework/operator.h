// Operators as the executor runs them, and the contexts handed to shape
// inference and kernels.
//
// An OperatorBase is made once per op when a program is prepared: its attrs
// are resolved (defaults filled), its kernel chosen by (place, dtype) and its
// slots bound to Variable pointers, so that a run does no lookups by name in
// the scope. It does not own the variables (the scope does).
#pragma once

#include <string>
#include <vector>

#include "src/framework/device_context.h"
#include "src/framework/op_registry.h"
#include "src/framework/scope.h"

namespace fluid {

// Shape inference sees the same interface at build time (over VarDescs, -1
// for unknown dims) and at run time (over tensors, all dims known).
class InferShapeContext {
 public:
  virtual ~InferShapeContext() = default;
  virtual const std::string& op_type() const = 0;
  virtual bool IsRuntime() const = 0;
  virtual bool HasInput(const std::string& slot) const = 0;
  // Bound and not the empty name.
  virtual bool HasOutput(const std::string& slot) const = 0;
  virtual size_t InputSize(const std::string& slot) const = 0;
  virtual size_t OutputSize(const std::string& slot) const = 0;
  virtual const std::string& InputName(const std::string& slot,
                                       size_t i = 0) const = 0;
  virtual const std::string& OutputName(const std::string& slot,
                                        size_t i = 0) const = 0;
  virtual Shape GetInputShape(const std::string& slot, size_t i = 0) const = 0;
  virtual DataType GetInputDtype(const std::string& slot,
                                 size_t i = 0) const = 0;
  virtual void SetOutputShape(const std::string& slot, const Shape& shape,
                              size_t i = 0) = 0;
  virtual void SetOutputDtype(const std::string& slot, DataType dtype,
                              size_t i = 0) = 0;
  virtual const AttributeMap& attrs() const = 0;
  // Sparse values (SelectedRows, VarDesc type SELECTED_ROWS): an input's
  // shape reads as its dense shape [height, ...]; an output marked sparse
  // takes its height from SetOutputShape.
  virtual bool IsSelectedRowsInput(const std::string& slot,
                                   size_t i = 0) const = 0;
  virtual void SetOutputSelectedRows(const std::string& slot, size_t i = 0) = 0;

  // LoD (src/framework/lod.h). At compile time a var has a lod_level (0,
  // 1, or more levels) and no offsets; at run time a tensor has offsets or
  // none. InputLoDLevel answers both ways; InputLoD is empty at compile
  // time. Setting the level is a no-op at run time, setting offsets one at
  // compile time. Setting an output's shape at run time drops its offsets:
  // an op passes them on only by saying so (ShareLoD).
  virtual int InputLoDLevel(const std::string& slot, size_t i = 0) const = 0;
  virtual LoD InputLoD(const std::string& slot, size_t i = 0) const = 0;
  virtual void SetOutputLoDLevel(const std::string& slot, int level,
                                 size_t i = 0) = 0;
  virtual void SetOutputLoD(const std::string& slot, const LoD& lod,
                            size_t i = 0) = 0;
  // Every level of a multi-level LoD, coarsest first, InputLoD last (empty
  // at compile time, or for a tensor without LoD); setting them is a no-op
  // at compile time.
  virtual LoDLevels InputAllLoD(const std::string& slot, size_t i = 0) const {
    LoD lod = InputLoD(slot, i);
    if (lod.empty()) return {};
    return {std::move(lod)};
  }
  virtual void SetOutputAllLoD(const std::string& slot, const LoDLevels& levels,
                               size_t i = 0) {
    SetOutputLoD(slot, levels.empty() ? LoD() : levels.back(), i);
  }
  // Out's rows are In's rows: Out takes In's LoD (level and offsets, every
  // level of a multi-level LoD).
  void ShareLoD(const std::string& in, const std::string& out, size_t i = 0) {
    if (!HasOutput(out)) return;
    const int level = InputLoDLevel(in, i);
    SetOutputAllLoD(out, InputAllLoD(in, i), i);
    SetOutputLoDLevel(out, level, i);
  }

  template <typename T>
  const T& Attr(std::string_view name) const {
    return GetAttr<T>(attrs(), name, op_type());
  }
  // Out takes In's shape and dtype (the common case for elementwise ops).
  // Its rows being In's, it takes In's LoD too (read first: Out may be In).
  void ShareShape(const std::string& in, const std::string& out, size_t i = 0) {
    if (!HasOutput(out)) return;
    const LoDLevels lod = InputAllLoD(in, i);
    const int level = InputLoDLevel(in, i);
    SetOutputShape(out, GetInputShape(in, i), i);
    SetOutputDtype(out, GetInputDtype(in, i), i);
    SetOutputAllLoD(out, lod, i);
    SetOutputLoDLevel(out, level, i);
  }
};

struct BoundSlot {
  std::string name;
  std::vector<std::string> args;
  std::vector<Variable*> vars;  // null for the empty name
};

class OperatorBase {
 public:
  // Validates `desc` against its schema and resolves the attrs and kernel.
  // `block` supplies the var dtypes that select the kernel.
  OperatorBase(const proto::OpDesc& desc, const proto::BlockDesc& block,
               const Place& place);

  // Points every slot at its variable in `scope` (which must hold them).
  void Bind(const Scope& scope);

  const std::string& type() const { return desc_.type(); }
  const proto::OpDesc& desc() const { return desc_; }
  const OpSchema& schema() const { return *schema_; }
  const AttributeMap& attrs() const { return attrs_; }
  KernelFn kernel() const { return kernel_; }
  DataType kernel_dtype() const { return kernel_dtype_; }
  const std::vector<BoundSlot>& inputs() const { return inputs_; }
  const std::vector<BoundSlot>& outputs() const { return outputs_; }
  const BoundSlot* FindInput(const std::string& slot) const;
  const BoundSlot* FindOutput(const std::string& slot) const;
  // Whether this run skips the op: its op_skip_if variable holds a nonzero
  // flag (read back from the device when it lives there).
  bool SkippedThisRun() const;

 private:
  proto::OpDesc desc_;
  std::string skip_if_;              // the op_skip_if variable, or ""
  Variable* skip_if_var_ = nullptr;  // bound by Bind
  const OpSchema* schema_;
  AttributeMap attrs_;
  KernelFn kernel_ = nullptr;
  DataType kernel_dtype_ = DataType::kFloat32;
  std::vector<BoundSlot> inputs_;
  std::vector<BoundSlot> outputs_;
};

// The dtype that selects an op's kernel, read from the block's var descs.
DataType KernelDtypeOf(const proto::OpDesc& op, const OpSchema& schema,
                       const AttributeMap& attrs,
                       const proto::BlockDesc& block);

class RuntimeInferShapeContext : public InferShapeContext {
 public:
  explicit RuntimeInferShapeContext(const OperatorBase& op) : op_(op) {}
  const std::string& op_type() const override { return op_.type(); }
  bool IsRuntime() const override { return true; }
  bool HasInput(const std::string& slot) const override;
  bool HasOutput(const std::string& slot) const override;
  size_t InputSize(const std::string& slot) const override;
  size_t OutputSize(const std::string& slot) const override;
  const std::string& InputName(const std::string& slot,
                               size_t i) const override;
  const std::string& OutputName(const std::string& slot,
                                size_t i) const override;
  Shape GetInputShape(const std::string& slot, size_t i) const override;
  DataType GetInputDtype(const std::string& slot, size_t i) const override;
  void SetOutputShape(const std::string& slot, const Shape& shape,
                      size_t i) override;
  void SetOutputDtype(const std::string& slot, DataType dtype,
                      size_t i) override;
  const AttributeMap& attrs() const override { return op_.attrs(); }
  int InputLoDLevel(const std::string& slot, size_t i) const override;
  LoD InputLoD(const std::string& slot, size_t i) const override;
  void SetOutputLoDLevel(const std::string& slot, int level,
                         size_t i) override {}
  void SetOutputLoD(const std::string& slot, const LoD& lod, size_t i) override;
  LoDLevels InputAllLoD(const std::string& slot, size_t i) const override;
  void SetOutputAllLoD(const std::string& slot, const LoDLevels& levels,
                       size_t i) override;
  bool IsSelectedRowsInput(const std::string& slot, size_t i) const override;
  void SetOutputSelectedRows(const std::string& slot, size_t i) override;

 private:
  Variable* InputVariable(const std::string& slot, size_t i) const;
  Variable* OutputVariable(const std::string& slot, size_t i) const;
  const Tensor& InputTensor(const std::string& slot, size_t i) const;
  const OperatorBase& op_;
};

// Shape inference over a block's VarDescs. Output vars that the block lacks
// are declared (dtype from the op's kernel dtype unless set).
class CompileTimeInferShapeContext : public InferShapeContext {
 public:
  CompileTimeInferShapeContext(const proto::OpDesc& op,
                               proto::BlockDesc* block);
  const std::string& op_type() const override { return op_.type(); }
  bool IsRuntime() const override { return false; }
  bool HasInput(const std::string& slot) const override;
  bool HasOutput(const std::string& slot) const override;
  size_t InputSize(const std::string& slot) const override;
  size_t OutputSize(const std::string& slot) const override;
  const std::string& InputName(const std::string& slot,
                               size_t i) const override;
  const std::string& OutputName(const std::string& slot,
                                size_t i) const override;
  Shape GetInputShape(const std::string& slot, size_t i) const override;
  DataType GetInputDtype(const std::string& slot, size_t i) const override;
  void SetOutputShape(const std::string& slot, const Shape& shape,
                      size_t i) override;
  void SetOutputDtype(const std::string& slot, DataType dtype,
                      size_t i) override;
  const AttributeMap& attrs() const override { return attrs_; }
  int InputLoDLevel(const std::string& slot, size_t i) const override;
  LoD InputLoD(const std::string& slot, size_t i) const override { return {}; }
  void SetOutputLoDLevel(const std::string& slot, int level, size_t i) override;
  void SetOutputLoD(const std::string& slot, const LoD& lod,
                    size_t i) override {}
  bool IsSelectedRowsInput(const std::string& slot, size_t i) const override;
  void SetOutputSelectedRows(const std::string& slot, size_t i) override;

 private:
  proto::VarDesc* OutputVar(const std::string& slot, size_t i);
  const proto::OpDesc& op_;
  proto::BlockDesc* block_;
  AttributeMap attrs_;
  DataType default_dtype_;
};

// Runs the op's shape inference over `block` (declaring its outputs).
void InferShapeAtCompileTime(const proto::OpDesc& op, proto::BlockDesc* block);

// Runs the sub-blocks of control-flow ops (src/framework/block_runner.h).
class BlockRunner;

class ExecutionContext {
 public:
  // `runner`: how a control-flow op (while) runs its sub-block; the
  // executor passes one, kernels of other ops never read it.
  ExecutionContext(const OperatorBase& op, const DeviceContext& dev,
                   const BlockRunner* runner = nullptr)
      : op_(op), dev_(dev), runner_(runner) {}

  const std::string& type() const { return op_.type(); }
  const OperatorBase& op() const { return op_; }
  const DeviceContext& device_context() const { return dev_; }
  // Where the kernel runs; outputs are allocated there.
  Place place() const { return dev_.place(); }
  // The context of the kernel's place. A kernel is registered for one place
  // and only ever called with that place's context, so this cast is exact.
  template <typename Context>
  const Context& device_as() const {
    return static_cast<const Context&>(dev_);
  }
  // CPU kernels' shorthand for device_as<CPUDeviceContext>().
  const CPUDeviceContext& device() const {
    return device_as<CPUDeviceContext>();
  }

  bool HasInput(const std::string& slot) const;
  size_t InputSize(const std::string& slot) const;
  const Tensor& Input(const std::string& slot, size_t i = 0) const;
  const std::string& InputName(const std::string& slot, size_t i = 0) const;
  Variable* InputVar(const std::string& slot, size_t i = 0) const;

  // False when the slot is unbound or bound to the empty name (a gradient
  // nobody needs).
  bool HasOutput(const std::string& slot, size_t i = 0) const;
  size_t OutputSize(const std::string& slot) const;
  // Null when !HasOutput(slot, i).
  Tensor* Output(const std::string& slot, size_t i = 0) const;
  const std::string& OutputName(const std::string& slot, size_t i = 0) const;
  Variable* OutputVar(const std::string& slot, size_t i = 0) const;

  template <typename T>
  const T& Attr(std::string_view name) const {
    return GetAttr<T>(op_.attrs(), name, op_.type());
  }
  // Null when the op runs outside an executor (a kernel called directly).
  const BlockRunner* block_runner() const { return runner_; }

 private:
  const OperatorBase& op_;
  const DeviceContext& dev_;
  const BlockRunner* runner_;
};

}  // namespace fluid
