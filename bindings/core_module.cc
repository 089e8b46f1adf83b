// fluid._core: the native module under the Python `fluid` package. It is a
// thin edge: it converts between Python/NumPy and the C++ library, and turns
// fluid::Error into Python exceptions of matching kinds. No logic lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>

#include "src/builder/control_layers.h"
#include "src/builder/layer_registry.h"
#include "src/builder/lr_schedules.h"
#include "src/builder/optimizer.h"
#include "src/data/fortunes.h"
#include "src/data/idx_reader.h"
#include "src/distributed/job_control.h"
#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/distributed/stall_watchdog.h"
#include "src/distributed/timeline_session.h"
#include "src/framework/backward.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/memory.h"
#include "src/framework/program_desc.h"
#include "src/framework/prune.h"
#include "src/io/checkpoint.h"
#include "src/io/inference_model.h"
#include "src/io/job_io.h"
#include "src/runtime/mpi_executor.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/gradient_merge.h"
#include "transpiler/memory_plan.h"
#include "transpiler/mixed_precision.h"
#include "transpiler/pipeline.h"
#include "transpiler/pserver_transpiler.h"
#include "transpiler/recompute.h"
#include "transpiler/shard_params.h"
#include "transpiler/sharding.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace py = pybind11;

namespace fluid {
namespace {

// A program the Python side holds and the builder mutates. `version` counts
// mutations so that executors know when a prepared copy is stale.
struct Program {
  proto::ProgramDesc desc = NewProgram();
  uint64_t version = 0;
  uint64_t id = NextId();
  static uint64_t NextId() {
    static uint64_t next = 1;
    return next++;
  }
};
using ProgramPtr = std::shared_ptr<Program>;

// The strategy the Python side passes: a serialized DistributedStrategy
// (fluid.DistributedStrategy holds one).
proto::DistributedStrategy StrategyOf(const py::bytes& bytes) {
  proto::DistributedStrategy s;
  FLUID_ENFORCE(s.ParseFromString(std::string(bytes)),
                "not a serialized DistributedStrategy");
  return s;
}

py::bytes BytesOf(const proto::DistributedStrategy& s) {
  return py::bytes(s.SerializeAsString());
}

ProgramPtr Wrap(proto::ProgramDesc desc) {
  auto p = std::make_shared<Program>();
  p->desc = std::move(desc);
  return p;
}

// ---- tensors <-> numpy ----

py::dtype NumpyDtype(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return py::dtype::of<float>();
    case DataType::kFloat64:
      return py::dtype::of<double>();
    case DataType::kInt32:
      return py::dtype::of<int32_t>();
    case DataType::kInt64:
      return py::dtype::of<int64_t>();
    case DataType::kFloat16:
      return py::dtype("float16");
    case DataType::kBFloat16:
      // numpy has no bfloat16: its bits, as Fluid returns them.
      return py::dtype::of<uint16_t>();
    case DataType::kBool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<float>();
}

// numpy's equality, not identity: an unpickled array's dtype is an equal
// object of its own (and a non-native byte order is not equal).
bool SameDtype(const py::dtype& a, const py::dtype& b) {
  return a.is(b) || a.attr("__eq__")(b).cast<bool>();
}

DataType FromNumpy(const py::dtype& d, const std::string& what) {
  if (SameDtype(d, py::dtype::of<float>())) return DataType::kFloat32;
  if (SameDtype(d, py::dtype::of<double>())) return DataType::kFloat64;
  if (SameDtype(d, py::dtype::of<int32_t>())) return DataType::kInt32;
  if (SameDtype(d, py::dtype::of<int64_t>())) return DataType::kInt64;
  if (SameDtype(d, py::dtype("float16"))) return DataType::kFloat16;
  // bfloat16 values travel as their bits (fluid.core.float_to_bfloat16).
  if (SameDtype(d, py::dtype::of<uint16_t>())) return DataType::kBFloat16;
  if (SameDtype(d, py::dtype::of<bool>())) return DataType::kBool;
  FLUID_THROW(
      ErrorCode::kInvalidArgument, what, " has numpy dtype ",
      py::str(static_cast<const py::handle&>(d)).cast<std::string>(),
      "; use float32, float64, int32, int64, float16, bool or uint16 (the "
      "bits of bfloat16 values)");
}

// A numpy array viewing the tensor's buffer (kept alive by the array): no
// copy.
py::array ToNumpy(const Tensor& t) {
  FLUID_ENFORCE(t.initialized(), "tensor holds no value");
  FLUID_ENFORCE(t.place().is_cpu(), "tensor is on ", t.place().ToString(),
                "; copy it to host memory first");
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  auto* keep = new std::shared_ptr<Buffer>(t.buffer());
  py::capsule owner(
      keep, [](void* p) { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  return py::array(NumpyDtype(t.dtype()), shape,
                   const_cast<void*>(t.raw_data()), owner);
}

Tensor FromArray(const py::array& a, const std::string& what) {
  py::array c = py::array::ensure(a, py::array::c_style);
  Tensor t;
  t.set_dtype(FromNumpy(c.dtype(), what));
  Shape shape;
  for (py::ssize_t i = 0; i < c.ndim(); ++i) shape.push_back(c.shape(i));
  t.Resize(shape);
  void* dst = t.raw_mutable_data();
  if (t.bytes() > 0) std::memcpy(dst, c.data(), t.bytes());
  return t;
}

// A feed value: an array, or (for a batch of sequences) a tuple (array,
// offsets) whose offsets become the tensor's LoD: a list of offsets (one
// level) or a list of such lists (several levels, coarsest first).
Tensor FeedValue(const py::handle& value, const std::string& what) {
  if (!py::isinstance<py::tuple>(value))
    return FromArray(py::array::ensure(value), what);
  auto pair = py::reinterpret_borrow<py::tuple>(value);
  FLUID_ENFORCE(pair.size() == 2, what,
                ": a tuple feed is (values, LoD offsets), got ", pair.size(),
                " items");
  Tensor t = FromArray(py::array::ensure(pair[0]), what);
  auto levels = py::reinterpret_borrow<py::sequence>(pair[1]);
  if (levels.size() > 0 && py::isinstance<py::sequence>(levels[0])) {
    t.set_all_lod(pair[1].cast<LoDLevels>());
  } else {
    t.set_lod(pair[1].cast<LoD>());
  }
  return t;
}

FeedList Feeds(const py::dict& feed) {
  FeedList out;
  for (auto item : feed) {
    std::string name = py::str(item.first);
    out.emplace_back(name, FeedValue(item.second, "feed '" + name + "'"));
  }
  return out;
}

// Each fetched value as an array, or (array, LoD offsets) for a batch of
// sequences: a list of offsets for one level, a list of lists (coarsest
// first) for several.
py::list Fetches(const std::vector<Tensor>& fetched) {
  py::list out;
  for (const auto& t : fetched) {
    if (t.lod_levels() > 1) {
      out.append(py::make_tuple(ToNumpy(t), t.all_lod()));
    } else if (t.has_lod()) {
      out.append(py::make_tuple(ToNumpy(t), t.lod()));
    } else {
      out.append(ToNumpy(t));
    }
  }
  return out;
}

py::dict VarInfo(const proto::VarDesc& v) {
  py::dict d;
  d["name"] = v.name();
  d["shape"] = VarShape(v).ToVector();
  d["dtype"] = std::string(DataTypeName(VarDtype(v)));
  d["persistable"] = v.persistable();
  d["trainable"] = v.trainable();
  d["stop_gradient"] = v.stop_gradient();
  d["lod_level"] = v.lod_level();
  return d;
}

// The op's attributes as Python values, by name.
py::dict OpAttrs(const proto::OpDesc& op) {
  py::dict d;
  for (const auto& a : op.attrs())
    d[py::str(a.name())] = py::cast(AttributeFromProto(a));
  return d;
}

py::dict OpInfo(const proto::OpDesc& op) {
  py::dict d, in, out;
  d["type"] = op.type();
  for (const auto& v : op.inputs())
    in[py::str(v.parameter())] =
        std::vector<std::string>(v.arguments().begin(), v.arguments().end());
  for (const auto& v : op.outputs())
    out[py::str(v.parameter())] =
        std::vector<std::string>(v.arguments().begin(), v.arguments().end());
  d["inputs"] = in;
  d["outputs"] = out;
  d["roles"] = OpRoleNames(op);
  d["role_var"] = OpRoleVarOf(op);
  return d;
}

proto::TrainingJob Job(const Program& main, const Program& startup) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = main.desc;
  *job.mutable_startup() = startup.desc;
  return job;
}

// ---- the builder: one per (main, startup) pair, kept by Python ----

// "file:line in function()" of a Python frame.
std::string FrameText(PyFrameObject* frame) {
  PyCodeObject* code = PyFrame_GetCode(frame);  // a new reference
  py::handle h(reinterpret_cast<PyObject*>(code));
  std::string text;
  try {
    const std::string name = h.attr("co_name").cast<std::string>();
    text = h.attr("co_filename").cast<std::string>() + ":" +
           std::to_string(PyFrame_GetLineNumber(frame)) + " in " + name +
           (name.empty() || name[0] == '<' ? "" : "()");
  } catch (const py::error_already_set&) {
    text = "?";  // a file name that is not UTF-8
  } catch (const py::cast_error&) {
    text = "?";
  }
  Py_DECREF(code);
  return text;
}

// Where the user's code is appending ops: the innermost Python frames
// outside the fluid package (whose own frames are the layer functions
// calling the builder), innermost first; at most kCallstackFrames.
std::vector<std::string> UserCallstack() {
  constexpr size_t kCallstackFrames = 4;
  static const std::string package =
      py::module_::import("os.path")
          .attr("dirname")(py::module_::import("fluid").attr("__file__"))
          .cast<std::string>() +
      "/";
  std::vector<std::string> stack;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr && stack.size() < kCallstackFrames) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    std::string file;
    try {
      file = py::handle(reinterpret_cast<PyObject*>(code))
                 .attr("co_filename")
                 .cast<std::string>();
    } catch (const std::exception&) {
    }
    Py_DECREF(code);
    if (file.rfind(package, 0) != 0) stack.push_back(FrameText(frame));
    PyFrameObject* back = PyFrame_GetBack(frame);  // a new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return stack;
}

// The fluid.name_scope Python is in ("/a/b/"; "" outside any), set by
// fluid.framework.name_scope.
std::string& CurrentNameScope() {
  static std::string scope;
  return scope;
}

// The fluid.pipeline_stage Python is in (-1 outside any), set by
// fluid.framework.pipeline_stage.
int& CurrentPipelineStage() {
  static int stage = -1;
  return stage;
}

// Gives the ops of `block` from index `from` on that record no callstack
// `stack` as their op_callstack (kOpCallstackAttr), and the current name
// scope, if any, as their op_namescope.
void SetCallstacks(proto::BlockDesc* block, int from,
                   const std::vector<std::string>& stack) {
  for (int i = std::max(from, 0); i < block->ops_size(); ++i) {
    proto::OpDesc* op = block->mutable_ops(i);
    if (!stack.empty() && !HasOpAttr(*op, kOpCallstackAttr))
      SetOpAttr(op, kOpCallstackAttr, stack);
    if (!CurrentNameScope().empty() && !HasOpAttr(*op, kOpNamescopeAttr))
      SetOpAttr(op, kOpNamescopeAttr, CurrentNameScope());
  }
}

class PyBuilder {
 public:
  PyBuilder(ProgramPtr main, ProgramPtr startup, uint64_t seed)
      : main_(std::move(main)),
        startup_(std::move(startup)),
        builder_(&main_->desc, &startup_->desc, seed) {}

