#include "src/builder/layer_registry.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "src/builder/attention_layers.h"
#include "src/builder/clip_layers.h"
#include "src/builder/control_layers.h"
#include "src/builder/creation_layers.h"
#include "src/builder/crf_layers.h"
#include "src/builder/decode_layers.h"
#include "src/builder/embedding_layers.h"
#include "src/builder/image_layers.h"
#include "src/builder/layers.h"
#include "src/builder/lod_layers.h"
#include "src/builder/metric_layers.h"
#include "src/builder/nn_layers.h"
#include "src/builder/norm_layers.h"
#include "src/builder/recurrent_layers.h"
#include "src/builder/sampled_loss_layers.h"
#include "src/builder/sequence_ops_layers.h"
#include "src/builder/tensor_layers.h"
#include "src/builder/tensor_ops_layers.h"
#include "src/builder/var_layers.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

// A (main, startup) pair with the vars every case below reads.
struct Built {
  proto::ProgramDesc main = NewProgram();
  proto::ProgramDesc startup = NewProgram();
  ProgramBuilder b{&main, &startup, 5};

  // with_table: also a rank table "table" of x's sequences (what the LoD
  // layers read).
  explicit Built(bool with_table = false) {
    layers::Data(&b, "img", Shape{3, 8, 8});
    layers::Data(&b, "x", Shape{10});
    layers::Data(&b, "y", Shape{10});
    layers::Data(&b, "label", Shape{1}, DataType::kInt64);
    layers::Data(&b, "gates", Shape{12});
    layers::Data(&b, "state", Shape{4});
    layers::Data(&b, "prob", Shape{2});
    layers::Data(&b, "score", Shape{1});
    layers::Data(&b, "mask", Shape{10}, DataType::kBool);
    AddVarDesc(main.mutable_blocks(0), "vec", DataType::kFloat32, {5});
    AddVarDesc(main.mutable_blocks(0), "arr", DataType::kFloat32, {-1, 10})
        ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
    proto::VarDesc* transition = AddVarDesc(
        main.mutable_blocks(0), "transition", DataType::kFloat32, {12, 10});
    transition->set_persistable(true);  // a parameter
    transition->set_trainable(true);
    AddVarDesc(main.mutable_blocks(0), "id_arr", DataType::kInt64, {-1, 1})
        ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
    if (!with_table) return;
    AddVarDesc(main.mutable_blocks(0), "table", DataType::kInt64, {-1, 2});
    *main.mutable_blocks(0)->add_ops() =
        MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}});
  }
};

using testing::ErrorThrownBy;

void ExpectError(const std::function<void()>& fn, ErrorCode code,
                 const std::string& message) {
  Error e = ErrorThrownBy(fn);
  EXPECT_EQ(e.code(), code) << e.what();
  EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
      << "message: " << e.what() << "\nexpected to hold: " << message;
}

TEST(LayerRegistry, UnknownLayerListsTheKnownOnes) {
  Built p;
  Error e = ErrorThrownBy([&] { BuildLayer(&p.b, "fully_connected", {}); });
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(e.what()).find(
                "unknown layer 'fully_connected'; known layers: _assign_value, "
                "_lod_append_var, abs, accuracy, "),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find(", fc, "), std::string::npos);
}

TEST(LayerRegistry, ArgumentErrorsNameTheLayerAndTheArgument) {
  Built p;
  auto fc = [&](LayerValues v) {
    return [&p, v] { BuildLayer(&p.b, "fc", v); };
  };
  ExpectError(fc({{"input", "x"}, {"size", int64_t{3}}, {"sise", int64_t{3}}}),
              ErrorCode::kInvalidArgument,
              "layer 'fc': unknown argument 'sise'; its arguments: input, "
              "size, num_flatten_dims, param_attr, bias_attr, act, name");
  ExpectError(fc({{"input", "x"}, {"size", std::string("3")}}),
              ErrorCode::kInvalidArgument,
              "layer 'fc': argument 'size' must be an int, got a string");
  ExpectError(fc({{"input", "x"}}), ErrorCode::kInvalidArgument,
              "layer 'fc': missing argument 'size' (an int)");
  ExpectError(fc({{"input", "x"}, {"size", std::monostate{}}}),
              ErrorCode::kInvalidArgument,
              "layer 'fc': argument 'size' must be an int, got None");
  ExpectError(
      fc({{"input", int64_t{1}}, {"size", int64_t{3}}}),
      ErrorCode::kInvalidArgument,
      "layer 'fc': argument 'input' must be a list of var names, got an "
      "int");
  ExpectError(fc({{"input", "nope"}, {"size", int64_t{3}}}),
              ErrorCode::kNotFound,
              "layer 'fc': argument 'input' names no variable of the "
              "program: 'nope'");
  ExpectError(fc({{"input", "x"}, {"size", int64_t{3}}, {"param_attr", false}}),
              ErrorCode::kInvalidArgument,
              "layer 'fc': argument 'param_attr' cannot be false");
  ExpectError(
      fc({{"input", "x"},
          {"size", int64_t{3}},
          {"num_flatten_dims", int64_t{1} << 40}}),
      ErrorCode::kInvalidArgument,
      "layer 'fc': argument 'num_flatten_dims' is 1099511627776, out of the "
      "32-bit range");
  ExpectError(
      [&] {
        BuildLayer(&p.b, "data",
                   {{"name", "d"},
                    {"shape", std::vector<int64_t>{2}},
                    {"dtype", "int8"}});
      },
      ErrorCode::kInvalidArgument,
      "layer 'data': argument 'dtype': unknown dtype 'int8'");
  // Nothing was appended by the failed calls.
  EXPECT_EQ(p.main.blocks(0).ops_size(), 0);
}

// A layer of every argument kind, in a registry of its own.
LayerSchema& KindsLayer(LayerRegistry* registry) {
  return registry->Register("kinds")
      .Var("v")
      .VarList("vs")
      .Int("i", 7)
      .IntList("is", {1, 2})
      .Float("f", 0.5)
      .Bool("b", true)
      .String("s", "text")
      .Param("p");
}

