#!/usr/bin/python3
"""The public names of the PaddlePaddle Fluid 1.x Python API (1.5-1.8, the
names user programs and the book reach), which of them this package has, and
why each missing one is missing.

    PYTHONPATH=build/python /usr/bin/python3 tools/fluid1x_names.py          # the table
    PYTHONPATH=build/python /usr/bin/python3 tools/fluid1x_names.py --check  # CI

`--check` fails when a name is missing without a reason, when a name given a
reason exists now (take it off the list), or when docs/python.md's section
"Fluid 1.x names still missing" is not what `--markdown` prints
(`--update-doc` rewrites it).
tests/python/fluid1x/test_fluid1x_names.py runs it.
"""
import argparse
import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "python.md")
BEGIN = "<!-- fluid1x-missing: begin (tools/fluid1x_names.py --markdown) -->"
END = "<!-- fluid1x-missing: end -->"

# Fluid 1.x names, by module (as `import paddle.fluid as fluid` reaches them;
# here `import fluid`).
NAMES = {
    "fluid": """
        Program Variable program_guard name_scope default_main_program
        default_startup_program Executor global_scope scope_guard
        ParallelExecutor CompiledProgram ExecutionStrategy BuildStrategy
        CPUPlace CUDAPlace CUDAPinnedPlace cpu_places cuda_places
        cuda_pinned_places is_compiled_with_cuda in_dygraph_mode DataFeeder
        LoDTensor LoDTensorArray create_lod_tensor create_random_int_lodtensor
        ParamAttr WeightNormParamAttr Tensor Scope DistributeTranspiler
        DistributeTranspilerConfig memory_optimize release_memory embedding
        one_hot data save load load_program_state set_program_state
        device_guard require_version set_flags get_flags install_check
        dygraph contrib metrics nets initializer layers optimizer regularizer
        clip profiler io transpiler backward incubate compiler core
        unique_name dataset average evaluator""",
    "fluid.layers": """
        fc embedding linear_chain_crf crf_decoding cos_sim chunk_eval conv2d
        conv3d softmax pool2d pool3d adaptive_pool2d adaptive_pool3d
        batch_norm instance_norm data_norm conv2d_transpose conv3d_transpose
        reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_all
        reduce_any dropout split ctc_greedy_decoder l2_normalize matmul topk
        transpose im2sequence row_conv multiplex layer_norm group_norm
        spectral_norm smooth_l1 one_hot autoincreased_step_counter reshape
        squeeze unsqueeze lod_reset lod_append lrn pad pad_constant_like
        label_smooth roi_pool roi_align dice_loss image_resize
        image_resize_short resize_bilinear resize_trilinear resize_nearest
        gather gather_nd scatter scatter_nd_add scatter_nd random_crop
        mean_iou relu selu log crop crop_tensor elu relu6 pow stanh
        hard_sigmoid swish prelu brelu leaky_relu soft_relu flatten stack
        pad2d unstack unique unique_with_counts expand expand_as scale
        elementwise_add elementwise_div elementwise_sub elementwise_mul
        elementwise_max elementwise_min elementwise_pow elementwise_mod
        elementwise_floordiv uniform_random_batch_size_like gaussian_random
        sampling_id gaussian_random_batch_size_like sum slice strided_slice
        shape rank size logical_and logical_or logical_xor logical_not clip
        clip_by_norm mean mul maxout space_to_depth affine_grid
        affine_channel hash grid_sampler log_loss add_position_encoding
        bilinear_tensor_product merge_selected_rows
        get_tensor_from_selected_rows shuffle_channel temporal_shift py_func
        pixel_shuffle where sign unfold shard_index hard_swish
        uniform_random unbind
        center_loss bpr_loss cross_entropy square_error_cost edit_distance
        warpctc nce hsigmoid sampled_softmax_with_cross_entropy
        softmax_with_cross_entropy rank_loss margin_rank_loss
        sigmoid_cross_entropy_with_logits huber_loss kldiv_loss npair_loss
        mse_loss
        create_tensor create_parameter create_global_var cast
        tensor_array_to_tensor concat sums assign fill_constant_batch_size_like
        fill_constant argmin argmax argsort ones zeros reverse has_inf has_nan
        isfinite range linspace zeros_like ones_like diag eye triu
        data read_file double_buffer py_reader create_py_reader_by_data load
        While Switch increment array_write create_array less_than less_equal
        greater_than greater_equal equal not_equal array_read array_length
        cond IfElse DynamicRNN StaticRNN reorder_lod_tensor_by_rank Print
        lod_rank_table max_sequence_len lod_tensor_to_array
        array_to_lod_tensor shrink_memory
        is_empty case switch_case while_loop
        exp tanh atan tanh_shrink softshrink sqrt rsqrt abs ceil floor cos
        acos asin sin round reciprocal square softplus softsign sigmoid
        logsigmoid hard_shrink cumsum thresholded_relu gelu erf
        exponential_decay natural_exp_decay inverse_time_decay
        polynomial_decay piecewise_decay noam_decay cosine_decay
        linear_lr_warmup
        sequence_conv sequence_softmax sequence_pool sequence_concat
        sequence_first_step sequence_last_step sequence_slice sequence_expand
        sequence_expand_as sequence_pad sequence_unpad sequence_reshape
        sequence_scatter sequence_enumerate sequence_mask sequence_reverse
        dynamic_lstm dynamic_lstmp dynamic_gru gru_unit lstm_unit lstm
        beam_search beam_search_decode RNNCell GRUCell LSTMCell Decoder
        BeamSearchDecoder rnn dynamic_decode
        prior_box density_prior_box multi_box_head bipartite_match
        target_assign detection_output ssd_loss rpn_target_assign
        retinanet_target_assign sigmoid_focal_loss anchor_generator
        generate_proposal_labels generate_proposals generate_mask_labels
        iou_similarity box_coder polygon_box_transform yolov3_loss yolo_box
        box_clip multiclass_nms retinanet_detection_output
        distribute_fpn_proposals collect_fpn_proposals
        accuracy auc""",
    "fluid.optimizer": """
        SGD Momentum Adagrad Adam Adamax Dpsgd DecayedAdagrad Ftrl
        SGDOptimizer MomentumOptimizer AdagradOptimizer AdamOptimizer
        AdamaxOptimizer DpsgdOptimizer DecayedAdagradOptimizer
        RMSPropOptimizer FtrlOptimizer Adadelta AdadeltaOptimizer
        ModelAverage LarsMomentum LarsMomentumOptimizer DGCMomentumOptimizer
        LambOptimizer ExponentialMovingAverage PipelineOptimizer
        LookaheadOptimizer RecomputeOptimizer""",
    "fluid.io": """
        save_vars save_params save_persistables load_vars load_params
        load_persistables save_inference_model load_inference_model batch
        save load load_program_state set_program_state
        get_program_parameter get_program_persistable_vars PyReader
        DataLoader map_readers buffered compose chain shuffle firstn
        xmap_readers multiprocess_reader cache ComposeNotAligned""",
    "fluid.initializer": """
        Constant Uniform Normal TruncatedNormal Xavier Bilinear MSRA
        ConstantInitializer UniformInitializer NormalInitializer
        TruncatedNormalInitializer XavierInitializer BilinearInitializer
        MSRAInitializer NumpyArrayInitializer""",
    "fluid.regularizer": "L1Decay L2Decay L1DecayRegularizer "
                         "L2DecayRegularizer",
    "fluid.clip": """
        ErrorClipByValue GradientClipByValue GradientClipByNorm
        GradientClipByGlobalNorm set_gradient_clip""",
    "fluid.nets": """
        simple_img_conv_pool sequence_conv_pool glu
        scaled_dot_product_attention img_conv_group""",
    "fluid.metrics": """
        MetricBase CompositeMetric Precision Recall Accuracy ChunkEvaluator
        EditDistance DetectionMAP Auc""",
    "fluid.transpiler": """
        DistributeTranspiler DistributeTranspilerConfig memory_optimize
        release_memory HashName RoundRobin""",
    "fluid.unique_name": "generate switch guard",
    "fluid.profiler": """
        cuda_profiler reset_profiler profiler start_profiler
        stop_profiler""",
    "fluid.core": "EOFException",
    "fluid.compiler": "CompiledProgram BuildStrategy ExecutionStrategy",
    "fluid.incubate.fleet.collective": "fleet DistributedStrategy",
    "fluid.incubate.fleet.base.role_maker": """
        PaddleCloudRoleMaker UserDefinedCollectiveRoleMaker Role""",
    "fluid.contrib.mixed_precision": "decorate AutoMixedPrecisionLists",
}

