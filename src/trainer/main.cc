// trainer: train a model on Fashion-MNIST (or any MNIST-family IDX data),
// or a text model on the quotations of Debian's fortunes.
//
//   trainer --model lenet                      train a built-in model
//                                              (mlp, lenet, resnet, vgg;
//                                              transformer, textcnn and
//                                              lstm on the fortunes text)
//   trainer --model mlp --save model.pb        write a built-in model's job
//   trainer --program model.pb [--epochs E] [--batch-size B] [--threads T]
//           [--place cpu|cuda|cuda:N]
//           [--seed S] [--data DIR] [--checkpoint-dir D] [--resume]
//           [--start-fresh] [--checkpoint-every N]
//   mpirun -np N trainer --program model.pb [--bucket-mb M] [--no-overlap]
//           [--check-consistency K] [--sync-batch-norm] [--allreduce A]
//           [--grad-compression none|bf16|fp16] [--shard-optimizer [1|2]]
//           [--strategy FILE] [--strategy-set FIELD=VALUE]
//           [--stall-warn S] [--stall-timeout S] [--flight-dir D]
//           [--timeline FILE]
//   trainer --model M [flags] --plan-memory [--transpile-for N]
//                                              the memory one rank needs
//   trainer ... --memory-limit BYTES           refuse a job planned over it
//   trainer --model M [flags] --print-strategy  the DistributedStrategy a
//                                               run would use
//                                               data-parallel on N ranks
//   trainer --predict DIR [--data DIR] [--test-samples N]
//                                               accuracy of a saved
//                                               inference model
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "src/builder/models.h"
#include "src/distributed/global_communicator.h"
#include "src/distributed/job_control.h"
#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/framework/enforce.h"
#include "src/trainer/strategy_flags.h"
#include "src/trainer/trainer.h"

namespace {

// This rank's number for an error line, without starting MPI: the error
// may come before MPI is up, and MPI may be unable to start at all (a
// launch refused before MPI_Init, a PMI the library lacks). MPI_COMM_WORLD
// when MPI is up already; else the launcher's numbering in the
// environment.
std::string RankForErrors() {
  int initialized = 0, finalized = 0, rank = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // Once MPI is up its numbering is the one the job's collectives use.
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return std::to_string(rank);
  }
  const fluid::LaunchInfo launch = fluid::DetectLaunch();
  return std::to_string(
      launch.kind != fluid::LaunchInfo::Kind::kNone ? launch.rank : 0);
}

// What to run: a job file, a built-in model, or a saved model to score.
void AddJobOptions(CLI::App& app, fluid::TrainerOptions& o) {
  app.add_option("--program", o.program, "training job (model.pb) to run");
  app.add_option("--model", o.model,
                 "built-in model: mlp | lenet | resnet | vgg | transformer | "
                 "textcnn | lstm")
      ->check(CLI::IsMember(fluid::BuiltInModels()));
  app.add_option("--save", o.save,
                 "with --model: write the job to this file and exit");
  app.add_option("--predict", o.predict,
                 "directory of a saved inference model "
                 "(fluid.io.save_inference_model): print its accuracy on "
                 "the test split of --data and exit");
}

// The data, the training loop, checkpoints and the built-in models' knobs.
void AddTrainingOptions(CLI::App& app, fluid::TrainerOptions& o) {
  app.add_option("--data", o.data_dir,
                 "directory of IDX files (text models: of the fortunes "
                 "topic files, default /usr/share/games/fortunes)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "epochs to train")
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "samples per step")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads for the kernels")
      ->capture_default_str();
  app.add_option("--place", o.place,
                 "where kernels run: cpu | cuda (GPU of the node-local "
                 "rank) | cuda:N")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for initialisation and shuffling")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "save a checkpoint here after every epoch");
  app.add_flag("--resume", o.resume,
               "resume from the newest intact checkpoint in --checkpoint-dir");
  app.add_flag("--start-fresh", o.start_fresh,
               "with --resume: when --checkpoint-dir holds nothing usable, "
               "remove its checkpoints and train from scratch instead of "
               "refusing");
  app.add_option("--optimizer", o.optimizer,
                 "with --model: sgd | momentum | adam")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  app.add_option("--lr", o.learning_rate,
                 "with --model: learning rate (default: the model's own, or "
                 "Fluid's 0.001 for --optimizer adam; sgd and momentum on a "
                 "model tuned for another optimizer need it)");
  app.add_option("--warmup-steps", o.warmup_steps,
                 "with --model transformer: steps of linear learning-rate "
                 "warmup (0: the model's 100)");
  app.add_option("--decay-steps", o.decay_steps,
                 "with --model transformer: the step where the cosine "
                 "decay reaches 0 (0: the model's 3000)");
  app.add_option("--train-samples", o.train_samples,
                 "train on the first N samples only (0: all)");
  app.add_option("--test-samples", o.test_samples,
                 "evaluate on the first N test samples only (0: all)");
  app.add_option("--log-every", o.log_every,
                 "progress line every N steps (0: per epoch)")
      ->capture_default_str();
}

// How the ranks of a multi-rank run share the work: the strategy's flags
// (src/trainer/strategy_flags.cc), recorded as given and applied after
// parsing (ApplyStrategyFlags).
struct GivenFlag {
  const fluid::StrategyFlag* flag;
  CLI::Option* option;
  std::string value;
};