TEST(LayerArgs, DefaultsFillWhatIsNotGivenOrNone) {
  LayerRegistry registry;
  const LayerSchema& schema = KindsLayer(&registry);
  LayerArgs a(schema, {{"v", "x"},
                       {"vs", std::vector<std::string>{"x", "y"}},
                       {"i", std::monostate{}}});
  EXPECT_EQ(a.layer(), "kinds");
  EXPECT_EQ(a.Var("v"), "x");
  EXPECT_EQ(a.VarList("vs"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a.Int("i"), 7);
  EXPECT_EQ(a.Int32("i"), 7);
  EXPECT_EQ(a.IntList("is"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.Float("f"), 0.5);
  EXPECT_TRUE(a.Bool("b"));
  EXPECT_EQ(a.String("s"), "text");
  ASSERT_TRUE(a.Param("p").has_value());
  EXPECT_TRUE(a.Param("p")->name.empty());
  EXPECT_FALSE(a.Param("p")->has_init);
}

TEST(LayerArgs, CoercionsAFrontEndNeeds) {
  LayerRegistry registry;
  const LayerSchema& schema = KindsLayer(&registry);
  ParamAttr named;
  named.name = "w";
  // An int for a float; an empty list of either kind for any list.
  LayerArgs a(schema, {{"v", "x"},
                       {"vs", std::vector<int64_t>{}},
                       {"is", std::vector<std::string>{}},
                       {"f", int64_t{2}},
                       {"p", named}});
  EXPECT_TRUE(a.VarList("vs").empty());
  EXPECT_TRUE(a.IntList("is").empty());
  EXPECT_EQ(a.Float("f"), 2.0);
  EXPECT_EQ(a.Param("p")->name, "w");
  // An int for a list of one int, a name for a list of one name (Fluid's
  // filter_size=3, fc(input=x)); one param attr for each of a list's.
  LayerArgs one(schema, {{"v", "x"}, {"vs", "y"}, {"is", int64_t{3}}});
  EXPECT_EQ(one.VarList("vs"), std::vector<std::string>{"y"});
  EXPECT_EQ(one.IntList("is"), std::vector<int64_t>{3});
  EXPECT_EQ(a.ParamList("p", 2).size(), 2u);
  EXPECT_EQ(a.ParamList("p", 2)[1].name, "w");
  // A param attr given as a bool: true is the default, false is none.
  LayerValues given = {{"v", "x"}, {"vs", std::vector<std::string>{}}};
  given["p"] = true;
  EXPECT_TRUE(LayerArgs(schema, given).Param("p").has_value());
  given["p"] = false;
  EXPECT_FALSE(LayerArgs(schema, given).Param("p").has_value());
}

TEST(LayerArgs, WrongKindsAreInvalidArguments) {
  LayerRegistry registry;
  const LayerSchema& schema = KindsLayer(&registry);
  auto bind = [&schema](const std::string& name, LayerValue v) {
    return [&schema, name, v] {
      LayerValues given = {{"v", "x"}, {"vs", std::vector<std::string>{}}};
      given[name] = v;
      LayerArgs args(schema, given);
    };
  };
  ExpectError(bind("b", int64_t{1}), ErrorCode::kInvalidArgument,
              "layer 'kinds': argument 'b' must be a bool, got an int");
  ExpectError(bind("f", "1.5"), ErrorCode::kInvalidArgument,
              "layer 'kinds': argument 'f' must be a float, got a string");
  ExpectError(bind("vs", std::vector<int64_t>{1}), ErrorCode::kInvalidArgument,
              "argument 'vs' must be a list of var names, got a list of ints");
  ExpectError(bind("is", std::vector<std::string>{"a"}),
              ErrorCode::kInvalidArgument,
              "argument 'is' must be a list of ints, got a list of strings");
  ExpectError(bind("p", 1.0), ErrorCode::kInvalidArgument,
              "argument 'p' must be a param attr or a bool, got a float");
  ExpectError(bind("s", ParamAttr{}), ErrorCode::kInvalidArgument,
              "argument 's' must be a string, got a param attr");
}

TEST(LayerArgs, ReadingAnUndeclaredArgumentIsARegistrationMistake) {
  LayerRegistry registry;
  const LayerSchema& schema = KindsLayer(&registry);
  LayerArgs a(schema, {{"v", "x"}, {"vs", std::vector<std::string>{}}});
  ExpectError([&] { a.Int("s"); }, ErrorCode::kInternal,
              "layer 'kinds' reads argument 's' as int but declares it "
              "string");
  ExpectError([&] { a.Var("w"); }, ErrorCode::kInternal,
              "layer 'kinds' reads argument 'w', which it does not declare");
}

TEST(LayerRegistry, RefusesDuplicatesAndLayersWithoutABuild) {
  LayerRegistry registry;
  KindsLayer(&registry);
  ExpectError([&] { registry.Register("kinds"); }, ErrorCode::kAlreadyExists,
              "layer 'kinds' is registered twice");
  ExpectError([&] { registry.Register("dup").Int("a").Bool("a"); },
              ErrorCode::kAlreadyExists,
              "layer 'dup' declares argument 'a' twice");
  Built p;
  ExpectError(
      [&] {
        registry.Get("kinds").Build(
            &p.b, {{"v", "x"}, {"vs", std::vector<std::string>{}}});
      },
      ErrorCode::kInternal, "layer 'kinds' has no build function");
  EXPECT_TRUE(registry.Has("dup"));
  EXPECT_EQ(registry.Types(), (std::vector<std::string>{"dup", "kinds"}));
}

TEST(LayerRegistry, ALayerMayHaveSeveralOutputs) {
  LayerRegistry registry;
  registry.Register("twice").Var("x").SetBuild(
      [](ProgramBuilder* b, const LayerArgs& a) {
        return std::vector<std::string>{layers::Relu(b, a.Var("x")),
                                        layers::Tanh(b, a.Var("x"))};
      });
  Built p;
  std::vector<std::string> out =
      registry.Get("twice").Build(&p.b, {{"x", "x"}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(p.main.blocks(0).ops(0).type(), "relu");
  EXPECT_EQ(OpOutput(p.main.blocks(0).ops(1), "Out"),
            std::vector<std::string>{out[1]});
}

// ---- each registered layer builds what its typed function builds ----

struct LayerCase {
  std::string type;
  LayerValues values;
  std::function<std::string(ProgramBuilder*)> typed;
};

using Ints = std::vector<int64_t>;

// Layers with parameters or attributes.
std::vector<LayerCase> ConfiguredLayerCases() {
  ParamAttr half(Initializer::Constant(0.5f));
  half.name = "w_half";
  return {
      {"data",
       {{"name", "d"},
        {"shape", Ints{2, 3}},
        {"dtype", "float64"},
        {"append_batch_size", false}},
       [](ProgramBuilder* b) {
         return layers::Data(b, "d", Shape{2, 3}, DataType::kFloat64, false);
       }},
      {"fc",
       {{"input", "x"}, {"size", int64_t{4}}},
       [](ProgramBuilder* b) { return layers::Fc(b, "x", 4); }},
      {"fc",
       {{"input", "img"},
        {"size", int64_t{5}},
        {"act", "relu"},
        {"num_flatten_dims", int64_t{2}},
        {"param_attr", half},
        {"bias_attr", false}},
       [half](ProgramBuilder* b) {
         return layers::Fc(b, "img", 5, "relu", 2, half, {}, false);
       }},
      {"conv2d",
       {{"input", "img"},
        {"num_filters", int64_t{4}},
        {"filter_size", int64_t{3}},
        {"stride", int64_t{2}},
        {"padding", int64_t{1}},
        {"act", "tanh"},
        {"bias_attr", half}},
       [half](ProgramBuilder* b) {
         return layers::Conv2d(b, "img", 4, 3, 2, 1, "tanh", {}, half);
       }},
      {"pool2d",
       {{"input", "img"},
        {"pool_size", int64_t{2}},
        {"pool_type", "avg"},
        {"pool_stride", int64_t{2}},
        {"global_pooling", true}},
       [](ProgramBuilder* b) {
         return layers::Pool2d(b, "img", 2, "avg", 2, 0, true);
       }},
      {"batch_norm",
       {{"input", "img"}},
       [](ProgramBuilder* b) { return layers::BatchNorm(b, "img"); }},
      {"batch_norm",
       {{"input", "x"},
        {"act", "relu"},
        {"momentum", 0.5},
        {"epsilon", 0.25},
        {"param_attr", half},
        {"name", "bn"},
        {"moving_mean_name", "mm"},
        {"moving_variance_name", "mv"},
        {"use_global_stats", true},
        {"sync_stats", true}},
       [half](ProgramBuilder* b) {
         layers::BatchNormOptions o;
         o.act = "relu";
         o.momentum = 0.5f;
         o.epsilon = 0.25f;
         o.scale = half;
         o.name = "bn";
         o.moving_mean_name = "mm";
         o.moving_variance_name = "mv";
         o.use_global_stats = true;
         o.sync_stats = true;
         return layers::BatchNorm(b, "x", o);
       }},
      {"dropout",
       {{"x", "x"}, {"dropout_prob", 0.5}},
       [](ProgramBuilder* b) { return layers::Dropout(b, "x", 0.5f); }},
      {"dropout",
       {{"x", "img"},
        {"dropout_prob", 0.25},
        {"is_test", true},
        {"seed", int64_t{7}},
        {"name", "drop"},
        {"dropout_implementation", "upscale_in_train"}},
       [](ProgramBuilder* b) {
         return layers::Dropout(b, "img", 0.25f, true, 7, "drop",
                                "upscale_in_train");
       }},
      {"create_parameter",
       {{"shape", Ints{3, 4}}, {"dtype", "float32"}},
       [](ProgramBuilder* b) {
         return layers::CreateParameter(b, {3, 4}, DataType::kFloat32);
       }},
      {"create_parameter",
       {{"shape", Ints{4}},
        {"dtype", "float64"},
        {"name", "bias"},
        {"is_bias", true},
        {"default_initializer", half}},
       [half](ProgramBuilder* b) {
         return layers::CreateParameter(b, {4}, DataType::kFloat64, "bias", {},
                                        true, half);
       }},
      {"create_global_var",
       {{"shape", Ints{1}},
        {"value", 2.0},
        {"dtype", "int64"},
        {"persistable", true},
        {"name", "g"}},
       [](ProgramBuilder* b) {
         return layers::CreateGlobalVar(b, {1}, 2.0f, DataType::kInt64, true,
                                        "g");
       }},
      {"create_global_var",
       {{"shape", Ints{2}}, {"value", 0.5}, {"dtype", "float32"}},
       [](ProgramBuilder* b) {
         return layers::CreateGlobalVar(b, {2}, 0.5f, DataType::kFloat32);
       }},
      {"create_tensor",
       {{"dtype", "int64"}},
       [](ProgramBuilder* b) {
         return layers::CreateTensor(b, DataType::kInt64);
       }},
      {"create_tensor",
       {{"dtype", "float32"}, {"name", "t"}},
       [](ProgramBuilder* b) {
         return layers::CreateTensor(b, DataType::kFloat32, "t");
       }},
  };
}

std::vector<LayerCase> OpLayerCases() {
  return {
      {"relu",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Relu(b, "x"); }},
      {"sigmoid",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Sigmoid(b, "x"); }},
      {"tanh",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Tanh(b, "x"); }},
      {"leaky_relu",
       {{"x", "x"}, {"alpha", 0.25}, {"name", "lr"}},
       [](ProgramBuilder* b) {
         return layers::LeakyRelu(b, "x", 0.25f, "lr");
       }},
      {"leaky_relu",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::LeakyRelu(b, "x"); }},
      {"elu",
       {{"x", "x"}, {"alpha", 0.5}},
       [](ProgramBuilder* b) { return layers::Elu(b, "x", 0.5f); }},
      {"relu6",
       {{"x", "x"}, {"threshold", 3.0}},
       [](ProgramBuilder* b) { return layers::Relu6(b, "x", 3.0f); }},
      {"exp",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Exp(b, "x"); }},
      {"log",
       {{"x", "x"}, {"name", "logx"}},
       [](ProgramBuilder* b) { return layers::Log(b, "x", "logx"); }},
      {"sqrt",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Sqrt(b, "x"); }},
      {"square",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Square(b, "x"); }},
      {"abs",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Abs(b, "x"); }},
      {"pow",
       {{"x", "x"}, {"factor", int64_t{3}}},
       [](ProgramBuilder* b) { return layers::Pow(b, "x", 3.0f); }},
      {"softplus",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Softplus(b, "x"); }},
      {"softsign",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Softsign(b, "x"); }},
      {"brelu",
       {{"x", "x"}, {"t_min", -1.0}, {"t_max", 2.0}},
       [](ProgramBuilder* b) { return layers::BRelu(b, "x", -1.0f, 2.0f); }},
      {"softmax",
       {{"input", "x"}},
       [](ProgramBuilder* b) { return layers::Softmax(b, "x"); }},
      {"softmax",
       {{"input", "img"}, {"axis", int64_t{1}}, {"name", "p"}},
       [](ProgramBuilder* b) { return layers::Softmax(b, "img", 1, "p"); }},
      {"softmax_with_cross_entropy",
       {{"logits", "x"}, {"label", "label"}},
       [](ProgramBuilder* b) {
         return layers::SoftmaxWithCrossEntropy(b, "x", "label");
       }},
      {"cross_entropy",
       {{"input", "x"}, {"label", "label"}},
       [](ProgramBuilder* b) { return layers::CrossEntropy(b, "x", "label"); }},
      {"mean",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::Mean(b, "x"); }},
      {"accuracy",
       {{"input", "x"}, {"label", "label"}},
       [](ProgramBuilder* b) { return layers::Accuracy(b, "x", "label"); }},
      {"reshape",
       {{"x", "img"}, {"shape", Ints{-1, 192}}},
       [](ProgramBuilder* b) {
         return layers::Reshape(b, "img", {-1, 192});
       }},
      {"scale",
       {{"x", "x"},
        {"scale", 2.5},
        {"bias", -1.0},
        {"bias_after_scale", false}},
       [](ProgramBuilder* b) {
         return layers::Scale(b, "x", 2.5f, -1.0f, false);
       }},
      {"fill_constant",
       {{"shape", Ints{1}}, {"dtype", "float64"}, {"value", 3.0}},
       [](ProgramBuilder* b) {
         return layers::FillConstant(b, {1}, DataType::kFloat64, 3.0f);
       }},
      {"elementwise_add",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"act", "sigmoid"}},
       [](ProgramBuilder* b) {
         return layers::ElementwiseAdd(b, "x", "y", 0, "sigmoid");
       }},
      {"elementwise_sub",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_sub", "x", "y", 0, "", "e");
       }},
      {"elementwise_mul",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_mul", "x", "y", 0, "", "e");
       }},
      {"elementwise_div",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_div", "x", "y", 0, "", "e");
       }},
      {"elementwise_max",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_max", "x", "y", 0, "", "e");
       }},
      {"elementwise_min",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_min", "x", "y", 0, "", "e");
       }},
      {"elementwise_pow",
       {{"x", "x"}, {"y", "y"}, {"axis", int64_t{0}}, {"name", "e"}},
       [](ProgramBuilder* b) {
         return layers::Elementwise(b, "elementwise_pow", "x", "y", 0, "", "e");
       }},
      {"clip",
       {{"x", "x"}, {"min", -0.5}, {"max", 2.0}, {"name", "c"}},
       [](ProgramBuilder* b) {
         return layers::Clip(b, "x", -0.5f, 2.0f, "c");
       }},
  };
}

