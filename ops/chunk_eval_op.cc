// chunk_eval: the chunk counts and precision, recall and F1 of a tagging
// (Fluid's op behind fluid.layers.chunk_eval and ChunkEvaluator).
//
// A tag id encodes (chunk type, tag): id = type * num_tag_types + tag, and
// id num_chunk_types * num_tag_types is "outside" (O). The schemes' tags:
//   IOB    B=0 I=1          IOE   I=0 E=1
//   IOBES  B=0 I=1 E=2 S=3  plain one tag: a run of one type is a chunk
// A chunk is (first row, last row, type); Inference's chunks equal to
// Label's are correct. Types in excluded_chunk_types count nowhere.
// Precision = correct / inferred, Recall = correct / labelled, F1 their
// harmonic mean (each 0 where its denominator is 0).
//
// Inference and Label are int64 [rows, 1] with one level of LoD, the same
// for both, or padded [N, S] (or [N, S, 1]) with SeqLength int64 [N]. No
// gradient. The counting is sequential and reads few values: one kernel
// serves every place, on the host, and copies its outputs to Out's place.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

struct Segment {
  int64_t begin, end, type;
  bool operator==(const Segment& o) const {
    return begin == o.begin && end == o.end && type == o.type;
  }
};

// A scheme's tags; -1 for a tag the scheme does not have.
struct Scheme {
  int64_t num_tag_types, begin, inside, end, single, other_type;
};

Scheme SchemeOf(const std::string& name, int64_t num_chunk_types) {
  if (name == "IOB") return {2, 0, 1, -1, -1, num_chunk_types};
  if (name == "IOE") return {2, -1, 0, 1, -1, num_chunk_types};
  if (name == "IOBES") return {4, 0, 1, 2, 3, num_chunk_types};
  return {1, -1, -1, -1, -1, num_chunk_types};  // plain (OneOf checked it)
}

// Whether the chunk open before (prev_tag, prev_type) ends there.
bool ChunkEnd(const Scheme& s, int64_t prev_tag, int64_t prev_type, int64_t tag,
              int64_t type) {
  if (prev_type == s.other_type) return false;
  if (type == s.other_type || type != prev_type) return true;
  if (prev_tag == s.begin || prev_tag == s.inside)
    return tag == s.begin || tag == s.single;
  return prev_tag == s.end || prev_tag == s.single;
}

// Whether a chunk begins at (tag, type).
bool ChunkBegin(const Scheme& s, int64_t prev_tag, int64_t prev_type,
                int64_t tag, int64_t type) {
  if (prev_type == s.other_type) return type != s.other_type;
  if (type == s.other_type) return false;
  if (type != prev_type || tag == s.begin || tag == s.single) return true;
  if (tag == s.inside || tag == s.end)
    return prev_tag == s.end || prev_tag == s.single;
  return false;
}

// The chunks of one sequence of `length` tag ids.
std::vector<Segment> Segments(const ExecutionContext& ctx, const Scheme& s,
                              const int64_t* ids, int64_t length) {
  std::vector<Segment> out;
  const int64_t max_id = s.other_type * s.num_tag_types;
  int64_t start = 0, tag = -1, type = s.other_type;
  bool in_chunk = false;
  for (int64_t i = 0; i < length; ++i) {
    FLUID_ENFORCE(ids[i] >= 0 && ids[i] <= max_id, ctx.type(), ": tag id ",
                  ids[i], " out of range [0, ", max_id,
                  "] (num_chunk_types * tags of the scheme; the largest is O)");
    const int64_t prev_tag = tag, prev_type = type;
    tag = ids[i] % s.num_tag_types;
    type = ids[i] / s.num_tag_types;
    if (in_chunk && ChunkEnd(s, prev_tag, prev_type, tag, type)) {
      out.push_back({start, i - 1, prev_type});
      in_chunk = false;
    }
    if (ChunkBegin(s, prev_tag, prev_type, tag, type)) {
      start = i;
      in_chunk = true;
    }
  }
  if (in_chunk) out.push_back({start, length - 1, type});
  return out;
}

struct Counts {
  int64_t infer = 0, label = 0, correct = 0;
};

bool Excluded(const std::vector<int32_t>& excluded, int64_t type) {
  return std::find(excluded.begin(), excluded.end(), type) != excluded.end();
}

// Adds one sequence's counts. Both chunk lists are ordered and disjoint,
// so a walk by end row finds the equal pairs.
void CountSequence(const ExecutionContext& ctx, const Scheme& s,
                   const int64_t* infer, const int64_t* label, int64_t length,
                   Counts* c) {
  const auto& excluded = ctx.Attr<std::vector<int32_t>>("excluded_chunk_types");
  const std::vector<Segment> a = Segments(ctx, s, infer, length);
  const std::vector<Segment> b = Segments(ctx, s, label, length);
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j] && !Excluded(excluded, a[i].type)) ++c->correct;
    const int64_t ea = a[i].end, eb = b[j].end;
    if (ea <= eb) ++i;
    if (eb <= ea) ++j;
  }
  for (const Segment& x : a) c->infer += !Excluded(excluded, x.type);
  for (const Segment& x : b) c->label += !Excluded(excluded, x.type);
}