  // Runs `fn` on the builder; the ops it appends to either program record
  // the user's line that asked for them (op_callstack), so that an error
  // they raise at run time names it.
  template <typename Fn>
  auto Mutate(Fn fn) {
    ++main_->version;
    ++startup_->version;
    proto::BlockDesc* main_block = main_->desc.mutable_blocks(0);
    proto::BlockDesc* startup_block = startup_->desc.mutable_blocks(0);
    const int main_before = main_block->ops_size();
    const int startup_before = startup_block->ops_size();
    auto result = fn(&builder_);
    const std::vector<std::string> stack = UserCallstack();
    if (!stack.empty() || !CurrentNameScope().empty()) {
      SetCallstacks(main_block, main_before, stack);
      SetCallstacks(startup_block, startup_before, stack);
    }
    // Only the main program's ops run on stages; an op placed already (a
    // pipeline rewrite's) keeps its stage.
    if (CurrentPipelineStage() >= 0) {
      for (int i = main_before; i < main_block->ops_size(); ++i) {
        proto::OpDesc* op = main_block->mutable_ops(i);
        if (!HasOpAttr(*op, kPipelineStageAttr))
          SetOpAttr(op, kPipelineStageAttr,
                    static_cast<int32_t>(CurrentPipelineStage()));
      }
    }
    return result;
  }
  ProgramBuilder* get() { return &builder_; }
  ProgramPtr main() { return main_; }
  // Replaces both programs by `job`'s (a rewrite of the whole job).
  void Replace(const proto::TrainingJob& job) {
    ++main_->version;
    ++startup_->version;
    main_->desc = job.main();
    startup_->desc = job.startup();
  }

