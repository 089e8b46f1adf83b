"""Every public callable of fluid.layers, fluid.nets, fluid.optimizer,
fluid.regularizer, fluid.clip and fluid.initializer has Fluid 1.8's
signature: its argument names, in Fluid's order, with Fluid's defaults
(inspect.signature). FLUID_18 is the table; EXTRAS lists the arguments
that are not Fluid 1.8's (a later extension, or an earlier Fluid's
spelling kept), which come after Fluid's; DEVIATIONS the defaults that
differ on purpose, each with its reason. NOT_IN_FLUID lists what this
package adds, MISSING what Fluid 1.8 has and this package does not. A
callable added without an entry, or a signature changed, fails here.

Then the behaviour of the arguments implemented for this table."""
import inspect

import numpy as np
import pytest

import fluid

L = fluid.layers
R = "<required>"  # an argument without a default

_X = [("x", R), ("name", None)]
_ELEMENTWISE = [("x", R), ("y", R), ("axis", -1), ("act", None),
                ("name", None)]
_DECAY = [("learning_rate", R), ("decay_steps", R), ("decay_rate", R),
          ("staircase", False)]
_REDUCE = [("input", R), ("dim", None), ("keep_dim", False), ("name", None)]
_OPT = [("parameter_list", None), ("regularization", None),
        ("grad_clip", None), ("name", None)]

