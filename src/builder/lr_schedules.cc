#include "src/builder/lr_schedules.h"

#include <cmath>

#include "src/builder/program_builder.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

constexpr DataType kF64 = DataType::kFloat64;

std::string Tmp(ProgramBuilder* b, const std::string& prefix) {
  return b->CreateTmpVar(prefix, kF64);
}

std::string Const(ProgramBuilder* b, double value) {
  const std::string out = Tmp(b, "lr_const");
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {out}}},
                     {{"shape", std::vector<int64_t>{1}},
                      {"value", static_cast<float>(value)},
                      {"dtype", static_cast<int32_t>(kF64)}}));
  return out;
}

std::string Unary(ProgramBuilder* b, const std::string& type,
                  const std::string& x, const AttributeMap& attrs = {}) {
  const std::string out = Tmp(b, "lr_" + type);
  b->AppendOp(MakeOp(type, {{"X", {x}}}, {{"Out", {out}}}, attrs));
  return out;
}

std::string Binary(ProgramBuilder* b, const std::string& op,
                   const std::string& x, const std::string& y) {
  const std::string out = Tmp(b, "lr_" + op);
  b->AppendOp(
      MakeOp("elementwise_" + op, {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}}));
  return out;
}

// a * x + c with float attrs (exact for the integers used here).
std::string Affine(ProgramBuilder* b, const std::string& x, float a, float c) {
  return Unary(b, "scale", x, {{"scale", a}, {"bias", c}});
}

// 1 where step >= bound, else 0 (steps are integers).
std::string AtLeast(ProgramBuilder* b, const std::string& step, int64_t bound) {
  return Unary(b, "clip", Affine(b, step, 1.0f, static_cast<float>(1 - bound)),
               {{"min", 0.0f}, {"max", 1.0f}});
}

void Require(bool ok, const LrSchedule& s, const char* arg,
             const std::string& what) {
  FLUID_ENFORCE(ok, "layer '", s.kind, "': argument '", arg, "' ", what);
}

// step / decay_steps, floored when staircase.
std::string DecayedSteps(ProgramBuilder* b, const LrSchedule& s) {
  Require(s.decay_steps > 0, s, "decay_steps", "must be positive");
  std::string d = Binary(b, "div", GlobalStep(b),
                         Const(b, static_cast<double>(s.decay_steps)));
  return s.staircase ? Unary(b, "floor", d) : d;
}

std::string Polynomial(ProgramBuilder* b, const LrSchedule& s) {
  Require(s.decay_steps > 0, s, "decay_steps", "must be positive");
  const std::string step = GlobalStep(b);
  const std::string steps = Const(b, static_cast<double>(s.decay_steps));
  std::string num = step, den = steps;
  if (s.cycle) {  // decay_steps * max(ceil(step / decay_steps), 1)
    std::string neg = Affine(b, Binary(b, "div", step, steps), -1.0f, 0.0f);
    std::string ceil = Affine(b, Unary(b, "floor", neg), -1.0f, 0.0f);
    den = Binary(b, "mul", steps, Binary(b, "max", ceil, Const(b, 1.0)));
  } else {
    num = Binary(b, "min", step, steps);
  }
  std::string frac = Affine(b, Binary(b, "div", num, den), -1.0f, 1.0f);
  std::string p = Binary(b, "pow", frac, Const(b, s.power));
  return Affine(b, p, s.learning_rate - s.end_learning_rate,
                s.end_learning_rate);
}

std::string Piecewise(ProgramBuilder* b, const LrSchedule& s) {
  Require(!s.boundaries.empty(), s, "boundaries", "must not be empty");
  Require(s.values.size() == s.boundaries.size() + 1, s, "values",
          "must hold one value more than boundaries");
  for (size_t i = 1; i < s.boundaries.size(); ++i)
    Require(s.boundaries[i - 1] < s.boundaries[i], s, "boundaries",
            "must be increasing");
  // Exactly one interval indicator is 1: the rate is exactly values[i].
  const std::string step = GlobalStep(b);
  std::vector<std::string> terms;
  std::string below = Const(b, 1.0);  // step >= -inf
  for (size_t i = 0; i <= s.boundaries.size(); ++i) {
    std::string above = i < s.boundaries.size()
                            ? AtLeast(b, step, s.boundaries[i])
                            : Const(b, 0.0);
    terms.push_back(
        Affine(b, Binary(b, "sub", below, above), s.values[i], 0.0f));
    below = above;
  }
  const std::string out = Tmp(b, "lr_piecewise");
  b->AppendOp(MakeOp("sum", {{"X", terms}}, {{"Out", {out}}}));
  return out;
}