# Why each missing name is missing: (reason, names). A name is "module.name".
# Every missing name has exactly one reason; a name that exists is not here.
REASONS = [
    ("Imperative (dygraph) mode: this product runs static programs only; "
     "build the network with fluid.layers and run it with an executor.",
     "fluid.dygraph fluid.in_dygraph_mode"),
    ("The cell and decoder API of Fluid 1.8 (fluid.layers.rnn over an "
     "RNNCell, dynamic_decode with a BeamSearchDecoder) and the fused "
     "lstm / dynamic_lstmp: not built yet. DynamicRNN, StaticRNN, "
     "dynamic_lstm, dynamic_gru, gru_unit, lstm_unit and beam_search / "
     "beam_search_decode in a While loop, which exist, build the same "
     "networks (examples/machine_translation.py).", """
     fluid.layers.RNNCell fluid.layers.GRUCell fluid.layers.LSTMCell
     fluid.layers.Decoder fluid.layers.BeamSearchDecoder fluid.layers.rnn
     fluid.layers.dynamic_decode fluid.layers.lstm
     fluid.layers.dynamic_lstmp"""),
    ("Control-flow layers not built yet, with what to use instead: case and "
     "switch_case (fluid.layers.Switch or cond, which exist, take the same "
     "branches); tensor_array_to_tensor (array_to_lod_tensor, or "
     "array_read per slot and concat); Print (fetch the var); "
     "fluid.LoDTensorArray, the Python type of a fetched tensor array (read "
     "the array into a tensor in the program and fetch that).", """
     fluid.LoDTensorArray
     fluid.layers.case fluid.layers.switch_case
     fluid.layers.tensor_array_to_tensor fluid.layers.Print"""),
    ("Tensor, loss and sequence ops not built yet (each needs its CPU and "
     "CUDA kernels, gradient checks and a reference). Most have a short "
     "equivalent in the layers that exist (e.g. mse_loss: "
     "mean(square_error_cost)).", """
     fluid.layers.adaptive_pool2d
     fluid.layers.instance_norm fluid.layers.data_norm
     fluid.layers.reduce_all fluid.layers.reduce_any
     fluid.layers.ctc_greedy_decoder
     fluid.layers.im2sequence fluid.layers.row_conv fluid.layers.multiplex
     fluid.layers.spectral_norm
     fluid.layers.autoincreased_step_counter
     fluid.layers.lrn fluid.layers.pad fluid.layers.pad_constant_like
     fluid.layers.label_smooth fluid.layers.dice_loss
     fluid.layers.gather_nd fluid.layers.scatter
     fluid.layers.scatter_nd_add fluid.layers.scatter_nd
     fluid.layers.random_crop fluid.layers.mean_iou fluid.layers.selu
     fluid.layers.crop fluid.layers.crop_tensor fluid.layers.stanh
     fluid.layers.hard_sigmoid fluid.layers.swish
     fluid.layers.soft_relu fluid.layers.pad2d
     fluid.layers.unique fluid.layers.unique_with_counts
     fluid.layers.expand_as fluid.layers.elementwise_mod
     fluid.layers.elementwise_floordiv
     fluid.layers.sampling_id
     fluid.layers.sum fluid.layers.strided_slice
     fluid.layers.rank fluid.layers.size
     fluid.layers.clip_by_norm fluid.layers.maxout fluid.layers.space_to_depth
     fluid.layers.affine_grid fluid.layers.affine_channel fluid.layers.hash
     fluid.layers.grid_sampler fluid.layers.log_loss
     fluid.layers.add_position_encoding fluid.layers.bilinear_tensor_product
     fluid.layers.merge_selected_rows
     fluid.layers.get_tensor_from_selected_rows fluid.layers.shuffle_channel
     fluid.layers.temporal_shift fluid.layers.pixel_shuffle fluid.layers.where
     fluid.layers.sign fluid.layers.unfold fluid.layers.shard_index
     fluid.layers.hard_swish fluid.layers.unbind
     fluid.layers.center_loss fluid.layers.bpr_loss
     fluid.layers.warpctc
     fluid.layers.sampled_softmax_with_cross_entropy fluid.layers.rank_loss
     fluid.layers.margin_rank_loss fluid.layers.huber_loss
     fluid.layers.kldiv_loss fluid.layers.npair_loss fluid.layers.mse_loss
     fluid.layers.argmin fluid.layers.argsort
     fluid.layers.reverse
     fluid.layers.triu fluid.layers.atan fluid.layers.tanh_shrink
     fluid.layers.softshrink fluid.layers.rsqrt fluid.layers.ceil
     fluid.layers.floor fluid.layers.cos fluid.layers.acos fluid.layers.asin
     fluid.layers.sin fluid.layers.round fluid.layers.reciprocal
     fluid.layers.logsigmoid fluid.layers.hard_shrink fluid.layers.cumsum
     fluid.layers.thresholded_relu fluid.layers.erf
     fluid.layers.sequence_concat fluid.layers.sequence_slice
     fluid.layers.sequence_expand_as fluid.layers.sequence_reshape
     fluid.layers.sequence_scatter fluid.layers.sequence_enumerate
     fluid.layers.sequence_reverse fluid.layers.py_func"""),
    ("Object detection (SSD, YOLO, R-CNN families) and 3-D (volumetric) "
     "convolution: outside this product's op set; no model or example here "
     "uses them.", """
     fluid.layers.conv3d fluid.layers.pool3d fluid.layers.adaptive_pool3d
     fluid.layers.conv3d_transpose fluid.layers.resize_trilinear
     fluid.layers.roi_pool fluid.layers.roi_align
     fluid.layers.prior_box fluid.layers.density_prior_box
     fluid.layers.multi_box_head fluid.layers.bipartite_match
     fluid.layers.target_assign fluid.layers.detection_output
     fluid.layers.ssd_loss fluid.layers.rpn_target_assign
     fluid.layers.retinanet_target_assign fluid.layers.sigmoid_focal_loss
     fluid.layers.anchor_generator fluid.layers.generate_proposal_labels
     fluid.layers.generate_proposals fluid.layers.generate_mask_labels
     fluid.layers.iou_similarity fluid.layers.box_coder
     fluid.layers.polygon_box_transform fluid.layers.yolov3_loss
     fluid.layers.yolo_box fluid.layers.box_clip fluid.layers.multiclass_nms
     fluid.layers.retinanet_detection_output
     fluid.layers.distribute_fpn_proposals
     fluid.layers.collect_fpn_proposals"""),
    ("Optimizers and parameter averaging not built yet (SGD, Momentum, "
     "Adam, Adamax, Adagrad, DecayedAdagrad, RMSProp, Adadelta and "
     "LarsMomentum exist).", """
     fluid.optimizer.Dpsgd fluid.optimizer.DpsgdOptimizer
     fluid.optimizer.Ftrl fluid.optimizer.FtrlOptimizer
     fluid.optimizer.ModelAverage fluid.optimizer.DGCMomentumOptimizer
     fluid.optimizer.LambOptimizer fluid.optimizer.ExponentialMovingAverage
     fluid.optimizer.LookaheadOptimizer fluid.WeightNormParamAttr"""),
    ("The parameter-server data pipeline (fluid.dataset's InMemoryDataset "
     "and QueueDataset for train_from_dataset): this product has no "
     "parameter server; feed through fluid.io.DataLoader, which shards "
     "across ranks.", "fluid.dataset"),
    ("Memory is managed by the executor (tensors are freed after their last "
     "use, buffers reused); there is no pinned place to name and no flag "
     "table: runtime settings are the trainer's options, the executors' "
     "arguments and fluid.DistributedStrategy.", """
     fluid.CUDAPinnedPlace fluid.cuda_pinned_places fluid.Tensor
     fluid.set_flags fluid.get_flags"""),
    ("The backward pass on its own (append_backward, gradients): "
     "Optimizer.minimize appends it together with the update and returns "
     "the (parameter, gradient) pairs; a program of gradients without an "
     "optimizer is not built yet.", "fluid.backward"),
    ("Not built yet, with what to use instead: NumpyArrayInitializer (set the "
     "value after the startup program runs: "
     "scope.find_var(name).get_tensor().set(array)); ErrorClipByValue "
     "(clips an activation's gradient: clip the parameters' gradients with "
     "GradientClipByValue); layers.load (the load op: fluid.io.load_vars or "
     "fluid.load); cuda_profiler (drives nvprof: use fluid.profiler.profiler "
     "or Nsight Systems, which records the kernels itself); "
     "require_version (this package has no Paddle release number to "
     "compare).", """
     fluid.initializer.NumpyArrayInitializer fluid.clip.ErrorClipByValue
     fluid.layers.load fluid.profiler.cuda_profiler fluid.require_version"""),
    ("Deprecated within Fluid 1.x in favour of fluid.metrics, which exists "
     "here.", "fluid.evaluator"),
    ("Exists only to raise an error saying why: DetectionMAP is built on "
     "the detection_map op (object detection, above).",
     "fluid.metrics.DetectionMAP!"),
]