FLUID_18 = {
    # ---- fluid.layers ----
    "layers.data": [("name", R), ("shape", R), ("append_batch_size", True),
                    ("dtype", "float32"), ("lod_level", 0),
                    ("type", "LOD_TENSOR"), ("stop_gradient", True)],
    "layers.fc": [("input", R), ("size", R), ("num_flatten_dims", 1),
                  ("param_attr", None), ("bias_attr", None), ("act", None),
                  ("name", None)],
    "layers.conv2d": [("input", R), ("num_filters", R), ("filter_size", R),
                      ("stride", 1), ("padding", 0), ("dilation", 1),
                      ("groups", None), ("param_attr", None),
                      ("bias_attr", None), ("use_cudnn", True), ("act", None),
                      ("name", None), ("data_format", "NCHW")],
    "layers.conv2d_transpose": [
        ("input", R), ("num_filters", R), ("output_size", None),
        ("filter_size", None), ("padding", 0), ("stride", 1),
        ("dilation", 1), ("groups", None), ("param_attr", None),
        ("bias_attr", None), ("use_cudnn", True), ("act", None),
        ("name", None), ("data_format", "NCHW")],
    "layers.image_resize": [
        ("input", R), ("out_shape", None), ("scale", None), ("name", None),
        ("resample", "BILINEAR"), ("actual_shape", None),
        ("align_corners", True), ("align_mode", 1), ("data_format", "NCHW")],
    "layers.image_resize_short": [("input", R), ("out_short_len", R),
                                  ("resample", "BILINEAR")],
    "layers.resize_bilinear": [
        ("input", R), ("out_shape", None), ("scale", None), ("name", None),
        ("actual_shape", None), ("align_corners", True), ("align_mode", 1),
        ("data_format", "NCHW")],
    "layers.resize_nearest": [
        ("input", R), ("out_shape", None), ("scale", None), ("name", None),
        ("actual_shape", None), ("align_corners", True),
        ("data_format", "NCHW")],
    "layers.pool2d": [("input", R), ("pool_size", -1), ("pool_type", "max"),
                      ("pool_stride", 1), ("pool_padding", 0),
                      ("global_pooling", False), ("use_cudnn", True),
                      ("ceil_mode", False), ("name", None),
                      ("exclusive", True), ("data_format", "NCHW")],
    "layers.relu": _X, "layers.sigmoid": _X, "layers.tanh": _X,
    "layers.exp": _X, "layers.log": _X, "layers.sqrt": _X,
    "layers.square": _X, "layers.abs": _X, "layers.softplus": _X,
    "layers.softsign": _X,
    "layers.leaky_relu": [("x", R), ("alpha", 0.02), ("name", None)],
    "layers.elu": [("x", R), ("alpha", 1.0), ("name", None)],
    "layers.relu6": [("x", R), ("threshold", 6.0), ("name", None)],
    "layers.pow": [("x", R), ("factor", 1.0), ("name", None)],
    "layers.brelu": [("x", R), ("t_min", 0.0), ("t_max", 24.0),
                     ("name", None)],
    "layers.gelu": [("x", R), ("approximate", False)],
    "layers.softmax": [("input", R), ("use_cudnn", False), ("name", None),
                       ("axis", -1)],
    "layers.cross_entropy": [("input", R), ("label", R),
                             ("soft_label", False), ("ignore_index", -100)],
    "layers.softmax_with_cross_entropy": [
        ("logits", R), ("label", R), ("soft_label", False),
        ("ignore_index", -100), ("numeric_stable_mode", True),
        ("return_softmax", False), ("axis", -1)],
    "layers.sigmoid_cross_entropy_with_logits": [
        ("x", R), ("label", R), ("ignore_index", -100), ("name", None),
        ("normalize", False)],
    "layers.square_error_cost": [("input", R), ("label", R)],
    "layers.mean": _X,
    "layers.accuracy": [("input", R), ("label", R), ("k", 1),
                        ("correct", None), ("total", None)],
    "layers.auc": [("input", R), ("label", R), ("curve", "ROC"),
                   ("num_thresholds", 4095), ("topk", 1),
                   ("slide_steps", 1)],
    "layers.reshape": [("x", R), ("shape", R), ("actual_shape", None),
                       ("act", None), ("inplace", False), ("name", None)],
    "layers.scale": [("x", R), ("scale", 1.0), ("bias", 0.0),
                     ("bias_after_scale", True), ("act", None),
                     ("name", None)],
    "layers.fill_constant": [("shape", R), ("dtype", R), ("value", R),
                             ("force_cpu", False), ("out", None)],
    "layers.fill_constant_batch_size_like": [
        ("input", R), ("shape", R), ("dtype", R), ("value", R),
        ("input_dim_idx", 0), ("output_dim_idx", 0), ("force_cpu", False)],
    "layers.elementwise_add": _ELEMENTWISE,
    "layers.elementwise_sub": _ELEMENTWISE,
    "layers.elementwise_mul": _ELEMENTWISE,
    "layers.elementwise_div": _ELEMENTWISE,
    "layers.elementwise_max": _ELEMENTWISE,
    "layers.elementwise_min": _ELEMENTWISE,
    "layers.elementwise_pow": _ELEMENTWISE,
    "layers.batch_norm": [
        ("input", R), ("act", None), ("is_test", False), ("momentum", 0.9),
        ("epsilon", 1e-05), ("param_attr", None), ("bias_attr", None),
        ("data_layout", "NCHW"), ("in_place", False), ("name", None),
        ("moving_mean_name", None), ("moving_variance_name", None),
        ("do_model_average_for_mean_and_var", True),
        ("use_global_stats", False)],
    "layers.layer_norm": [("input", R), ("scale", True), ("shift", True),
                          ("begin_norm_axis", 1), ("epsilon", 1e-05),
                          ("param_attr", None), ("bias_attr", None),
                          ("act", None), ("name", None)],
    "layers.cos_sim": [("X", R), ("Y", R)],
    "layers.l2_normalize": [("x", R), ("axis", R), ("epsilon", 1e-12),
                            ("name", None)],
    "layers.prelu": [("x", R), ("mode", R), ("param_attr", None),
                     ("name", None)],
    "layers.smooth_l1": [("x", R), ("y", R), ("inside_weight", None),
                         ("outside_weight", None), ("sigma", None)],
    "layers.group_norm": [("input", R), ("groups", R), ("epsilon", 1e-05),
                          ("param_attr", None), ("bias_attr", None),
                          ("act", None), ("data_layout", "NCHW"),
                          ("name", None)],
    "layers.zeros": [("shape", R), ("dtype", R), ("force_cpu", False)],
    "layers.ones": [("shape", R), ("dtype", R), ("force_cpu", False)],
    "layers.zeros_like": [("x", R), ("out", None)],
    "layers.ones_like": [("x", R), ("out", None)],
    "layers.uniform_random": [("shape", R), ("dtype", "float32"),
                              ("min", -1.0), ("max", 1.0), ("seed", 0)],
    "layers.gaussian_random": [("shape", R), ("mean", 0.0), ("std", 1.0),
                               ("seed", 0), ("dtype", "float32")],
    "layers.uniform_random_batch_size_like": [
        ("input", R), ("shape", R), ("dtype", "float32"),
        ("input_dim_idx", 0), ("output_dim_idx", 0), ("min", -1.0),
        ("max", 1.0), ("seed", 0)],
    "layers.gaussian_random_batch_size_like": [
        ("input", R), ("shape", R), ("input_dim_idx", 0),
        ("output_dim_idx", 0), ("mean", 0.0), ("std", 1.0), ("seed", 0),
        ("dtype", "float32")],
    "layers.range": [("start", R), ("end", R), ("step", R), ("dtype", R)],
    "layers.linspace": [("start", R), ("stop", R), ("num", R), ("dtype", R)],
    "layers.eye": [("num_rows", R), ("num_columns", None),
                   ("batch_shape", None), ("dtype", "float32")],
    "layers.diag": [("diagonal", R)],
    "layers.has_inf": [("x", R)], "layers.has_nan": [("x", R)],
    "layers.isfinite": [("x", R)],
    "layers.dropout": [("x", R), ("dropout_prob", R), ("is_test", False),
                       ("seed", None), ("name", None),
                       ("dropout_implementation", "downgrade_in_infer")],
    "layers.create_parameter": [("shape", R), ("dtype", R), ("name", None),
                                ("attr", None), ("is_bias", False),
                                ("default_initializer", None)],
    "layers.create_global_var": [("shape", R), ("value", R), ("dtype", R),
                                 ("persistable", False),
                                 ("force_cpu", False), ("name", None)],
    "layers.create_tensor": [("dtype", R), ("name", None),
                             ("persistable", False)],
    "layers.concat": [("input", R), ("axis", 0), ("name", None)],
    "layers.split": [("input", R), ("num_or_sections", R), ("dim", -1),
                     ("name", None)],
    "layers.transpose": [("x", R), ("perm", R), ("name", None)],
    "layers.flatten": [("x", R), ("axis", 1), ("name", None)],
    "layers.stack": [("x", R), ("axis", 0)],
    "layers.unstack": [("x", R), ("axis", 0), ("num", None)],
    "layers.expand": [("x", R), ("expand_times", R), ("name", None)],
    "layers.gather": [("input", R), ("index", R), ("overwrite", True)],
    "layers.slice": [("input", R), ("axes", R), ("starts", R),
                     ("ends", R)],
    "layers.shape": [("input", R)],
    "layers.squeeze": [("input", R), ("axes", R), ("name", None)],
    "layers.unsqueeze": [("input", R), ("axes", R), ("name", None)],
    "layers.reduce_sum": _REDUCE, "layers.reduce_mean": _REDUCE,
    "layers.reduce_max": _REDUCE, "layers.reduce_min": _REDUCE,
    "layers.reduce_prod": _REDUCE,
    "layers.sums": [("input", R), ("out", None)],
    "layers.matmul": [("x", R), ("y", R), ("transpose_x", False),
                      ("transpose_y", False), ("alpha", 1.0), ("name", None)],
    "layers.mul": [("x", R), ("y", R), ("x_num_col_dims", 1),
                   ("y_num_col_dims", 1), ("name", None)],
    "layers.cast": [("x", R), ("dtype", R)],
    "layers.assign": [("input", R), ("output", None)],
    "layers.one_hot": [("input", R), ("depth", R),
                       ("allow_out_of_range", False)],
    "layers.argmax": [("x", R), ("axis", 0)],
    "layers.topk": [("input", R), ("k", R), ("name", None)],
    "layers.clip": [("x", R), ("min", R), ("max", R), ("name", None)],
    "layers.sequence_pool": [("input", R), ("pool_type", R),
                             ("is_test", False), ("pad_value", 0.0)],
    "layers.sequence_first_step": [("input", R)],
    "layers.sequence_last_step": [("input", R)],
    "layers.sequence_softmax": [("input", R), ("use_cudnn", False),
                                ("name", None)],
    "layers.sequence_expand": [("x", R), ("y", R), ("ref_level", -1),
                               ("name", None)],
    "layers.sequence_mask": [("x", R), ("maxlen", None), ("dtype", "int64"),
                             ("name", None)],
    "layers.sequence_pad": [("x", R), ("pad_value", R), ("maxlen", None),
                            ("name", None)],
    "layers.sequence_unpad": [("x", R), ("length", R), ("name", None)],
    "layers.linear_chain_crf": [("input", R), ("label", R),
                                ("param_attr", None), ("length", None)],
    "layers.crf_decoding": [("input", R), ("param_attr", R), ("label", None),
                            ("length", None)],
    "layers.edit_distance": [("input", R), ("label", R), ("normalized", True),
                             ("ignored_tokens", None), ("input_length", None),
                             ("label_length", None)],
    "layers.less_than": [("x", R), ("y", R), ("force_cpu", None),
                         ("cond", None)],
    "layers.less_equal": [("x", R), ("y", R), ("cond", None)],
    "layers.greater_than": [("x", R), ("y", R), ("cond", None)],
    "layers.greater_equal": [("x", R), ("y", R), ("cond", None)],
    "layers.equal": [("x", R), ("y", R), ("cond", None)],
    "layers.not_equal": [("x", R), ("y", R), ("cond", None)],
    "layers.logical_and": [("x", R), ("y", R), ("out", None), ("name", None)],
    "layers.logical_or": [("x", R), ("y", R), ("out", None), ("name", None)],
    "layers.logical_xor": [("x", R), ("y", R), ("out", None), ("name", None)],
    "layers.logical_not": [("x", R), ("out", None), ("name", None)],
    "layers.increment": [("x", R), ("value", 1.0), ("in_place", True)],
    "layers.create_array": [("dtype", R)],
    "layers.array_write": [("x", R), ("i", R), ("array", None)],
    "layers.array_read": [("array", R), ("i", R)],
    "layers.array_length": [("array", R)],
    "layers.beam_search": [("pre_ids", R), ("pre_scores", R), ("ids", R),
                           ("scores", R), ("beam_size", R), ("end_id", R),
                           ("level", 0), ("is_accumulated", True),
                           ("name", None), ("return_parent_idx", False)],
    "layers.beam_search_decode": [("ids", R), ("scores", R),
                                  ("beam_size", R), ("end_id", R),
                                  ("name", None)],
    "layers.While": [("cond", R), ("is_test", False), ("name", None)],
    "layers.StaticRNN": [("name", None)],
    "layers.DynamicRNN": [("name", None)],
    "layers.DynamicRNN.step_input": [("x", R), ("level", 0)],
    "layers.DynamicRNN.static_input": [("x", R)],
    "layers.DynamicRNN.memory": [("init", None),
                                 ("shape", None), ("value", 0.0),
                                 ("need_reorder", False),
                                 ("dtype", "float32")],
    "layers.DynamicRNN.update_memory": [("ex_mem", R),
                                        ("new_mem", R)],
    "layers.lod_rank_table": [("x", R), ("level", 0)],
    "layers.lod_reset": [("x", R), ("y", None), ("target_lod", None)],
    "layers.lod_append": [("x", R), ("level", R)],
    "layers.is_empty": [("x", R), ("cond", None)],
    "layers.chunk_eval": [("input", R), ("label", R), ("chunk_scheme", R),
                          ("num_chunk_types", R),
                          ("excluded_chunk_types", None),
                          ("seq_length", None)],
    "layers.max_sequence_len": [("rank_table", R)],
    "layers.lod_tensor_to_array": [("x", R), ("table", R)],
    "layers.array_to_lod_tensor": [("x", R), ("table", R)],
    "layers.shrink_memory": [("x", R), ("i", R), ("table", R)],
    "layers.reorder_lod_tensor_by_rank": [("x", R), ("rank_table", R)],
    "layers.cond": [("pred", R), ("true_fn", None), ("false_fn", None),
                    ("name", None)],
    "layers.Switch": [("name", None)],
    "layers.IfElse": [("cond", R), ("name", None)],
    "layers.while_loop": [("cond", R), ("body", R), ("loop_vars", R),
                          ("is_test", False), ("name", None)],
    "layers.sequence_conv": [
        ("input", R), ("num_filters", R), ("filter_size", 3),
        ("filter_stride", 1), ("padding", True), ("padding_start", None),
        ("bias_attr", None), ("param_attr", None), ("act", None),
        ("name", None)],
    "layers.nce": [
        ("input", R), ("label", R), ("num_total_classes", R),
        ("sample_weight", None), ("param_attr", None), ("bias_attr", None),
        ("num_neg_samples", None), ("name", None), ("sampler", "uniform"),
        ("custom_dist", None), ("seed", 0), ("is_sparse", False)],
    "layers.hsigmoid": [
        ("input", R), ("label", R), ("num_classes", R), ("param_attr", None),
        ("bias_attr", None), ("name", None), ("path_table", None),
        ("path_code", None), ("is_custom", False), ("is_sparse", False)],
    "layers.embedding": [("input", R), ("size", R), ("is_sparse", False),
                         ("is_distributed", False), ("padding_idx", None),
                         ("param_attr", None), ("dtype", "float32")],
    "layers.dynamic_lstm": [
        ("input", R), ("size", R), ("h_0", None), ("c_0", None),
        ("param_attr", None), ("bias_attr", None), ("use_peepholes", True),
        ("is_reverse", False), ("gate_activation", "sigmoid"),
        ("cell_activation", "tanh"), ("candidate_activation", "tanh"),
        ("dtype", "float32"), ("name", None)],
    "layers.dynamic_gru": [
        ("input", R), ("size", R), ("param_attr", None), ("bias_attr", None),
        ("is_reverse", False), ("gate_activation", "sigmoid"),
        ("candidate_activation", "tanh"), ("h_0", None),
        ("origin_mode", False)],
    "layers.lstm_unit": [("x_t", R), ("hidden_t_prev", R),
                         ("cell_t_prev", R), ("forget_bias", 0.0),
                         ("param_attr", None), ("bias_attr", None),
                         ("name", None)],
    "layers.gru_unit": [("input", R), ("hidden", R), ("size", R),
                        ("param_attr", None), ("bias_attr", None),
                        ("activation", "tanh"),
                        ("gate_activation", "sigmoid"),
                        ("origin_mode", False)],
    "layers.py_reader": [("capacity", R), ("shapes", R), ("dtypes", R),
                         ("lod_levels", None), ("name", None),
                         ("use_double_buffer", True)],
    "layers.create_py_reader_by_data": [("capacity", R), ("feed_list", R),
                                        ("name", None),
                                        ("use_double_buffer", True)],
    "layers.read_file": [("reader", R)],
    "layers.double_buffer": [("reader", R), ("place", None), ("name", None)],
    "layers.exponential_decay": _DECAY,
    "layers.natural_exp_decay": _DECAY,
    "layers.inverse_time_decay": _DECAY,
    "layers.polynomial_decay": [("learning_rate", R), ("decay_steps", R),
                                ("end_learning_rate", 0.0001),
                                ("power", 1.0), ("cycle", False)],
    "layers.piecewise_decay": [("boundaries", R), ("values", R)],
    "layers.noam_decay": [("d_model", R), ("warmup_steps", R),
                          ("learning_rate", 1.0)],
    "layers.cosine_decay": [("learning_rate", R), ("step_each_epoch", R),
                            ("epochs", R)],
    "layers.linear_lr_warmup": [("learning_rate", R), ("warmup_steps", R),
                                ("start_lr", R), ("end_lr", R)],
    # fluid.ParamAttr, which fluid.layers defines here.
    "layers.ParamAttr": [("name", None), ("initializer", None),
                         ("learning_rate", 1.0), ("regularizer", None),
                         ("trainable", True), ("gradient_clip", None),
                         ("do_model_average", True)],
    # ---- fluid.nets ----
    "nets.simple_img_conv_pool": [
        ("input", R), ("num_filters", R), ("filter_size", R),
        ("pool_size", R), ("pool_stride", R), ("pool_padding", 0),
        ("pool_type", "max"), ("global_pooling", False),
        ("conv_stride", 1), ("conv_padding", 0), ("conv_dilation", 1),
        ("conv_groups", 1), ("param_attr", None), ("bias_attr", None),
        ("act", None), ("use_cudnn", True)],
    "nets.img_conv_group": [
        ("input", R), ("conv_num_filter", R), ("pool_size", R),
        ("conv_padding", 1), ("conv_filter_size", 3), ("conv_act", None),
        ("param_attr", None), ("conv_with_batchnorm", False),
        ("conv_batchnorm_drop_rate", 0.0), ("pool_stride", 1),
        ("pool_type", "max"), ("use_cudnn", True)],
    "nets.sequence_conv_pool": [
        ("input", R), ("num_filters", R), ("filter_size", R),
        ("param_attr", None), ("act", "sigmoid"), ("pool_type", "max"),
        ("bias_attr", None)],
    "nets.glu": [("input", R), ("dim", -1)],
    "nets.scaled_dot_product_attention": [
        ("queries", R), ("keys", R), ("values", R), ("num_heads", 1),
        ("dropout_rate", 0.0)],
    # ---- fluid.optimizer: constructors, and the base class's methods ----
    "optimizer.Optimizer": [("learning_rate", R)] + _OPT,
    "optimizer.Optimizer.minimize": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None)],
    "optimizer.Optimizer.backward": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None), ("callbacks", None)],
    "optimizer.Optimizer.apply_gradients": [("params_grads", R)],
    "optimizer.Optimizer.apply_optimize": [
        ("loss", R), ("startup_program", R), ("params_grads", R)],
    "optimizer.SGDOptimizer": [("learning_rate", R)] + _OPT,
    "optimizer.MomentumOptimizer": [
        ("learning_rate", R), ("momentum", R), ("parameter_list", None),
        ("use_nesterov", False), ("regularization", None),
        ("grad_clip", None), ("name", None)],
    "optimizer.AdamOptimizer": [
        ("learning_rate", 0.001), ("beta1", 0.9), ("beta2", 0.999),
        ("epsilon", 1e-08)] + _OPT + [("lazy_mode", False)],
    "optimizer.AdagradOptimizer": [
        ("learning_rate", R), ("epsilon", 1e-06)] + _OPT + [
        ("initial_accumulator_value", 0.0)],
    "optimizer.DecayedAdagradOptimizer": [
        ("learning_rate", R), ("decay", 0.95), ("epsilon", 1e-06)] + _OPT,
    "optimizer.RMSPropOptimizer": [
        ("learning_rate", R), ("rho", 0.95), ("epsilon", 1e-06),
        ("momentum", 0.0), ("centered", False)] + _OPT,
    "optimizer.AdamaxOptimizer": [
        ("learning_rate", 0.001), ("beta1", 0.9), ("beta2", 0.999),
        ("epsilon", 1e-08)] + _OPT,
    "optimizer.AdadeltaOptimizer": [
        ("learning_rate", R), ("epsilon", 1e-06), ("rho", 0.95)] + _OPT,
    "optimizer.LarsMomentumOptimizer": [
        ("learning_rate", R), ("momentum", R), ("lars_coeff", 0.001),
        ("lars_weight_decay", 0.0005)] + _OPT,
    "optimizer.GradientMergeOptimizer": [
        ("inner_optimizer", R), ("k_steps", 1), ("avg", True)],
    "optimizer.GradientMergeOptimizer.minimize": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None)],
    "optimizer.RecomputeOptimizer": [("optimizer", R)],
    "optimizer.RecomputeOptimizer.minimize": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None)],
    "optimizer.RecomputeOptimizer.backward": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None), ("callbacks", None), ("checkpoints", None)],
    "optimizer.PipelineOptimizer": [
        ("optimizer", R), ("num_microbatches", 1), ("start_cpu_core_id", 0)],
    "optimizer.PipelineOptimizer.minimize": [
        ("loss", R), ("startup_program", None), ("parameter_list", None),
        ("no_grad_set", None)],
    # ---- fluid.regularizer ----
    "regularizer.L1DecayRegularizer": [("regularization_coeff", 0.0)],
    "regularizer.L2DecayRegularizer": [("regularization_coeff", 0.0)],
    # ---- fluid.clip ----
    "clip.GradientClipByValue": [("max", R), ("min", None),
                                 ("need_clip", None)],
    "clip.GradientClipByNorm": [("clip_norm", R), ("need_clip", None)],
    "clip.GradientClipByGlobalNorm": [("clip_norm", R),
                                      ("group_name", "default_group"),
                                      ("need_clip", None)],
    "clip.set_gradient_clip": [("clip", R), ("param_list", None),
                               ("program", None)],
    # ---- fluid.initializer ----
    "initializer.ConstantInitializer": [("value", 0.0), ("force_cpu", False)],
    "initializer.UniformInitializer": [("low", -1.0), ("high", 1.0),
                                       ("seed", 0), ("diag_num", 0),
                                       ("diag_step", 0), ("diag_val", 1.0)],
    "initializer.NormalInitializer": [("loc", 0.0), ("scale", 1.0),
                                      ("seed", 0)],
    "initializer.TruncatedNormalInitializer": [("loc", 0.0), ("scale", 1.0),
                                               ("seed", 0)],
    "initializer.XavierInitializer": [("uniform", True), ("fan_in", None),
                                      ("fan_out", None), ("seed", 0)],
    "initializer.MSRAInitializer": [("uniform", True), ("fan_in", None),
                                    ("seed", 0)],
    "initializer.BilinearInitializer": [],
    "initializer.force_init_on_cpu": [],
    "initializer.init_on_cpu": [],
}