// act= takes every activation the activation layers offer, with the op's
// default attributes; an unknown one names the layer, the argument and the
// known activations, and appends nothing.
TEST(LayerRegistry, ActNamesAnyKnownActivation) {
  for (const std::string& act : layers::KnownActivations()) {
    SCOPED_TRACE(act);
    Built p;
    BuildLayer(&p.b, "fc",
               {{"input", "x"}, {"size", int64_t{3}}, {"act", act}});
    const proto::BlockDesc& block = p.main.blocks(0);
    ASSERT_GE(block.ops_size(), 1);
    const proto::OpDesc& last = block.ops(block.ops_size() - 1);
    EXPECT_EQ(last.type(), act);
    // None of the op's own attrs is set: it runs with their defaults.
    for (const AttrSpec& spec : OpRegistry::Global().Get(act).attrs())
      for (const auto& attr : last.attrs()) EXPECT_NE(attr.name(), spec.name);
  }
  for (const std::string layer : {"fc", "conv2d"}) {
    Built p;
    LayerValues values = {{"input", layer == "fc" ? "x" : "img"},
                          {"act", "swish"}};
    if (layer == "fc") {
      values["size"] = int64_t{3};
    } else {
      values["num_filters"] = int64_t{2};
      values["filter_size"] = int64_t{3};
    }
    ExpectError([&] { BuildLayer(&p.b, layer, values); },
                ErrorCode::kInvalidArgument,
                "layer '" + layer +
                    "': argument 'act': unknown activation 'swish'; known: "
                    "abs, brelu, elu, exp, gelu, leaky_relu, log, pow, relu, "
                    "relu6, sigmoid, softmax, softplus, softsign, sqrt, "
                    "square, tanh");
    EXPECT_EQ(p.main.blocks(0).ops_size(), 0) << layer;
    EXPECT_EQ(p.startup.blocks(0).ops_size(), 0) << layer;
  }
}