def _split(text):
    return text.split()


def all_names():
    """Every Fluid 1.x name, as "module.name", in NAMES order."""
    out = []
    for module, names in NAMES.items():
        out += [f"{module}.{n}" for n in _split(names)]
    return out


def resolves(name):
    """Whether `name` ("fluid.layers.fc") exists in the importable package."""
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return False
    for i, part in enumerate(parts[1:], 1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[:i + 1]))
        except ImportError:
            return False
    return True


def reason_of():
    """{name: reason} for every name REASONS explains (a name ending in "!"
    exists only to raise an error giving the reason; the "!" is kept)."""
    out = {}
    for reason, names in REASONS:
        for n in _split(names):
            out[n] = reason
    return out


def _refusals(why):
    return {n[:-1] for n in why if n.endswith("!")}


def problems():
    """What --check reports, as sentences; empty when all stands."""
    why = reason_of()
    refused = _refusals(why)
    names = all_names()
    out = []
    for n in names:
        here = resolves(n)
        if n in refused:
            if not here:
                out.append(f"{n} is to exist and refuse, but is missing")
        elif here and n in why:
            out.append(f"{n} exists now: take it off REASONS")
        elif not here and n not in why:
            out.append(f"{n} is missing and REASONS gives no reason")
    for n in why:
        if n.rstrip("!") not in names:
            out.append(f"{n} is in REASONS but not in NAMES")
    return out