 private:
  ProgramPtr main_, startup_;
  ProgramBuilder builder_;
};

// d[key] cast to T into *out, when d holds the key; a value of another type
// is an error naming `where`, the key and `type_word`.
template <typename T>
void ReadItem(const py::dict& d, const char* key, const char* type_word,
              const std::string& where, T* out) {
  if (!d.contains(key)) return;
  py::object v = d[key];
  try {
    *out = v.cast<T>();
  } catch (const py::cast_error&) {
    FLUID_THROW(ErrorCode::kInvalidArgument, where, ": '", key, "' must be ",
                type_word, ", got a value of type ",
                Quote(Py_TYPE(v.ptr())->tp_name));
  }
}

void CheckKeys(const py::dict& d, const std::vector<std::string>& known,
               const std::string& where) {
  for (auto item : d) {
    std::string key = py::str(item.first);
    bool found = false;
    std::string names;
    for (const auto& k : known) {
      found = found || k == key;
      names += (names.empty() ? "" : ", ") + k;
    }
    FLUID_ENFORCE(found, where, ": unknown key ", Quote(key),
                  "; known: ", names);
  }
}

Initializer MakeInitializer(const py::dict& d, const std::string& where) {
  CheckKeys(d,
            {"kind", "value", "low", "high", "mean", "std", "seed", "fan_in",
             "fan_out"},
            where);
  FLUID_ENFORCE(d.contains("kind"), where, ": the initializer has no 'kind'");
  std::string kind;
  ReadItem(d, "kind", "a str", where, &kind);
  Initializer init;
  init.kind = ParseInitializerKind(kind);
  ReadItem(d, "value", "a float", where, &init.value);
  ReadItem(d, "low", "a float", where, &init.low);
  ReadItem(d, "high", "a float", where, &init.high);
  ReadItem(d, "mean", "a float", where, &init.mean);
  ReadItem(d, "std", "a float", where, &init.std);
  ReadItem(d, "seed", "a non-negative int", where, &init.seed);
  ReadItem(d, "fan_in", "a positive int", where, &init.fan_in);
  ReadItem(d, "fan_out", "a positive int", where, &init.fan_out);
  return init;
}

Regularization MakeRegularization(const py::dict& d, const std::string& where) {
  CheckKeys(d, {"kind", "coeff"}, where);
  Regularization r;
  std::string kind = "none";
  ReadItem(d, "kind", "a str", where, &kind);
  r.kind = ParseRegularizationKind(kind, where);
  ReadItem(d, "coeff", "a float", where, &r.coeff);
  return r;
}

GradientClip MakeGradientClip(const py::dict& d, const std::string& where) {
  CheckKeys(d, {"kind", "min", "max", "clip_norm", "group_name"}, where);
  GradientClip c;
  std::string kind = "none";
  ReadItem(d, "kind", "a str", where, &kind);
  c.kind = ParseGradientClipKind(kind, where);
  ReadItem(d, "min", "a float", where, &c.min);
  ReadItem(d, "max", "a float", where, &c.max);
  ReadItem(d, "clip_norm", "a float", where, &c.clip_norm);
  ReadItem(d, "group_name", "a str", where, &c.group);
  return c;
}

// A param attr as fluid.layers passes it: a dict (ParamAttr.to_dict()).
ParamAttr MakeParamAttr(const py::dict& d, const std::string& where) {
  CheckKeys(d,
            {"name", "trainable", "initializer", "learning_rate", "regularizer",
             "gradient_clip"},
            where);
  ParamAttr a;
  ReadItem(d, "name", "a str", where, &a.name);
  ReadItem(d, "trainable", "a bool", where, &a.trainable);
  ReadItem(d, "learning_rate", "a float", where, &a.learning_rate);
  if (d.contains("initializer")) {
    py::dict init;
    ReadItem(d, "initializer", "a dict", where, &init);
    a.init = MakeInitializer(init, where + " initializer");
    a.has_init = true;
  }
  py::dict sub;
  if (d.contains("regularizer")) {
    ReadItem(d, "regularizer", "a dict", where, &sub);
    a.regularizer = MakeRegularization(sub, where + " regularizer");
  }
  if (d.contains("gradient_clip")) {
    ReadItem(d, "gradient_clip", "a dict", where, &sub);
    a.gradient_clip = MakeGradientClip(sub, where + " gradient_clip");
  }
  return a;
}

LrSchedule MakeLrSchedule(const std::string& kind, const py::dict& d) {
  const std::string where = kind;
  LrSchedule s;
  s.kind = kind;
  if (d.contains("learning_rate") &&
      py::isinstance<py::str>(d["learning_rate"]))
    s.learning_rate_var = d["learning_rate"].cast<std::string>();
  else
    ReadItem(d, "learning_rate", "a float", where, &s.learning_rate);
  ReadItem(d, "decay_steps", "an int", where, &s.decay_steps);
  ReadItem(d, "decay_rate", "a float", where, &s.decay_rate);
  ReadItem(d, "staircase", "a bool", where, &s.staircase);
  ReadItem(d, "end_learning_rate", "a float", where, &s.end_learning_rate);
  ReadItem(d, "power", "a float", where, &s.power);
  ReadItem(d, "cycle", "a bool", where, &s.cycle);
  ReadItem(d, "boundaries", "a list of int", where, &s.boundaries);
  ReadItem(d, "values", "a list of float", where, &s.values);
  ReadItem(d, "d_model", "a float", where, &s.d_model);
  ReadItem(d, "warmup_steps", "an int", where, &s.warmup_steps);
  ReadItem(d, "step_each_epoch", "an int", where, &s.step_each_epoch);
  ReadItem(d, "epochs", "an int", where, &s.epochs);
  ReadItem(d, "start_lr", "a float", where, &s.start_lr);
  ReadItem(d, "end_lr", "a float", where, &s.end_lr);
  return s;
}

OptimizerConfig MakeOptimizerConfig(const py::dict& d) {
  const std::string where = "optimizer";
  OptimizerConfig c;
  c.type = d["type"].cast<std::string>();
  if (py::isinstance<py::str>(d["learning_rate"])) {
    c.learning_rate_var = d["learning_rate"].cast<std::string>();
  } else {
    c.learning_rate = d["learning_rate"].cast<float>();
  }
  ReadItem(d, "momentum", "a float", where, &c.momentum);
  ReadItem(d, "nesterov", "a bool", where, &c.nesterov);
  ReadItem(d, "beta1", "a float", where, &c.beta1);
  ReadItem(d, "beta2", "a float", where, &c.beta2);
  ReadItem(d, "epsilon", "a float", where, &c.epsilon);
  ReadItem(d, "weight_decay", "a float", where, &c.weight_decay);
  ReadItem(d, "decoupled_weight_decay", "a bool", where,
           &c.decoupled_weight_decay);
  ReadItem(d, "lazy_mode", "a bool", where, &c.lazy_mode);
  ReadItem(d, "rho", "a float", where, &c.rho);
  ReadItem(d, "decay", "a float", where, &c.decay);
  ReadItem(d, "centered", "a bool", where, &c.centered);
  ReadItem(d, "initial_accumulator_value", "a float", where,
           &c.initial_accumulator_value);
  ReadItem(d, "lars_coeff", "a float", where, &c.lars_coeff);
  ReadItem(d, "lars_weight_decay", "a float", where, &c.lars_weight_decay);
  ReadItem(d, "parameter_list", "a list of str", where, &c.parameter_list);
  if (d.contains("regularization")) {
    py::dict r;
    ReadItem(d, "regularization", "a dict", where, &r);
    c.regularization = MakeRegularization(r, "optimizer regularization");
  }
  return c;
}

// ---- executors ----

// Python passes a device index: -1 for the CPU.
Place PlaceOf(int device) {
  return device < 0 ? Place::CPU() : Place::CUDA(device);
}

// The Python scopes a native executor points into, kept alive by it: a
// member declared before the executor, so that it is released after the
// executor is gone, whatever order Python frees things in.
class ScopeRefs {
 public:
  Scope* Hold(const py::object& scope) {
    Scope* s = scope.cast<Scope*>();
    held_.emplace(s, scope);
    return s;
  }

 private:
  std::map<Scope*, py::object> held_;
};

// Runs programs on a scope, preparing each program once per version.
class PyExecutor {
 public:
  PyExecutor(int threads, int device) : exe_(PlaceOf(device), threads) {}

  py::list Run(const ProgramPtr& program, const py::object& scope_obj,
               const py::dict& feed, const std::vector<std::string>& fetch) {
    Scope* scope = scopes_.Hold(scope_obj);
    auto key = std::make_pair(program->id, scope);
    auto it = cache_.find(key);
    if (it == cache_.end() || it->second.first != program->version) {
      auto prepared = exe_.Prepare(program->desc, scope);
      it = cache_
               .insert_or_assign(
                   key, std::make_pair(program->version, std::move(prepared)))
               .first;
    }
    std::vector<Tensor> fetched;
    FeedList feeds = Feeds(feed);
    {
      py::gil_scoped_release release;
      exe_.Run(it->second.second.get(), feeds, fetch, &fetched);
    }
    return Fetches(fetched);
  }

  Executor* get() { return &exe_; }

 private:
  ScopeRefs scopes_;  // first: outlives exe_ and cache_
  Executor exe_;
  std::map<std::pair<uint64_t, Scope*>,
           std::pair<uint64_t, std::unique_ptr<PreparedProgram>>>
      cache_;
};

// `device`'s place, after refusing a launch that cannot train (srun with
// no PMI, whose tasks would each train alone; more ranks on a node than
// CPUs allotted or GPUs visible) as the trainer does: ValueError, before
// MPI starts.
Place LaunchCheckedPlace(int device) {
  CheckLaunch(DetectLaunch(), device < 0 ? 0 : CudaDeviceCount());
  return PlaceOf(device);
}

class PyMPIExecutor {
 public:
  PyMPIExecutor(int threads, int device)
      : exe_(LaunchCheckedPlace(device), threads) {}
  int rank() const { return exe_.rank(); }
  int world_size() const { return exe_.world_size(); }