void ChunkEvalInferShape(InferShapeContext* ctx) {
  const Shape inf = ctx->GetInputShape("Inference");
  const Shape lab = ctx->GetInputShape("Label");
  FLUID_ENFORCE(inf == lab, ctx->op_type(), ": Inference '",
                ctx->InputName("Inference"), "' ", inf, " and Label '",
                ctx->InputName("Label"), "' ", lab, " differ in shape");
  const bool padded = ctx->HasInput("SeqLength");
  FLUID_ENFORCE(padded ? inf.rank() == 2 || (inf.rank() == 3 && inf[2] == 1)
                       : inf.rank() == 2 && inf[1] == 1,
                ctx->op_type(), ": Inference '", ctx->InputName("Inference"),
                "' ", inf, " must be ",
                padded ? "[N, S] or [N, S, 1] (with SeqLength)"
                       : "[rows, 1] with LoD (or give SeqLength)");
  FLUID_ENFORCE(ctx->Attr<int32_t>("num_chunk_types") >= 1, ctx->op_type(),
                ": num_chunk_types must be >= 1");
  for (const char* slot : {"Precision", "Recall", "F1-Score"}) {
    ctx->SetOutputShape(slot, Shape({1}));
    ctx->SetOutputDtype(slot, DataType::kFloat32);
  }
  for (const char* slot :
       {"NumInferChunks", "NumLabelChunks", "NumCorrectChunks"}) {
    ctx->SetOutputShape(slot, Shape({1}));
    ctx->SetOutputDtype(slot, DataType::kInt64);
  }
}

Tensor HostInt64(const ExecutionContext& ctx, const std::string& slot) {
  const Tensor& t = ctx.Input(slot);
  FLUID_ENFORCE(t.dtype() == DataType::kInt64, ctx.type(), ": ", slot, " '",
                ctx.InputName(slot), "' is ", DataTypeName(t.dtype()),
                "; it must be int64");
  Tensor host;
  host.CopyFrom(t, Place::CPU());
  return host;
}

// The counts over a LoD batch, or over padded rows with SeqLength.
Counts CountAll(const ExecutionContext& ctx, const Scheme& s) {
  const Tensor inf = HostInt64(ctx, "Inference");
  const Tensor lab = HostInt64(ctx, "Label");
  const int64_t* a = inf.data<int64_t>();
  const int64_t* b = lab.data<int64_t>();
  Counts c;
  if (ctx.HasInput("SeqLength")) {
    const Tensor len = HostInt64(ctx, "SeqLength");
    const int64_t n = inf.shape()[0], width = inf.shape()[1];
    FLUID_ENFORCE(len.numel() == n, ctx.type(), ": SeqLength '",
                  ctx.InputName("SeqLength"), "' holds ", len.numel(),
                  " lengths for ", n, " padded sequences");
    for (int64_t i = 0; i < n; ++i) {
      const int64_t l = len.data<int64_t>()[i];
      FLUID_ENFORCE(l >= 0 && l <= width, ctx.type(), ": SeqLength[", i,
                    "] = ", l, " outside [0, ", width, "]");
      CountSequence(ctx, s, a + i * width, b + i * width, l, &c);
    }
    return c;
  }
  FLUID_ENFORCE(lab.has_lod() && lab.lod() == inf.lod(), ctx.type(),
                ": Inference '", ctx.InputName("Inference"), "' (LoD ",
                LoDToString(inf.lod()), ") and Label '", ctx.InputName("Label"),
                "' (LoD ", LoDToString(lab.lod()),
                ") must carry the same LoD (or give SeqLength)");
  const LoD& lod = lab.lod();
  for (size_t i = 0; i + 1 < lod.size(); ++i)
    CountSequence(ctx, s, a + lod[i], b + lod[i], lod[i + 1] - lod[i], &c);
  return c;
}

template <typename T>
void SetScalar(const ExecutionContext& ctx, const char* slot, T v) {
  Tensor host(DataTypeOf<T>::value, Shape({1}));
  host.mutable_data<T>()[0] = v;
  ctx.Output(slot)->CopyFrom(host, ctx.place());
}

void ChunkEvalKernel(const ExecutionContext& ctx) {
  const Scheme s = SchemeOf(ctx.Attr<std::string>("chunk_scheme"),
                            ctx.Attr<int32_t>("num_chunk_types"));
  const Counts c = CountAll(ctx, s);
  const float p = c.infer ? static_cast<float>(c.correct) / c.infer : 0.0f;
  const float r = c.label ? static_cast<float>(c.correct) / c.label : 0.0f;
  SetScalar<float>(ctx, "Precision", p);
  SetScalar<float>(ctx, "Recall", r);
  SetScalar<float>(ctx, "F1-Score", c.correct ? 2 * p * r / (p + r) : 0.0f);
  SetScalar<int64_t>(ctx, "NumInferChunks", c.infer);
  SetScalar<int64_t>(ctx, "NumLabelChunks", c.label);
  SetScalar<int64_t>(ctx, "NumCorrectChunks", c.correct);
}

}  // namespace

REGISTER_OP(chunk_eval)
    .Doc("Chunk precision, recall, F1 and counts of a tagging vs its labels.")
    .Input("Inference", "int64 tag ids, [rows, 1] with LoD or [N, S]")
    .Input("Label", "int64 tag ids, as Inference")
    .OptionalInput("SeqLength", "int64 [N]: lengths of padded rows")
    .Output("Precision", "float32 [1]")
    .Output("Recall", "float32 [1]")
    .Output("F1-Score", "float32 [1]")
    .Output("NumInferChunks", "int64 [1]")
    .Output("NumLabelChunks", "int64 [1]")
    .Output("NumCorrectChunks", "int64 [1]")
    .Attr<int32_t>("num_chunk_types", 1, "the number of chunk types")
    .InRange(1, kNoUpperBound)
    .Attr<std::string>("chunk_scheme", "IOB", "IOB, IOE, IOBES or plain")
    .OneOf({"IOB", "IOE", "IOBES", "plain"})
    .Attr<std::vector<int32_t>>("excluded_chunk_types", {},
                                "chunk types left out of every count")
    .SetInferShape(ChunkEvalInferShape)
    .AnyPlaceKernel(ChunkEvalKernel);

}  // namespace ops
}  // namespace fluid
