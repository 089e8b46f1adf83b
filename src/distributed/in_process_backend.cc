#include "src/distributed/in_process_backend.h"

#include <algorithm>
#include <cstring>

namespace fluid {

namespace {

// out = the reduction over the ranks of `count` elements at `offset`
// elements past what each rank posted.
template <typename T>
void Reduce(const InProcessGroup& g, T* out, int64_t count, ReduceOp op,
            int64_t offset) {
  const T* first = static_cast<const T*>(g.Posted(0)) + offset;
  std::copy(first, first + count, out);
  for (int r = 1; r < g.size(); ++r) {
    const T* in = static_cast<const T*>(g.Posted(r)) + offset;
    if (op == ReduceOp::kMax) {
      for (int64_t i = 0; i < count; ++i) out[i] = std::max(out[i], in[i]);
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] += in[i];
    }
  }
}

// Reduce for the 16-bit floats: each element is reduced in float32 over
// the ranks and rounded once.
template <typename T>
void ReduceHalf(const InProcessGroup& g, T* out, int64_t count, ReduceOp op,
                int64_t offset) {
  for (int64_t i = 0; i < count; ++i) {
    float acc = ToFloat(static_cast<const T*>(g.Posted(0))[offset + i]);
    for (int r = 1; r < g.size(); ++r) {
      const float v = ToFloat(static_cast<const T*>(g.Posted(r))[offset + i]);
      acc = op == ReduceOp::kMax ? std::max(acc, v) : acc + v;
    }
    out[i] = FromFloat<T>(acc);
  }
}

void ReduceAny(const InProcessGroup& g, void* out, int64_t count,
               DataType dtype, ReduceOp op, int64_t offset) {
  switch (dtype) {
    case DataType::kFloat32:
      return Reduce(g, static_cast<float*>(out), count, op, offset);
    case DataType::kFloat64:
      return Reduce(g, static_cast<double*>(out), count, op, offset);
    case DataType::kInt32:
      return Reduce(g, static_cast<int32_t*>(out), count, op, offset);
    case DataType::kInt64:
      return Reduce(g, static_cast<int64_t*>(out), count, op, offset);
    case DataType::kFloat16:
      return ReduceHalf(g, static_cast<float16*>(out), count, op, offset);
    case DataType::kBFloat16:
      return ReduceHalf(g, static_cast<bfloat16*>(out), count, op, offset);
    case DataType::kBool:
      break;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "cannot reduce a bool tensor");
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
    ReduceAny(*group_, scratch_.data(), count, dtype, op, 0);
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
    for (int r = 0; r < size(); ++r) {
      char* to = static_cast<char*>(recv) + r * bytes;
      if (to != group_->Posted(r)) std::memcpy(to, group_->Posted(r), bytes);
    }
    group_->Arrive();
  }

  void ReduceScatter(const void* send, void* recv, int64_t count,
                     DataType dtype, ReduceOp op) override {
    if (size() == 1) {
      std::memcpy(recv, send, count * SizeOf(dtype));
      return;
    }
    group_->Post(rank_, send);
    group_->Arrive();  // everyone has posted
    ReduceAny(*group_, recv, count, dtype, op, rank_ * count);
    group_->Arrive();  // everyone has read every input
    if (op == ReduceOp::kAvg) DivideInPlace(recv, count, dtype, size());
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

  std::unique_ptr<CommBackend> Split(int color, int key) override;

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

// Every rank's (color, key) is gathered; the ranks of one color, ordered
// by key then rank, form a group of their own, which the first of them
// creates and announces (its address, in this process) to the others in a
// second gather. Each rank's backend holds the group; a barrier keeps the
// creator's until every member has taken its own.
std::unique_ptr<CommBackend> InProcessBackend::Split(int color, int key) {
  const int mine[2] = {color, key};
  std::vector<int> all(2 * size());
  AllGather(mine, all.data(), sizeof(mine));
  std::vector<int> members;  // of this color, in their new order
  for (int r = 0; r < size(); ++r)
    if (all[2 * r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&all](int a, int b) {
    return all[2 * a + 1] < all[2 * b + 1];
  });
  const int index = static_cast<int>(
      std::find(members.begin(), members.end(), rank_) - members.begin());
  std::unique_ptr<CommBackend> backend;
  const void* created = nullptr;
  if (index == 0) {
    auto group = InProcessGroup::Create(static_cast<int>(members.size()));
    group_->Adopt(group);
    backend = group->Backend(0);
    created = group.get();
  }
  std::vector<const void*> groups(size());
  AllGather(&created, groups.data(), sizeof(created));
  if (index != 0) {
    auto* group =
        static_cast<InProcessGroup*>(const_cast<void*>(groups[members[0]]));
    backend = group->Backend(index);
  }
  Barrier();
  return backend;
}

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
  std::vector<std::weak_ptr<InProcessGroup>> children;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
    children = children_;
  }
  for (const auto& c : children)
    if (auto child = c.lock()) child->AbortAll();
}

void InProcessGroup::Adopt(const std::shared_ptr<InProcessGroup>& child) {
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    children_.push_back(child);
    aborted = aborted_;
  }
  if (aborted) child->AbortAll();
}

}  // namespace fluid