// The tensor layers (tensor_layers.h) with one output.
std::vector<LayerCase> TensorLayerCases() {
  using Names = std::vector<std::string>;
  return {
      {"concat",
       {{"input", Names{"x", "y"}}, {"axis", int64_t{1}}, {"name", "c"}},
       [](ProgramBuilder* b) {
         return layers::Concat(b, {"x", "y"}, 1, "c");
       }},
      {"transpose",
       {{"x", "img"}, {"perm", Ints{0, 2, 3, 1}}},
       [](ProgramBuilder* b) {
         return layers::Transpose(b, "img", {0, 2, 3, 1});
       }},
      {"flatten",
       {{"x", "img"}, {"axis", int64_t{2}}},
       [](ProgramBuilder* b) { return layers::Flatten(b, "img", 2); }},
      {"sums",
       {{"input", Names{"x", "y"}}, {"out", "y"}},
       [](ProgramBuilder* b) {
         return layers::Sums(b, {"x", "y"}, "y");
       }},
      {"matmul",
       {{"x", "x"},
        {"y", "y"},
        {"transpose_y", true},
        {"alpha", 0.5},
        {"name", "m"}},
       [](ProgramBuilder* b) {
         return layers::Matmul(b, "x", "y", false, true, 0.5f, "m");
       }},
      {"mul",
       {{"x", "img"}, {"y", "x"}, {"x_num_col_dims", int64_t{3}}},
       [](ProgramBuilder* b) { return layers::Mul(b, "img", "x", 3, 1); }},
      {"cast",
       {{"x", "label"}, {"dtype", "float64"}},
       [](ProgramBuilder* b) {
         return layers::Cast(b, "label", DataType::kFloat64);
       }},
      {"assign",
       {{"input", "x"}, {"output", "y"}},
       [](ProgramBuilder* b) { return layers::Assign(b, "x", "y"); }},
      {"_assign_value",
       {{"values", "1.5 -2 0.25"}, {"shape", Ints{3}}, {"dtype", "float32"}},
       [](ProgramBuilder* b) {
         return layers::AssignValue(b, "1.5 -2 0.25", {3}, DataType::kFloat32);
       }},
      {"one_hot",
       {{"input", "label"}, {"depth", int64_t{4}}},
       [](ProgramBuilder* b) { return layers::OneHot(b, "label", 4); }},
      {"argmax",
       {{"x", "img"}, {"axis", int64_t{-1}}},
       [](ProgramBuilder* b) { return layers::ArgMax(b, "img", -1); }},
      {"square_error_cost",
       {{"input", "x"}, {"label", "y"}},
       [](ProgramBuilder* b) { return layers::SquareErrorCost(b, "x", "y"); }},
      {"sigmoid_cross_entropy_with_logits",
       {{"x", "x"},
        {"label", "y"},
        {"ignore_index", int64_t{-1}},
        {"normalize", true}},
       [](ProgramBuilder* b) {
         return layers::SigmoidCrossEntropyWithLogits(b, "x", "y", -1, "",
                                                      true);
       }},
      {"embedding",
       {{"input", "label"},
        {"size", Ints{50, 8}},
        {"is_sparse", true},
        {"padding_idx", int64_t{3}}},
       [](ProgramBuilder* b) {
         layers::EmbeddingOptions o;
         o.is_sparse = true;
         o.padding_idx = 3;
         return layers::Embedding(b, "label", {50, 8}, o);
       }},
  };
}

