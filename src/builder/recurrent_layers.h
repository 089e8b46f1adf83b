// The typed builders of the recurrent layers over level-1 LoD batches
// (registered by name in recurrent_layers.cc), with Fluid's names and
// arguments: dynamic_lstm and dynamic_gru (ops lstm and gru), lstm_unit
// and gru_unit (one step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// Arguments every recurrent layer over sequences shares.
struct RecurrentOptions {
  ParamAttr param;  // the recurrent weight
  ParamAttr bias;
  bool with_bias = true;  // bias_attr not false
  bool is_reverse = false;
  std::string gate_activation = "sigmoid";
  std::string candidate_activation = "tanh";
  std::string h_0;  // "": zeros
  std::string name;
};

struct DynamicLstmOptions : RecurrentOptions {
  std::string c_0;  // "": zeros
  bool use_peepholes = true;
  std::string cell_activation = "tanh";
  DataType dtype = DataType::kFloat32;
};

// Fluid's dynamic_lstm: `input` is the projected gate input [rows, size]
// (size = 4D, gate blocks {c~, i, f, o}) with level-1 LoD; the weight is
// [D, 4D] (uniform in +-1/sqrt(D) by default), the bias [1, 4D] ([1, 7D]
// with peepholes; zeros by default). Returns {hidden, cell}, [rows, D].
std::vector<std::string> DynamicLstm(ProgramBuilder* b,
                                     const std::string& input, int64_t size,
                                     const DynamicLstmOptions& options = {});

struct DynamicGruOptions : RecurrentOptions {
  bool origin_mode = false;
};

// Fluid's dynamic_gru: `input` is the projected gate input [rows, 3 * size]
// (gate blocks {u, r, c}) with level-1 LoD, size = D; the weight [D, 3D]
// holds W_ur [D, 2D] then W_c [D, D] in memory, as Fluid's (uniform in
// +-1/sqrt(D) by default), the bias [1, 3D] (zeros by default; none with
// bias_attr false). Returns hidden [rows, D].
std::string DynamicGru(ProgramBuilder* b, const std::string& input,
                       int64_t size, const DynamicGruOptions& options = {});

// Fluid's lstm_unit: fc([x_t, hidden_t_prev], 4D) (blocks {i, f, o, j};
// D = cell_t_prev's width), then one lstm_unit step. Returns {hidden,
// cell}.
std::vector<std::string> LstmUnit(
    ProgramBuilder* b, const std::string& x_t, const std::string& hidden_t_prev,
    const std::string& cell_t_prev, float forget_bias = 0.0f,
    const ParamAttr& param = {}, const ParamAttr& bias = {},
    bool with_bias = true, const std::string& name = "");

// Fluid's gru_unit: one GRU step of the projected gate input [N, size]
// (size = 3D) from hidden [N, D]; weight [D, 3D] and bias [1, 3D] as
// dynamic_gru's. Returns {updated_hidden, reset_hidden_pre, gate}.
std::vector<std::string> GruUnit(ProgramBuilder* b, const std::string& input,
                                 const std::string& hidden, int64_t size,
                                 const DynamicGruOptions& options = {});

}  // namespace layers
}  // namespace fluid
