// Pipeline parallelism as a program rewrite (strategy fields
// pipeline_stages and pipeline_configs): the model is cut into stages, each
// run by its own ranks, and every batch is cut into micro-batches that flow
// through the stages in turn.
//
// Ranks are laid out as [pp][dp][tp]: stage s holds ranks s * (nranks / pp)
// to (s + 1) * (nranks / pp) - 1; inside a stage the tensor-parallel and
// data-parallel groups are laid out as transpiler/tensor_parallel.h says.
// The ranks at one position of every stage form one pipeline.
//
// Where the cuts go: an op's int attr pipeline_stage (fluid.pipeline_stage
// guards in Python) places it and the ops after it that carry none; a
// program without any is cut automatically into stages of about equal
// parameter counts, each cut placed where the fewest values cross it. Ops
// that read no parameter and nothing computed from one (a constant mask,
// a cast of the labels) run on every stage that needs their result. A
// backward op runs on its forward op's stage, an optimizer op on its
// parameter's. A value crosses one cut at a time: a stage reads only its
// own values and those of the stage just before it.
//
// What each stage runs per batch: its feeds cut into that many micro-batches
// (split, axis 0); then, in the order of the schedule, the forward of
// micro-batch k (recv_v2 of the values crossing the cut before it, its ops
// on names suffixed @MB<k>, send_v2 of the values crossing the cut after
// it) and its backward (the same with the gradients, the other way); the
// gradients of its parameters summed over the micro-batches, the loss
// seeded with 1 / (micro-batches), so that the update is the one the whole
// batch gives (a mean loss); the last stage's float scalar results (the
// loss, an accuracy) averaged over the micro-batches and broadcast to every
// stage
// (ring kPipelineRing), so every rank fetches them; then its optimizer
// ops. Dropout's mask of micro-batch k is the whole batch's rows of it, so
// a pipeline drops exactly the elements one process drops.
//
// Activations travel on one ring per cut and direction (two ranks: the
// send is a broadcast from the sender, shape first), so each ring carries
// micro-batches 0, 1, ... in order whatever the schedule. Sends do not
// wait (c_wait at the end of the step). A receive is issued ahead
// (recv_v2 with a Handle), right after the previous message of its value
// and cut arrived (the first one where the stage's schedule begins), and
// waited for (c_wait, which writes the value) where it is first read, so
// the values move while the stage computes. Every stage's
// sequence of sends and receives is in its program, and LintPipeline
// checks that they pair up and that the schedule cannot deadlock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

// Rings (the ring_id attr): every stage of one pipeline, and per cut b
// (between stages b and b + 1) its activations' ring kPipelineForwardRing +
// b % 2 and its gradients' kPipelineBackwardRing + b % 2 (a stage touches
// two cuts, of different parities).
constexpr int32_t kPipelineRing = 3;
constexpr int32_t kPipelineForwardRing = 4;
constexpr int32_t kPipelineBackwardRing = 6;
// Every rank of one stage (its tensor- and data-parallel groups together):
// the startup's broadcasts of whole parameters under tensor parallelism.
constexpr int32_t kStageRing = 8;
// The int attr placing an op on a stage.
constexpr const char* kPipelineStageAttr = "pipeline_stage";
// The attr naming a micro-batch (send_v2, recv_v2, dropout).
constexpr const char* kMicroBatchAttr = "micro_batch";
// The suffix of a send's handle, which c_wait waits for at the step's end.
constexpr const char* kSendHandleSuffix = "@SEND";
// The suffix of a receive's handle, which c_wait waits for where the value
// is first read.
constexpr const char* kRecvHandleSuffix = "@RECV";

// Whether `op` is one of a stage's own collectives that run on every step
// of the pipeline, whatever gradient merge skips: the waits for its sends
// and receives and the broadcast of the last stage's results to the other
// stages.
bool IsPipelineStepCollective(const proto::OpDesc& op);

// pipeline_stages, 1 when unset; with `nranks`, an error unless
// pipeline_stages x tensor_parallel_degree divides nranks.
int PipelineStages(const proto::DistributedStrategy& s);
int PipelineStages(const proto::DistributedStrategy& s, int nranks);
int MicroBatches(const proto::DistributedStrategy& s);
// "1F1B" or "FThenB".
const std::string& PipelineSchedule(const proto::DistributedStrategy& s);
int ForwardsAhead(const proto::DistributedStrategy& s);

// Where rank `rank` of `nranks` sits: its stage, and its position in the
// stage (the same position of every stage is one pipeline).
inline int StageOf(int rank, int nranks, int pp) {
  return rank / (nranks / pp);
}
inline int PositionInStage(int rank, int nranks, int pp) {
  return rank % (nranks / pp);
}

// The ranks that read distinct data ([pp][dp][tp]: one per data-parallel
// position), and which of them rank `rank` reads as.
int DataParallelWorld(const proto::DistributedStrategy& s, int nranks);
int DataParallelRank(const proto::DistributedStrategy& s, int rank, int nranks);

// The color of rank `rank`'s data-parallel ring (kDataParallelRing): the
// ranks of its stage at its position in the tensor-parallel group.
int DataParallelColor(const proto::DistributedStrategy& s, int rank,
                      int nranks);

// One step of a stage's schedule: the forward or backward of a micro-batch.
struct PipelineStep {
  bool forward;
  int micro_batch;
};
// Stage `stage`'s order of forwards and backwards (1F1B or FThenB). Under
// 1F1B a stage but the last runs `ahead` more forwards before its first
// backward (pipeline_configs.forwards_ahead); an error under FThenB.
std::vector<PipelineStep> StageSchedule(int stage, int stages, int pieces,
                                        const std::string& schedule,
                                        int ahead = 0);

// The job cut into pipeline_stages stages as described above: one program
// holding every stage's ops, each with its pipeline_stage attr, in the
// order that stage runs them (stage 0's first). Not runnable as it is:
// PipelineStageJob takes one stage's part. fp16's check of the gradients
// and its loss-scale update run on every stage over its own gradients, the
// stages agreeing on the overflow flag (a max over kPipelineRing) first.
// Recompute's replays run on the stage of the ops they replay; a backward
// op reading a replayed copy of a value made on another stage reads the
// value itself (it crossed the cut in the forward pass).
// Refuses what does not compose yet (naming the setting): sub-blocks,
// sparse gradients, an op other than a sum or fp16's that reads several
// stages' gradients.
proto::TrainingJob PipelineRewrite(const proto::TrainingJob& job);

// The part of PipelineRewrite's job that stage `stage` runs: its ops, the
// vars they use, and a startup program that makes only its persistables.
proto::TrainingJob PipelineStageJob(const proto::TrainingJob& job, int stage);

// Checks PipelineRewrite's job: every op on a stage, every send_v2 paired
// with the recv_v2 of the next or previous stage for the same value and
// micro-batch, in the same order, and the stages' orders free of
// deadlock (a stage waits only for what another stage sends before it
// waits itself). Throws naming the stages, the value and the micro-batch.
void LintPipeline(const proto::TrainingJob& job);

}  // namespace fluid