# Fluid 1.8's short names of the same classes.
ALIASES = {
    "optimizer.SGD": "optimizer.SGDOptimizer",
    "optimizer.Momentum": "optimizer.MomentumOptimizer",
    "optimizer.Adam": "optimizer.AdamOptimizer",
    "optimizer.Adagrad": "optimizer.AdagradOptimizer",
    "optimizer.DecayedAdagrad": "optimizer.DecayedAdagradOptimizer",
    "optimizer.RMSProp": "optimizer.RMSPropOptimizer",
    "optimizer.Adamax": "optimizer.AdamaxOptimizer",
    "optimizer.Adadelta": "optimizer.AdadeltaOptimizer",
    "optimizer.LarsMomentum": "optimizer.LarsMomentumOptimizer",
    "regularizer.L1Decay": "regularizer.L1DecayRegularizer",
    "regularizer.L2Decay": "regularizer.L2DecayRegularizer",
    "initializer.Constant": "initializer.ConstantInitializer",
    "initializer.Uniform": "initializer.UniformInitializer",
    "initializer.Normal": "initializer.NormalInitializer",
    "initializer.TruncatedNormal": "initializer.TruncatedNormalInitializer",
    "initializer.Xavier": "initializer.XavierInitializer",
    "initializer.MSRA": "initializer.MSRAInitializer",
    "initializer.Bilinear": "initializer.BilinearInitializer",
}

