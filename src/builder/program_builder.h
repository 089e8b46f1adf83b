// ProgramBuilder: appends ops and vars to a (main, startup) program pair.
//
// This is the one implementation of program construction; the layers, the
// optimizers, the built-in models, the trainer and the Python package all go
// through it. Every op it appends gets an op role and passes compile-time
// shape inference, so a malformed model fails while it is being built, with
// the op and var named. The builder does not own the programs. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/builder/clip.h"
#include "src/builder/initializer.h"
#include "src/builder/regularizer.h"
#include "src/framework/op_registry.h"

namespace fluid {

struct ParamAttr {
  std::string name;  // empty: generated
  Initializer init;
  bool has_init = false;
  bool trainable = true;
  // Applied by the optimizer; kNone: the optimizer's own (if any).
  Regularization regularizer;
  GradientClip gradient_clip;
  float learning_rate = 1.0f;  // times the optimizer's learning rate

  ParamAttr() = default;
  explicit ParamAttr(Initializer i) : init(i), has_init(true) {}

  // This attr, initialised by `fallback` unless it names an initializer.
  ParamAttr WithDefaultInit(Initializer fallback) const {
    ParamAttr a = *this;
    if (!a.has_init) {
      a.init = fallback;
      a.has_init = true;
    }
    return a;
  }
};

class ProgramBuilder {
 public:
  ProgramBuilder(proto::ProgramDesc* main, proto::ProgramDesc* startup,
                 uint64_t seed = 0);

  proto::ProgramDesc* main() { return main_; }
  proto::ProgramDesc* startup() { return startup_; }
  proto::BlockDesc* main_block() { return main_->mutable_blocks(0); }
  proto::BlockDesc* startup_block() { return startup_->mutable_blocks(0); }

  // "fc" -> "fc_0", "fc_1", ... unique within this builder's programs, and
  // across every builder that shares its counters (SetNameCounters).
  std::string UniqueName(const std::string& prefix);
  // Counts names from `counters` from now on: builders that share one keep
  // generated names apart across programs (Fluid's unique_name, for the
  // programs of one process built into one scope).
  struct NameCounters {
    std::map<std::string, int> next;  // prefix -> its next number
  };
  void SetNameCounters(std::shared_ptr<NameCounters> counters) {
    name_counters_ = std::move(counters);
  }
  // Seeds for random initialisers: a reproducible sequence from the
  // builder's seed.
  uint64_t NextSeed();

  // Appends `op` to the main program with `role` (unless it already has
  // one), runs shape inference, and returns it.
  const proto::OpDesc& AppendOp(proto::OpDesc op,
                                int role = static_cast<int>(OpRole::kForward));
  const proto::OpDesc& AppendStartupOp(proto::OpDesc op);

  // Declares a non-persistable var in main; shape inference fills its shape.
  std::string CreateTmpVar(const std::string& prefix, DataType dtype);
  // Declares a parameter in both programs and initialises it in startup.
  // A name already declared as a parameter is that parameter, shared: it
  // must have the same shape and dtype (else an error naming `layer` and
  // `arg`), and it keeps its first initialiser.
  std::string CreateParameter(const std::string& name, const Shape& shape,
                              DataType dtype, const ParamAttr& attr,
                              const Fans& fans, const std::string& layer = "",
                              const std::string& arg = "param_attr");
  // Declares a persistable, non-trainable var in both programs, filled with
  // `value` in startup (learning rates, optimizer state).
  std::string CreatePersistable(const std::string& name, const Shape& shape,
                                DataType dtype, float value);

  const std::vector<std::string>& parameters() const { return parameters_; }
  // The attr a parameter was created with, or nullptr.
  const ParamAttr* FindParamAttr(const std::string& param) const;
  // Replaces the gradient clip of a parameter this builder created; false
  // when it created no such parameter.
  bool SetGradientClip(const std::string& param, const GradientClip& clip);

 private:
  proto::ProgramDesc* main_;
  proto::ProgramDesc* startup_;
  uint64_t seed_;
  uint64_t seed_counter_ = 0;
  std::shared_ptr<NameCounters> name_counters_ =
      std::make_shared<NameCounters>();
  std::vector<std::string> parameters_;
  std::map<std::string, ParamAttr> param_attrs_;
};

}  // namespace fluid
