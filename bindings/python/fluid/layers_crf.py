"""Fluid 1.x's sequence tagging layers: fluid.layers.linear_chain_crf,
crf_decoding, chunk_eval and edit_distance (chapter 07 of the Fluid book, label
semantic roles, and models evaluated by edit distance).

    emission = fluid.layers.fc(hidden, size=num_tags)      # a LoD batch
    crf_cost = fluid.layers.linear_chain_crf(
        emission, label, param_attr=fluid.ParamAttr(name="crfw"))
    avg_cost = fluid.layers.mean(crf_cost)
    path = fluid.layers.crf_decoding(
        emission, param_attr=fluid.ParamAttr(name="crfw"))

Inputs are level-1 LoD batches of sequences, or padded batches [N, S, ...]
with their int64 lengths (`length`, `input_length`, `label_length`).
"""
from . import layers as _layers

__all__ = ["chunk_eval", "crf_decoding", "edit_distance", "linear_chain_crf"]


def _optional(x, layer, arg):
    """The name of an optional Variable argument, or None."""
    return None if x is None else _layers._name(x, layer, arg)


def linear_chain_crf(input, label, param_attr=None, length=None):
    """The linear-chain CRF's cost of each labelled sequence, [N, 1].

    `input` holds the emission scores of D tags, [rows, D] with one
    level of LoD (or padded [N, S, D] with `length`, int64 [N]); `label`
    the int64 tag of each row, [rows, 1] (padded: [N, S] or [N, S, 1]).
    The layer creates the transition parameter [D + 2, D] (row 0 the
    start weights, row 1 the end weights, then the D x D transitions)
    from `param_attr`; name it to decode with crf_decoding.

    The value is -log P(label | input) = log Z - score(label), the
    negative log-likelihood (Fluid's docs call the output the
    log-likelihood, but its op returns this negative, the cost the Fluid
    book minimises): average it and minimise it.

        >>> emission = fluid.layers.fc(hidden, size=5)
        >>> cost = fluid.layers.linear_chain_crf(
        ...     emission, tags, param_attr=fluid.ParamAttr(name="crfw"))
        >>> loss = fluid.layers.mean(cost)
    """
    return _layers._layer(
        "linear_chain_crf", input=_layers._name(input, "linear_chain_crf"),
        label=_layers._name(label, "linear_chain_crf", "label"),
        param_attr=_layers._attr(param_attr, "linear_chain_crf"),
        length=_optional(length, "linear_chain_crf", "length"))


def crf_decoding(input, param_attr, label=None, length=None):
    """The most likely tag of each row (Viterbi), int64 [rows, 1] with
    input's LoD (padded: [N, S], 0 past each length).

    `param_attr` names the transition parameter a linear_chain_crf layer
    of this program created (a ParamAttr with that name, or the name).
    Given `label`, the result is 1 where the decoded tag equals the label
    and 0 elsewhere.

        >>> path = fluid.layers.crf_decoding(
        ...     emission, param_attr=fluid.ParamAttr(name="crfw"))
    """
    attr = _layers._attr(param_attr, "crf_decoding")
    if not attr or not attr.get("name"):
        raise ValueError(
            "crf_decoding(param_attr=...): name the transition parameter "
            "of the linear_chain_crf layer to decode with, e.g. "
            "fluid.ParamAttr(name='crfw') given to both layers")
    return _layers._layer(
        "crf_decoding", input=_layers._name(input, "crf_decoding"),
        param_attr=attr["name"],
        label=_optional(label, "crf_decoding", "label"),
        length=_optional(length, "crf_decoding", "length"))


def edit_distance(input, label, normalized=True, ignored_tokens=None,
                  input_length=None, label_length=None):
    """The Levenshtein distance between each int64 token sequence of
    `input` and its reference in `label` (insertions, deletions and
    substitutions each cost 1). Returns (distance float32 [N, 1],
    sequence_num int64 [1]).

    normalized=True divides each distance by its reference's length.
    ignored_tokens (a list of ints) are removed from both sides first
    (sequence_erase; LoD batches only). With input_length and
    label_length (int64 [N]), input and label are padded [N, S].

        >>> dist, n = fluid.layers.edit_distance(decoded, label,
        ...                                      normalized=False)
    """
    if ignored_tokens is not None and (
            isinstance(ignored_tokens, (str, bytes)) or
            not all(isinstance(t, int) and not isinstance(t, bool)
                    for t in ignored_tokens)):
        raise TypeError(f"edit_distance(ignored_tokens={ignored_tokens!r}): "
                        "expected None or a list of ints")
    return _layers._layer(
        "edit_distance", input=_layers._name(input, "edit_distance"),
        label=_layers._name(label, "edit_distance", "label"),
        normalized=normalized,
        ignored_tokens=list(ignored_tokens or []),
        input_length=_optional(input_length, "edit_distance", "input_length"),
        label_length=_optional(label_length, "edit_distance", "label_length"))


def chunk_eval(input, label, chunk_scheme, num_chunk_types,
               excluded_chunk_types=None, seq_length=None):
    """The chunks of a tagging against its labels: (precision, recall,
    f1_score) float32 [1] Variables and (num_infer_chunks,
    num_label_chunks, num_correct_chunks) int64 [1] ones, for this batch
    (fluid.metrics.ChunkEvaluator sums the counts over batches).

    `input` (e.g. crf_decoding's path) and `label` hold int64 tag ids,
    [rows, 1] with one level of LoD, the same for both (or padded [N, S]
    with `seq_length`, int64 [N]). A tag id is type * T + tag, with T
    tags per `chunk_scheme`: "IOB" (B=0, I=1), "IOE" (I=0, E=1), "IOBES"
    (B=0, I=1, E=2, S=3) or "plain" (T=1: a run of one type is a chunk);
    num_chunk_types * T is "outside". A chunk counts as correct when both
    have it (same first and last row, same type). Types in
    excluded_chunk_types (a list of ints) count nowhere.

        >>> path = fluid.layers.crf_decoding(emission, param_attr="crfw")
        >>> p, r, f1, n_infer, n_label, n_correct = \\
        ...     fluid.layers.chunk_eval(path, target, "IOB", 1)
    """
    if excluded_chunk_types is not None and (
            isinstance(excluded_chunk_types, (str, bytes)) or
            not all(isinstance(t, int) and not isinstance(t, bool)
                    for t in excluded_chunk_types)):
        raise TypeError("chunk_eval(excluded_chunk_types="
                        f"{excluded_chunk_types!r}): expected None or a list "
                        "of ints")
    return _layers._layer(
        "chunk_eval", input=_layers._name(input, "chunk_eval"),
        label=_layers._name(label, "chunk_eval", "label"),
        chunk_scheme=chunk_scheme, num_chunk_types=num_chunk_types,
        excluded_chunk_types=list(excluded_chunk_types or []),
        seq_length=_optional(seq_length, "chunk_eval", "seq_length"))
