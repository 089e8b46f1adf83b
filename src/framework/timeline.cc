#include "src/framework/timeline.h"

#include <time.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "src/framework/math/int_math.h"
#include "src/framework/operator.h"
#include "src/framework/scope.h"

namespace fluid {

namespace {

std::atomic<Timeline*> g_timeline{nullptr};

// An op with more outputs shows the first ones' shapes and bytes (the
// shape log's share of one op stays bounded).
constexpr int kMaxShapeOutputs = 8;

// "<type> (recompute)", made once per type and kept for the process (event
// names outlive every timeline).
const char* ReplayName(const std::string& type) {
  static std::mutex mu;
  static auto* names = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = names->find(type);
  if (it == names->end())
    it = names->emplace(type, type + " (recompute)").first;
  return it->second.c_str();
}

// An op's event name: its type, or for a recompute replay (marked with the
// attr recompute_segment by transpiler/recompute.h) "<type> (recompute)",
// so that the time the replays cost shows apart from the forward pass.
const char* OpEventName(const OperatorBase& op) {
  for (const auto& a : op.desc().attrs())
    if (a.name() == "recompute_segment") return ReplayName(op.type());
  return op.schema().type().c_str();
}

// Buffered JSON text into a sink, with no allocation and no locale.
class JsonOut {
 public:
  explicit JsonOut(TimelineSink* sink) : sink_(sink) {}
  ~JsonOut() { Flush(); }
  JsonOut& Str(const char* s) {
    while (*s != '\0') Put(*s++);
    return *this;
  }
  // A JSON string; names are identifiers, but quotes and control bytes are
  // escaped all the same.
  JsonOut& Quoted(const char* s) {
    Put('"');
    for (; s != nullptr && *s != '\0'; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        Put('\\');
        Put(*s);
      } else if (c < 0x20) {
        Put('?');
      } else {
        Put(*s);
      }
    }
    Put('"');
    return *this;
  }
  JsonOut& Int(int64_t v) {
    char text[24];
    const int n = FormatDecimal(v, text);
    for (int i = 0; i < n; ++i) Put(text[i]);
    return *this;
  }
  // Nanoseconds as microseconds with three decimals (the trace's unit).
  JsonOut& Micros(int64_t ns) {
    if (ns < 0) {
      Put('-');
      ns = -ns;
    }
    Int(ns / 1000);
    Put('.');
    const int64_t frac = ns % 1000;
    Put(static_cast<char>('0' + frac / 100));
    Put(static_cast<char>('0' + frac / 10 % 10));
    Put(static_cast<char>('0' + frac % 10));
    return *this;
  }
  void Flush() {
    if (len_ > 0) sink_->Write(buf_, len_);
    len_ = 0;
  }

 private:
  void Put(char c) {
    if (len_ == sizeof(buf_)) Flush();
    buf_[len_++] = c;
  }
  TimelineSink* sink_;
  char buf_[512];
  size_t len_ = 0;
};

class StringSink : public TimelineSink {
 public:
  void Write(const char* data, size_t size) override {
    text.append(data, size);
  }
  std::string text;
};

constexpr TimelineTrack kTracks[] = {
    TimelineTrack::kSteps, TimelineTrack::kOps,
    TimelineTrack::kWaits, TimelineTrack::kCollectives,
    TimelineTrack::kData,  TimelineTrack::kCheckpoints,
};

// The opening of an event object: phase, process, track, name, time.
void Open(JsonOut& j, const char* ph, int pid, TimelineTrack track,
          const char* name, const char* cat) {
  j.Str("{\"ph\":\"").Str(ph).Str("\",\"pid\":").Int(pid);
  j.Str(",\"tid\":").Int(static_cast<int>(track)).Str(",\"name\":");
  j.Quoted(name).Str(",\"cat\":\"").Str(cat).Str("\"");
}

}  // namespace

int64_t TimelineNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const char* TimelineTrackName(TimelineTrack track) {
  switch (track) {
    case TimelineTrack::kSteps:
      return "steps";
    case TimelineTrack::kOps:
      return "ops";
    case TimelineTrack::kWaits:
      return "exposed waits (c_wait)";
    case TimelineTrack::kCollectives:
      return "collectives";
    case TimelineTrack::kData:
      return "data";
    case TimelineTrack::kCheckpoints:
      return "checkpoints";
  }
  return "other";
}

