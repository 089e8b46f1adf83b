// Batcher: cuts a Dataset into mini-batches for one rank of a data-parallel
// job, epoch by epoch.
//
// Each epoch's order is a permutation drawn from (seed, epoch) alone, so every
// rank computes the same one without talking to the others. The permutation
// is sharded as torch's DistributedSampler does: it is padded by repeating
// its start up to ceil(N / nranks) * nranks positions, and rank r takes
// positions r, r + nranks, r + 2 * nranks, ... So every rank sees the same
// number of samples and runs the same number of steps (an uneven shard can
// never leave one rank waiting in a collective); with nranks > 1 a few
// samples appear twice in an epoch. The last batch of an epoch may be
// smaller than batch_size; it is the same size on every rank.
//
// Because rank r takes every nranks-th position, after k steps the ranks
// together have taken exactly the first k * batch_size * nranks positions of
// the permutation. An epoch can therefore start at any such position (a
// checkpoint's sample position): the remaining positions are sharded the
// same way among however many ranks there are now, so with the same global
// batch (batch_size * nranks) each later step takes the same samples as it
// would have without the interruption (up to the few repeated at the end to
// pad, which depend on nranks).
//
// The shuffle uses std::mt19937_64 (whose output the standard fixes) and a
// Fisher-Yates written here, not std::shuffle, so the order is the same with
// every standard library.
//
// The Batcher shares the dataset's tensor memory (a Dataset copy is cheap).
// Next() writes into the caller's tensors, reusing their memory: once they
// have held a full batch, no call allocates. A batch is overwritten by the
// next call. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "src/data/idx_reader.h"

namespace fluid {

class Batcher {
 public:
  Batcher(const Dataset& data, int64_t batch_size, uint64_t seed, int rank = 0,
          int nranks = 1, bool shuffle = true);

  // Samples this rank sees per epoch: ceil(N / nranks).
  int64_t SamplesPerRank() const { return per_rank_; }
  // Batches per epoch, the same on every rank: ceil(SamplesPerRank() /
  // batch_size).
  int64_t StepsPerEpoch() const {
    return (per_rank_ + batch_size_ - 1) / batch_size_;
  }
  int64_t batch_size() const { return batch_size_; }
  const Dataset& data() const { return data_; }
  const std::vector<std::string>& names() const { return data_.names; }

  // Draws epoch `epoch`'s order and rewinds to its first batch. The
  // constructor starts epoch 0. With `start_sample` > 0 the first
  // start_sample positions of the order are taken as trained (by all ranks
  // together) and this rank's share of the rest is padded and strided as
  // above; 0 <= start_sample <= the dataset's size.
  void StartEpoch(int64_t epoch, int64_t start_sample = 0);
  int64_t epoch() const { return epoch_; }
  // Batches left in this epoch from where StartEpoch put it, the same on
  // every rank: StepsPerEpoch() when it started at sample 0.
  int64_t StepsThisEpoch() const {
    return (epoch_per_rank_ + batch_size_ - 1) / batch_size_;
  }
  // Positions of this epoch's order taken so far by all ranks together
  // (start_sample plus what Next has yielded times nranks; at most the
  // dataset's size): the sample position a checkpoint records.
  int64_t EpochPosition() const;

  // Fills (*batch)[i] with this batch's rows of data().tensors[i]; false
  // (leaving *batch alone) when the epoch is over.
  bool Next(std::vector<Tensor>* batch);

  // The dataset indices this rank visits in the current epoch, in order.
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  Dataset data_;
  int64_t batch_size_;
  uint64_t seed_;
  int rank_;
  int nranks_;
  bool shuffle_;
  int64_t per_rank_ = 0;
  int64_t epoch_ = 0;
  int64_t start_sample_ = 0;
  int64_t epoch_per_rank_ = 0;  // this rank's samples from start_sample_ on
  int64_t cursor_ = 0;
  std::vector<int64_t> perm_;     // the whole permutation (all ranks)
  std::vector<int64_t> indices_;  // this rank's share, padded
  std::vector<size_t> row_bytes_;
};

// The first min(n, data.size()) samples of `data`, sharing its memory; for
// short runs and tests.
Dataset TakeFirst(const Dataset& data, int64_t n);

}  // namespace fluid
