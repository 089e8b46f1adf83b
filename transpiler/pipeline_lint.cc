// LintPipeline and PipelineStageJob (transpiler/pipeline.h).
#include <map>
#include <set>
#include <sstream>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/pipeline.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

constexpr const char* kPrefix = "pipeline lint: ";

int StageAttr(const proto::OpDesc& op) {
  return HasOpAttr(op, kPipelineStageAttr)
             ? GetOpAttrAs<int32_t>(op, kPipelineStageAttr)
             : -1;
}

// One event of a stage's run that another stage takes part in.
struct Event {
  // kRecv waits for its message; kRecvStart (a recv_v2 with a Handle) is
  // issued without waiting, and its c_wait (kWaitRecv) waits.
  enum Kind {
    kSend,
    kRecv,
    kRecvStart,
    kWaitRecv,
    kWaitSend,
    kPipelineCollective
  } kind;
  int channel = -1;  // send / recv / wait: (ring, cut); collective: its number
  int index = 0;     // the message's position on its channel
  std::string what;  // "recv_v2 of 'x@MB1' (micro-batch 1)"
};

std::string Describe(const proto::OpDesc& op) {
  std::ostringstream os;
  os << op.type() << " of "
     << Quote(op.type() == "send_v2" ? OpInput(op, "X").at(0)
                                     : OpOutput(op, "Out").at(0));
  if (HasOpAttr(op, kMicroBatchAttr))
    os << " (micro-batch " << GetOpAttrAs<int32_t>(op, kMicroBatchAttr) << ")";
  return os.str();
}

// The channel of a send or receive on stage `stage`: a ring and the cut it
// spans (the ring's id alone repeats every other cut).
int Channel(const proto::OpDesc& op, int stage) {
  const int ring = GetOpAttrAs<int32_t>(op, "ring_id");
  const int peer = GetOpAttrAs<int32_t>(op, "peer");
  const int cut = peer == 1 ? stage : stage - 1;
  return ring * 4096 + cut;
}

struct StageRun {
  std::vector<Event> events;
  std::vector<std::string> sent_names, received_names;  // per event order
};

// A received value is read only after its receive's c_wait, and every
// receive issued ahead is waited for: checked per stage in op order.
class InFlight {
 public:
  void Start(const std::string& handle, const std::string& value,
             const std::string& what) {
    values_[handle] = {value, what};
  }
  // Ends `handle`'s receive (nothing for a send's handle).
  void Wait(const std::string& handle) { values_.erase(handle); }
  // `reads`: what `op` reads, its blocks' ops included.
  void CheckReads(const proto::OpDesc& op, const std::set<std::string>& reads,
                  int stage) const {
    for (const std::string& n : reads)
      for (const auto& [h, v] : values_)
        FLUID_ENFORCE(n != v.first, kPrefix, op.type(), " on stage ", stage,
                      " reads ", Quote(n), " before the c_wait of its ",
                      v.second);
  }
  void CheckAllWaited(int stage) const {
    for (const auto& [h, v] : values_)
      FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, v.second, " on stage ",
                  stage, " is never waited for (no c_wait on ", Quote(h), ")");
  }

 private:
  std::map<std::string, std::pair<std::string, std::string>> values_;
};

// What `op` reads: its inputs, and those of the ops of its block (a loop's
// or a conditional's body, which runs where `op` runs), nested blocks too.
void AddReads(const proto::ProgramDesc& program, const proto::OpDesc& op,
              std::set<std::string>* reads) {
  for (const std::string& n : OpInputNames(op)) reads->insert(n);
  if (!HasOpAttr(op, "sub_block")) return;
  const int b = GetOpAttrAs<int32_t>(op, "sub_block");
  FLUID_ENFORCE(b > 0 && b < program.blocks_size(), kPrefix, op.type(),
                " names block ", b, " of ", program.blocks_size());
  for (const auto& inner : program.blocks(b).ops())
    AddReads(program, inner, reads);
}