  void RunStartup(const ProgramPtr& startup, Scope* scope,
                  bool defer_parameter_state) {
    py::gil_scoped_release release;
    exe_.RunStartup(startup->desc, scope, defer_parameter_state);
  }
  // Python runs startup programs itself (RunStartup), so the job starts
  // from what the scope holds: a sharded job's shards of the optimizer
  // state too (MPIExecutor::Init keeps what the scope held).
  void Init(const ProgramPtr& main, const ProgramPtr& startup,
            const py::object& scope_object, const py::bytes& strategy,
            bool run_startup) {
    Scope* scope = scopes_.Hold(scope_object);
    const proto::DistributedStrategy s = StrategyOf(strategy);
    py::gil_scoped_release release;
    exe_.Init(Job(*main, *startup), scope, s, run_startup);
    scope_ = scope;
  }
  // Whether some of `names` is state a sharded job keeps in shards across
  // the ranks (a var its own program does not declare: per-parameter
  // optimizer state; or declares as a local: stage 3's parameters), so
  // that saving them is collective (SaveVars).
  bool InShards(const std::vector<std::string>& names) const {
    if (scope_ == nullptr) return false;
    // Tensor parallelism or a pipeline: the parameters are spread over
    // the ranks.
    if (SplitsParameters()) return true;
    if (!IsSharded(exe_.job().main())) return false;
    const proto::BlockDesc& block = exe_.job().main().blocks(0);
    for (const auto& name : names) {
      const proto::VarDesc* v = FindVarDesc(block, name);
      if (v == nullptr || !v->persistable()) return true;
    }
    return false;
  }
  // Saves `names` of the scope as checkpoint `dir`, collectively: every
  // rank fills the per-parameter optimizer state from its shard, rank 0
  // writes, and every rank raises when rank 0 could not.
  void SaveVars(const std::vector<std::string>& names, const std::string& dir,
                int64_t step, int64_t epoch) {
    FLUID_ENFORCE(scope_ != nullptr, "MPIExecutor: save before the first run");
    py::gil_scoped_release release;
    exe_.GatherShardState();
    std::exception_ptr failed;
    if (exe_.rank() == 0) {
      try {
        SaveCheckpoint(*scope_, names, dir, CheckpointInfo{step, epoch});
      } catch (...) {
        failed = std::current_exception();
      }
    }
    exe_.DropGatheredState();
    const uint64_t written =
        exe_.communicator()->AllGatherValue(failed ? 0 : 1)[0];
    if (failed) std::rethrow_exception(failed);
    FLUID_ENFORCE_CODE(written == 1, ErrorCode::kIO, "checkpoint ", Quote(dir),
                       ": rank 0 could not write it (its error says why)");
  }
  // After values were loaded into the scope: every rank takes rank 0's,
  // a sharded job's ranks their shards of its optimizer state. Collective.
  void BroadcastPersistables() {
    py::gil_scoped_release release;
    exe_.BroadcastPersistables();
  }
  std::string NonFiniteGradient() {
    py::gil_scoped_release release;
    return exe_.NonFiniteGradient();
  }
  std::string NonFiniteFeeds() {
    py::gil_scoped_release release;
    return exe_.NonFiniteFeeds();
  }
  // The 16-bit type the prepared job computes in ("" for float32).
  std::string MixedPrecision() const {
    return exe_.job().main().mixed_precision();
  }
  // This rank's bytes of parameters, gradients and optimizer state.
  py::dict StateBytesOf() const {
    const StateBytes b = PerRankStateBytes(exe_.job().main());
    py::dict d;
    d["parameters"] = b.parameters;
    d["gradients"] = b.gradients;
    d["optimizer_state"] = b.optimizer_state;
    return d;
  }
  py::list Run(const py::dict& feed, const std::vector<std::string>& fetch) {
    std::vector<Tensor> fetched;
    FeedList feeds = Feeds(feed);
    {
      py::gil_scoped_release release;
      exe_.Run(feeds, fetch, &fetched);
    }
    return Fetches(fetched);
  }
  void CheckConsistency() {
    py::gil_scoped_release release;
    exe_.CheckConsistency();
  }
  void SyncRunningStats() {
    py::gil_scoped_release release;
    exe_.SyncRunningStats();
  }
  void WaitParameterGathers() {
    py::gil_scoped_release release;
    exe_.WaitParameterGathers();
  }
  // Whether no rank holds every parameter whole between steps (stage 3's
  // shards, tensor parallelism's slices, a pipeline's stages), so that a
  // program reading them whole needs them gathered first.
  bool KeepsParameterShards() const {
    return scope_ != nullptr &&
           (!ParamShardBuffers(exe_.job().main().blocks(0)).empty() ||
            SplitsParameters());
  }
  // Collective: every parameter whole in the scope (GatherParameters)
  // until DropGathered frees the copies again.
  void GatherParameters() {
    py::gil_scoped_release release;
    exe_.GatherShardState(/*parameters_only=*/true);
  }
  void DropGathered() {
    py::gil_scoped_release release;
    exe_.DropGatheredState();
  }
  ProgramPtr TranspiledMain() { return Wrap(exe_.job().main()); }

 private:
  // Whether no rank holds every parameter: tensor parallelism splits them
  // across its group, a pipeline keeps each stage's on its own ranks.
  bool SplitsParameters() const {
    const proto::DistributedStrategy& s = exe_.job().strategy();
    return TensorParallelDegree(s) > 1 || PipelineStages(s) > 1;
  }

  ScopeRefs scopes_;  // first: outlives exe_
  MPIExecutor exe_;
  Scope* scope_ = nullptr;  // Init's
};

// fluid::Error -> Python exceptions of matching kinds.
void BindErrors(py::module_& m) {
  static py::exception<Error> collective_error(m, "CollectiveError",
                                               PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kIO || e.os_errno() != 0) {
        // OSError(errno, message) becomes the matching subclass
        // (FileNotFoundError, PermissionError, NotADirectoryError, ...).
        PyObject* exc =
            e.os_errno() != 0
                ? PyObject_CallFunction(PyExc_OSError, "is", e.os_errno(),
                                        e.what())
                : PyObject_CallFunction(PyExc_OSError, "s", e.what());
        if (exc != nullptr) {
          PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
          Py_DECREF(exc);
        }
        return;
      }
      switch (e.code()) {
        case ErrorCode::kInvalidArgument:
        case ErrorCode::kAlreadyExists:
          PyErr_SetString(PyExc_ValueError, e.what());
          return;
        case ErrorCode::kNotFound:
          PyErr_SetString(PyExc_KeyError, e.what());
          return;
        case ErrorCode::kUnimplemented:
          PyErr_SetString(PyExc_NotImplementedError, e.what());
          return;
        case ErrorCode::kAborted:
          collective_error(e.what());
          return;
        case ErrorCode::kInternal:
          PyErr_SetString(PyExc_RuntimeError, e.what());
          return;
        case ErrorCode::kResourceExhausted:
          PyErr_SetString(PyExc_MemoryError, e.what());
          return;
        case ErrorCode::kIO:  // handled above
          PyErr_SetString(PyExc_OSError, e.what());
          return;
      }
    }
  });
}

// Block `index` of `p`; another index is an IndexError naming the range.
const proto::BlockDesc& BlockOf(const Program& p, int index) {
  if (index < 0 || index >= p.desc.blocks_size())
    throw py::index_error("block " + std::to_string(index) +
                          " of a program of " +
                          std::to_string(p.desc.blocks_size()) + " block(s)");
  return p.desc.blocks(index);
}

// Programs: the ProgramDesc Python holds and the builder mutates.
void BindPrograms(py::module_& m) {
  py::class_<Program, ProgramPtr>(m, "ProgramDesc")
      .def(py::init<>())
      .def_readonly("version", &Program::version)
      .def_readonly("id", &Program::id)
      .def("serialize",
           [](const Program& p) {
             return py::bytes(p.desc.SerializeAsString());
           })
      .def_static("parse",
                  [](const py::bytes& b) {
                    auto p = std::make_shared<Program>();
                    FLUID_ENFORCE(p->desc.ParseFromString(std::string(b)),
                                  "bytes do not parse as a ProgramDesc");
                    CheckProgram(p->desc, "program");
                    return p;
                  })
      .def("to_string",
           [](const Program& p) { return ProgramToString(p.desc); })
      .def(
          "ops",
          [](const Program& p, int block, bool attrs) {
            py::list out;
            for (const auto& op : BlockOf(p, block).ops()) {
              py::dict d = OpInfo(op);
              if (attrs) d["attrs"] = OpAttrs(op);
              out.append(d);
            }
            return out;
          },
          py::arg("block") = 0, py::arg("attrs") = false)
      .def(
          "vars",
          [](const Program& p, int block) {
            py::list out;
            for (const auto& v : BlockOf(p, block).vars())
              out.append(VarInfo(v));
            return out;
          },
          py::arg("block") = 0)
      .def_property_readonly(
          "num_blocks", [](const Program& p) { return p.desc.blocks_size(); })
      .def("block_parent",
           [](const Program& p, int block) {
             return BlockOf(p, block).parent_idx();
           })
      .def("without_callstacks",
           [](const Program& p) {
             proto::ProgramDesc copy = p.desc;
             ClearOpAnnotations(&copy);
             return Wrap(std::move(copy));
           })
      .def(
          "var",
          [](const Program& p, const std::string& name, int block) {
            return VarInfo(GetVarDesc(BlockOf(p, block), name));
          },
          py::arg("name"), py::arg("block") = 0)
      .def(
          "has_var",
          [](const Program& p, const std::string& name, int block) {
            return FindVarDesc(BlockOf(p, block), name) != nullptr;
          },
          py::arg("name"), py::arg("block") = 0)
      .def("clone_for_test",
           [](const Program& p) { return Wrap(CloneForTest(p.desc)); })
      .def("clone", [](const Program& p) { return Wrap(p.desc); })
      .def_property_readonly("is_startup",
                             [](const Program& p) {
                               return p.desc.kind() ==
                                      proto::ProgramDesc::STARTUP;
                             })
      .def("mark_startup",
           [](Program& p) {
             p.desc.set_kind(proto::ProgramDesc::STARTUP);
             ++p.version;
           })
      .def("is_training",
           [](const Program& p) { return IsTrainingProgram(p.desc); })
      .def("loss_vars", [](const Program& p) { return LossVars(p.desc); })
      .def("mixed_precision",
           [](const Program& p) { return p.desc.mixed_precision(); })
      .def_property_readonly("nranks",
                             [](const Program& p) { return p.desc.nranks(); });
}

