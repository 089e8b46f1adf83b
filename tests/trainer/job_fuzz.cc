// job_fuzz: mutates the built-in training jobs and trains every mutant
// briefly in a child process of its own. A mutant may train or be refused
// with an error naming the cause; it must never end by a signal (a crash,
// an abort from the allocator), hang, or throw anything but fluid::Error.
//
//   job_fuzz [--cases N] [--seed S] [--models mlp,lenet,...]
//            [--timeout SECONDS] [--keep DIR] [--verbose]
//
// Each case draws 1-3 mutations from its own seed (the run's seed and the
// case number), so a failing case is rerun alone with the same --seed and
// --cases just past it. The mutations: an attribute set to an edge value
// (0, -1, INT_MAX, NaN, an empty string, a list one element longer ...),
// given another type, or dropped; a variable's shape or dtype changed; an
// op's type changed to another registered type; a slot bound to another
// variable, emptied, or given one more; an op dropped, doubled or moved; the
// loss or a metric renamed. The images are a tiny IDX set written here, the
// text models read the fortunes (src/data/fortunes.h).
//
// Exit status 0 when no case failed; every failure is listed with its
// mutations and (with --keep) its job and log are kept.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/builder/models.h"
#include "src/data/fortunes.h"
#include "src/framework/enforce.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "src/io/job_io.h"
#include "src/trainer/trainer.h"