// The receives' in-flight check over the first block of `program` (see
// InFlight).
void CheckReceivesWaited(const proto::ProgramDesc& program, int stages) {
  std::vector<InFlight> flight(stages);
  for (const auto& op : program.blocks(0).ops()) {
    const int s = StageAttr(op);
    if (op.type() == "c_wait") {
      flight[s].Wait(OpInput(op, "Handle").at(0));
      continue;
    }
    std::set<std::string> reads;
    AddReads(program, op, &reads);
    flight[s].CheckReads(op, reads, s);
    if (op.type() == "recv_v2" && !OpOutput(op, "Handle").empty())
      flight[s].Start(OpOutput(op, "Handle").at(0), OpOutput(op, "Out").at(0),
                      Describe(op));
  }
  for (int s = 0; s < stages; ++s) flight[s].CheckAllWaited(s);
}

// Every stage's events, checking the pairing of sends and receives.
std::vector<StageRun> CollectEvents(const proto::ProgramDesc& program,
                                    int stages) {
  const proto::BlockDesc& block = program.blocks(0);
  std::vector<StageRun> runs(stages);
  std::map<int, std::vector<std::pair<std::string, std::string>>> sends, recvs;
  // handle -> channel, index, and whether it is a send's
  struct Pending {
    int channel, index;
    bool send;
    std::string what;
  };
  std::map<std::string, Pending> handle_of;
  std::vector<int> collectives(stages, 0);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    const int s = StageAttr(op);
    FLUID_ENFORCE(s >= 0 && s < stages, kPrefix, "op #", i, " (", op.type(),
                  ") has no stage (pipeline_stage attr) in 0..", stages - 1);
    StageRun& run = runs[s];
    if (op.type() == "send_v2" || op.type() == "recv_v2") {
      const bool send = op.type() == "send_v2";
      const int ch = Channel(op, s);
      auto& list = send ? sends[ch] : recvs[ch];
      const std::string name =
          send ? OpInput(op, "X").at(0) : OpOutput(op, "Out").at(0);
      list.push_back({name, Describe(op) + " on stage " + std::to_string(s)});
      const int index = static_cast<int>(list.size()) - 1;
      const bool early = !send && !OpOutput(op, "Handle").empty();
      run.events.push_back(
          {send ? Event::kSend : (early ? Event::kRecvStart : Event::kRecv), ch,
           index, Describe(op)});
      if (send || early)
        handle_of[OpOutput(op, "Handle").at(0)] = {ch, index, send,
                                                   Describe(op)};
    } else if (op.type() == "c_wait") {
      auto it = handle_of.find(OpInput(op, "Handle").at(0));
      if (it == handle_of.end()) continue;
      const Pending& p = it->second;
      if (p.send) {
        run.events.push_back({Event::kWaitSend, p.channel, p.index,
                              "c_wait for the send of its channel's message " +
                                  std::to_string(p.index)});
      } else {
        run.events.push_back(
            {Event::kWaitRecv, p.channel, p.index, "c_wait for " + p.what});
      }
    } else if (HasOpAttr(op, "ring_id") &&
               GetOpAttrAs<int32_t>(op, "ring_id") == kPipelineRing) {
      run.events.push_back({Event::kPipelineCollective, collectives[s]++, 0,
                            op.type() + " over the pipeline"});
    }
  }
  std::set<int> channels;
  for (const auto& [ch, l] : sends) channels.insert(ch);
  for (const auto& [ch, l] : recvs) channels.insert(ch);
  for (int ch : channels) {
    const auto& s = sends[ch];
    const auto& r = recvs[ch];
    // The first message the two ends disagree on: one more on one end is
    // a message with no partner, else the orders differ.
    size_t k = 0;
    while (k < s.size() && k < r.size() && s[k].first == r[k].first) ++k;
    if (s.size() > r.size())
      FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, s[k].second,
                  " has no matching recv_v2 on the stage it sends to");
    if (r.size() > s.size())
      FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, r[k].second,
                  " has no matching send_v2 on the stage it receives from");
    FLUID_ENFORCE(k == s.size(), kPrefix, "schedule mismatch: ", s[k].second,
                  " is received as ", r[k].second);
  }
  for (int s = 1; s < stages; ++s)
    FLUID_ENFORCE(collectives[s] == collectives[0], kPrefix, "stage ", s,
                  " runs ", collectives[s],
                  " collectives over the pipeline, stage 0 runs ",
                  collectives[0]);
  CheckReceivesWaited(program, stages);
  return runs;
}