// ---- layers: Python values <-> LayerValue ----

bool IsPyInt(const py::handle& v) {
  return !PyBool_Check(v.ptr()) && PyIndex_Check(v.ptr());
}

int64_t PyToInt64(const py::handle& v, const std::string& where) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
  FLUID_ENFORCE(overflow == 0, where, " is an int past the 64-bit range");
  return x;
}

// A list or tuple: of ints, or of strs (names); an empty one stands for
// either (the layer's declaration decides).
LayerValue PyListToLayerValue(const py::sequence& seq,
                              const std::string& where) {
  if (seq.size() > 0 && py::isinstance<py::dict>(seq[0])) {
    // A list of param attrs (fc's param_attr, one per input).
    std::vector<ParamAttr> attrs;
    for (size_t i = 0; i < seq.size(); ++i) {
      py::object item = seq[i];
      FLUID_ENFORCE(py::isinstance<py::dict>(item), where,
                    " must be a list of param attrs; item ", i, " is not");
      attrs.push_back(MakeParamAttr(item.cast<py::dict>(), where));
    }
    return attrs;
  }
  std::vector<int64_t> ints;
  std::vector<std::string> strs;
  for (size_t i = 0; i < seq.size(); ++i) {
    py::object item = seq[i];
    if (IsPyInt(item) && strs.empty()) {
      ints.push_back(PyToInt64(item, where));
    } else if (py::isinstance<py::str>(item) && ints.empty()) {
      strs.push_back(item.cast<std::string>());
    } else {
      FLUID_THROW(ErrorCode::kInvalidArgument, where,
                  " must be a list of ints or of names; item ", i,
                  " is of type ", Quote(Py_TYPE(item.ptr())->tp_name));
    }
  }
  if (!strs.empty()) return strs;
  return ints;
}

// A layer argument from Python, by its Python type alone; the layer's
// declaration then checks it (BuildLayer). A dict is a param attr.
LayerValue PyToLayerValue(const py::handle& v, const std::string& layer,
                          const std::string& arg) {
  const std::string where =
      "layer " + Quote(layer) + ": argument " + Quote(arg);
  if (v.is_none()) return std::monostate{};
  if (PyBool_Check(v.ptr())) return v.cast<bool>();
  if (IsPyInt(v)) return PyToInt64(v, where);
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (PyFloat_Check(v.ptr()) || py::hasattr(v, "__float__"))
    return v.cast<double>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
    return PyListToLayerValue(v.cast<py::sequence>(), where);
  if (py::isinstance<py::dict>(v))
    return MakeParamAttr(v.cast<py::dict>(), where);
  FLUID_THROW(ErrorCode::kInvalidArgument, where, " is of type ",
              Quote(Py_TYPE(v.ptr())->tp_name),
              ", which no layer argument takes (None, bool, int, float, str, "
              "a list of ints or of names, or a param attr dict)");
}

// A declared default, as Python writes it: the default param attr is None.
py::object LayerValueToPy(const LayerValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate> ||
                      std::is_same_v<T, ParamAttr> ||
                      std::is_same_v<T, std::vector<ParamAttr>>) {
          return py::none();
        } else {
          return py::cast(x);
        }
      },
      v);
}

// Every registered layer: {type: {"doc", "args": [{"name", "kind",
// "required", "default"}, ...]}}, arguments in declaration order.
py::dict LayerSchemas() {
  py::dict out;
  for (const std::string& type : LayerRegistry::Global().Types()) {
    const LayerSchema& schema = LayerRegistry::Global().Get(type);
    py::list args;
    for (const LayerArgSpec& spec : schema.args()) {
      py::dict a;
      a["name"] = spec.name;
      a["kind"] = std::string(LayerArgKindName(spec.kind));
      a["required"] = spec.required;
      a["default"] = LayerValueToPy(spec.default_value);
      args.append(a);
    }
    py::dict d;
    d["doc"] = schema.doc();
    d["args"] = args;
    out[py::str(type)] = d;
  }
  return out;
}

// fluid.layers.While's block: the ops built since op_begin become a loop's
// block; fluid.layers.cond's, Switch's and IfElse's become a conditional
// block, IfElse's inputs split by rows (src/builder/control_layers.h).
void BindControlFlow(py::class_<PyBuilder>& builder) {
  builder.def(
      "build_while", [](PyBuilder& b, int64_t op_begin, int64_t var_begin,
                        const std::string& cond, bool is_test) {
        return b.Mutate([&](ProgramBuilder* pb) {
          return layers::BuildWhile(pb, op_begin, var_begin, cond, is_test);
        });
      });
  builder.def("build_conditional_block",
              [](PyBuilder& b, int64_t op_begin, int64_t var_begin,
                 const std::vector<std::string>& cond, bool is_scalar_condition,
                 const std::vector<std::string>& keep,
                 const std::vector<int64_t>& stay) {
                return b.Mutate([&](ProgramBuilder* pb) {
                  return layers::BuildConditionalBlock(
                      pb, op_begin, var_begin, cond, is_scalar_condition, keep,
                      stay);
                });
              });
  builder.def("split_lod_tensor",
              [](PyBuilder& b, const std::string& x, const std::string& mask) {
                return b.Mutate([&](ProgramBuilder* pb) {
                  return layers::SplitLoDTensor(pb, x, mask);
                });
              });
  builder.def(
      "merge_lod_tensor",
      [](PyBuilder& b, const std::string& in_true, const std::string& in_false,
         const std::string& x, const std::string& mask) {
        return b.Mutate([&](ProgramBuilder* pb) {
          return layers::MergeLoDTensor(pb, in_true, in_false, x, mask);
        });
      });
}

