#include "src/builder/clip.h"

#include <map>
#include <vector>

#include "src/builder/program_builder.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

constexpr int kRole = static_cast<int>(OpRole::kOptimize);

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(b->main()->blocks(0), var));
}

// A one-element var holding `value`, filled in the program itself.
std::string Constant(ProgramBuilder* b, const std::string& prefix,
                     DataType dtype, float value) {
  const std::string out = b->CreateTmpVar(prefix, dtype);
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {out}}},
                     {{"shape", std::vector<int64_t>{1}},
                      {"value", value},
                      {"dtype", static_cast<int32_t>(dtype)}}),
              kRole);
  return out;
}

// grads *= clip_norm / max(sqrt(sum of their squared norms), clip_norm).
void AppendGlobalNormClip(ProgramBuilder* b,
                          const std::vector<std::string>& grads,
                          float clip_norm, const std::string& group) {
  FLUID_ENFORCE(clip_norm > 0.0f, "GradientClipByGlobalNorm (group '", group,
                "'): clip_norm must be positive, got ", clip_norm);
  const DataType dtype = DtypeOf(b, grads[0]);
  std::vector<std::string> squares;
  for (const auto& g : grads) {
    FLUID_ENFORCE(DtypeOf(b, g) == dtype, "GradientClipByGlobalNorm (group '",
                  group, "'): gradient '", g, "' is ",
                  DataTypeName(DtypeOf(b, g)), " but '", grads[0], "' is ",
                  DataTypeName(dtype));
    squares.push_back(b->CreateTmpVar(g + "@SQUARED_NORM", dtype));
    b->AppendOp(
        MakeOp("squared_l2_norm", {{"X", {g}}}, {{"Out", {squares.back()}}}),
        kRole);
  }
  const std::string prefix = "global_norm_" + group;
  const std::string total = b->CreateTmpVar(prefix + "@SUM", dtype);
  b->AppendOp(MakeOp("sum", {{"X", squares}}, {{"Out", {total}}}), kRole);
  const std::string norm = b->CreateTmpVar(prefix, dtype);
  b->AppendOp(MakeOp("sqrt", {{"X", {total}}}, {{"Out", {norm}}}), kRole);
  const std::string limit =
      Constant(b, prefix + "@CLIP_NORM", dtype, clip_norm);
  const std::string denom = b->CreateTmpVar(prefix + "@DENOM", dtype);
  b->AppendOp(MakeOp("elementwise_max", {{"X", {norm}}, {"Y", {limit}}},
                     {{"Out", {denom}}}),
              kRole);
  const std::string factor = b->CreateTmpVar(prefix + "@SCALE", dtype);
  b->AppendOp(MakeOp("elementwise_div", {{"X", {limit}}, {"Y", {denom}}},
                     {{"Out", {factor}}}),
              kRole);
  for (const auto& g : grads)
    b->AppendOp(MakeOp("elementwise_mul", {{"X", {g}}, {"Y", {factor}}},
                       {{"Out", {g}}}),
                kRole);
}

void AppendLocalClip(ProgramBuilder* b, const std::string& grad,
                     const GradientClip& c) {
  if (c.kind == GradientClip::Kind::kByValue) {
    FLUID_ENFORCE(c.min <= c.max, "GradientClipByValue of '", grad, "': min ",
                  c.min, " must not exceed max ", c.max);
    b->AppendOp(MakeOp("clip", {{"X", {grad}}}, {{"Out", {grad}}},
                       {{"min", c.min}, {"max", c.max}}),
                kRole);
  } else {
    FLUID_ENFORCE(c.clip_norm > 0.0f, "GradientClipByNorm of '", grad,
                  "': clip_norm must be positive, got ", c.clip_norm);
    b->AppendOp(MakeOp("clip_by_norm", {{"X", {grad}}}, {{"Out", {grad}}},
                       {{"max_norm", c.clip_norm}}),
                kRole);
  }
}

}  // namespace

GradientClip::Kind ParseGradientClipKind(const std::string& kind,
                                         const std::string& where) {
  if (kind == "by_value") return GradientClip::Kind::kByValue;
  if (kind == "by_norm") return GradientClip::Kind::kByNorm;
  if (kind == "by_global_norm") return GradientClip::Kind::kByGlobalNorm;
  if (kind == "none") return GradientClip::Kind::kNone;
  FLUID_THROW(ErrorCode::kInvalidArgument, where, ": unknown gradient clip '",
              kind, "'; known: by_value, by_norm, by_global_norm, none");
}

const GradientClip& GradientClipOf(const ProgramBuilder& b,
                                   const std::string& param,
                                   const GradientClip& fallback) {
  const ParamAttr* attr = b.FindParamAttr(param);
  return attr != nullptr &&
                 attr->gradient_clip.kind != GradientClip::Kind::kNone
             ? attr->gradient_clip
             : fallback;
}

void AppendGradientClips(ProgramBuilder* b, const ParamGradList& pairs,
                         const GradientClip& fallback) {
  std::vector<std::string> group_order;
  std::map<std::string, std::pair<float, std::vector<std::string>>> groups;
  for (const auto& [param, grad] : pairs) {
    const GradientClip& c = GradientClipOf(*b, param, fallback);
    if (c.kind == GradientClip::Kind::kNone) continue;
    if (c.kind != GradientClip::Kind::kByGlobalNorm) {
      AppendLocalClip(b, grad, c);
      continue;
    }
    auto it = groups.find(c.group);
    if (it == groups.end()) {
      group_order.push_back(c.group);
      it = groups
               .emplace(c.group,
                        std::make_pair(c.clip_norm, std::vector<std::string>{}))
               .first;
    }
    FLUID_ENFORCE(it->second.first == c.clip_norm,
                  "GradientClipByGlobalNorm: group '", c.group,
                  "' has clip_norm ", it->second.first, " and ", c.clip_norm);
    it->second.second.push_back(grad);
  }
  for (const auto& g : group_order)
    AppendGlobalNormClip(b, groups[g].second, groups[g].first, g);
}

}  // namespace fluid
