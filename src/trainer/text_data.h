// The data a job trains and is evaluated on, as the job declares it
// (TrainingJob.data_set): the fortunes char data (src/data/fortunes.h) for
// the text models, the MNIST-family IDX files for images.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/data/idx_reader.h"
#include "src/distributed/run_settings.h"

namespace fluid {

enum class JobData {
  kImages,         // feeds image, label: LoadMnistFamily
  kLanguageModel,  // feeds tokens, next: LmWindows
  kTopics,         // feeds words, length, label: TopicSamples
};

JobData JobDataOf(const proto::TrainingJob& job);

// A language model's job: its metric is its loss (the mean cross entropy
// per token), reported with its perplexity.
bool IsLanguageModelJob(const proto::TrainingJob& job);

// The job's training and test data from `data_dir` (a text job reads
// kFortunesDir instead when `default_dir`, data_dir being the images'
// default). For text jobs the sizes come from the
// program: the window or padded length from the first feed's shape (tokens,
// words), the vocabulary from the first lookup_table's height, the topics
// from the last dim of the scores the third feed (label) is compared with; the
// test data is the validation split.
// What a job's data stands for beyond its tensors, filled by LoadJobData:
// for text, the vocabulary and topics its ids index; and why the test
// split is empty, when it is.
struct DataDescription {
  // Text: "<size> ids, crc32 0x...", the CRC-32 of the vocabulary's code
  // points in id order; "" for images.
  std::string vocabulary;
  // Topic classification: the topics in label order, comma-separated.
  std::string topics;
  // When the test (validation) split holds no sample: a sentence saying
  // which split of which directory, and why; "" otherwise.
  std::string empty_test;
};

void LoadJobData(const proto::TrainingJob& job, const std::string& data_dir,
                 bool default_dir, Dataset* train, Dataset* test,
                 DataDescription* description = nullptr);

// What ranks must agree on about their data beyond its sizes, for
// CheckRunSettingsAgree, in this order: the vocabulary and the topics (text
// jobs), then the ContentDigest of every tensor of `train` and of `test`
// (the labels whole; images and token windows sampled when large). Cheap:
// it hashes what the reader loaded, and no more than 1024 rows of a large
// tensor.
std::vector<RunSetting> DataSettings(const DataDescription& description,
                                     const Dataset& train, const Dataset& test);

}  // namespace fluid