// The program builder: every layer through one generic entry, and minimize.
void BindBuilder(py::module_& m) {
  m.def("layer_schemas", &LayerSchemas);
  // Counters of generated names, shared by the builders Python gives one
  // (fluid.unique_name).
  m.def("set_name_scope",
        [](const std::string& scope) { CurrentNameScope() = scope; });
  m.def("set_pipeline_stage",
        [](int stage) { CurrentPipelineStage() = stage; });
  py::class_<ProgramBuilder::NameCounters,
             std::shared_ptr<ProgramBuilder::NameCounters>>(m, "NameCounters")
      .def(py::init<>())
      // "key_N", counted with the names the layers generate.
      .def("generate",
           [](ProgramBuilder::NameCounters& c, const std::string& key) {
             return key + "_" + std::to_string(c.next[key]++);
           });
  auto builder = py::class_<PyBuilder>(m, "Builder");
  BindControlFlow(builder);
  builder.def(py::init<ProgramPtr, ProgramPtr, uint64_t>())
      .def("set_name_counters",
           [](PyBuilder& b,
              std::shared_ptr<ProgramBuilder::NameCounters> counters) {
             b.get()->SetNameCounters(std::move(counters));
           })
      .def("layer",
           [](PyBuilder& b, const std::string& type, const py::dict& args) {
             LayerValues values;
             for (auto item : args) {
               std::string name = py::str(item.first);
               values[name] = PyToLayerValue(item.second, type, name);
             }
             return b.Mutate([&](ProgramBuilder* pb) {
               return BuildLayer(pb, type, values);
             });
           })
      .def("minimize",
           [](PyBuilder& b, const py::dict& config, const std::string& loss,
              const std::vector<std::string>& no_grad) {
             return b.Mutate([&](ProgramBuilder* pb) {
               return MakeOptimizer(MakeOptimizerConfig(config))
                   ->Minimize(pb, loss, {no_grad.begin(), no_grad.end()});
             });
           })
      // Rewrites the programs built so far (after minimize) to mixed
      // precision by the serialized AmpConfig.
      .def("mixed_precision",
           [](PyBuilder& b, const py::bytes& config) {
             proto::AmpConfig c;
             FLUID_ENFORCE(c.ParseFromString(std::string(config)),
                           "not a serialized AmpConfig");
             FLUID_ENFORCE(GradientMergeSteps(*b.get()->main()) == 0,
                           "mixed precision: the program was already "
                           "rewritten for gradient merge; decorate the "
                           "optimizer GradientMergeOptimizer wraps instead: "
                           "GradientMergeOptimizer(decorate(opt), k)");
             proto::TrainingJob job;
             *job.mutable_main() = *b.get()->main();
             *job.mutable_startup() = *b.get()->startup();
             b.Replace(MixedPrecisionRewrite(job, c));
           })
      // Rewrites the programs built so far (after minimize) to recompute
      // activations by the recompute_configs of a serialized strategy;
      // returns the checkpoints used.
      .def("recompute",
           [](PyBuilder& b, const py::bytes& strategy) {
             const proto::RecomputeConfig c =
                 StrategyOf(strategy).recompute_configs();
             proto::TrainingJob job;
             *job.mutable_main() = *b.get()->main();
             *job.mutable_startup() = *b.get()->startup();
             const std::vector<std::string> used =
                 ResolveCheckpoints(job.main(), c);
             b.Replace(RecomputeRewrite(job, c));
             return used;
           })
      // Rewrites the programs built so far (after minimize) for gradient
      // merge by the gradient_merge_configs of a serialized strategy.
      .def("merge_gradients",
           [](PyBuilder& b, const py::bytes& strategy) {
             const proto::GradientMergeConfig c =
                 StrategyOf(strategy).gradient_merge_configs();
             proto::TrainingJob job;
             *job.mutable_main() = *b.get()->main();
             *job.mutable_startup() = *b.get()->startup();
             b.Replace(GradientMergeRewrite(job, c));
           })
      .def("lr_schedule",
           [](PyBuilder& b, const std::string& kind, const py::dict& args) {
             LrSchedule s = MakeLrSchedule(kind, args);
             return b.Mutate(
                 [&](ProgramBuilder* pb) { return BuildLrSchedule(pb, s); });
           })
      .def("set_gradient_clip",
           [](PyBuilder& b, const std::string& param, const py::dict& clip) {
             GradientClip c = MakeGradientClip(clip, "set_gradient_clip");
             return b.Mutate([&](ProgramBuilder* pb) {
               return pb->SetGradientClip(param, c);
             });
           });
}

// Scopes and the executors that run programs on them.
void BindExecutors(py::module_& m) {
  py::class_<Scope>(m, "Scope")
      .def(py::init<>())
      .def("var_names", &Scope::LocalVarNames)
      .def("has",
           [](const Scope& s, const std::string& n) {
             Variable* v = s.FindVar(n);
             return v != nullptr && v->HasValue() && v->IsTensor() &&
                    v->GetTensor().initialized();
           })
      .def("get",
           [](const Scope& s, const std::string& n) {
             s.Settle();   // writes a step left in flight
             Tensor copy;  // from the device when the var lives there
             copy.CopyFrom(s.GetVar(n)->GetTensor(), Place::CPU());
             return ToNumpy(copy);
           })
      .def("settle", [](const Scope& s) { s.Settle(); })
      .def("has_fence", &Scope::HasFence)
      .def("set", [](Scope& s, const std::string& n, const py::array& a) {
        s.Settle();
        Tensor* t = s.Var(n)->GetMutableTensor();
        // A var on a device stays there: its kernels expect it.
        const Place place = t->initialized() ? t->place() : Place::CPU();
        t->CopyFrom(FromArray(a, "value of '" + n + "'"), place);
      });

  py::class_<PyExecutor>(m, "Executor")
      .def(py::init<int, int>(), py::arg("threads") = 1, py::arg("device") = -1)
      .def("set_eager_deletion",
           [](PyExecutor& e, bool on) { e.get()->set_eager_deletion(on); })
      .def("run", &PyExecutor::Run);

  py::class_<PyMPIExecutor>(m, "MPIExecutor")
      .def(py::init<int, int>(), py::arg("threads") = 1, py::arg("device") = -1)
      .def_property_readonly("rank", &PyMPIExecutor::rank)
      .def_property_readonly("world_size", &PyMPIExecutor::world_size)
      .def("run_startup", &PyMPIExecutor::RunStartup, py::arg("startup"),
           py::arg("scope"), py::arg("defer_parameter_state") = false)
      .def("init", &PyMPIExecutor::Init)
      .def("in_shards", &PyMPIExecutor::InShards)
      .def("save_vars", &PyMPIExecutor::SaveVars)
      .def("broadcast_persistables", &PyMPIExecutor::BroadcastPersistables)
      .def("non_finite_gradient", &PyMPIExecutor::NonFiniteGradient)
      .def("non_finite_feeds", &PyMPIExecutor::NonFiniteFeeds)
      .def("mixed_precision", &PyMPIExecutor::MixedPrecision)
      .def("state_bytes", &PyMPIExecutor::StateBytesOf)
      .def("run", &PyMPIExecutor::Run)
      .def("check_consistency", &PyMPIExecutor::CheckConsistency)
      .def("sync_running_stats", &PyMPIExecutor::SyncRunningStats)
      .def("wait_parameter_gathers", &PyMPIExecutor::WaitParameterGathers)
      .def("keeps_parameter_shards", &PyMPIExecutor::KeepsParameterShards)
      .def("gather_parameters", &PyMPIExecutor::GatherParameters)
      .def("drop_gathered", &PyMPIExecutor::DropGathered)
      .def("transpiled_main", &PyMPIExecutor::TranspiledMain);
}

// The process in its job: launcher, job policy, devices.
void BindJob(py::module_& m) {
  m.def("launched_by_mpi", &LaunchedByMpi);
  m.def("launcher_world_size", &LauncherWorldSize);
  m.def("launcher_rank", &LauncherRank);
  // Why this process's launch cannot train ("" when it can), on the CPU.
  m.def("launch_refusal", [] { return LaunchRefusal(DetectLaunch(), 0); });
  m.def("abort_job", [](int code) {
    py::gil_scoped_release release;
    AbortJob(code);
  });
  m.def("install_fatal_signal_line", &InstallFatalSignalLine);
  // A rank running programs without collectives (an evaluation on rank 0
  // while the others wait) shows the watchdog it is not stuck.
  m.def("stall_heartbeat",
        [] { GlobalCommunicator()->flight_recorder()->Beat(); });
  // The stall watchdog's limits and the flight recorder's directory ("":
  // unchanged) of the process's communicator.
  m.def("configure_stall_watchdog",
        [](double warn, double timeout, const std::string& flight_dir) {
          Communicator* comm = GlobalCommunicator();
          comm->ConfigureStallWatchdog(StallConfig{warn, timeout});
          if (!flight_dir.empty())
            comm->flight_recorder()->SetDumpPath(flight_dir, comm->rank(),
                                                 comm->size());
        });
  // The element-wise sum ("sum") or maximum ("max") of `value` over the
  // ranks of the process's communicator, as a new array (the value itself
  // in a world of one). Collective: every rank calls it with an array of
  // the same shape and dtype. For what Python sums over ranks (metrics).
  m.def(
      "allreduce",
      [](const py::array& value, const std::string& op) {
        FLUID_ENFORCE(op == "sum" || op == "max", "allreduce(op='", op,
                      "'): 'sum' or 'max'");
        Tensor t = FromArray(value, "allreduce value");
        Communicator* comm = GlobalCommunicator();
        {
          py::gil_scoped_release release;
          if (comm->size() > 1)
            comm->AllReduce(t, op == "sum" ? ReduceOp::kSum : ReduceOp::kMax);
        }
        return ToNumpy(t);
      },
      py::arg("value"), py::arg("op") = "sum");
  // The job's timeline (src/distributed/timeline_session.h): collective,
  // on the process's communicator. finish_timeline returns the path rank 0
  // wrote ("" on the other ranks).
  m.def("start_timeline", [](const std::string& path) {
    Communicator* comm = GlobalCommunicator();
    py::gil_scoped_release release;
    StartTimeline(comm, path);
  });
  m.def("finish_timeline", [] {
    if (!TimelineStarted()) return std::string();
    Communicator* comm = GlobalCommunicator();
    py::gil_scoped_release release;
    return FinishTimeline(comm);
  });
  // Control bytes escaped, cut at the length every fluid::Error keeps: for
  // the one-line messages of the job policy (_job.py).
  m.def("sanitize_message",
        [](const std::string& text) { return SanitizeMessage(text); });
  m.def("built_with_cuda", &BuiltWithCuda);
  m.def("cuda_device_count", &CudaDeviceCount);
  m.def("local_rank_device", &LocalRankDevice);
  m.def("shutdown", &ShutdownGlobalCommunicator);
  m.def("leave_job", [] {
    py::gil_scoped_release release;
    LeaveJob();
  });
}