// Runs the stages' events against each other: sends and receives issued
// ahead never wait, a receive's wait (or a receive without a handle) waits
// for its send, a send's c_wait for its receive to be issued, a collective
// over the pipeline for every stage. Each ring's messages move in order on
// its own thread, so a message moves once both ends have issued it.
void Simulate(const std::vector<StageRun>& runs) {
  const int stages = static_cast<int>(runs.size());
  std::vector<size_t> pc(stages, 0);
  std::map<int, int> sent, received;  // issued, per channel
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      while (pc[s] < runs[s].events.size()) {
        const Event& e = runs[s].events[pc[s]];
        if ((e.kind == Event::kRecv || e.kind == Event::kWaitRecv) &&
            sent[e.channel] <= e.index)
          break;
        if (e.kind == Event::kWaitSend && received[e.channel] <= e.index) break;
        if (e.kind == Event::kPipelineCollective) {
          bool all = true;
          for (int t = 0; t < stages; ++t) {
            const bool there =
                pc[t] < runs[t].events.size() &&
                runs[t].events[pc[t]].kind == Event::kPipelineCollective &&
                runs[t].events[pc[t]].channel == e.channel;
            all = all && there;
          }
          if (!all) break;
          for (int t = 0; t < stages; ++t) ++pc[t];
          progress = true;
          continue;
        }
        if (e.kind == Event::kSend) ++sent[e.channel];
        if (e.kind == Event::kRecv || e.kind == Event::kRecvStart)
          ++received[e.channel];
        ++pc[s];
        progress = true;
      }
    }
  }
  std::ostringstream stuck;
  for (int s = 0; s < stages; ++s)
    if (pc[s] < runs[s].events.size())
      stuck << (stuck.tellp() > 0 ? "; " : "") << "stage " << s << " waits in "
            << runs[s].events[pc[s]].what;
  FLUID_ENFORCE(stuck.str().empty(), kPrefix,
                "the schedule deadlocks: ", stuck.str());
}

// The names `op` reads and writes.
void AddNames(const proto::OpDesc& op, std::set<std::string>* names) {
  for (const std::string& n : OpInputNames(op)) names->insert(n);
  for (const std::string& n : OpOutputNames(op)) names->insert(n);
}

}  // namespace

void LintPipeline(const proto::TrainingJob& job) {
  const int stages = PipelineStages(job.strategy());
  Simulate(CollectEvents(job.main(), stages));
}

proto::TrainingJob PipelineStageJob(const proto::TrainingJob& job, int stage) {
  const int stages = PipelineStages(job.strategy());
  FLUID_ENFORCE(stage >= 0 && stage < stages, "pipeline: stage ", stage, " of ",
                stages);
  proto::TrainingJob out = job;
  const proto::BlockDesc& src = job.main().blocks(0);
  proto::BlockDesc* main = out.mutable_main()->mutable_blocks(0);
  main->clear_ops();
  main->clear_vars();
  std::set<std::string> used;
  for (const auto& op : src.ops()) {
    if (StageAttr(op) != stage) continue;
    *main->add_ops() = op;
    AddNames(op, &used);
  }
  // Every stage declares the feeds, whether or not it reads them.
  std::set<std::string> written;
  for (const auto& op : src.ops())
    for (const std::string& n : OpOutputNames(op)) written.insert(n);
  for (const auto& v : src.vars())
    if (used.count(v.name()) || (!v.persistable() && !written.count(v.name()) &&
                                 v.type() != proto::VarDesc::COMM_HANDLE &&
                                 v.name().find("@MB") == std::string::npos))
      *main->add_vars() = v;
  // The startup makes this stage's persistables only.
  const proto::BlockDesc& st = job.startup().blocks(0);
  proto::BlockDesc* startup = out.mutable_startup()->mutable_blocks(0);
  startup->clear_ops();
  startup->clear_vars();
  for (const auto& op : st.ops()) {
    bool mine = true;
    for (const std::string& n : OpOutputNames(op)) mine = mine && used.count(n);
    if (!mine) continue;
    proto::OpDesc* kept = startup->add_ops();
    *kept = op;
    // Tensor parallelism broadcasts whole parameters over every rank
    // (ring 0) before each keeps its slice: here over the stage's ranks,
    // which alone hold them.
    if (op.type() == "c_broadcast" && HasOpAttr(op, "ring_id") &&
        GetOpAttrAs<int32_t>(op, "ring_id") == 0)
      SetOpAttr(kept, "ring_id", kStageRing);
  }
  for (const auto& v : st.vars())
    if (used.count(v.name())) *startup->add_vars() = v;
  return out;
}

}  // namespace fluid