Timeline::Timeline(int rank, int size, ClockSync clock)
    : rank_(rank), size_(size), clock_(clock) {}

void Timeline::RecordOp(const OperatorBase& op, int64_t begin_ns) {
  const int64_t end_ns = TimelineNs();
  TimelineEvent* e = main_.Next();
  if (e == nullptr) return;
  e->name = OpEventName(op);
  e->begin_ns = begin_ns;
  e->end_ns = end_ns;
  e->step = step();
  e->track = TimelineTrack::kOps;
  e->extra = static_cast<int64_t>(shapes_.next_index());
  int64_t bytes = 0;
  int32_t count = 0, outputs = 0;
  for (const BoundSlot& slot : op.outputs()) {
    for (const Variable* v : slot.vars) {
      if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
      const Tensor& t = v->GetTensor();
      if (!t.initialized() || ++outputs > kMaxShapeOutputs) continue;
      bytes += static_cast<int64_t>(t.bytes());
      const Shape& s = t.shape();
      int64_t* slot_rank = shapes_.Next();
      if (slot_rank == nullptr) continue;
      *slot_rank = s.rank();
      ++count;
      for (int d = 0; d < s.rank(); ++d) {
        int64_t* dim = shapes_.Next();
        if (dim == nullptr) break;
        *dim = s[d];
        ++count;
      }
    }
  }
  e->bytes = bytes;
  e->count = count;
  shapes_.Publish();
  main_.Publish();
}

void Timeline::RecordSpan(TimelineTrack track, const char* name,
                          int64_t begin_ns, int64_t end_ns, int64_t bytes) {
  TimelineEvent* e = main_.Next();
  if (e == nullptr) return;
  e->name = name;
  e->begin_ns = begin_ns;
  e->end_ns = end_ns;
  e->bytes = bytes;
  e->step = step();
  e->track = track;
  e->count = 0;
  main_.Publish();
}

void Timeline::RecordCollective(const Collective& c) {
  std::lock_guard<std::mutex> lock(comm_mu_);
  TimelineEvent* e = comm_.Next();
  if (e == nullptr) return;
  e->name = c.kind;
  e->begin_ns = c.start_ns;
  e->end_ns = c.end_ns;
  e->bytes = c.bytes;
  e->step = c.step;
  e->extra = c.enqueue_ns;
  e->seq = c.seq;
  e->count = c.index;
  e->track = TimelineTrack::kCollectives;
  comm_.Publish();
}

size_t Timeline::num_events() const { return main_.size() + comm_.size(); }

int64_t Timeline::dropped() const {
  return main_.dropped() + comm_.dropped() + shapes_.dropped();
}

void Timeline::FormatEvent(const TimelineEvent& e, TimelineSink* sink) const {
  JsonOut j(sink);
  auto at = [this](int64_t ns) {
    return ns + clock_.offset_ns - clock_.origin_ns;
  };
  TimelineTrack track = e.track;
  const char* cat = "op";
  if (track == TimelineTrack::kOps && std::strcmp(e.name, "c_wait") == 0)
    track = TimelineTrack::kWaits;
  if (track == TimelineTrack::kCollectives) {
    // Queued: from enqueue until the worker starts it (async, as queued
    // collectives overlap).
    Open(j, "b", pid(), track, e.name, "queued");
    j.Str(",\"id\":").Int(e.seq).Str(",\"ts\":").Micros(at(e.extra));
    j.Str("},\n");
    Open(j, "e", pid(), track, e.name, "queued");
    j.Str(",\"id\":").Int(e.seq).Str(",\"ts\":").Micros(at(e.begin_ns));
    j.Str("},\n");
    cat = "collective";
  } else if (track != TimelineTrack::kOps && track != TimelineTrack::kWaits) {
    cat = TimelineTrackName(track);
  }
  Open(j, "X", pid(), track, e.name, cat);
  j.Str(",\"ts\":").Micros(at(e.begin_ns));
  j.Str(",\"dur\":").Micros(e.end_ns - e.begin_ns);
  j.Str(",\"args\":{\"step\":").Int(e.step).Str(",\"bytes\":").Int(e.bytes);
  if (track == TimelineTrack::kCollectives) {
    j.Str(",\"bucket\":").Int(e.count).Str(",\"seq\":").Int(e.seq);
    j.Str(",\"enqueue_ts\":").Micros(at(e.extra));
    j.Str(",\"queued_us\":").Micros(e.begin_ns - e.extra);
  } else if (track == TimelineTrack::kOps || track == TimelineTrack::kWaits) {
    j.Str(",\"shapes\":[");
    size_t i = static_cast<size_t>(e.extra);
    const size_t end = i + static_cast<size_t>(e.count);
    for (bool first = true; i < end; first = false) {
      const int64_t rank = shapes_.at(i++);
      j.Str(first ? "[" : ",[");
      for (int64_t d = 0; d < rank && i < end; ++d)
        j.Str(d ? "," : "").Int(shapes_.at(i++));
      j.Str("]");
    }
    j.Str("]");
  }
  j.Str("}},\n");
}