// The distributed strategy, by field path (transpiler/strategy.h):
// fluid.DistributedStrategy keeps the serialized message and reads and
// writes it through these, so that a new field needs no Python code.
py::object StrategyValue(const proto::DistributedStrategy& s,
                         const std::string& path) {
  const std::string text = GetStrategyField(s, path);
  const std::string type = StrategyFieldType(path);
  if (StrategyFieldIsList(path)) {
    py::list names;
    for (size_t start = 0; start < text.size();) {
      const size_t comma = std::min(text.find(',', start), text.size());
      names.append(py::str(text.substr(start, comma - start)));
      start = comma + 1;
    }
    return std::move(names);
  }
  if (type == "bool") return py::bool_(text == "true");
  if (type == "int32" || type == "int64") return py::int_(std::stoll(text));
  if (type == "float" || type == "double") return py::float_(std::stod(text));
  return py::str(text);
}

// A Python value as the text SetStrategyField reads.
std::string StrategyText(const std::string& path, const py::handle& value) {
  const std::string type = StrategyFieldType(path);
  if (StrategyFieldIsList(path)) {
    FLUID_ENFORCE(py::isinstance<py::list>(value) ||
                      py::isinstance<py::tuple>(value) ||
                      py::isinstance<py::set>(value),
                  "DistributedStrategy.", path, " takes a list of names, got ",
                  SanitizeMessage(py::repr(value).cast<std::string>()));
    std::string text;
    for (const py::handle& item : value) {
      FLUID_ENFORCE(py::isinstance<py::str>(item), "DistributedStrategy.", path,
                    " takes names (str), got ",
                    SanitizeMessage(py::repr(item).cast<std::string>()));
      const std::string name = item.cast<std::string>();
      FLUID_ENFORCE(!name.empty() && name.find(',') == std::string::npos,
                    "DistributedStrategy.", path, ": ", Quote(name),
                    " is no op name");
      text += (text.empty() ? "" : ",") + name;
    }
    return text;
  }
  const bool is_bool = py::isinstance<py::bool_>(value);
  const bool is_number = !is_bool && (py::isinstance<py::int_>(value) ||
                                      py::isinstance<py::float_>(value));
  const bool fits = type == "bool"     ? is_bool
                    : type == "string" ? py::isinstance<py::str>(value)
                                       : is_number;
  FLUID_ENFORCE(fits, "DistributedStrategy.", path, " takes a ", type, ", got ",
                SanitizeMessage(py::repr(value).cast<std::string>()));
  if (is_bool) return value.cast<bool>() ? "true" : "false";
  if (type == "string") return value.cast<std::string>();
  return py::repr(value).cast<std::string>();
}

void BindStrategy(py::module_& m) {
  m.def("strategy_fields", [](const py::bytes& b) {
    py::list out;
    for (const auto& f : StrategyFields(StrategyOf(b))) out.append(f.first);
    return out;
  });
  m.def("strategy_get", [](const py::bytes& b, const std::string& path) {
    return StrategyValue(StrategyOf(b), path);
  });
  m.def("strategy_set", [](const py::bytes& b, const std::string& path,
                           const py::handle& value) {
    proto::DistributedStrategy s = StrategyOf(b);
    SetStrategyField(&s, path, StrategyText(path, value));
    CheckStrategyRanges(s);
    return BytesOf(s);
  });
  m.def("strategy_to_text", [](const py::bytes& b) {
    return StrategyToText(CanonicalStrategy(StrategyOf(b)));
  });
  m.def("strategy_from_text",
        [](const std::string& text, const std::string& where) {
          proto::DistributedStrategy s = StrategyFromText(text, where);
          CheckStrategyRanges(s);
          return BytesOf(s);
        });
  m.def("strategy_validate",
        [](const py::bytes& b) { ValidateStrategy(StrategyOf(b)); });
  m.def("strategy_equal", [](const py::bytes& a, const py::bytes& b) {
    return CanonicalBytes(StrategyOf(a)) == CanonicalBytes(StrategyOf(b));
  });
  // The mixed-precision op lists for a serialized AmpConfig: (white, black,
  // gray), each sorted.
  m.def("amp_lists", [](const py::bytes& config) {
    proto::AmpConfig c;
    FLUID_ENFORCE(c.ParseFromString(std::string(config)),
                  "not a serialized AmpConfig");
    const AmpLists l = MakeAmpLists(c);
    auto sorted = [](const std::set<std::string>& s) {
      return std::vector<std::string>(s.begin(), s.end());
    };
    return py::make_tuple(sorted(l.white), sorted(l.black), sorted(l.gray));
  });
  // A serialized AmpConfig: the strategy's amp_configs.
  m.def("strategy_amp_config", [](const py::bytes& b) {
    return py::bytes(
        CanonicalStrategy(StrategyOf(b)).amp_configs().SerializeAsString());
  });
  m.def("strategy_passes",
        [](const py::bytes& b) { return CollectivePassNames(StrategyOf(b)); });
}

// The collective and parameter-server transpilers.
void BindTranspilers(py::module_& m) {
  m.def("collective_transpile", [](const ProgramPtr& main,
                                   const ProgramPtr& startup, int nranks,
                                   const py::bytes& strategy) {
    proto::TrainingJob out =
        CollectiveTranspile(Job(*main, *startup), StrategyOf(strategy), nranks);
    return std::make_pair(Wrap(out.main()), Wrap(out.startup()));
  });
  m.def("pserver_transpile",
        [](const ProgramPtr& main, const ProgramPtr& startup, int trainers,
           const std::vector<std::string>& endpoints) {
          PserverSplit split =
              PserverTranspile(Job(*main, *startup), trainers, endpoints);
          py::list servers;
          for (const auto& ps : split.pservers)
            servers.append(
                py::make_tuple(ps.endpoint, Wrap(ps.main), Wrap(ps.startup)));
          return py::make_tuple(Wrap(split.trainer.main()),
                                Wrap(split.trainer.startup()), servers);
        });
  m.def("pserver_to_collective",
        [](const ProgramPtr& main, const ProgramPtr& startup,
           const std::vector<std::tuple<std::string, ProgramPtr, ProgramPtr>>&
               servers,
           int nranks, const py::bytes& strategy) {
          std::vector<PserverProgram> ps;
          for (const auto& s : servers)
            ps.push_back(
                {std::get<0>(s), std::get<1>(s)->desc, std::get<2>(s)->desc});
          proto::TrainingJob out = PserverToCollective(
              Job(*main, *startup), ps, StrategyOf(strategy), nranks);
          return std::make_pair(Wrap(out.main()), Wrap(out.startup()));
        });
}

// Inference models: pruning, saving and loading (src/io/inference_model.h).
void BindInferenceModels(py::module_& m) {
  m.def("prune",
        [](const ProgramPtr& program, const std::vector<std::string>& feeds,
           const std::vector<std::string>& targets) {
          return Wrap(Prune(program->desc, feeds, targets));
        });
  m.def("save_inference_model",
        [](const Scope& scope, const ProgramPtr& program,
           const std::vector<std::string>& feeds,
           const std::vector<std::string>& fetches, const std::string& dir,
           const std::string& model_file, const std::string& params_dir) {
          InferenceModelFiles files{model_file, params_dir};
          proto::InferenceModel model = SaveInferenceModel(
              scope, program->desc, feeds, fetches, dir, files);
          return Wrap(model.program());
        });
  m.def("load_inference_model", [](Scope* scope, const std::string& dir,
                                   const std::string& model_file,
                                   const std::string& params_dir) {
    InferenceModelFiles files{model_file, params_dir};
    proto::InferenceModel model = LoadInferenceModel(scope, dir, files);
    return py::make_tuple(Wrap(model.program()),
                          std::vector<std::string>(model.feed_names().begin(),
                                                   model.feed_names().end()),
                          std::vector<std::string>(model.fetch_names().begin(),
                                                   model.fetch_names().end()));
  });
}