# Arguments after Fluid 1.8's that are not 1.8's, in order.
EXTRAS = {
    # Fluid 1.5's fuse_with_relu (1.8 dropped it); sync_stats: batch
    # statistics over the MPI ranks.
    "layers.batch_norm": [("fuse_with_relu", False), ("sync_stats", False)],
    # A mask added to the attention scores (causal_attention_mask).
    "nets.scaled_dot_product_attention": [("additive_mask", None)],
    # Fluid 1.7's grad_clip of minimize.
    "optimizer.Optimizer.minimize": [("grad_clip", None)],
    # L2 decay inside the update op.
    "optimizer.MomentumOptimizer": [("weight_decay", 0.0)],
    # L2 or decoupled (AdamW) decay inside the update op.
    "optimizer.AdamOptimizer": [("weight_decay", 0.0),
                                ("decoupled_weight_decay", False)],
}

# Defaults that differ from Fluid 1.8's on purpose: (ours, why).
DEVIATIONS = {
    # fluid.core.VarDesc.VarType does not exist here; None is LOD_TENSOR.
    ("layers.data", "type"): (None, "None stands for VarType.LOD_TENSOR"),
    # Fluid requires momentum; existing scripts call Momentum(lr).
    ("optimizer.MomentumOptimizer", "momentum"): (
        0.9, "a default where Fluid has none: every Fluid call works"),
}