// The attention layers (attention_layers.h).
std::vector<LayerCase> AttentionLayerCases() {
  return {
      {"layer_norm",
       {{"input", "img"}, {"begin_norm_axis", int64_t{2}}, {"epsilon", 1e-3}},
       [](ProgramBuilder* b) {
         layers::LayerNormOptions o;
         o.begin_norm_axis = 2;
         o.epsilon = 1e-3f;
         return layers::LayerNorm(b, "img", o);
       }},
      {"gelu",
       {{"x", "x"}, {"approximate", true}},
       [](ProgramBuilder* b) { return layers::Gelu(b, "x", true); }},
      {"fill_constant_batch_size_like",
       {{"input", "x"},
        {"shape", Ints{-1, 3}},
        {"dtype", "int64"},
        {"value", 2.0},
        {"output_dim_idx", int64_t{0}}},
       [](ProgramBuilder* b) {
         return layers::FillConstantBatchSizeLike(b, "x", {-1, 3},
                                                  DataType::kInt64, 2.0f);
       }},
      {"causal_attention_mask",
       {{"seq_len", int64_t{4}}, {"dtype", "float64"}},
       [](ProgramBuilder* b) {
         return layers::CausalAttentionMask(b, 4, DataType::kFloat64);
       }},
  };
}

// The tensor layers with several outputs.
// The control-flow layers of one block (src/builder/control_layers.cc).
std::vector<LayerCase> ControlLayerCases() {
  std::vector<LayerCase> cases;
  for (const char* type : {"less_than", "less_equal", "greater_than",
                           "greater_equal", "equal", "not_equal"}) {
    cases.push_back({type, {{"x", "x"}, {"y", "y"}}, [type](ProgramBuilder* b) {
                       return layers::Compare(b, type, "x", "y", "");
                     }});
  }
  for (const char* type : {"logical_and", "logical_or", "logical_xor"}) {
    cases.push_back(
        {type, {{"x", "mask"}, {"y", "mask"}}, [type](ProgramBuilder* b) {
           return layers::Logical(b, type, "mask", "mask", "");
         }});
  }
  cases.push_back({"logical_not", {{"x", "mask"}}, [](ProgramBuilder* b) {
                     return layers::Logical(b, "logical_not", "mask", "", "");
                   }});
  cases.push_back({"is_empty", {{"x", "x"}}, [](ProgramBuilder* b) {
                     return layers::IsEmpty(b, "x", "");
                   }});
  cases.push_back({"increment",
                   {{"x", "label"}, {"value", 2.0}, {"in_place", false}},
                   [](ProgramBuilder* b) {
                     return layers::Increment(b, "label", 2.0, false);
                   }});
  cases.push_back(
      {"create_array", {{"dtype", "float64"}}, [](ProgramBuilder* b) {
         return layers::CreateArray(b, DataType::kFloat64);
       }});
  cases.push_back(
      {"array_write", {{"x", "x"}, {"i", "label"}}, [](ProgramBuilder* b) {
         return layers::ArrayWrite(b, "x", "label", "");
       }});
  cases.push_back(
      {"array_read", {{"array", "arr"}, {"i", "label"}}, [](ProgramBuilder* b) {
         return layers::ArrayRead(b, "arr", "label");
       }});
  cases.push_back({"array_length", {{"array", "arr"}}, [](ProgramBuilder* b) {
                     return layers::ArrayLength(b, "arr");
                   }});
  return cases;
}

// The layers of loops over sequences (src/builder/lod_layers.cc).
std::vector<LayerCase> LoDLayerCases() {
  return {
      {"lod_rank_table",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::LoDRankTableLayer(b, "x", 0); }},
      {"max_sequence_len",
       {{"rank_table", "table"}},
       [](ProgramBuilder* b) { return layers::MaxSequenceLen(b, "table"); }},
      {"lod_tensor_to_array",
       {{"x", "x"}, {"table", "table"}},
       [](ProgramBuilder* b) {
         return layers::LoDTensorToArray(b, "x", "table");
       }},
      {"array_to_lod_tensor",
       {{"x", "arr"}, {"table", "table"}},
       [](ProgramBuilder* b) {
         return layers::ArrayToLoDTensor(b, "arr", "table");
       }},
      {"shrink_memory",
       {{"x", "state"}, {"i", "label"}, {"table", "table"}},
       [](ProgramBuilder* b) {
         return layers::ShrinkMemory(b, "state", "label", "table");
       }},
      {"reorder_lod_tensor_by_rank",
       {{"x", "x"}, {"rank_table", "table"}},
       [](ProgramBuilder* b) {
         return layers::ReorderLoDTensorByRank(b, "x", "table");
       }},
      {"lod_reset",
       {{"x", "x"}, {"target_lod", Ints{0, 2, 5}}},
       [](ProgramBuilder* b) {
         return layers::LoDReset(b, "x", "", {0, 2, 5});
       }},
      {"lod_reset",
       {{"x", "x"}, {"y", "label"}},
       [](ProgramBuilder* b) { return layers::LoDReset(b, "x", "label", {}); }},
      {"lod_append",
       {{"x", "x"}, {"level", Ints{0, 1, 3}}},
       [](ProgramBuilder* b) {
         return layers::LoDAppend(b, "x", {0, 1, 3});
       }},
      {"_lod_append_var",
       {{"x", "x"}, {"level", "label"}},
       [](ProgramBuilder* b) {
         return layers::LoDAppend(b, "x", {}, "label");
       }},
  };
}

// The LoD layers that read the rank table "table".
bool ReadsRankTable(const std::string& type) {
  return type == "max_sequence_len" || type == "lod_tensor_to_array" ||
         type == "array_to_lod_tensor" || type == "shrink_memory" ||
         type == "reorder_lod_tensor_by_rank";
}

// The sequence layers (src/builder/sequence_ops_layers.cc).
std::vector<LayerCase> SequenceLayerCases() {
  layers::SequenceConvOptions conv;
  conv.filter_size = 5;
  conv.act = "relu";
  return {
      {"sequence_pool",
       {{"input", "x"}, {"pool_type", "max"}, {"pad_value", 1.5}},
       [](ProgramBuilder* b) {
         return layers::SequencePool(b, "x", "max", false, 1.5f);
       }},
      {"sequence_first_step",
       {{"input", "x"}},
       [](ProgramBuilder* b) { return layers::SequenceFirstStep(b, "x"); }},
      {"sequence_last_step",
       {{"input", "x"}},
       [](ProgramBuilder* b) { return layers::SequenceLastStep(b, "x"); }},
      {"sequence_softmax",  // one value per row: label's shape [-1, 1]
       {{"input", "label"}},
       [](ProgramBuilder* b) { return layers::SequenceSoftmax(b, "label"); }},
      {"sequence_expand",
       {{"x", "x"}, {"y", "y"}},
       [](ProgramBuilder* b) { return layers::SequenceExpand(b, "x", "y"); }},
      {"sequence_mask",
       {{"x", "label"}, {"maxlen", int64_t{7}}, {"dtype", "float32"}},
       [](ProgramBuilder* b) {
         return layers::SequenceMask(b, "label", 7, DataType::kFloat32);
       }},
      {"sequence_unpad",
       {{"x", "img"}, {"length", "label"}},
       [](ProgramBuilder* b) {
         return layers::SequenceUnpad(b, "img", "label");
       }},
      {"sequence_conv",
       {{"input", "x"},
        {"num_filters", int64_t{4}},
        {"filter_size", int64_t{5}},
        {"act", "relu"}},
       [conv](ProgramBuilder* b) {
         return layers::SequenceConv(b, "x", 4, conv);
       }},
  };
}

