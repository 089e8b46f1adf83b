#include "src/builder/regularizer.h"

#include "src/builder/program_builder.h"
#include "src/framework/program_desc.h"

namespace fluid {

Regularization::Kind ParseRegularizationKind(const std::string& kind,
                                             const std::string& where) {
  if (kind == "l1") return Regularization::Kind::kL1;
  if (kind == "l2") return Regularization::Kind::kL2;
  if (kind == "none") return Regularization::Kind::kNone;
  FLUID_THROW(ErrorCode::kInvalidArgument, where, ": unknown regularizer '",
              kind, "'; known: l1, l2, none");
}

const Regularization& RegularizationOf(const ProgramBuilder& b,
                                       const std::string& param,
                                       const Regularization& fallback) {
  const ParamAttr* attr = b.FindParamAttr(param);
  const bool own =
      attr != nullptr && attr->regularizer.kind != Regularization::Kind::kNone;
  return own ? attr->regularizer : fallback;
}

void AppendRegularization(ProgramBuilder* b, const std::string& param,
                          const std::string& grad, const Regularization& r) {
  if (r.kind == Regularization::Kind::kNone) return;
  FLUID_ENFORCE(r.coeff >= 0.0f, "regularizer of '", param,
                "': regularization_coeff must be >= 0, got ", r.coeff);
  constexpr int kRole = static_cast<int>(OpRole::kOptimize);
  if (GetVarDesc(b->main()->blocks(0), grad).type() ==
      proto::VarDesc::SELECTED_ROWS) {
    const bool l1 = r.kind == Regularization::Kind::kL1;
    b->AppendOp(
        MakeOp("sparse_weight_decay", {{"Param", {param}}, {"Grad", {grad}}},
               {{"GradOut", {grad}}},
               {{"regularizer", std::string(l1 ? "l1" : "l2")},
                {"regularization_coeff", r.coeff}}),
        kRole);
    return;
  }
  const DataType dtype = VarDtype(GetVarDesc(b->main()->blocks(0), param));
  std::string source = param;
  if (r.kind == Regularization::Kind::kL1) {
    source = b->CreateTmpVar(param + "@SIGN", dtype);
    b->AppendOp(MakeOp("sign", {{"X", {param}}}, {{"Out", {source}}}), kRole);
  }
  const std::string decay = b->CreateTmpVar(param + "@DECAY", dtype);
  b->AppendOp(MakeOp("scale", {{"X", {source}}}, {{"Out", {decay}}},
                     {{"scale", r.coeff}}),
              kRole);
  b->AppendOp(MakeOp("sum", {{"X", {grad, decay}}}, {{"Out", {grad}}}), kRole);
}

}  // namespace fluid
