// Gradient compression: the c_allreduce (or, under sharding stage 2, the
// c_reducescatter) of every float32 dense bucket carries the strategy's
// wire format (`compression`: its values travel as bf16 or fp16 and are
// added in float32); other dtypes and sparse gradients travel as they are.
// The lint checks that every float32 bucket is compressed as asked and
// nothing else is.
#include <set>

#include "src/framework/attribute.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/passes/pass.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

bool Compresses(const proto::DistributedStrategy& s) {
  return s.grad_compression() != "none";
}

// The collectives that reduce a dense gradient bucket.
bool ReducesBucket(const proto::OpDesc& op) {
  return op.type() == "c_allreduce" || op.type() == "c_reducescatter";
}

// The buffers of the dense float32 buckets.
std::set<std::string> Float32Buffers(const PassContext& ctx) {
  const proto::BlockDesc& src = ctx.original.main().blocks(0);
  std::set<std::string> out;
  for (const GradBucket& b : ctx.buckets)
    if (!b.sparse &&
        VarDtype(GetVarDesc(src, b.grads[0])) == DataType::kFloat32)
      out.insert(b.fused);
  return out;
}

// Adds attribute `name` to `op` where a new op would hold it: in name
// order among the op's own attributes, before the role attributes a pass
// appends last.
void InsertAttr(proto::OpDesc* op, const std::string& name,
                const Attribute& value) {
  proto::OpDesc::Attr attr;
  AttributeToProto(name, value, &attr);
  auto* attrs = op->mutable_attrs();
  int at = attrs->size();
  for (int i = 0; i < attrs->size(); ++i) {
    const std::string& n = attrs->Get(i).name();
    if (n == kOpRoleAttr || n == kOpRoleVarAttr || n > name) {
      at = i;
      break;
    }
  }
  *attrs->Add() = attr;
  for (int i = attrs->size() - 1; i > at; --i) attrs->SwapElements(i, i - 1);
}

void Compress(PassContext* ctx, proto::TrainingJob* job) {
  const std::set<std::string> f32 = Float32Buffers(*ctx);
  for (auto& op : *job->mutable_main()->mutable_blocks(0)->mutable_ops())
    if (ReducesBucket(op) && HasRole(op, OpRole::kCollective) &&
        f32.count(OpInput(op, "X")[0]) != 0)
      InsertAttr(&op, "compression", ctx->strategy.grad_compression());
}

void LintCompression(const PassContext& ctx, const proto::TrainingJob& job) {
  const std::set<std::string> f32 = Float32Buffers(ctx);
  for (const auto& op : job.main().blocks(0).ops()) {
    if (!ReducesBucket(op) || f32.count(OpInput(op, "X")[0]) == 0) continue;
    const std::string wire = HasOpAttr(op, "compression")
                                 ? GetOpAttrAs<std::string>(op, "compression")
                                 : "none";
    FLUID_ENFORCE(wire == ctx.strategy.grad_compression(), "bucket '",
                  OpInput(op, "X")[0], "' travels as ", wire,
                  " but the strategy's grad_compression is ",
                  ctx.strategy.grad_compression());
  }
}

}  // namespace

extern const Pass kCompressionPass = {"compression", Compresses, Compress,
                                      LintCompression};

}  // namespace fluid