struct MultiOutputLayerCase {
  std::string type;
  LayerValues values;
  std::function<std::vector<std::string>(ProgramBuilder*)> typed;
};

std::vector<MultiOutputLayerCase> MultiOutputLayerCases() {
  return {
      {"auc",
       {{"input", "prob"},
        {"label", "label"},
        {"num_thresholds", int64_t{200}},
        {"slide_steps", int64_t{3}}},
       [](ProgramBuilder* b) {
         layers::AucVars v = layers::Auc(b, "prob", "label", "ROC", 200, 1, 3);
         return std::vector<std::string>{
             v.auc,      v.batch_auc, v.batch_stat_pos, v.batch_stat_neg,
             v.stat_pos, v.stat_neg};
       }},
      {"chunk_eval",
       {{"input", "label"},
        {"label", "label"},
        {"chunk_scheme", "IOBES"},
        {"num_chunk_types", int64_t{3}},
        {"excluded_chunk_types", Ints{1}}},
       [](ProgramBuilder* b) {
         layers::ChunkEvalVars v =
             layers::ChunkEval(b, "label", "label", "IOBES", 3, {1});
         return std::vector<std::string>{
             v.precision,        v.recall,           v.f1_score,
             v.num_infer_chunks, v.num_label_chunks, v.num_correct_chunks};
       }},
      {"split",
       {{"input", "img"},
        {"num_or_sections", Ints{1, -1}},
        {"dim", int64_t{2}}},
       [](ProgramBuilder* b) {
         return layers::Split(b, "img", {1, -1}, 2);
       }},
      {"topk",
       {{"input", "x"}, {"k", int64_t{3}}},
       [](ProgramBuilder* b) { return layers::TopK(b, "x", 3); }},
      {"sequence_pad",
       {{"x", "x"}, {"pad_value", "y"}},
       [](ProgramBuilder* b) { return layers::SequencePad(b, "x", "y"); }},
      {"dynamic_lstm",
       {{"input", "gates"}, {"size", int64_t{12}}, {"is_reverse", true}},
       [](ProgramBuilder* b) {
         layers::DynamicLstmOptions o;
         o.is_reverse = true;
         return layers::DynamicLstm(b, "gates", 12, o);
       }},
      {"dynamic_gru",
       {{"input", "gates"}, {"size", int64_t{4}}, {"h_0", "state"}},
       [](ProgramBuilder* b) {
         layers::DynamicGruOptions o;
         o.h_0 = "state";
         return std::vector<std::string>{layers::DynamicGru(b, "gates", 4, o)};
       }},
      {"lstm_unit",
       {{"x_t", "x"},
        {"hidden_t_prev", "y"},
        {"cell_t_prev", "y"},
        {"forget_bias", 1.0}},
       [](ProgramBuilder* b) {
         return layers::LstmUnit(b, "x", "y", "y", 1.0f);
       }},
      {"gru_unit",
       {{"input", "gates"},
        {"hidden", "state"},
        {"size", int64_t{12}},
        {"origin_mode", true}},
       [](ProgramBuilder* b) {
         layers::DynamicGruOptions o;
         o.origin_mode = true;
         return layers::GruUnit(b, "gates", "state", 12, o);
       }},
  };
}