void Timeline::Format(TimelineSink* sink) const {
  {
    JsonOut j(sink);
    j.Str("{\"ph\":\"M\",\"pid\":").Int(pid());
    j.Str(",\"name\":\"process_name\",\"args\":{\"name\":\"rank ");
    j.Int(rank_).Str("\"}},\n{\"ph\":\"M\",\"pid\":").Int(pid());
    j.Str(",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
    j.Int(rank_).Str("}},\n");
    j.Str("{\"ph\":\"M\",\"pid\":").Int(pid());
    j.Str(",\"name\":\"clock_sync\",\"args\":{\"rank\":").Int(rank_);
    j.Str(",\"offset_ns\":").Int(clock_.offset_ns);
    j.Str(",\"uncertainty_ns\":").Int(clock_.uncertainty_ns);
    j.Str(",\"dropped_events\":").Int(dropped()).Str("}},\n");
    for (TimelineTrack t : kTracks) {
      j.Str("{\"ph\":\"M\",\"pid\":").Int(pid()).Str(",\"tid\":");
      j.Int(static_cast<int>(t)).Str(",\"name\":\"thread_name\",\"args\":");
      j.Str("{\"name\":").Quoted(TimelineTrackName(t)).Str("}},\n");
      j.Str("{\"ph\":\"M\",\"pid\":").Int(pid()).Str(",\"tid\":");
      j.Int(static_cast<int>(t));
      j.Str(",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
      j.Int(static_cast<int>(t)).Str("}},\n");
    }
  }
  for (const TimelineLog<TimelineEvent>* log : {&main_, &comm_}) {
    const size_t n = log->size();
    for (size_t i = 0; i < n; ++i) FormatEvent(log->at(i), sink);
  }
}

std::string Timeline::Format() const {
  StringSink sink;
  Format(&sink);
  return std::move(sink.text);
}

void WriteTraceHead(TimelineSink* sink) {
  JsonOut j(sink);
  j.Str("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
}

// The fragments end with ",\n": a last metadata event closes the list.
void WriteTraceTail(TimelineSink* sink, int ranks, const char* note) {
  JsonOut j(sink);
  j.Str("{\"ph\":\"M\",\"pid\":1,\"name\":\"trace_info\",\"args\":{");
  j.Str("\"ranks\":").Int(ranks).Str(",\"note\":").Quoted(note ? note : "");
  j.Str(
      "}}\n],\"otherData\":{\"clock\":\"CLOCK_MONOTONIC of each rank, "
      "aligned to rank 0 at startup\",\"ranks\":");
  j.Int(ranks).Str(",\"note\":").Quoted(note ? note : "").Str("}}\n");
}

Timeline* CurrentTimeline() {
  return g_timeline.load(std::memory_order_acquire);
}

void SetCurrentTimeline(Timeline* timeline) {
  g_timeline.store(timeline, std::memory_order_release);
}

}  // namespace fluid