void AddDistributedOptions(CLI::App& app, fluid::TrainerOptions& o,
                           std::vector<GivenFlag>* given,
                           std::vector<std::string>* sets) {
  using Arg = fluid::StrategyFlag::Arg;
  given->reserve(fluid::StrategyFlags().size());
  for (const fluid::StrategyFlag& f : fluid::StrategyFlags()) {
    given->push_back({&f, nullptr, ""});
    const std::string help = std::string("multi-rank: ") + f.help +
                             " [DistributedStrategy." + f.fields.back() + "]";
    CLI::Option* opt = f.arg == Arg::kNone
                           ? app.add_flag(f.flag, help)
                           : app.add_option(f.flag, given->back().value, help);
    if (f.arg == Arg::kOptional) opt->expected(0, 1);
    given->back().option = opt;
  }
  app.add_option("--strategy", o.strategy_file,
                 "multi-rank: a DistributedStrategy in text format (what "
                 "--print-strategy prints); the flags override its fields");
  app.add_option("--strategy-set", *sets,
                 "multi-rank: FIELD=VALUE sets any DistributedStrategy field "
                 "(e.g. sharding_configs.stage=1); repeatable");
  app.add_flag("--print-strategy", o.print_strategy,
               "print the strategy this run would use, every field, and exit");
  app.add_flag("--print-program", o.print_program,
               "print the main program's ops and exit");
  app.add_option("--transpile-for", o.print_nranks,
                 "with --print-program: show it transpiled for N ranks");
}

// The strategy fields the flags ask for, into o.strategy.
void ApplyStrategyFlags(const std::vector<GivenFlag>& given,
                        const std::vector<std::string>& sets,
                        fluid::TrainerOptions* o) {
  for (const std::string& s : sets) fluid::ApplyStrategySet(s, &o->strategy);
  for (const GivenFlag& g : given)
    if (g.option->count() > 0) g.flag->apply(g.value, &o->strategy);
}

// Checks, stall detection and tracing.
void AddDiagnosticOptions(CLI::App& app, fluid::TrainerOptions& o) {
  app.add_option("--check-consistency", o.check_consistency,
                 "multi-rank: compare parameter checksums every K steps");
  app.add_option("--stall-warn", o.stall_warn,
                 "multi-rank: after S seconds in a collective waiting for "
                 "ranks that make no progress, name them (0: never)")
      ->capture_default_str();
  app.add_option("--stall-timeout", o.stall_timeout,
                 "multi-rank: after S seconds of such a stall, end the job "
                 "naming the stuck ranks and the collective (0: never)")
      ->capture_default_str();
  app.add_option("--flight-dir", o.flight_dir,
                 "multi-rank: where each rank writes its last collectives "
                 "when the job aborts (default: --checkpoint-dir, else "
                 "fluid-flight-<job id> under $TMPDIR or /tmp; the abort "
                 "message names it)");
  app.add_option("--timeline", o.timeline,
                 "write a Chrome trace-event timeline of the run to FILE "
                 "(open it in Perfetto or chrome://tracing): one process "
                 "per rank, with its ops, collectives, exposed waits, data "
                 "loading and checkpoints");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "with --checkpoint-dir: also checkpoint every N steps, "
                 "recording the sample position in the epoch (0: at each "
                 "epoch's end only)")
      ->capture_default_str();
  app.add_flag("--plan-memory", o.plan_memory,
               "print the memory plan per rank (parameters, gradients, "
               "optimizer state, buckets, peak activations) and exit; "
               "for N ranks under mpirun or with --transpile-for N");
  app.add_option("--memory-limit", o.memory_limit,
                 "refuse, before training, a job whose memory plan needs "
                 "more than BYTES per rank (K, M, G suffixes: 512M, 2G)");
  app.add_option("--layout", o.layout,
                 "multi-rank, with --memory-limit: 'auto' chooses how the "
                 "model is split so that each rank's plan fits: data "
                 "parallelism when it fits, else the fewest ranks splitting "
                 "it (2, 4, ...), pipeline stages across the hosts and "
                 "tensor parallelism inside them first; the global batch "
                 "stays --batch-size x ranks (give neither --tp nor --pp)")
      ->check(CLI::IsMember({"auto"}));
}

// Runs the trainer; on failure, one line naming the cause (and the rank,
// ending the whole job, under mpirun). The exit status.
int RunAndReport(const fluid::TrainerOptions& o) {
  std::string failure;
  try {
    fluid::RunTrainer(o, std::cout);
  } catch (const fluid::Error& e) {
    failure = std::string("error: ") + e.what();
  } catch (const std::exception& e) {
    failure =
        std::string("internal error: ") + fluid::SanitizeMessage(e.what());
  }
  if (failure.empty()) {
    fluid::ShutdownGlobalCommunicator();
    return 0;
  }
  std::cout.flush();
  if (fluid::LaunchedByMpi()) {
    // One line naming the rank, then take the whole job down: the other
    // ranks may be waiting in a collective for this one (without MPI, which
    // could not start, this rank ends alone and mpirun ends the job).
    fluid::WriteErrorLine("trainer: rank " + RankForErrors() + ": " + failure);
    fluid::AbortJob(1);
  }
  fluid::WriteErrorLine("trainer: " + failure);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  fluid::TrainerOptions o;
  CLI::App app{
      "Train a fluid program on MNIST-family data or the fortunes text."};
  std::vector<GivenFlag> given;
  std::vector<std::string> sets;
  AddJobOptions(app, o);
  AddTrainingOptions(app, o);
  AddDistributedOptions(app, o, &given, &sets);
  AddDiagnosticOptions(app, o);
  try {
    app.parse(argc, argv);
    ApplyStrategyFlags(given, sets, &o);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fluid::Error& e) {
    std::cerr << "trainer: error: " << e.what() << std::endl;
    return 2;
  }
  if (o.predict.empty() && o.program.empty() == o.model.empty()) {
    std::cerr << "trainer: error: give exactly one of --program, --model "
              << "and --predict" << std::endl;
    return 2;
  }
  return RunAndReport(o);
}
