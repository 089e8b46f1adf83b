#include "src/trainer/text_data.h"

#include "src/data/fortunes.h"
#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "src/io/crc32.h"

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

// The job's feed `i` (in the order the data set yields them), which must
// exist.
const std::string& Feed(const proto::TrainingJob& job, int i) {
  FLUID_ENFORCE(job.feed_names_size() > i, "the job's data set yields ", i + 1,
                " or more tensors, but the job names ", job.feed_names_size(),
                " feed(s)");
  return job.feed_names(i);
}

int64_t NumTopics(const proto::TrainingJob& job) {
  const std::string logits = InputOfOp(job, "softmax_with_cross_entropy",
                                       "Logits", "Label", Feed(job, 2));
  const Shape s = VarShape(GetVarDesc(MainBlock(job), logits));
  return KnownDim(job, logits, s.rank() - 1);
}

// "<size> ids, crc32 0x...": the vocabulary's code points in id order (the
// reserved ids as 0).
std::string DescribeVocab(const CharVocab& vocab) {
  uint32_t crc = 0;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const uint32_t c = id < 3 ? 0 : static_cast<uint32_t>(vocab.token(id));
    const unsigned char le[4] = {static_cast<unsigned char>(c),
                                 static_cast<unsigned char>(c >> 8),
                                 static_cast<unsigned char>(c >> 16),
                                 static_cast<unsigned char>(c >> 24)};
    crc = Crc32Extend(crc, le, 4);
  }
  return std::to_string(vocab.size()) + " ids, crc32 " + Crc32Text(crc);
}

}  // namespace

JobData JobDataOf(const proto::TrainingJob& job) {
  switch (job.data_set()) {
    case proto::TrainingJob::IMAGES:
      return JobData::kImages;
    case proto::TrainingJob::CHARACTER_LM:
      return JobData::kLanguageModel;
    case proto::TrainingJob::TOPICS:
      return JobData::kTopics;
    case proto::TrainingJob::DATA_SET_UNSET:
      break;
  }
  // A job file from before TrainingJob.data_set: the text jobs were known
  // by their feeds.
  if (FeedsAre(job, {"tokens", "next"})) return JobData::kLanguageModel;
  if (FeedsAre(job, {"words", "length", "label"})) return JobData::kTopics;
  return JobData::kImages;
}

bool IsLanguageModelJob(const proto::TrainingJob& job) {
  return JobDataOf(job) == JobData::kLanguageModel;
}

void LoadJobData(const proto::TrainingJob& job, const std::string& data_dir,
                 bool default_dir, Dataset* train, Dataset* test,
                 DataDescription* description) {
  DataDescription unused;
  DataDescription& d = description != nullptr ? *description : unused;
  d = DataDescription();
  const JobData kind = JobDataOf(job);
  if (kind == JobData::kImages) {
    *train = LoadMnistFamily(data_dir, /*train=*/true);
    *test = LoadMnistFamily(data_dir, /*train=*/false);
    if (test->size() == 0)
      d.empty_test = "the test split of '" + data_dir + "' holds no samples";
    return;
  }
  const std::string dir = default_dir ? kFortunesDir : data_dir;
  const std::vector<Quotation> all = ReadFortunes(dir);
  std::vector<Quotation> split[2];  // train, valid
  for (const Quotation& q : all)
    split[IsValidationQuotation(q.text) ? 1 : 0].push_back(q);
  const CharVocab vocab = CharVocab::Build(split[0], VocabSize(job));
  d.vocabulary = DescribeVocab(vocab);
  const std::string valid = "the validation split of '" + dir + "'";
  if (split[1].empty()) {
    d.empty_test = valid + " is empty: none of its " +
                   std::to_string(all.size()) +
                   " quotations falls in it (a quotation does when the "
                   "CRC-32 of its text % 100 < 10, about one in ten)";
  }
  if (kind == JobData::kLanguageModel) {
    const int64_t seq_len = KnownDim(job, Feed(job, 0), 1);
    const std::vector<int64_t> valid_stream = LmStream(split[1], vocab);
    *train = LmWindows(LmStream(split[0], vocab), seq_len);
    *test = LmWindows(valid_stream, seq_len);
    if (test->size() == 0 && d.empty_test.empty()) {
      d.empty_test = valid + " holds " + std::to_string(split[1].size()) +
                     " quotation(s), " + std::to_string(valid_stream.size()) +
                     " tokens: not one window of " + std::to_string(seq_len);
    }
    return;
  }
  const std::vector<std::string> topics = FortunesTopics(all, NumTopics(job));
  for (size_t i = 0; i < topics.size(); ++i)
    d.topics += (i ? "," : "") + topics[i];
  const int64_t max_len = KnownDim(job, Feed(job, 0), 1);
  *train = TopicSamples(split[0], topics, vocab, max_len);
  *test = TopicSamples(split[1], topics, vocab, max_len);
  if (test->size() == 0 && d.empty_test.empty()) {
    d.empty_test = valid + " holds none of the quotations of its topics (" +
                   d.topics + ")";
  }
}

std::vector<RunSetting> DataSettings(const DataDescription& description,
                                     const Dataset& train,
                                     const Dataset& test) {
  std::vector<RunSetting> out;
  if (!description.vocabulary.empty())
    out.push_back(
        RunSetting::Text("--data (vocabulary)", description.vocabulary));
  if (!description.topics.empty())
    out.push_back(RunSetting::Text("--data (topics)", description.topics));
  const std::pair<const char*, const Dataset*> splits[] = {{"training", &train},
                                                           {"test", &test}};
  for (const auto& [split, data] : splits) {
    for (size_t i = 0; i < data->tensors.size(); ++i) {
      const std::string name =
          i < data->names.size() ? data->names[i] : std::to_string(i);
      out.push_back(RunSetting::Text(
          std::string("--data (crc32 of ") + split + " " + name + ")",
          Crc32Text(ContentDigest(data->tensors[i]))));
    }
  }
  return out;
}

}  // namespace fluid
