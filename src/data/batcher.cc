#include "src/data/batcher.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace fluid {

namespace {

// splitmix64's finaliser: spreads (seed, epoch) over the generator's seed.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) without modulo bias.
uint64_t UniformBelow(std::mt19937_64* rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  while (true) {
    uint64_t x = (*rng)();
    if (x >= threshold) return x % bound;
  }
}

}  // namespace

Batcher::Batcher(const Dataset& data, int64_t batch_size, uint64_t seed,
                 int rank, int nranks, bool shuffle)
    : data_(data),
      batch_size_(batch_size),
      seed_(seed),
      rank_(rank),
      nranks_(nranks),
      shuffle_(shuffle) {
  data_.Check("Batcher dataset");
  FLUID_ENFORCE(!data_.tensors.empty(), "Batcher: the dataset has no tensors");
  FLUID_ENFORCE(data_.size() > 0, "Batcher: the dataset has no samples");
  FLUID_ENFORCE(batch_size > 0, "Batcher: batch_size must be positive, got ",
                batch_size);
  FLUID_ENFORCE(nranks >= 1 && rank >= 0 && rank < nranks, "Batcher: rank ",
                rank, " out of range for ", nranks, " ranks");
  for (const Tensor& t : data_.tensors) {
    FLUID_ENFORCE(t.place().is_cpu(),
                  "Batcher: dataset tensors must be on "
                  "the host");
    row_bytes_.push_back(static_cast<size_t>(
        t.shape().Product(1, t.shape().rank()) * SizeOf(t.dtype())));
  }
  per_rank_ = (data_.size() + nranks - 1) / nranks;
  StartEpoch(0);
}

void Batcher::StartEpoch(int64_t epoch, int64_t start_sample) {
  FLUID_ENFORCE(epoch >= 0, "Batcher: epoch must not be negative, got ", epoch);
  const int64_t n = data_.size();
  FLUID_ENFORCE(start_sample >= 0 && start_sample <= n,
                "Batcher: start_sample ", start_sample,
                " is outside the epoch's ", n, " samples");
  perm_.resize(n);
  for (int64_t i = 0; i < n; ++i) perm_[i] = i;
  if (shuffle_) {
    std::mt19937_64 rng(Mix(seed_ ^ Mix(static_cast<uint64_t>(epoch))));
    for (int64_t i = n - 1; i > 0; --i) {
      int64_t j = static_cast<int64_t>(
          UniformBelow(&rng, static_cast<uint64_t>(i) + 1));
      std::swap(perm_[i], perm_[j]);
    }
  }
  // Positions past the end repeat the epoch's first samples (the padding).
  epoch_per_rank_ = (n - start_sample + nranks_ - 1) / nranks_;
  indices_.resize(epoch_per_rank_);
  for (int64_t k = 0; k < epoch_per_rank_; ++k)
    indices_[k] = perm_[(start_sample + rank_ + k * nranks_) % n];
  epoch_ = epoch;
  start_sample_ = start_sample;
  cursor_ = 0;
}

int64_t Batcher::EpochPosition() const {
  return std::min(start_sample_ + cursor_ * nranks_, data_.size());
}

bool Batcher::Next(std::vector<Tensor>* batch) {
  FLUID_ENFORCE(batch != nullptr, "Batcher::Next: null batch");
  if (cursor_ >= epoch_per_rank_) return false;
  const int64_t rows = std::min(batch_size_, epoch_per_rank_ - cursor_);
  batch->resize(data_.tensors.size());
  for (size_t k = 0; k < data_.tensors.size(); ++k) {
    const Tensor& src = data_.tensors[k];
    Tensor& dst = (*batch)[k];
    Shape shape = src.shape();
    shape[0] = rows;
    dst.set_dtype(src.dtype());
    dst.Resize(shape);
    char* out = static_cast<char*>(dst.raw_mutable_data());
    const char* in = static_cast<const char*>(src.raw_data());
    const size_t row = row_bytes_[k];
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + r * row, in + indices_[cursor_ + r] * row, row);
  }
  cursor_ += rows;
  return true;
}

Dataset TakeFirst(const Dataset& data, int64_t n) {
  FLUID_ENFORCE(n >= 0, "TakeFirst: n must not be negative, got ", n);
  data.Check("TakeFirst dataset");
  const int64_t keep = std::min(n, data.size());
  Dataset out;
  out.names = data.names;
  for (const Tensor& t : data.tensors) {
    if (t.initialized()) {
      out.tensors.push_back(t.Slice(0, keep));
    } else {  // an empty tensor: nothing to share
      out.tensors.push_back(t);
    }
  }
  return out;
}

}  // namespace fluid
