// Communicator::SendTensorAsync and RecvTensorAsync (communicator.h): a
// tensor and what the receiver needs to allocate it, as one collective:
// the header with the collective check's exchange, then the sequence
// offsets if any, then the values.
#include <algorithm>
#include <exception>
#include <limits>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/framework/enforce.h"

namespace fluid {

namespace {

// The header, which rides with the collective check's exchange (a maximum
// over the two ranks: the receiver offers the smallest values): dtype,
// rank, the dims (zero past the rank), then the number of sequence offsets
// (LoD) that follow as a broadcast of their own (0: none).
constexpr int kHeader = 3 + Shape::kMaxRank;
constexpr int kLoDSlot = 2 + Shape::kMaxRank;

// The header's values, checked: a header no sender of this kind writes is
// an error naming it, never an allocation of its garbage.
Shape HeaderShape(const int64_t* h) {
  FLUID_ENFORCE(h[1] >= 0 && h[1] <= Shape::kMaxRank,
                "a tensor message's header says rank ", h[1]);
  FLUID_ENFORCE(h[kLoDSlot] >= 0 && h[kLoDSlot] < (int64_t{1} << 31),
                "a tensor message's header says ", h[kLoDSlot],
                " sequence offsets");
  std::vector<int64_t> dims(h + 2, h + 2 + h[1]);
  for (int64_t d : dims)
    FLUID_ENFORCE(d >= 0, "a tensor message's header says dimension ", d);
  return Shape(dims);
}

}  // namespace

CommHandlePtr Communicator::SendTensorAsync(const Tensor& x, ReadyFn ready,
                                            int32_t micro_batch) {
  FLUID_ENFORCE(size_ == 2, "a tensor message runs on a ring of two ranks, ",
                "not ", size_);
  FLUID_ENFORCE(x.initialized(), "a tensor message of a tensor with no data");
  FLUID_ENFORCE(x.shape().rank() <= Shape::kMaxRank,
                "a tensor message of rank ", x.shape().rank());
  auto header = std::make_shared<std::vector<int64_t>>(kHeader, 0);
  int64_t* h = header->data();
  h[0] = static_cast<int64_t>(x.dtype());
  h[1] = x.shape().rank();
  for (int i = 0; i < x.shape().rank(); ++i) h[2 + i] = x.shape()[i];
  h[kLoDSlot] = static_cast<int64_t>(x.lod().size());
  Tensor offsets;
  if (x.has_lod())
    std::copy(x.lod().begin(), x.lod().end(),
              offsets.mutable_data<int64_t>(
                  Shape{static_cast<int64_t>(x.lod().size())}));
  CollectiveDesc desc = DescOf(CollectiveKind::kBroadcast, x);
  desc.count = -1;  // the receiver learns it from the header
  desc.root = rank_;
  desc.micro_batch = micro_batch;
  const int root = rank_;
  const int64_t bytes = static_cast<int64_t>(
      kHeader * sizeof(int64_t) +
      (offsets.initialized() ? offsets.bytes() : 0) + x.bytes());
  return Enqueue(
      desc, bytes,
      [this, offsets, x, root, ready = std::move(ready)](CommBackend* b,
                                                         int64_t*) {
        if (offsets.initialized())
          RunDense(b, BroadcastOf(offsets, root, nullptr));
        if (x.bytes() > 0) RunDense(b, BroadcastOf(x, root, ready));
      },
      std::move(header));
}

CommHandlePtr Communicator::RecvTensorAsync(int root, DataType dtype,
                                            Place place, AcceptFn accept,
                                            FenceFn fence,
                                            int32_t micro_batch) {
  FLUID_ENFORCE(size_ == 2, "a tensor message runs on a ring of two ranks, ",
                "not ", size_);
  FLUID_ENFORCE(root >= 0 && root < 2 && root != rank_,
                "a tensor message from rank ", root, " to rank ", rank_,
                " of a ring of two");
  CollectiveDesc desc;
  desc.kind = CollectiveKind::kBroadcast;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.count = -1;
  desc.device = !place.is_cpu() && backend_->HandlesDeviceMemory();
  desc.root = root;
  desc.micro_batch = micro_batch;
  auto header = std::make_shared<std::vector<int64_t>>(
      kHeader, std::numeric_limits<int64_t>::min());
  auto received = std::make_shared<Tensor>();
  CommHandlePtr handle = Enqueue(
      desc, 0,
      [this, header, received, root, place, accept = std::move(accept),
       fence = std::move(fence)](CommBackend* b, int64_t* bytes) {
        const int64_t* h = header->data();
        const Shape shape = HeaderShape(h);
        const auto got = static_cast<DataType>(h[0]);
        SizeOf(got);  // an unknown dtype is an error naming it
        // A refused message is still received whole, so that the ring
        // stays in step and the sender does not wait forever; then the
        // refusal is the handle's error.
        std::exception_ptr refused;
        try {
          if (accept) accept(got, shape);
        } catch (...) {
          refused = std::current_exception();
        }
        *bytes = kHeader * static_cast<int64_t>(sizeof(int64_t));
        Tensor& out = *received;
        if (h[kLoDSlot] > 0) {
          Tensor offsets;
          offsets.mutable_data<int64_t>(Shape{h[kLoDSlot]});
          RunDense(b, BroadcastOf(offsets, root, nullptr));
          *bytes += static_cast<int64_t>(offsets.bytes());
          const int64_t* o = offsets.data<int64_t>();
          out.set_lod(LoD(o, o + offsets.numel()));
        }
        out.set_dtype(got);
        out.Resize(shape);
        out.raw_mutable_data(place);
        if (out.bytes() > 0) {
          RunDense(b, BroadcastOf(out, root, fence ? fence() : nullptr));
          *bytes += static_cast<int64_t>(out.bytes());
        }
        if (refused) {
          out = Tensor();
          std::rethrow_exception(refused);
        }
      },
      header);
  handle->received_ = std::move(received);
  return handle;
}

Communicator::DenseCollective Communicator::BroadcastOf(const Tensor& t,
                                                        int root,
                                                        ReadyFn ready) {
  const int64_t bytes = static_cast<int64_t>(t.bytes());
  DenseCollective c{t, t, std::move(ready), nullptr, nullptr};
  c.host = [bytes, root](CommBackend* b, const void*, void* data) {
    b->Broadcast(data, bytes, root);
  };
  c.device = [bytes, root](CommBackend* b, const void*, void* data,
                           int device) {
    b->DeviceBroadcast(data, bytes, root, device);
  };
  return c;
}

}  // namespace fluid
