#include "src/distributed/in_process_backend.h"

#include <algorithm>
#include <cstring>

namespace fluid {

namespace {

template <typename T>
void Reduce(const InProcessGroup& g, T* out, int64_t count, ReduceOp op) {
  const T* first = static_cast<const T*>(g.Posted(0));
  std::copy(first, first + count, out);
  for (int r = 1; r < g.size(); ++r) {
    const T* in = static_cast<const T*>(g.Posted(r));
    if (op == ReduceOp::kMax) {
      for (int64_t i = 0; i < count; ++i) out[i] = std::max(out[i], in[i]);
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] += in[i];
    }
  }
}

class InProcessBackend : public CommBackend {
 public:
  InProcessBackend(std::shared_ptr<InProcessGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string name() const override { return "in-process"; }

  void AllReduce(void* data, int64_t count, DataType dtype,
                 ReduceOp op) override {
    if (size() == 1) return;  // the reduction of one rank is itself
    const size_t bytes = count * SizeOf(dtype);
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    group_->Post(rank_, data);
    group_->Arrive();  // everyone has posted
    switch (dtype) {
      case DataType::kFloat32:
        Reduce(*group_, reinterpret_cast<float*>(scratch_.data()), count, op);
        break;
      case DataType::kFloat64:
        Reduce(*group_, reinterpret_cast<double*>(scratch_.data()), count, op);
        break;
      case DataType::kInt32:
        Reduce(*group_, reinterpret_cast<int32_t*>(scratch_.data()), count, op);
        break;
      case DataType::kInt64:
        Reduce(*group_, reinterpret_cast<int64_t*>(scratch_.data()), count, op);
        break;
    }
    group_->Arrive();  // everyone has read every input
    std::memcpy(data, scratch_.data(), bytes);
    if (op == ReduceOp::kAvg) DivideInPlace(data, count, dtype, size());
  }

  void Broadcast(void* data, int64_t bytes, int root) override {
    if (size() == 1) return;
    group_->Post(rank_, data);
    group_->Arrive();
    if (rank_ != root) std::memcpy(data, group_->Posted(root), bytes);
    group_->Arrive();
  }

  void AllGather(const void* send, void* recv, int64_t bytes) override {
    group_->Post(rank_, send);
    group_->Arrive();
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<char*>(recv) + r * bytes, group_->Posted(r),
                  bytes);
    group_->Arrive();
  }

  void AllGatherV(const void* send, void* recv,
                  const std::vector<int64_t>& bytes) override {
    group_->Post(rank_, send);
    group_->Arrive();
    char* out = static_cast<char*>(recv);
    for (int r = 0; r < size(); ++r) {
      if (bytes[r] > 0) std::memcpy(out, group_->Posted(r), bytes[r]);
      out += bytes[r];
    }
    group_->Arrive();
  }

  void Barrier() override { group_->Arrive(); }

  void Abort(int code) override {
    group_->AbortAll();
    FLUID_THROW(ErrorCode::kAborted, "rank ", rank_, " aborted the group (",
                code, ")");
  }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  std::vector<char> scratch_;
};

}  // namespace

std::shared_ptr<InProcessGroup> InProcessGroup::Create(int size) {
  FLUID_ENFORCE(size >= 1, "group size must be >= 1, got ", size);
  return std::shared_ptr<InProcessGroup>(new InProcessGroup(size));
}

InProcessGroup::InProcessGroup(int size) : size_(size), posted_(size) {}

std::unique_ptr<CommBackend> InProcessGroup::Backend(int rank) {
  FLUID_ENFORCE(rank >= 0 && rank < size_, "rank ", rank,
                " out of range for a group of ", size_);
  return std::make_unique<InProcessBackend>(shared_from_this(), rank);
}

void InProcessGroup::Arrive() {
  std::unique_lock<std::mutex> lock(mu_);
  FLUID_ENFORCE_CODE(!aborted_, ErrorCode::kAborted, "the group was aborted");
  uint64_t gen = generation_;
  if (++waiting_ == size_) {
    waiting_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  FLUID_ENFORCE_CODE(!aborted_, ErrorCode::kAborted, "the group was aborted");
}

void InProcessGroup::AbortAll() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace fluid