# Public callables of these modules that are not Fluid 1.8's.
NOT_IN_FLUID = {"layers.causal_attention_mask"}

# Fluid 1.8 callables of these modules that this package does not have.
MISSING = {
    "clip.ErrorClipByValue",          # needs a hook into the backward pass
    "regularizer.append_regularization_ops",  # minimize() appends them
    "initializer.NumpyArrayInitializer",      # no such initializer kind
    "optimizer.FtrlOptimizer", "optimizer.LambOptimizer",
    "optimizer.DGCMomentumOptimizer", "optimizer.ModelAverage",
    "optimizer.ExponentialMovingAverage", "optimizer.LookaheadOptimizer",
    "optimizer.DpsgdOptimizer",
}

# The modules whose callables are checked, and the modules whose
# definitions each exports (fluid.layers re-exports the reader layers and
# the learning-rate schedules).
MODULES = {
    "layers": ("fluid.layers", "fluid.layers_io", "fluid.layers_tensor",
               "fluid.layers_nn",
               "fluid.layers_image",
               "fluid.layers_crf",
               "fluid.layers_loss",
               "fluid.layers_control", "fluid.layers_while",
               "fluid.layers_decode", "fluid.layers_rnn",
               "fluid.layers_cond", "fluid.layers_lod",
               "fluid.layers_drnn",
               "fluid.learning_rate_scheduler"),
    "nets": ("fluid.nets",),
    "optimizer": ("fluid.optimizer",),
    "regularizer": ("fluid.regularizer",),
    "clip": ("fluid.clip",),
    "initializer": ("fluid.initializer",),
}


