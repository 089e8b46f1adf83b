// The trainer: loads (or builds) a training job, trains it on an IDX data
// set, evaluates it, and checkpoints. The `trainer` command is a thin
// parser in front of RunTrainer; all behaviour lives here so that it is
// tested as a library.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "src/framework/types.h"

namespace fluid {

struct TrainerOptions {
  std::string program;  // a TrainingJob file; or:
  std::string model;    // a built-in model (BuiltInModels())
  std::string save;     // with `model`: write the job here and stop
  // A directory fluid.io.save_inference_model wrote: report the model's
  // accuracy on the test split of data_dir instead of training (Predict).
  std::string predict;
  // Print the main program's ops and stop; with print_nranks > 0, as the
  // collective transpiler rewrites it for that many ranks.
  bool print_program = false;
  int print_nranks = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 1;
  int64_t batch_size = 64;
  int threads = 1;
  // Where the kernels run: "cpu", "cuda" (under mpirun each rank takes the
  // GPU of its node-local rank, modulo the visible count) or "cuda:N".
  std::string place = "cpu";
  uint64_t seed = 1;
  std::string checkpoint_dir;
  // Resume from the newest intact checkpoint in checkpoint_dir. An empty or
  // missing directory starts from scratch; a non-empty one with nothing
  // usable is an error unless start_fresh (then its unusable checkpoints
  // are removed and training starts from scratch).
  bool resume = false;
  bool start_fresh = false;
  // Optimizer overrides for built-in models ("" / <= 0: model default).
  std::string optimizer;
  float learning_rate = 0.0f;
  // With a text model: its learning-rate schedule's warmup and decay steps
  // (0: the model's default; see src/builder/text_models.h).
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;
  // Use only the first N training / test samples (0: all), for short runs.
  int64_t train_samples = 0;
  int64_t test_samples = 0;
  // Progress line every N steps (0: once per epoch).
  int64_t log_every = 200;
  // Multi-rank runs (under mpirun): how the ranks share the work. Only
  // the fields set here were asked for (src/trainer/strategy_flags.h):
  // they override, field by field, the text proto in strategy_file, which
  // overrides the job's own strategy. print_strategy prints the result
  // (every field) and stops.
  proto::DistributedStrategy strategy;
  std::string strategy_file;
  bool print_strategy = false;
  // How often (steps; 0: never) to compare parameter checksums across
  // ranks.
  int64_t check_consistency = 0;
  // Stall detection under mpirun (src/distributed/stall_watchdog.h):
  // seconds ranks may wait in a collective for a rank that makes no
  // progress before rank 0 (or, when rank 0 is the one stuck, the lowest
  // rank that is not) names it in a warning, and before the job ends
  // (0: never). Where each rank writes its flight recorder (its last 256
  // collectives) when the job aborts: "" is the checkpoint directory, or
  // without one fluid-flight-<job id> under $TMPDIR (DefaultFlightDir).
  double stall_warn = 60;
  double stall_timeout = 300;
  std::string flight_dir;
  // Where rank 0 writes the job's Chrome trace-event timeline (every
  // rank's ops, collectives, waits, data loading and checkpoints; see
  // src/distributed/timeline_session.h); "" records none.
  std::string timeline;
  // With checkpoint_dir: also checkpoint every N global steps (0: only at
  // the end of each epoch), so a restarted job loses at most N steps. The
  // checkpoint records the sample position within the epoch.
  int64_t checkpoint_every = 0;
  // Print the job's memory plan per rank (transpiler/memory_plan.h) and
  // stop: for mpirun's ranks, or print_nranks (--transpile-for) ranks.
  bool plan_memory = false;
  // Refuse, before training, a job whose plan needs more than this many
  // bytes per rank: digits with an optional K, M or G suffix ("" : none).
  std::string memory_limit;
  // "auto": choose tensor parallelism and pipeline stages so that the
  // job's plan fits memory_limit (FitLayout); "": as the strategy says.
  std::string layout;
};

struct TrainerResult {
  int rank = 0;
  int world_size = 1;
  int64_t steps = 0;
  double final_loss = 0;
  double train_accuracy = 0;  // a language model's: its mean loss
  double test_accuracy = -1;  // -1 when not evaluated
  // A language model's validation loss per token (its perplexity is the
  // exp of it); -1 when not evaluated or not a language model.
  double test_loss = -1;
  double samples_per_second = 0;
  // Bytes of gradients this rank handed to the transport (0 on one rank).
  int64_t allreduce_wire_bytes = 0;
};

// Runs the job described by `options`, printing progress to `out` (rank 0
// only). Under mpirun it trains data-parallel on every rank: the job is
// transpiled on load, each rank reads its own shard, rank 0 prints and
// checkpoints. Throws fluid::Error on any failure (bad program, missing
// data, NaN loss, ...).
TrainerResult RunTrainer(const TrainerOptions& options, std::ostream& out);

// Loads the inference model in options.predict and prints its top-1
// accuracy on the test split of options.data_dir (the model's first fetch
// scores each class; its feeds take the image and, if it asks, the label).
// Uses data_dir, test_samples, place and threads; refuses program and model.
TrainerResult Predict(const TrainerOptions& options, std::ostream& out);

// The program the trainer evaluates with: the job's test program (refused
// if it holds an op that trains or communicates), or, when the job has
// none, the forward part of the main program (CloneForTest), which is said
// on `log`. Never the main program itself: evaluation must not train.
proto::ProgramDesc EvaluationProgram(const proto::TrainingJob& job,
                                     std::ostream& log);

// The place `--place` names (see TrainerOptions::place); an error names the
// cause when it is malformed or no such device is visible.
Place ParsePlace(const std::string& place);

}  // namespace fluid
