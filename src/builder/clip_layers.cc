// The layers of the training knobs: clip (Fluid's fluid.layers.clip). The
// learning-rate schedules are built by lr_schedules.cc.
#include "src/builder/clip_layers.h"

#include "src/builder/layer_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace layers {

std::string Clip(ProgramBuilder* b, const std::string& x, float lo, float hi,
                 const std::string& name) {
  FLUID_ENFORCE(lo <= hi, "layer 'clip': argument 'min' (", lo,
                ") must not exceed argument 'max' (", hi, ")");
  const proto::VarDesc& v = GetVarDesc(b->main()->blocks(0), x);
  std::string out = b->CreateTmpVar(name.empty() ? "clip" : name, VarDtype(v));
  b->AppendOp(MakeOp("clip", {{"X", {x}}}, {{"Out", {out}}},
                     {{"min", lo}, {"max", hi}}));
  return out;
}

}  // namespace layers

REGISTER_LAYER(clip)
    .Doc("min(max(x, min), max) elementwise; the gradient is 0 outside.")
    .Var("x")
    .Float("min")
    .Float("max")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return layers::Clip(b, a.Var("x"), static_cast<float>(a.Float("min")),
                          static_cast<float>(a.Float("max")), a.String("name"));
    });

}  // namespace fluid
