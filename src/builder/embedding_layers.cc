// The embedding layer (Fluid's fluid.layers.embedding) over the
// lookup_table op.
#include "src/builder/embedding_layers.h"

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace layers {

std::string Embedding(ProgramBuilder* b, const std::string& input,
                      const std::vector<int64_t>& size,
                      const EmbeddingOptions& options,
                      const ParamAttr& param_attr) {
  FLUID_ENFORCE(size.size() == 2 && size[0] > 0 && size[1] > 0,
                "layer 'embedding': argument 'size' must be two positive ints "
                "[vocabulary, width], got ",
                Shape(size));
  FLUID_ENFORCE(options.padding_idx >= -1 && options.padding_idx < size[0],
                "layer 'embedding': argument 'padding_idx' must be -1 (none) ",
                "or in [0, ", size[0], "), got ", options.padding_idx);
  FLUID_ENFORCE(options.dtype == DataType::kFloat32 ||
                    options.dtype == DataType::kFloat64,
                "layer 'embedding': argument 'dtype' must be float32 or "
                "float64, got ",
                DataTypeName(options.dtype));
  const proto::VarDesc& ids = GetVarDesc(b->main()->blocks(0), input);
  FLUID_ENFORCE(VarDtype(ids) == DataType::kInt64,
                "layer 'embedding': ", "argument 'input' ", Quote(input),
                " must be int64 ids, is ", DataTypeName(VarDtype(ids)));
  const std::string layer = b->UniqueName("embedding");
  ParamAttr attr = param_attr;
  if (!attr.has_init) {
    attr.init = Initializer::Of(Initializer::Kind::kXavierUniform);
    attr.has_init = true;
  }
  const Shape shape{size[0], size[1]};
  const std::string w = b->CreateParameter(
      attr.name.empty() ? layer + ".w_0" : attr.name, shape, options.dtype,
      attr, ComputeFans(shape, false), "embedding", "param_attr");
  std::string out = b->CreateTmpVar(layer + ".tmp", options.dtype);
  b->AppendOp(MakeOp("lookup_table", {{"W", {w}}, {"Ids", {input}}},
                     {{"Out", {out}}},
                     {{"is_sparse", options.is_sparse},
                      {"is_distributed", options.is_distributed},
                      {"padding_idx", options.padding_idx}}));
  return out;
}

}  // namespace layers

REGISTER_LAYER(embedding)
    .Doc(
        "Rows of a [vocabulary, width] table picked by int64 ids; "
        "is_sparse: the table's gradient is sparse rows.")
    .Var("input")
    .IntList("size")
    .Bool("is_sparse", false)
    .Bool("is_distributed", false)
    .Int("padding_idx", -1)
    .Param("param_attr")
    .String("dtype", "float32")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      layers::EmbeddingOptions o;
      o.is_sparse = a.Bool("is_sparse");
      o.is_distributed = a.Bool("is_distributed");
      o.padding_idx = a.Int("padding_idx");
      o.dtype = layers::DtypeArg(a, "dtype");
      std::optional<ParamAttr> attr = a.Param("param_attr");
      FLUID_ENFORCE(attr.has_value(), "layer 'embedding': argument ",
                    "'param_attr' cannot be false: the layer cannot go ",
                    "without its table");
      return layers::Embedding(b, a.Var("input"), a.IntList("size"), o, *attr);
    });

}  // namespace fluid