def public_callables():
    """{"module.name": object} of every public function and class the
    checked modules define (their __all__ where they have one)."""
    found = {}
    for short, defining in MODULES.items():
        module = getattr(fluid, short)
        names = getattr(module, "__all__", None) or [
            n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    getattr(obj, "__module__", None) in defining:
                found[f"{short}.{name}"] = obj
    return found


def resolve(key):
    """The callable of table key `key` ("module.name" or
    "module.Class.method")."""
    parts = key.split(".")
    obj = getattr(fluid, parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def signature_of(obj):
    """[(name, default or R)] of a function, or of a class's __init__,
    without self; *args and **kwargs would show as such."""
    params = list(inspect.signature(obj).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    out = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            out.append((("*" if p.kind == p.VAR_POSITIONAL else "**")
                        + p.name, R))
        else:
            out.append((p.name, R if p.default is p.empty else p.default))
    return out


def expected(key):
    """Fluid 1.8's signature of `key` with our extras and deviations."""
    want = []
    for name, default in FLUID_18[key]:
        if (key, name) in DEVIATIONS:
            default = DEVIATIONS[(key, name)][0]
        want.append((name, default))
    return want + EXTRAS.get(key, [])


def same(a, b):
    """Defaults equal in value and type (1.0 is not 1, True is not 1)."""
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("key", sorted(FLUID_18))
def test_signature_is_fluid_18s(key):
    got = signature_of(resolve(key))
    want = expected(key)
    assert [n for n, _ in got] == [n for n, _ in want], key
    for (name, have), (_, default) in zip(got, want):
        assert same(have, default), (
            f"{key}({name}=...): default {have!r}, Fluid 1.8's {default!r}")


def test_every_public_callable_is_in_the_table():
    found = set(public_callables())
    table = {k for k in FLUID_18 if k.count(".") == 1} | set(ALIASES)
    assert found - table - NOT_IN_FLUID == set(), \
        "public callables with no row in FLUID_18 (or NOT_IN_FLUID)"
    assert table - found == set(), "rows naming no public callable"
    assert NOT_IN_FLUID <= found


def test_aliases_are_the_same_classes():
    for alias, canonical in ALIASES.items():
        assert resolve(alias) is resolve(canonical), alias


def test_missing_ones_are_missing():
    """When one of them is added, it gets a row in FLUID_18."""
    for key in MISSING:
        module, name = key.split(".")
        assert not hasattr(getattr(fluid, module), name), key


def test_extras_and_deviations_name_real_rows():
    for key in EXTRAS:
        assert key in FLUID_18, key
    for key, arg in DEVIATIONS:
        assert arg in dict(FLUID_18[key]), (key, arg)


def test_the_check_sees_a_difference():
    """A changed default, a renamed argument and an argument out of order
    are all caught (the comparison cannot pass by checking nothing)."""
    def f(x, name=None):
        pass

    def renamed(x, nmae=None):
        pass

    def changed(x, name="out"):
        pass

    def swapped(name=None, x=None):
        pass

    want = [("x", R), ("name", None)]
    assert signature_of(f) == want
    for g in (renamed, changed, swapped):
        got = signature_of(g)
        assert [n for n, _ in got] != [n for n, _ in want] or \
            not all(same(a, b) for (_, a), (_, b) in zip(got, want))
    assert not same(1, 1.0) and not same(True, 1)


# ---- behaviour of the arguments implemented for Fluid 1.8 ----

def _programs():
    main, startup = fluid.Program(), fluid.Program()
    return main, startup, fluid.program_guard(main, startup)


def _run(main, startup, feed, fetch):
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


def test_name_prefixes_the_output_of_relu_sigmoid_tanh_and_mean():
    main, startup, guard = _programs()
    with fluid.unique_name.guard(), guard:
        x = L.data("x", [3])
        outs = [L.relu(x, name="r"), L.sigmoid(x, name="s"),
                L.tanh(x, name="t"), L.mean(x, name="m"), L.relu(x)]
    assert [v.name.split(".")[0].rsplit("_", 1)[0] for v in outs] == \
        ["r", "s", "t", "m", "relu"]
    xv = np.array([[-1.0, 0.5, 2.0]], dtype="float32")
    (r, s, t, m, _), _ = _run(main, startup, {"x": xv}, outs)
    np.testing.assert_allclose(r, np.maximum(xv, 0))
    np.testing.assert_allclose(s, 1 / (1 + np.exp(-xv)), rtol=1e-6)
    np.testing.assert_allclose(t, np.tanh(xv), rtol=1e-6)
    np.testing.assert_allclose(m, [xv.mean()], rtol=1e-6)


def _log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def test_softmax_with_cross_entropy_soft_label_and_return_softmax():
    rng = np.random.RandomState(0)
    xv = rng.randn(4, 5)
    zv = rng.rand(4, 5)
    zv /= zv.sum(axis=1, keepdims=True)
    main, startup, guard = _programs()
    with guard:
        x = L.data("x", [5], dtype="float64")
        z = L.data("z", [5], dtype="float64")
        loss, softmax = L.softmax_with_cross_entropy(
            x, z, soft_label=True, return_softmax=True)
        assert loss.shape == (-1, 1) and softmax.shape == (-1, 5)
    (lv, sv), _ = _run(main, startup, {"x": xv, "z": zv}, [loss, softmax])
    logp = _log_softmax(xv, 1)
    np.testing.assert_allclose(lv, -(zv * logp).sum(1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(sv, np.exp(logp), rtol=1e-12)


def test_softmax_with_cross_entropy_soft_label_trains():
    """A soft-label loss gets its gradient: one SGD step moves the logits'
    weight by -lr * x^T (softmax - label) / N."""
    rng = np.random.RandomState(1)
    xv = rng.randn(6, 3)
    zv = rng.rand(6, 4)
    zv /= zv.sum(axis=1, keepdims=True)
    main, startup, guard = _programs()
    with fluid.unique_name.guard(), guard:
        x = L.data("x", [3], dtype="float64")
        z = L.data("z", [4], dtype="float64")
        logits = L.fc(x, 4, bias_attr=False, param_attr="w")
        loss = L.mean(L.softmax_with_cross_entropy(logits, z,
                                                   soft_label=True))
        fluid.optimizer.SGD(0.5).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    w0 = np.array(scope.find_var("w").get_tensor())
    exe.run(main, feed={"x": xv, "z": zv}, scope=scope)
    w1 = np.array(scope.find_var("w").get_tensor())
    p = np.exp(_log_softmax(xv @ w0, 1))
    np.testing.assert_allclose(w1, w0 - 0.5 * xv.T @ (p - zv) / 6,
                               rtol=1e-10, atol=1e-12)


def test_softmax_with_cross_entropy_axis_and_ignore_index():
    rng = np.random.RandomState(2)
    xv = rng.randn(2, 4, 3)            # classes along dim 1
    yv = rng.randint(0, 4, size=(2, 1, 3)).astype("int64")
    yv[0, 0, 1] = 7                    # ignored
    main, startup, guard = _programs()
    with guard:
        x = L.data("x", [2, 4, 3], dtype="float64", append_batch_size=False)
        y = L.data("y", [2, 1, 3], dtype="int64", append_batch_size=False)
        loss, softmax = L.softmax_with_cross_entropy(
            x, y, ignore_index=7, axis=1, return_softmax=True,
            numeric_stable_mode=False)
        assert loss.shape == (2, 1, 3) and softmax.shape == (2, 4, 3)
    (lv, sv), _ = _run(main, startup, {"x": xv, "y": yv}, [loss, softmax])
    logp = _log_softmax(xv, 1)
    want = -np.take_along_axis(logp, np.where(yv == 7, 0, yv), axis=1)
    want[yv == 7] = 0.0
    np.testing.assert_allclose(lv, want, rtol=1e-12)
    np.testing.assert_allclose(sv, np.exp(logp), rtol=1e-12)
    with fluid.program_guard(main, startup):
        with pytest.raises(ValueError, match="argument 'axis' = 3 is out "
                           "of range"):
            L.softmax_with_cross_entropy(x, y, axis=3)


def test_fill_constant_takes_numpy_dtypes_and_out():
    main, startup, guard = _programs()
    with guard:
        a = L.fill_constant([2], np.float32, 1.5)
        b = L.fill_constant([1, 2], np.dtype("int64"), 7, force_cpu=True)
        c = L.create_global_var([3], 0.0, np.float64, name="c")
        back = L.fill_constant([3], "float64", 2.5, out=c)
        assert back.name == "c"
        with pytest.raises(TypeError, match=r"fill_constant\(dtype="):
            L.fill_constant([1], object(), 1.0)
        with pytest.raises(KeyError, match="argument 'out': no variable "
                           "'nope'"):
            L.fill_constant([1], "float32", 1.0, out="nope")
    (av, bv, cv), _ = _run(main, startup, {}, [a, b, c])
    assert av.dtype == np.float32 and bv.dtype == np.int64
    np.testing.assert_array_equal(av, [1.5, 1.5])
    np.testing.assert_array_equal(bv, [[7, 7]])
    np.testing.assert_array_equal(cv, [2.5, 2.5, 2.5])


def test_data_in_fluid_order_and_stop_gradient():
    main, startup, guard = _programs()
    with fluid.unique_name.guard(), guard:
        a = L.data("a", [3], False, np.int64)   # append_batch_size, dtype
        x = L.data("x", [4], stop_gradient=False, type="LOD_TENSOR")
        loss = L.mean(L.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
        with pytest.raises(NotImplementedError, match="argument 'type': "
                           "only LOD_TENSOR"):
            L.data("s", [3], type="SELECTED_ROWS")
    assert a.shape == (3,) and a.dtype == "int64"
    assert "x@GRAD" in main.global_block().vars
    xv = np.ones((2, 4), dtype="float32")
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    w = np.array(scope.find_var("fc_0.w_0").get_tensor())  # before the step
    g, = exe.run(main, feed={"x": xv}, fetch_list=["x@GRAD"], scope=scope)
    # d mean(x w + b) / dx: every row sum(w, axis=1) / (2 * 2).
    np.testing.assert_allclose(g, np.tile(w.sum(1) / 4, (2, 1)),
                               rtol=1e-6)


def test_data_format_nhwc_is_refused_naming_what_to_do():
    main, startup, guard = _programs()
    with guard:
        img = L.data("img", [3, 8, 8])
        L.conv2d(img, 4, 3, data_format="NCHW")
        L.pool2d(img, 2, data_format="NCHW")
        for layer in (lambda: L.conv2d(img, 4, 3, data_format="NHWC"),
                      lambda: L.pool2d(img, 2, data_format="NHWC")):
            with pytest.raises(NotImplementedError,
                               match=r"data_format.*transpose"):
                layer()
        with pytest.raises(ValueError, match="expected \"NCHW\" or "
                           "\"NHWC\""):
            L.pool2d(img, 2, data_format="nchw")


def test_one_hot_allow_out_of_range_gives_zero_rows():
    idv = np.array([[1], [4], [-2], [3]], dtype="int64")
    for allow in (True, False):
        main, startup, guard = _programs()
        with guard:
            ids = L.data("ids", [1], dtype="int64")
            hot = L.one_hot(ids, 4, allow_out_of_range=allow)
        if not allow:
            with pytest.raises(ValueError, match="holds 4 at row 1.*"
                               "allow_out_of_range=True gives"):
                _run(main, startup, {"ids": idv}, [hot])
            continue
        (h,), _ = _run(main, startup, {"ids": idv}, [hot])
        np.testing.assert_array_equal(
            h, [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]])


def test_param_attr_do_model_average_and_batch_norm_order():
    assert fluid.ParamAttr(do_model_average=False).do_model_average is False
    main, startup, guard = _programs()
    with guard:
        x = L.data("x", [3, 4, 4])
        # Positionally up to use_global_stats, as Fluid 1.8 orders them.
        L.batch_norm(x, None, False, 0.9, 1e-5, None, None, "NCHW", False,
                     None, None, None, True, False)


def test_py_reader_takes_numpy_dtypes():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        reader = L.py_reader(4, [(-1, 3), (-1, 1)], [np.float32, np.int64])
        x, y = L.read_file(reader)
    assert x.dtype == "float32" and y.dtype == "int64"


def _classifier(optimizer, clip_attr=None):
    main, startup, guard = _programs()
    main.random_seed = 5
    with fluid.unique_name.guard(), guard:
        x = L.data("x", [4])
        y = L.data("y", [1], dtype="int64")
        h = L.fc(x, 8, act="tanh", param_attr=clip_attr)
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 3), y))
        ops, pairs = optimizer.minimize(loss)
    return main, startup, loss, ops, pairs


def _train(main, startup, steps=3):
    rng = np.random.RandomState(3)
    feed = {"x": rng.randn(8, 4).astype("float32") * 10,
            "y": rng.randint(0, 3, size=(8, 1)).astype("int64")}
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for _ in range(steps):
        exe.run(main, feed=feed, scope=scope)
    return {p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in main.all_parameters()}


def test_minimize_returns_operators_that_still_read_as_dicts():
    _, _, _, ops, pairs = _classifier(fluid.optimizer.SGD(0.1))
    assert all(isinstance(op, fluid.framework.Operator) for op in ops)
    assert [op.type for op in ops] == ["sgd"] * 4
    assert [op["type"] for op in ops] == ["sgd"] * 4
    assert all("optimize" in op["roles"] for op in ops)
    assert [op.input("Param")[0] for op in ops] == [p.name for p, _ in pairs]
    assert [op.input("Grad")[0] for op in ops] == [g.name for _, g in pairs]


def test_constructor_parameter_list_and_positional_fluid_order():
    # Adam's fifth positional argument is parameter_list, as in Fluid 1.8.
    opt = fluid.optimizer.Adam(0.01, 0.9, 0.999, 1e-8, ["fc_1.w_0"])
    _, _, _, ops, pairs = _classifier(opt)
    assert [p.name for p, _ in pairs] == ["fc_1.w_0"]
    assert [op.type for op in ops] == ["adam"]
    # minimize's own parameter_list wins.
    opt = fluid.optimizer.SGD(0.1, parameter_list=["fc_1.w_0"])
    main, startup, guard = _programs()
    with fluid.unique_name.guard(), guard:
        loss = L.mean(L.fc(L.fc(L.data("x", [4]), 8), 3))
        _, pairs = opt.minimize(loss, parameter_list=["fc_0.w_0"])
    assert [p.name for p, _ in pairs] == ["fc_0.w_0"]


def test_grad_clip_matches_set_gradient_clip():
    clip = fluid.clip.GradientClipByGlobalNorm(clip_norm=0.01)
    main, startup, _, ops, _ = _classifier(
        fluid.optimizer.SGD(0.5, grad_clip=clip))
    got = _train(main, startup)
    assert "squared_l2_norm" in main.op_types()
    ref_main, ref_startup, guard = _programs()
    ref_main.random_seed = 5
    with fluid.unique_name.guard(), guard:
        x = L.data("x", [4])
        y = L.data("y", [1], dtype="int64")
        loss = L.mean(L.softmax_with_cross_entropy(
            L.fc(L.fc(x, 8, act="tanh"), 3), y))
        fluid.clip.set_gradient_clip(
            fluid.clip.GradientClipByGlobalNorm(clip_norm=0.01))
        fluid.optimizer.SGD(0.5).minimize(loss)
    want = _train(ref_main, ref_startup)
    unclipped = _train(*_classifier(fluid.optimizer.SGD(0.5))[:2])
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert any(not np.allclose(got[n], unclipped[n]) for n in got)


def test_grad_clip_need_clip_and_replacing_param_attr_clips():
    """need_clip leaves fc_0's parameters unclipped, and the optimizer's
    grad_clip replaces fc_0.w_0's ParamAttr clip (as in Fluid 1.8)."""
    attr = fluid.ParamAttr(gradient_clip=fluid.clip.GradientClipByValue(1e-6))
    clip = fluid.clip.GradientClipByValue(
        1e-6, need_clip=lambda p: not p.name.startswith("fc_0."))
    main, startup, _, _, _ = _classifier(
        fluid.optimizer.SGD(0.5, grad_clip=clip), clip_attr=attr)
    got = _train(main, startup, steps=1)
    unclipped = _train(*_classifier(fluid.optimizer.SGD(0.5))[:2], steps=1)
    init = _train(*_classifier(fluid.optimizer.SGD(0.0001))[:2], steps=0)
    for name in ("fc_0.w_0", "fc_0.b_0"):
        np.testing.assert_array_equal(got[name], unclipped[name],
                                      err_msg=name)
    for name in ("fc_1.w_0", "fc_1.b_0"):
        assert np.abs(got[name] - init[name]).max() <= 0.5 * 1e-6 + 1e-7
    with pytest.raises(TypeError, match="need_clip"):
        fluid.clip.GradientClipByNorm(1.0, need_clip=3)
    with pytest.raises(TypeError, match=r"SGD\(grad_clip=...\)"):
        fluid.optimizer.SGD(0.1, grad_clip=fluid.regularizer.L2Decay(0.1))


def test_backward_and_apply_gradients_are_refused_naming_minimize():
    opt = fluid.optimizer.SGD(0.1)
    for call in (lambda: opt.backward("loss"),
                 lambda: opt.apply_gradients([]),
                 lambda: opt.apply_optimize("loss", None, [])):
        with pytest.raises(NotImplementedError, match="call minimize"):
            call()


def test_initializer_arguments():
    assert fluid.initializer.Uniform(-0.5, 0.5, 0, 0, 0, 1.0).low == -0.5
    with pytest.raises(NotImplementedError, match="diag_num=2"):
        fluid.initializer.Uniform(diag_num=2, diag_step=3, diag_val=1.0)
    assert fluid.initializer.force_init_on_cpu() is False
    with fluid.initializer.init_on_cpu():
        assert fluid.initializer.force_init_on_cpu() is True
    assert fluid.initializer.force_init_on_cpu() is False