std::string Noam(ProgramBuilder* b, const LrSchedule& s) {
  Require(s.d_model > 0, s, "d_model", "must be positive");
  Require(s.warmup_steps > 0, s, "warmup_steps", "must be positive");
  // Fluid's noam counts steps from 1.
  const std::string step = Affine(b, GlobalStep(b), 1.0f, 1.0f);
  std::string a = Unary(b, "pow", step, {{"factor", -0.5f}});
  std::string w =
      Binary(b, "mul", step,
             Const(b, std::pow(static_cast<double>(s.warmup_steps), -1.5)));
  return Affine(b, Binary(b, "min", a, w),
                static_cast<float>(s.learning_rate /
                                   std::sqrt(static_cast<double>(s.d_model))),
                0.0f);
}

std::string Cosine(ProgramBuilder* b, const LrSchedule& s) {
  Require(s.step_each_epoch > 0, s, "step_each_epoch", "must be positive");
  Require(s.epochs > 0, s, "epochs", "must be positive");
  std::string epoch =
      Unary(b, "floor",
            Binary(b, "div", GlobalStep(b),
                   Const(b, static_cast<double>(s.step_each_epoch))));
  std::string angle =
      Binary(b, "mul", epoch, Const(b, M_PI / static_cast<double>(s.epochs)));
  return Affine(b, Unary(b, "cos", angle), 0.5f * s.learning_rate,
                0.5f * s.learning_rate);
}

std::string Warmup(ProgramBuilder* b, const LrSchedule& s) {
  Require(s.warmup_steps > 0, s, "warmup_steps", "must be positive");
  const std::string step = GlobalStep(b);
  std::string after = AtLeast(b, step, s.warmup_steps);
  std::string before = Affine(b, after, -1.0f, 1.0f);
  std::string ramp = Affine(
      b, Binary(b, "div", step, Const(b, static_cast<double>(s.warmup_steps))),
      s.end_lr - s.start_lr, s.start_lr);
  std::string target;
  if (!s.learning_rate_var.empty()) {
    const proto::VarDesc& v =
        GetVarDesc(b->main()->blocks(0), s.learning_rate_var);
    Require(VarDtype(v) == kF64, s, "learning_rate",
            "must be a float64 var (a schedule), is " +
                std::string(DataTypeName(VarDtype(v))));
    target = s.learning_rate_var;
  } else {
    target = Const(b, s.learning_rate);
  }
  return Binary(b, "add", Binary(b, "mul", before, ramp),
                Binary(b, "mul", after, target));
}

}  // namespace

std::string GlobalStep(ProgramBuilder* b) {
  if (FindVarDesc(b->main()->blocks(0), kLrCounter) != nullptr)
    return kLrCounter;
  const std::string c = b->CreatePersistable(kLrCounter, Shape{1}, kF64, -1.0f);
  b->AppendOp(
      MakeOp("increment", {{"X", {c}}}, {{"Out", {c}}}, {{"step", 1.0f}}));
  return c;
}

std::string BuildLrSchedule(ProgramBuilder* b, const LrSchedule& s) {
  const std::string& k = s.kind;
  if (k == "exponential_decay")
    return Affine(b,
                  Binary(b, "pow", Const(b, s.decay_rate), DecayedSteps(b, s)),
                  s.learning_rate, 0.0f);
  if (k == "natural_exp_decay")
    return Affine(
        b, Unary(b, "exp", Affine(b, DecayedSteps(b, s), -s.decay_rate, 0.0f)),
        s.learning_rate, 0.0f);
  if (k == "inverse_time_decay")
    return Binary(b, "div", Const(b, s.learning_rate),
                  Affine(b, DecayedSteps(b, s), s.decay_rate, 1.0f));
  if (k == "polynomial_decay") return Polynomial(b, s);
  if (k == "piecewise_decay") return Piecewise(b, s);
  if (k == "noam_decay") return Noam(b, s);
  if (k == "cosine_decay") return Cosine(b, s);
  if (k == "linear_lr_warmup") return Warmup(b, s);
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown learning-rate schedule '",
              k, "'");
}

}  // namespace fluid
