// Layers over batches of variable-length sequences (level-1 LoD, see
// src/framework/lod.h): pooling, softmax, expansion, masks, padding and
// sequence convolution, with Fluid's names and arguments.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// One row per sequence: `pool_type` sum, average, sqrt, max, last or first
// (any case). An empty sequence pools to `pad_value`.
std::string SequencePool(ProgramBuilder* b, const std::string& input,
                         const std::string& pool_type, bool is_test = false,
                         float pad_value = 0.0f);
std::string SequenceFirstStep(ProgramBuilder* b, const std::string& input);
std::string SequenceLastStep(ProgramBuilder* b, const std::string& input);

// Softmax within each sequence of one value per row.
std::string SequenceSoftmax(ProgramBuilder* b, const std::string& input,
                            bool use_cudnn = false,
                            const std::string& name = "");

// x's sequences (or rows, without a LoD) repeated as y's sequences are
// long. ref_level: -1 or 0 (y has one level).
std::string SequenceExpand(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int ref_level = -1,
                           const std::string& name = "");

// Lengths x -> mask [x.shape..., maxlen] (maxlen -1: the longest) of `dtype`.
std::string SequenceMask(ProgramBuilder* b, const std::string& x,
                         int64_t maxlen = -1, DataType dtype = DataType::kInt64,
                         const std::string& name = "");

// {padded [sequences, maxlen, ...], int64 lengths}; maxlen -1: the longest.
std::vector<std::string> SequencePad(ProgramBuilder* b, const std::string& x,
                                     const std::string& pad_value,
                                     int64_t maxlen = -1,
                                     const std::string& name = "");
std::string SequenceUnpad(ProgramBuilder* b, const std::string& x,
                          const std::string& length,
                          const std::string& name = "");

// Fluid's sequence_conv layer: a window of filter_size rows from
// padding_start on (kAutoPaddingStart: -(filter_size / 2)), zero padding,
// a [filter_size * D, num_filters] filter, then the bias and act. `padding`
// is accepted: the window is zero-padded at each sequence's ends either
// way (Fluid's paddingTrainable false).
inline constexpr int64_t kAutoPaddingStart = -(int64_t{1} << 31);
struct SequenceConvOptions {
  int64_t filter_size = 3;
  int64_t filter_stride = 1;
  bool padding = true;
  int64_t padding_start = kAutoPaddingStart;
  ParamAttr param;
  ParamAttr bias;
  bool with_bias = true;
  std::string act;
  std::string name;
};
std::string SequenceConv(ProgramBuilder* b, const std::string& input,
                         int64_t num_filters,
                         const SequenceConvOptions& options = {});

}  // namespace layers
}  // namespace fluid
