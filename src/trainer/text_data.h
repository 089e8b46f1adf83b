// The data a job trains and is evaluated on, chosen by its feeds: the
// fortunes char data (src/data/fortunes.h) for the text models' feeds, the
// MNIST-family IDX files otherwise.
#pragma once

#include <string>

#include "proto/framework.pb.h"
#include "src/data/idx_reader.h"

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
// program: the window or padded length from the "tokens" or "words" feed's
// shape, the vocabulary from the first lookup_table's height, the topics
// from the last dim of the scores the "label" feed is compared with; the
// test data is the validation split.
void LoadJobData(const proto::TrainingJob& job, const std::string& data_dir,
                 bool default_dir, Dataset* train, Dataset* test);

}  // namespace fluid