namespace fluid {
namespace {

using Rng = std::mt19937_64;

struct Args {
  int cases = 300;
  uint64_t seed = 1;
  std::vector<std::string> models = {"mlp",  "lenet",   "resnet",     "vgg",
                                     "lstm", "textcnn", "transformer"};
  double timeout = 60;
  std::string keep;
  bool verbose = false;
};

size_t Pick(Rng& rng, size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

template <typename T>
const T& PickOf(Rng& rng, const std::vector<T>& values) {
  return values[Pick(rng, values.size())];
}

// ---- edge values, by attribute type ----

int32_t EdgeInt(Rng& rng) {
  return PickOf<int32_t>(rng, {0, 1, -1, 2, -2, 3, 7, 8, 9, 100, 1000, 1 << 20,
                               std::numeric_limits<int32_t>::max(),
                               std::numeric_limits<int32_t>::max() - 1,
                               std::numeric_limits<int32_t>::min()});
}

int64_t EdgeLong(Rng& rng) {
  if (Pick(rng, 3) == 0) return EdgeInt(rng);
  return PickOf<int64_t>(rng, {int64_t{1} << 31, int64_t{1} << 40,
                               std::numeric_limits<int64_t>::max(),
                               std::numeric_limits<int64_t>::min(), -3});
}

float EdgeFloat(Rng& rng) {
  return PickOf<float>(rng, {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e-30f,
                             1e30f, std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()});
}

std::string EdgeString(Rng& rng) {
  return PickOf<std::string>(
      rng, {"", "bogus", "relu", "sigmoid", "tanh", "identity", "avg", "sum",
            "max", "NCHW", "NHWC", std::string(300, 'x')});
}

template <typename T, typename Edge>
std::vector<T> EdgeList(Rng& rng, std::vector<T> v, Edge edge) {
  switch (Pick(rng, 5)) {
    case 0:
      return {};
    case 1:
      return {edge(rng)};
    case 2:
      if (!v.empty()) {
        v[Pick(rng, v.size())] = edge(rng);
        return v;
      }
      return {edge(rng), edge(rng)};
    case 3:
      v.push_back(v.empty() ? edge(rng) : v.back());
      return v;
    default:
      if (!v.empty()) v.pop_back();
      return v;
  }
}

// `value` changed to an edge value of the same type.
Attribute EdgeValue(Rng& rng, const Attribute& value) {
  return std::visit(
      [&rng](const auto& v) -> Attribute {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int32_t>) {
          return EdgeInt(rng);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return EdgeLong(rng);
        } else if constexpr (std::is_same_v<T, float>) {
          return EdgeFloat(rng);
        } else if constexpr (std::is_same_v<T, double>) {
          return static_cast<double>(EdgeFloat(rng));
        } else if constexpr (std::is_same_v<T, bool>) {
          return !v;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return EdgeString(rng);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
          return EdgeList<int32_t>(rng, v, EdgeInt);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return EdgeList<int64_t>(rng, v, EdgeLong);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          return EdgeList<float>(rng, v, EdgeFloat);
        } else {
          return EdgeList<std::string>(rng, v, EdgeString);
        }
      },
      value);
}

// A value of another type than `value`'s.
Attribute OtherType(Rng& rng, const Attribute& value) {
  std::vector<Attribute> all = {Attribute(int32_t{1}),
                                Attribute(0.5f),
                                Attribute(std::string("x")),
                                Attribute(std::vector<int32_t>{1, 2}),
                                Attribute(std::vector<float>{}),
                                Attribute(std::vector<std::string>{"a"}),
                                Attribute(true),
                                Attribute(int64_t{7}),
                                Attribute(std::vector<int64_t>{-1}),
                                Attribute(2.0)};
  Attribute out;
  do {
    out = PickOf(rng, all);
  } while (out.index() == value.index());
  return out;
}

// ---- mutations ----

struct Mutant {
  proto::TrainingJob job;
  std::vector<std::string> what;  // one line per mutation
};

proto::ProgramDesc* PickProgram(Rng& rng, proto::TrainingJob* job,
                                std::string* name) {
  const size_t r = Pick(rng, 10);
  if (r == 0) {
    *name = "startup";
    return job->mutable_startup();
  }
  if (r == 1 && job->has_test()) {
    *name = "test";
    return job->mutable_test();
  }
  *name = "main";
  return job->mutable_main();
}

std::string OpLabel(const std::string& program, int index,
                    const proto::OpDesc& op) {
  return program + " op #" + std::to_string(index) + " '" + op.type() + "'";
}

void MutateAttr(Rng& rng, proto::BlockDesc* block, const std::string& program,
                Mutant* m) {
  if (block->ops_size() == 0) return;
  // An op whose schema declares attrs, where one is found in a few draws.
  int i = static_cast<int>(Pick(rng, block->ops_size()));
  for (int tries = 0; tries < 4; ++tries) {
    const std::string& type = block->ops(i).type();
    if (OpRegistry::Global().Has(type) &&
        !OpRegistry::Global().Get(type).attrs().empty())
      break;
    i = static_cast<int>(Pick(rng, block->ops_size()));
  }
  proto::OpDesc* op = block->mutable_ops(i);
  // Mostly the attrs its schema declares (what kernels read), with the
  // value the op carries; else any attr it carries (roles and the like).
  std::vector<std::pair<std::string, Attribute>> attrs;
  if (OpRegistry::Global().Has(op->type()) && Pick(rng, 5) != 0) {
    for (const AttrSpec& s : OpRegistry::Global().Get(op->type()).attrs())
      attrs.emplace_back(s.name, HasOpAttr(*op, s.name) ? GetOpAttr(*op, s.name)
                                                        : s.default_value);
  }
  if (attrs.empty()) {
    for (const auto& a : op->attrs())
      attrs.emplace_back(a.name(), AttributeFromProto(a));
  }
  if (attrs.empty()) return;
  const auto& [name, value] = PickOf(rng, attrs);
  const std::string label = OpLabel(program, i, *op) + " attr " + name;
  const size_t how = Pick(rng, 10);
  if (how < 7) {
    Attribute v = EdgeValue(rng, value);
    SetOpAttr(op, name, v);
    m->what.push_back(label + " = " + AttributeText(v));
  } else if (how == 7) {
    Attribute v = OtherType(rng, value);
    SetOpAttr(op, name, v);
    m->what.push_back(label + " retyped " + AttributeText(v));
  } else {
    // Dropped, or present with its value lost (a field left unset).
    auto* list = op->mutable_attrs();
    for (int k = 0; k < list->size(); ++k) {
      if (list->Get(k).name() != name) continue;
      if (how == 8) {
        list->DeleteSubrange(k, 1);
        m->what.push_back(label + " dropped");
      } else {
        proto::OpDesc::Attr bare;
        bare.set_name(name);
        bare.set_type(list->Get(k).type());
        list->Mutable(k)->Swap(&bare);
        m->what.push_back(label + " value lost");
      }
      return;
    }
  }
}

void MutateVar(Rng& rng, proto::BlockDesc* block, const std::string& program,
               Mutant* m) {
  if (block->vars_size() == 0) return;
  proto::VarDesc* var = block->mutable_vars(Pick(rng, block->vars_size()));
  const std::string label = program + " var '" + var->name() + "'";
  if (Pick(rng, 3) == 0) {
    const auto dtype = static_cast<proto::DataType>(Pick(rng, 4));
    var->set_dtype(dtype);
    m->what.push_back(label + " dtype " + proto::DataType_Name(dtype));
    return;
  }
  auto* shape = var->mutable_shape();
  const size_t how = Pick(rng, 4);
  if (how == 0 || shape->empty()) {
    shape->Add(PickOf<int64_t>(rng, {1, 2, 3, -1}));
  } else if (how == 1) {
    shape->RemoveLast();
  } else {
    shape->Set(static_cast<int>(Pick(rng, shape->size())),
               PickOf<int64_t>(rng, {0, 1, 2, 3, -1, -2, int64_t{1} << 20,
                                     int64_t{1} << 31, int64_t{1} << 40,
                                     std::numeric_limits<int64_t>::max()}));
  }
  std::string dims;
  for (int64_t d : *shape)
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  m->what.push_back(label + " shape [" + dims + "]");
}

void MutateOpType(Rng& rng, proto::BlockDesc* block, const std::string& program,
                  Mutant* m) {
  if (block->ops_size() == 0) return;
  const int i = static_cast<int>(Pick(rng, block->ops_size()));
  proto::OpDesc* op = block->mutable_ops(i);
  const std::vector<std::string> types = OpRegistry::Global().Types();
  const std::string label = OpLabel(program, i, *op);
  op->set_type(PickOf(rng, types));
  m->what.push_back(label + " retyped '" + op->type() + "'");
}

void MutateSlot(Rng& rng, proto::BlockDesc* block, const std::string& program,
                Mutant* m) {
  if (block->ops_size() == 0 || block->vars_size() == 0) return;
  const int i = static_cast<int>(Pick(rng, block->ops_size()));
  proto::OpDesc* op = block->mutable_ops(i);
  const bool input = Pick(rng, 2) == 0 || op->outputs_size() == 0;
  auto* slots = input ? op->mutable_inputs() : op->mutable_outputs();
  if (slots->empty()) return;
  proto::OpDesc::Var* slot = slots->Mutable(Pick(rng, slots->size()));
  const std::string other = block->vars(Pick(rng, block->vars_size())).name();
  const std::string label = OpLabel(program, i, *op) +
                            (input ? " input " : " output ") +
                            slot->parameter();
  const size_t how = Pick(rng, 4);
  if (how == 0) {
    slot->clear_arguments();
    m->what.push_back(label + " emptied");
  } else if (how == 1) {
    slot->add_arguments(other);
    m->what.push_back(label + " += '" + other + "'");
  } else if (slot->arguments_size() > 0) {
    slot->set_arguments(static_cast<int>(Pick(rng, slot->arguments_size())),
                        other);
    m->what.push_back(label + " bound to '" + other + "'");
  }
}

void MutateOps(Rng& rng, proto::BlockDesc* block, const std::string& program,
               Mutant* m) {
  auto* ops = block->mutable_ops();
  if (ops->size() < 2) return;
  const int i = static_cast<int>(Pick(rng, ops->size() - 1));
  const std::string label = OpLabel(program, i, ops->Get(i));
  switch (Pick(rng, 3)) {
    case 0:
      ops->DeleteSubrange(i, 1);
      m->what.push_back(label + " dropped");
      break;
    case 1:
      *ops->Add() = ops->Get(i);
      m->what.push_back(label + " repeated at the end");
      break;
    default:
      ops->SwapElements(i, i + 1);
      m->what.push_back(label + " swapped with the next op");
  }
}

void MutateNames(Rng& rng, Mutant* m) {
  proto::TrainingJob& job = m->job;
  const auto& vars = job.main().blocks(0).vars();
  const std::string other =
      vars.empty() ? ""
                   : vars.Get(static_cast<int>(Pick(rng, vars.size()))).name();
  switch (Pick(rng, 3)) {
    case 0:
      job.set_loss_name(other);
      m->what.push_back("loss '" + other + "'");
      break;
    case 1:
      if (job.metric_names_size() > 0) {
        job.set_metric_names(0, Pick(rng, 2) == 0 ? "" : other);
        m->what.push_back("metric 0 '" + job.metric_names(0) + "'");
      }
      break;
    default:
      job.clear_metric_names();
      m->what.push_back("no metrics");
  }
}

Mutant Mutate(const proto::TrainingJob& job, Rng& rng) {
  Mutant m;
  m.job = job;
  const size_t count = 1 + Pick(rng, 3);
  for (size_t k = 0; k < count; ++k) {
    std::string program;
    proto::ProgramDesc* p = PickProgram(rng, &m.job, &program);
    if (p->blocks_size() == 0) continue;
    proto::BlockDesc* block = p->mutable_blocks(0);
    const size_t kind = Pick(rng, 20);
    if (kind < 9) {
      MutateAttr(rng, block, program, &m);
    } else if (kind < 12) {
      MutateVar(rng, block, program, &m);
    } else if (kind < 14) {
      MutateOpType(rng, block, program, &m);
    } else if (kind < 17) {
      MutateSlot(rng, block, program, &m);
    } else if (kind < 19) {
      MutateOps(rng, block, program, &m);
    } else {
      MutateNames(rng, &m);
    }
  }
  return m;
}

// ---- data ----

void WriteIdx(const std::string& prefix, int n, Rng& rng) {
  auto be32 = [](std::ofstream& f, uint32_t v) {
    const unsigned char b[4] = {static_cast<unsigned char>(v >> 24),
                                static_cast<unsigned char>(v >> 16),
                                static_cast<unsigned char>(v >> 8),
                                static_cast<unsigned char>(v)};
    f.write(reinterpret_cast<const char*>(b), 4);
  };
  std::ofstream images(prefix + "-images-idx3-ubyte", std::ios::binary);
  be32(images, 0x803);
  be32(images, static_cast<uint32_t>(n));
  be32(images, 28);
  be32(images, 28);
  for (int i = 0; i < n * 28 * 28; ++i)
    images.put(static_cast<char>(Pick(rng, 256)));
  std::ofstream labels(prefix + "-labels-idx1-ubyte", std::ios::binary);
  be32(labels, 0x801);
  be32(labels, static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) labels.put(static_cast<char>(Pick(rng, 10)));
}

// ---- running a case ----

struct Outcome {
  enum Kind { kTrained, kRefused, kUnexpected, kSignal, kHang } kind;
  int signal = 0;
};

bool IsTextModel(const std::string& model) {
  return model == "lstm" || model == "textcnn" || model == "transformer";
}

// In the child: train the mutant for one short epoch.
int RunChild(const std::string& job_path, const std::string& model,
             const std::string& images_dir) {
  TrainerOptions o;
  o.program = job_path;
  o.data_dir = IsTextModel(model) ? kFortunesDir : images_dir;
  o.epochs = 1;
  o.batch_size = 8;
  o.train_samples = 16;
  o.test_samples = 8;
  o.threads = 1;
  o.log_every = 1;
  try {
    RunTrainer(o, std::cout);
    std::cout << "job_fuzz: trained" << std::endl;
    return 0;
  } catch (const Error& e) {
    std::cout << "job_fuzz: refused: " << e.what() << std::endl;
    return 10;
  } catch (const std::exception& e) {
    std::cout << "job_fuzz: unexpected exception: " << e.what() << std::endl;
    return 11;
  }
}

Outcome RunCase(const std::string& job_path, const std::string& log_path,
                const std::string& model, const std::string& images_dir,
                double timeout) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  FLUID_ENFORCE(pid >= 0, "job_fuzz: fork failed: ", std::strerror(errno));
  if (pid == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    const int rc = RunChild(job_path, model, images_dir);
    std::cout.flush();
    std::cerr.flush();
    _exit(rc);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (waited > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return {Outcome::kHang, 0};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status)) return {Outcome::kSignal, WTERMSIG(status)};
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 0) return {Outcome::kTrained, 0};
  if (rc == 10) return {Outcome::kRefused, 0};
  return {Outcome::kUnexpected, 0};
}