// The layers of src/builder/nn_layers.cc and creation_layers.cc.
std::vector<LayerCase> NnAndCreationLayerCases() {
  layers::GroupNormOptions gn;
  gn.groups = 3;
  gn.act = "relu";
  layers::RandomFill gauss;
  gauss.gaussian = true;
  gauss.a = 0.0f;
  gauss.b = 2.0f;
  gauss.dtype = DataType::kFloat64;
  layers::RandomFill uniform;
  uniform.seed = 3;
  return {
      {"cos_sim",
       {{"X", "x"}, {"Y", "y"}},
       [](ProgramBuilder* b) { return layers::CosSim(b, "x", "y"); }},
      {"l2_normalize",
       {{"x", "x"}, {"axis", int64_t{1}}, {"epsilon", 1e-6}},
       [](ProgramBuilder* b) { return layers::L2Normalize(b, "x", 1, 1e-6f); }},
      {"prelu",
       {{"x", "img"}, {"mode", "channel"}},
       [](ProgramBuilder* b) { return layers::Prelu(b, "img", "channel"); }},
      {"smooth_l1",
       {{"x", "x"},
        {"y", "y"},
        {"inside_weight", "x"},
        {"outside_weight", "y"},
        {"sigma", 2.0}},
       [](ProgramBuilder* b) {
         return layers::SmoothL1(b, "x", "y", "x", "y", 2.0f);
       }},
      {"group_norm",
       {{"input", "img"}, {"groups", int64_t{3}}, {"act", "relu"}},
       [gn](ProgramBuilder* b) { return layers::GroupNorm(b, "img", gn); }},
      {"zeros",
       {{"shape", Ints{2, 3}}, {"dtype", "int64"}},
       [](ProgramBuilder* b) {
         return layers::FillConstant(b, {2, 3}, DataType::kInt64, 0.0f);
       }},
      {"ones",
       {{"shape", Ints{4}}, {"dtype", "float32"}, {"force_cpu", true}},
       [](ProgramBuilder* b) {
         return layers::FillConstant(b, {4}, DataType::kFloat32, 1.0f);
       }},
      {"ones_like",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::FillLike(b, "x", 1.0f); }},
      {"zeros_like",
       {{"x", "x"}, {"out", "y"}},
       [](ProgramBuilder* b) { return layers::FillLike(b, "x", 0.0f, "y"); }},
      {"uniform_random",
       {{"shape", Ints{2, 3}}, {"seed", int64_t{3}}},
       [uniform](ProgramBuilder* b) {
         return layers::RandomTensor(b, {2, 3}, uniform);
       }},
      {"gaussian_random",
       {{"shape", Ints{4}}, {"std", 2.0}, {"dtype", "float64"}},
       [gauss](ProgramBuilder* b) {
         return layers::RandomTensor(b, {4}, gauss);
       }},
      {"uniform_random_batch_size_like",
       {{"input", "x"}, {"shape", Ints{-1, 3}}, {"seed", int64_t{3}}},
       [uniform](ProgramBuilder* b) {
         return layers::RandomBatchSizeLike(b, "x", {-1, 3}, 0, 0, uniform);
       }},
      {"gaussian_random_batch_size_like",
       {{"input", "x"},
        {"shape", Ints{2, -1}},
        {"output_dim_idx", int64_t{1}},
        {"std", 2.0},
        {"dtype", "float64"}},
       [gauss](ProgramBuilder* b) {
         return layers::RandomBatchSizeLike(b, "x", {2, -1}, 0, 1, gauss);
       }},
      {"range",
       {{"start", 1.0}, {"end", 7.0}, {"step", 2.0}, {"dtype", "int64"}},
       [](ProgramBuilder* b) {
         return layers::Range(b, 1, 7, 2, DataType::kInt64);
       }},
      {"linspace",
       {{"start", 0.0},
        {"stop", 1.0},
        {"num", int64_t{4}},
        {"dtype", "float64"}},
       [](ProgramBuilder* b) {
         return layers::Linspace(b, 0, 1, 4, DataType::kFloat64);
       }},
      {"eye",
       {{"num_rows", int64_t{3}}, {"batch_shape", Ints{2}}},
       [](ProgramBuilder* b) {
         return layers::Eye(b, 3, -1, {2}, DataType::kFloat32);
       }},
      {"diag",
       {{"diagonal", "vec"}},
       [](ProgramBuilder* b) { return layers::Diag(b, "vec"); }},
      {"has_inf",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::FiniteTest(b, "isinf", "x"); }},
      {"has_nan",
       {{"x", "x"}},
       [](ProgramBuilder* b) { return layers::FiniteTest(b, "isnan", "x"); }},
      {"isfinite",
       {{"x", "x"}},
       [](ProgramBuilder* b) {
         return layers::FiniteTest(b, "isfinite", "x");
       }},
  };
}
// conv2d_transpose and the resizes (image_layers.h).
std::vector<LayerCase> ImageLayerCases() {
  layers::Conv2dTransposeWindow sized;
  sized.output_size = {16};
  sized.filter_size = {3};
  sized.stride = {2};
  sized.padding = {1};
  layers::Conv2dTransposeWindow derived;
  derived.output_size = {10};
  derived.groups = 3;
  layers::ResizeSpec nearest;
  nearest.resample = "NEAREST";
  nearest.out_shape = {5, 6};
  nearest.align_corners = false;
  layers::ResizeSpec half_pixel;
  half_pixel.scale = 2.0;
  half_pixel.align_corners = false;
  half_pixel.align_mode = 0;
  layers::ResizeSpec small;
  small.resample = "NEAREST";
  small.out_shape = {4, 4};
  return {
      {"conv2d_transpose",
       {{"input", "img"},
        {"num_filters", int64_t{4}},
        {"output_size", int64_t{16}},
        {"filter_size", int64_t{3}},
        {"stride", int64_t{2}},
        {"padding", int64_t{1}},
        {"act", "relu"}},
       [sized](ProgramBuilder* b) {
         return layers::Conv2dTranspose(b, "img", 4, sized, "relu");
       }},
      {"conv2d_transpose",
       {{"input", "img"},
        {"num_filters", int64_t{6}},
        {"output_size", Ints{10, 10}},
        {"groups", int64_t{3}},
        {"bias_attr", false}},
       [derived](ProgramBuilder* b) {
         return layers::Conv2dTranspose(b, "img", 6, derived, "", {}, {},
                                        false);
       }},
      {"image_resize",
       {{"input", "img"},
        {"out_shape", Ints{5, 6}},
        {"resample", "NEAREST"},
        {"align_corners", false}},
       [nearest](ProgramBuilder* b) {
         return layers::ImageResize(b, "img", nearest);
       }},
      {"resize_bilinear",
       {{"input", "img"},
        {"scale", 2.0},
        {"name", "up"},
        {"align_corners", false},
        {"align_mode", int64_t{0}}},
       [half_pixel](ProgramBuilder* b) {
         return layers::ImageResize(b, "img", half_pixel, "up");
       }},
      {"resize_nearest",
       {{"input", "img"}, {"out_shape", Ints{4, 4}}},
       [small](ProgramBuilder* b) {
         return layers::ImageResize(b, "img", small);
       }},
      {"image_resize_short",
       {{"input", "img"}, {"out_short_len", int64_t{4}}},
       [](ProgramBuilder* b) { return layers::ImageResizeShort(b, "img", 4); }},
  };
}

// nce and hsigmoid (sampled_loss_layers.h).
std::vector<LayerCase> SampledLossLayerCases() {
  layers::NceOptions sparse;
  sparse.num_neg_samples = 3;
  sparse.sampler = "log_uniform";
  sparse.seed = 4;
  sparse.is_sparse = true;
  layers::NceOptions custom;
  custom.has_bias = false;
  custom.sampler = "custom_dist";
  custom.custom_dist = {0.25, 0.25, 0.5};
  layers::HsigmoidOptions tree;
  tree.path_table = "label";
  tree.path_code = "label";
  tree.is_custom = true;
  tree.is_sparse = true;
  return {
      {"nce",
       {{"input", "x"},
        {"label", "label"},
        {"num_total_classes", int64_t{7}},
        {"num_neg_samples", int64_t{3}},
        {"sampler", "log_uniform"},
        {"seed", int64_t{4}},
        {"is_sparse", true}},
       [sparse](ProgramBuilder* b) {
         return layers::Nce(b, "x", "label", 7, sparse);
       }},
      {"nce",
       {{"input", "x"},
        {"label", "label"},
        {"num_total_classes", int64_t{3}},
        {"bias_attr", false},
        {"sampler", "custom_dist"},
        {"custom_dist", "0.25 0.25 0.5"}},
       [custom](ProgramBuilder* b) {
         return layers::Nce(b, "x", "label", 3, custom);
       }},
      {"hsigmoid",
       {{"input", "x"}, {"label", "label"}, {"num_classes", int64_t{6}}},
       [](ProgramBuilder* b) { return layers::Hsigmoid(b, "x", "label", 6); }},
      {"hsigmoid",
       {{"input", "x"},
        {"label", "label"},
        {"num_classes", int64_t{4}},
        {"path_table", "label"},
        {"path_code", "label"},
        {"is_custom", true},
        {"is_sparse", true}},
       [tree](ProgramBuilder* b) {
         return layers::Hsigmoid(b, "x", "label", 4, tree);
       }},
  };
}

