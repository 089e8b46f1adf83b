#include "src/trainer/text_data.h"

#include "src/data/fortunes.h"
#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

bool FeedsAre(const proto::TrainingJob& job,
              const std::vector<std::string>& names) {
  if (job.feed_names_size() != static_cast<int>(names.size())) return false;
  for (int i = 0; i < job.feed_names_size(); ++i)
    if (job.feed_names(i) != names[i]) return false;
  return true;
}

const proto::BlockDesc& MainBlock(const proto::TrainingJob& job) {
  FLUID_ENFORCE(job.main().blocks_size() > 0, "the job's main program has ",
                "no blocks");
  return job.main().blocks(0);
}

// Dim `dim` of var `name`, which must be known.
int64_t KnownDim(const proto::TrainingJob& job, const std::string& name,
                 int dim) {
  const Shape s = VarShape(GetVarDesc(MainBlock(job), name));
  FLUID_ENFORCE(s.rank() > dim && s[dim] > 0, "the text data needs dim ", dim,
                " of the job's var '", name, "' ", s, " to be known");
  return s[dim];
}

// Input slot `want` of the first op of `type` (whose slot `slot`, when
// given, reads `var`).
std::string InputOfOp(const proto::TrainingJob& job, const std::string& type,
                      const std::string& want, const std::string& slot = "",
                      const std::string& var = "") {
  for (const proto::OpDesc& op : MainBlock(job).ops()) {
    if (op.type() != type) continue;
    if (!slot.empty() && OpInput(op, slot) != std::vector<std::string>{var})
      continue;
    const std::vector<std::string> found = OpInput(op, want);
    if (!found.empty()) return found[0];
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "the text data needs a ", type,
              " op in the job's main program",
              slot.empty() ? std::string() : " reading '" + var + "'");
}

int64_t VocabSize(const proto::TrainingJob& job) {
  return KnownDim(job, InputOfOp(job, "lookup_table", "W"), 0);
}

int64_t NumTopics(const proto::TrainingJob& job) {
  const std::string logits =
      InputOfOp(job, "softmax_with_cross_entropy", "Logits", "Label", "label");
  const Shape s = VarShape(GetVarDesc(MainBlock(job), logits));
  return KnownDim(job, logits, s.rank() - 1);
}

}  // namespace

JobData JobDataOf(const proto::TrainingJob& job) {
  if (FeedsAre(job, {"tokens", "next"})) return JobData::kLanguageModel;
  if (FeedsAre(job, {"words", "length", "label"})) return JobData::kTopics;
  return JobData::kImages;
}

bool IsLanguageModelJob(const proto::TrainingJob& job) {
  return JobDataOf(job) == JobData::kLanguageModel;
}

void LoadJobData(const proto::TrainingJob& job, const std::string& data_dir,
                 bool default_dir, Dataset* train, Dataset* test) {
  const JobData kind = JobDataOf(job);
  if (kind == JobData::kImages) {
    *train = LoadMnistFamily(data_dir, /*train=*/true);
    *test = LoadMnistFamily(data_dir, /*train=*/false);
    return;
  }
  const std::string dir = default_dir ? kFortunesDir : data_dir;
  const std::vector<Quotation> all = ReadFortunes(dir);
  std::vector<Quotation> split[2];  // train, valid
  for (const Quotation& q : all)
    split[IsValidationQuotation(q.text) ? 1 : 0].push_back(q);
  const CharVocab vocab = CharVocab::Build(split[0], VocabSize(job));
  if (kind == JobData::kLanguageModel) {
    const int64_t seq_len = KnownDim(job, "tokens", 1);
    *train = LmWindows(LmStream(split[0], vocab), seq_len);
    *test = LmWindows(LmStream(split[1], vocab), seq_len);
    return;
  }
  const std::vector<std::string> topics = FortunesTopics(all, NumTopics(job));
  const int64_t max_len = KnownDim(job, "words", 1);
  *train = TopicSamples(split[0], topics, vocab, max_len);
  *test = TopicSamples(split[1], topics, vocab, max_len);
}

}  // namespace fluid
