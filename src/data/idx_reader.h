// Readers for IDX files (the MNIST family: MNIST, Fashion-MNIST, KMNIST) and
// the Dataset they produce.
//
// An IDX file is a 4-byte magic (0x00 0x00 <type> <ndims>), ndims big-endian
// uint32 dims, then the elements, big-endian, in C order. Files may be gzip
// compressed or plain; both are read through zlib, which passes plain files
// through. Every error names the path and what is wrong (missing, truncated,
// bad magic, unsupported type, trailing bytes, wrong rank).
//
// The functions are free of shared state and safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/tensor.h"

namespace fluid {

// Named tensors sharing dim 0 (the sample index): tensors[i] is called
// names[i]. Copying a Dataset shares the tensors' memory.
struct Dataset {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;

  // Samples (dim 0 of the tensors); 0 when there are no tensors.
  int64_t size() const;
  // Checks that names and tensors pair up, every tensor has rank >= 1 and
  // they all hold the same number of samples; `what` names the dataset in
  // the error.
  void Check(const std::string& what) const;
};

// A cheap digest of what `t` holds, to tell two ranks' data apart without
// sending it: the CRC-32 of its dtype, its shape and its bytes, of every
// row of a tensor up to 4 MiB (labels, token windows of a short run) and of
// 1024 rows spread evenly over a larger one (the first and the last among
// them). It reads the tensor where it lies in host memory, nothing else.
uint32_t ContentDigest(const Tensor& t);

// The element types an IDX file may declare (the third magic byte).
enum class IdxType : uint8_t {
  kUInt8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

// One IDX file's contents, its elements converted to host byte order.
struct IdxArray {
  IdxType type = IdxType::kUInt8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // numel * element size bytes
};

// Reads any IDX file, gzip or plain.
IdxArray ReadIdx(const std::string& path);

// An unsigned-byte IDX file of rank 3 [N, H, W] as a float32 tensor
// [N, 1, H, W] scaled to [0, 1] (pixel / 255).
Tensor ReadIdxImages(const std::string& path);

// An unsigned-byte IDX file of rank 1 [N] as an int64 tensor [N, 1].
Tensor ReadIdxLabels(const std::string& path);

// The training (train = true: train-*) or test (t10k-*) split of an
// MNIST-family dataset in `dir`, from images-idx3-ubyte and labels-idx1-ubyte
// files, gzip (.gz) or plain. Names {"image", "label"}; the image and label
// counts must agree.
Dataset LoadMnistFamily(const std::string& dir, bool train);

}  // namespace fluid