// The reduction and data-movement layers (tensor_ops_layers.h).
std::vector<LayerCase> TensorOpsLayerCases() {
  std::vector<LayerCase> cases;
  for (const char* type : {"reduce_sum", "reduce_mean", "reduce_max",
                           "reduce_min", "reduce_prod"}) {
    const std::string t = type;
    cases.push_back(
        {t,
         {{"input", "img"}, {"dim", Ints{-1, 1}}, {"keep_dim", true}},
         [t](ProgramBuilder* b) {
           return layers::Reduce(b, t, "img", {-1, 1}, true);
         }});
  }
  cases.push_back({"reduce_sum", {{"input", "x"}}, [](ProgramBuilder* b) {
                     return layers::Reduce(b, "reduce_sum", "x", {}, false);
                   }});
  cases.push_back(
      {"squeeze",
       {{"input", "label"}, {"axes", Ints{-1}}},
       [](ProgramBuilder* b) { return layers::Squeeze(b, "label", {-1}); }});
  cases.push_back({"unsqueeze",
                   {{"input", "x"}, {"axes", Ints{0, -1}}},
                   [](ProgramBuilder* b) {
                     return layers::Unsqueeze(b, "x", {0, -1});
                   }});
  cases.push_back(
      {"stack",
       {{"x", std::vector<std::string>{"x", "y"}}, {"axis", int64_t{-1}}},
       [](ProgramBuilder* b) {
         return layers::Stack(b, {"x", "y"}, -1);
       }});
  cases.push_back({"expand",
                   {{"x", "x"}, {"expand_times", Ints{2, 3}}},
                   [](ProgramBuilder* b) {
                     return layers::Expand(b, "x", {2, 3});
                   }});
  cases.push_back({"gather",
                   {{"input", "x"}, {"index", "label"}, {"overwrite", false}},
                   [](ProgramBuilder* b) {
                     return layers::Gather(b, "x", "label", false);
                   }});
  cases.push_back(
      {"slice",
       {{"input", "img"},
        {"axes", Ints{1, 3}},
        {"starts", Ints{-2, 1}},
        {"ends", Ints{int64_t{1} << 40, 4}}},
       [](ProgramBuilder* b) {
         return layers::Slice(b, "img", {1, 3}, {-2, 1}, {int64_t{1} << 40, 4});
       }});
  cases.push_back({"shape", {{"input", "img"}}, [](ProgramBuilder* b) {
                     return layers::ShapeOf(b, "img");
                   }});
  return cases;
}

std::vector<MultiOutputLayerCase> TensorOpsMultiOutputCases() {
  return {{"unstack",
           {{"x", "img"}, {"axis", int64_t{1}}},
           [](ProgramBuilder* b) { return layers::Unstack(b, "img", 1, -1); }}};
}

// The CRF and edit distance layers (src/builder/crf_layers.cc).
std::vector<LayerCase> CrfLayerCases() {
  ParamAttr named;
  named.name = "crfw";
  return {{"linear_chain_crf",
           {{"input", "x"}, {"label", "label"}, {"param_attr", named}},
           [named](ProgramBuilder* b) {
             return layers::LinearChainCrf(b, "x", "label", named);
           }},
          {"crf_decoding",
           {{"input", "x"}, {"param_attr", "transition"}, {"label", "label"}},
           [](ProgramBuilder* b) {
             return layers::CrfDecoding(b, "x", "transition", "label");
           }}};
}

std::vector<MultiOutputLayerCase> CrfMultiOutputCases() {
  return {{"edit_distance",
           {{"input", "label"},
            {"label", "label"},
            {"normalized", false},
            {"ignored_tokens", Ints{0}}},
           [](ProgramBuilder* b) {
             layers::EditDistanceOptions o;
             o.normalized = false;
             o.ignored_tokens = {0};
             return layers::EditDistance(b, "label", "label", o);
           }}};
}

// The decoding layers (src/builder/decode_layers.cc).
std::vector<MultiOutputLayerCase> DecodeMultiOutputCases() {
  return {{"beam_search",
           {{"pre_ids", "label"},
            {"ids", std::string()},
            {"pre_scores", "score"},
            {"scores", "x"},
            {"beam_size", int64_t{4}},
            {"end_id", int64_t{1}},
            {"return_parent_idx", true}},
           [](ProgramBuilder* b) {
             layers::BeamSearchOptions o;
             o.beam_size = 4;
             o.end_id = 1;
             o.return_parent_idx = true;
             return layers::BeamSearch(b, "label", "score", "", "x", o);
           }},
          {"beam_search_decode",
           {{"ids", "id_arr"},
            {"scores", "arr"},
            {"beam_size", int64_t{4}},
            {"end_id", int64_t{1}}},
           [](ProgramBuilder* b) {
             return layers::BeamSearchDecode(b, "id_arr", "arr", 4, 1);
           }}};
}

TEST(LayerRegistry, EachLayerBuildsWhatItsTypedFunctionBuilds) {
  std::vector<LayerCase> cases = ConfiguredLayerCases();
  for (LayerCase& c : OpLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : TensorLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : AttentionLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : SequenceLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : ControlLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : LoDLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : NnAndCreationLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : ImageLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : SampledLossLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : TensorOpsLayerCases()) cases.push_back(std::move(c));
  for (LayerCase& c : CrfLayerCases()) cases.push_back(std::move(c));
  std::set<std::string> covered;
  for (const LayerCase& c : cases) {
    SCOPED_TRACE(c.type);
    const bool table = ReadsRankTable(c.type);
    Built by_name(table), typed(table);
    std::vector<std::string> out = BuildLayer(&by_name.b, c.type, c.values);
    std::string expected = c.typed(&typed.b);
    EXPECT_EQ(out, std::vector<std::string>{expected});
    EXPECT_EQ(by_name.main.DebugString(), typed.main.DebugString());
    EXPECT_EQ(by_name.startup.DebugString(), typed.startup.DebugString());
    covered.insert(c.type);
  }
  std::vector<MultiOutputLayerCase> multi = MultiOutputLayerCases();
  for (MultiOutputLayerCase& c : TensorOpsMultiOutputCases())
    multi.push_back(std::move(c));
  for (MultiOutputLayerCase& c : DecodeMultiOutputCases())
    multi.push_back(std::move(c));
  for (MultiOutputLayerCase& c : CrfMultiOutputCases())
    multi.push_back(std::move(c));
  for (const MultiOutputLayerCase& c : multi) {
    SCOPED_TRACE(c.type);
    Built by_name, typed;
    std::vector<std::string> out = BuildLayer(&by_name.b, c.type, c.values);
    EXPECT_EQ(out, c.typed(&typed.b));
    EXPECT_EQ(by_name.main.DebugString(), typed.main.DebugString());
    covered.insert(c.type);
  }
  // A new layer needs its case here.
  std::vector<std::string> registered = LayerRegistry::Global().Types();
  EXPECT_EQ(covered,
            std::set<std::string>(registered.begin(), registered.end()));
}

}  // namespace
}  // namespace fluid