// Training jobs, checkpoints and data sets on disk.
// The C++ reader of the fortunes text data (src/data/fortunes.h), which the
// trainer's text models train on; the tests compare it with
// fluid.datasets.fortunes. Text is returned as str, ids as int64 arrays.
void BindFortunes(py::module_& m) {
  m.def("fortunes_quotations", [](const std::string& dir,
                                  const std::string& split) {
    py::list out;
    for (const Quotation& q : ReadFortunes(dir, ParseFortunesSplit(split)))
      out.append(py::make_tuple(q.topic, EncodeUtf8(q.text)));
    return out;
  });
  // The char vocabulary's tokens in id order, from id 3 on.
  m.def("fortunes_char_vocab", [](const std::string& dir, int64_t max_size) {
    const CharVocab v =
        CharVocab::Build(ReadFortunes(dir, FortunesSplit::kTrain), max_size);
    py::list out;
    for (int64_t id = 3; id < v.size(); ++id)
      out.append(EncodeUtf8(std::u32string(1, v.token(id))));
    return out;
  });
  // (tokens, next) windows [N, seq_len, 1] of a split.
  m.def("fortunes_lm_windows", [](const std::string& dir,
                                  const std::string& split, int64_t seq_len,
                                  int64_t max_size) {
    const CharVocab v =
        CharVocab::Build(ReadFortunes(dir, FortunesSplit::kTrain), max_size);
    Dataset d = LmWindows(
        LmStream(ReadFortunes(dir, ParseFortunesSplit(split)), v), seq_len);
    return py::make_tuple(ToNumpy(d.tensors[0]), ToNumpy(d.tensors[1]));
  });
  // (topics, words [N, max_len, 1], length [N], label [N, 1]) of a split.
  m.def("fortunes_topic_samples",
        [](const std::string& dir, const std::string& split, int64_t num_topics,
           int64_t max_len, int64_t max_size) {
          const CharVocab v = CharVocab::Build(
              ReadFortunes(dir, FortunesSplit::kTrain), max_size);
          const std::vector<std::string> topics =
              FortunesTopics(ReadFortunes(dir), num_topics);
          Dataset d = TopicSamples(ReadFortunes(dir, ParseFortunesSplit(split)),
                                   topics, v, max_len);
          return py::make_tuple(topics, ToNumpy(d.tensors[0]),
                                ToNumpy(d.tensors[1]), ToNumpy(d.tensors[2]));
        });
}

void BindIo(py::module_& m) {
  m.def("save_job",
        [](const std::string& path, const ProgramPtr& main,
           const ProgramPtr& startup, const std::vector<std::string>& feeds,
           const std::string& loss, const std::vector<std::string>& metrics,
           const std::string& data_set) {
          proto::TrainingJob job = Job(*main, *startup);
          for (const auto& f : feeds) job.add_feed_names(f);
          std::string upper = data_set;
          for (char& c : upper) c = static_cast<char>(std::toupper(c));
          proto::TrainingJob::DataSet declared;
          FLUID_ENFORCE(proto::TrainingJob::DataSet_Parse(upper, &declared) &&
                            declared != proto::TrainingJob::DATA_SET_UNSET,
                        "save_job: unknown data set '", data_set, "'");
          job.set_data_set(declared);
          job.set_loss_name(loss);
          for (const auto& mname : metrics) job.add_metric_names(mname);
          *job.mutable_test() = CloneForTest(main->desc);
          SaveJob(job, path);
        });
  m.def("load_job", [](const std::string& path) {
    proto::TrainingJob job = LoadJob(path);
    py::dict d;
    d["main"] = Wrap(job.main());
    // A job's startup program is one, whether or not its writer tagged it.
    job.mutable_startup()->set_kind(proto::ProgramDesc::STARTUP);
    d["startup"] = Wrap(job.startup());
    d["feeds"] = std::vector<std::string>(job.feed_names().begin(),
                                          job.feed_names().end());
    d["loss"] = job.loss_name();
    d["metrics"] = std::vector<std::string>(job.metric_names().begin(),
                                            job.metric_names().end());
    std::string data_set = proto::TrainingJob::DataSet_Name(job.data_set());
    for (char& c : data_set) c = static_cast<char>(std::tolower(c));
    d["data_set"] = job.has_data_set() ? py::object(py::str(data_set))
                                       : py::object(py::none());
    return d;
  });
  m.def("save_checkpoint",
        [](const Scope& scope, const ProgramPtr& program,
           const std::string& dir, int64_t step, int64_t epoch) {
          SaveCheckpoint(scope, PersistableVars(program->desc), dir,
                         CheckpointInfo{step, epoch});
        });
  m.def("load_checkpoint",
        [](Scope* scope, const ProgramPtr& program, const std::string& dir) {
          CheckpointInfo info = LoadCheckpoint(scope, program->desc, dir);
          return std::make_pair(info.step, info.epoch);
        });
  m.def("save_vars",
        [](const Scope& scope, const std::vector<std::string>& names,
           const std::string& dir, int64_t step, int64_t epoch) {
          SaveCheckpoint(scope, names, dir, CheckpointInfo{step, epoch});
        });
  m.def("load_vars",
        [](Scope* scope, const ProgramPtr& program,
           const std::vector<std::string>& names, const std::string& dir) {
          CheckpointInfo info =
              LoadCheckpointVars(scope, VarSpecs(program->desc, names), dir);
          return std::make_pair(info.step, info.epoch);
        });
  BindInferenceModels(m);
  m.def("load_mnist_family", [](const std::string& dir, bool train) {
    Dataset d = LoadMnistFamily(dir, train);
    return std::make_pair(ToNumpy(d.tensors[0]), ToNumpy(d.tensors[1]));
  });
  BindFortunes(m);
}

// Tensor memory per place (src/framework/memory.h) and the memory plan
// (transpiler/memory_plan.h); fluid/memory.py wraps them.
void BindMemory(py::module_& m) {
  m.def("memory_usage", [](int device) {
    const MemoryUsage u = GetMemoryUsage(PlaceOf(device));
    py::dict d;
    d["in_use"] = u.in_use;
    d["peak"] = u.peak;
    d["cached"] = u.cached;
    d["allocations"] = u.allocations;
    d["system_allocations"] = u.system_allocations;
    return d;
  });
  m.def("reset_peak_memory",
        [](int device) { ResetPeakMemory(PlaceOf(device)); });
  m.def("memory_plan", [](const py::bytes& program, const py::bytes& strategy,
                          int nranks, int64_t batch_size,
                          const py::bytes& startup) {
    proto::TrainingJob job;
    job.set_version(kProgramVersion);
    FLUID_ENFORCE(job.mutable_main()->ParseFromString(std::string(program)),
                  "memory_plan: the program does not parse");
    FLUID_ENFORCE(job.mutable_startup()->ParseFromString(std::string(startup)),
                  "memory_plan: the startup program does not parse");
    const MemoryPlan plan =
        PlanJobMemory(job, StrategyOf(strategy), nranks, batch_size);
    py::dict d;
    for (const auto& [key, value] :
         {std::pair<const char*, int64_t>{"parameters", plan.parameters},
          {"optimizer_state", plan.optimizer_state},
          {"other_state", plan.other_state},
          {"communication", plan.communication},
          {"gradients", plan.gradients},
          {"activations", plan.activations},
          {"total", plan.total},
          {"nranks", plan.nranks},
          {"batch_size", plan.batch_size},
          {"peak_op", plan.peak_op}})
      d[key] = value;
    d["peak_op_type"] = plan.peak_op_type;
    py::list largest;
    for (const MemoryItem& item : plan.largest)
      largest.append(py::make_tuple(item.name, item.kind, item.bytes));
    d["largest"] = largest;
    d["text"] = plan.ToString();
    return d;
  });
}

}  // namespace
}  // namespace fluid

PYBIND11_MODULE(_core, m) {
  using namespace fluid;
  m.doc() = "Native core of the fluid package.";
  BindErrors(m);
  BindPrograms(m);
  BindBuilder(m);
  BindExecutors(m);
  BindJob(m);
  BindTranspilers(m);
  BindStrategy(m);
  BindIo(m);
  BindMemory(m);
}