def markdown():
    """The section of docs/python.md listing the missing names."""
    why = reason_of()
    names = all_names()
    missing = {n.rstrip("!") for n in why}
    have = sum(1 for n in names if n not in missing)
    lines = [BEGIN, "",
             f"Of the {len(names)} Fluid 1.x names this list tracks "
             f"(`tools/fluid1x_names.py`), {have} exist here. The others, "
             "by reason:", ""]
    for reason, group in REASONS:
        listed = [n.rstrip("!") for n in _split(group)]
        lines.append(f"- {reason} " + ", ".join(f"`{n}`" for n in listed))
    lines += ["", END]
    return "\n".join(lines)


def doc_section():
    """The section as docs/python.md has it now ("" when absent)."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--update-doc", action="store_true",
                   help="rewrite docs/python.md's section with --markdown")
    a = p.parse_args()
    if a.markdown:
        print(markdown())
        return 0
    if a.update_doc:
        with open(DOC, encoding="utf-8") as f:
            text = f.read()
        old = doc_section()
        if not old:
            print(f"fluid1x_names: {DOC} has no section between the "
                  "markers", file=sys.stderr)
            return 1
        with open(DOC, "w", encoding="utf-8") as f:
            f.write(text.replace(old, markdown()))
        return 0
    if a.check:
        bad = problems()
        if doc_section() != markdown():
            bad.append("docs/python.md's missing-names section is stale: "
                       "replace it with tools/fluid1x_names.py --markdown")
        for b in bad:
            print("fluid1x_names:", b, file=sys.stderr)
        return 1 if bad else 0
    missing = {n.rstrip("!") for n in reason_of()}
    for n in all_names():
        print(("missing  " if n in missing else "present  ") + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