std::string LastLine(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      FLUID_ENFORCE(i + 1 < argc, "job_fuzz: ", flag, " needs a value");
      return argv[++i];
    };
    if (flag == "--cases") {
      a.cases = std::stoi(value());
    } else if (flag == "--seed") {
      a.seed = std::stoull(value());
    } else if (flag == "--models") {
      a.models = Split(value());
    } else if (flag == "--timeout") {
      a.timeout = std::stod(value());
    } else if (flag == "--keep") {
      a.keep = value();
    } else if (flag == "--verbose") {
      a.verbose = true;
    } else {
      FLUID_THROW(ErrorCode::kInvalidArgument, "job_fuzz: unknown flag ",
                  Quote(flag),
                  " (see the comment atop tests/trainer/job_fuzz.cc)");
    }
  }
  FLUID_ENFORCE(a.cases > 0 && !a.models.empty(),
                "job_fuzz: needs --cases > 0 and at least one model");
  return a;
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  char tmpl[] = "/tmp/job_fuzz.XXXXXX";
  FLUID_ENFORCE(mkdtemp(tmpl) != nullptr, "job_fuzz: mkdtemp failed");
  const std::string dir = tmpl;
  Rng data_rng(args.seed);
  WriteIdx(dir + "/train", 32, data_rng);
  WriteIdx(dir + "/t10k", 16, data_rng);
  if (!args.keep.empty()) mkdir(args.keep.c_str(), 0755);

  std::vector<proto::TrainingJob> jobs;
  for (const auto& model : args.models) jobs.push_back(BuildModel(model));

  int counts[5] = {0, 0, 0, 0, 0};
  int failures = 0;
  for (int c = 0; c < args.cases; ++c) {
    Rng rng(args.seed * 1000003u + static_cast<uint64_t>(c));
    const size_t which = Pick(rng, jobs.size());
    const std::string& model = args.models[which];
    Mutant m = Mutate(jobs[which], rng);
    const std::string job_path = dir + "/case.pb";
    const std::string log_path = dir + "/case.log";
    SaveJob(m.job, job_path);
    const Outcome out = RunCase(job_path, log_path, model, dir, args.timeout);
    ++counts[out.kind];
    std::string mutations;
    for (const auto& w : m.what)
      mutations += (mutations.empty() ? "" : "; ") + w;
    const bool failed = out.kind >= Outcome::kUnexpected;
    if (failed || args.verbose) {
      const char* verdict[] = {"trained", "refused", "unexpected exception",
                               "killed by a signal", "hung"};
      std::cout << "case " << c << " (" << model << ": " << mutations
                << "): " << verdict[out.kind];
      if (out.kind == Outcome::kSignal)
        std::cout << " " << out.signal << " (" << strsignal(out.signal) << ")";
      std::cout << "\n    " << LastLine(log_path) << std::endl;
    }
    if (failed) {
      ++failures;
      if (!args.keep.empty()) {
        const std::string base = args.keep + "/case" + std::to_string(c);
        std::rename(job_path.c_str(), (base + ".pb").c_str());
        std::rename(log_path.c_str(), (base + ".log").c_str());
      }
    }
  }
  std::remove((dir + "/case.pb").c_str());
  std::remove((dir + "/case.log").c_str());
  for (const char* f : {"/train-images-idx3-ubyte", "/train-labels-idx1-ubyte",
                        "/t10k-images-idx3-ubyte", "/t10k-labels-idx1-ubyte"})
    std::remove((dir + f).c_str());
  rmdir(dir.c_str());
  std::cout << "job_fuzz: " << args.cases << " cases (seed " << args.seed
            << "): " << counts[Outcome::kTrained] << " trained, "
            << counts[Outcome::kRefused] << " refused, "
            << counts[Outcome::kUnexpected] << " unexpected exceptions, "
            << counts[Outcome::kSignal] << " signals, "
            << counts[Outcome::kHang] << " hangs" << std::endl;
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    return fluid::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  }
}
