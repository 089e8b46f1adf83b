"""Fluid 1.x's beam search layers: fluid.layers.beam_search (one step) and
fluid.layers.beam_search_decode (the sentences, after the loop), as
chapter 08 of the Fluid book decodes inside a While loop over tensor
arrays:

    ids_array = fluid.layers.create_array("int64")
    scores_array = fluid.layers.create_array("float32")
    fluid.layers.array_write(init_ids, i=counter, array=ids_array)
    fluid.layers.array_write(init_scores, i=counter, array=scores_array)
    loop = fluid.layers.While(cond)
    with loop.block():
        pre_ids = fluid.layers.array_read(ids_array, counter)
        pre_score = fluid.layers.array_read(scores_array, counter)
        probs = ...                                 # [rows, vocabulary]
        topk_scores, topk_ids = fluid.layers.topk(probs, k=beam_size)
        accu = fluid.layers.elementwise_add(
            fluid.layers.log(topk_scores),
            fluid.layers.reshape(pre_score, [-1]), axis=0)
        sel_ids, sel_scores = fluid.layers.beam_search(
            pre_ids, pre_score, topk_ids, accu, beam_size, end_id)
        fluid.layers.increment(counter)
        fluid.layers.array_write(sel_ids, i=counter, array=ids_array)
        fluid.layers.array_write(sel_scores, i=counter, array=scores_array)
        ...                                         # update cond
    ids, scores = fluid.layers.beam_search_decode(
        ids_array, scores_array, beam_size, end_id)

The LoD of the beams. Fluid's beam tensors carry two levels of LoD
(source sentence -> prefix -> selected); a tensor here carries one level,
so each output carries one of them: selected_ids the sources' (source s
owns rows [lod[s], lod[s + 1])), selected_scores the prefixes' (row p of
pre_ids was extended by the rows [lod[p], lod[p + 1]), the level
sequence_expand needs to repeat the states of the prefixes). The first
step's ids and scores are fed with one sequence per source sentence,
lod [[0, 1, ..., N]] (a data variable with lod_level=1), which is both of
Fluid's levels for that step. beam_search_decode's outputs split alike:
sentence_ids carries source -> tokens, sentence_scores hypothesis ->
tokens.
"""
import numbers

from . import layers as _layers

__all__ = ["beam_search", "beam_search_decode"]


def _int(value, layer, arg, lowest=None):
    """An int argument (not a bool), at least `lowest` when given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{layer}({arg}={value!r}): expected an int")
    value = int(value)
    if lowest is not None and value < lowest:
        raise ValueError(f"{layer}({arg}={value}): it must be >= {lowest}")
    return value


def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id,
                level=0, is_accumulated=True, name=None,
                return_parent_idx=False):
    """One step of beam search, as Fluid 1.x's: for each source sentence
    (a sequence of pre_ids' LoD, its live prefixes) keep the beam_size
    best (prefix, candidate) pairs.

    pre_ids: int64 [rows, 1], the prefixes' last ids (the previous step's
    selected_ids; the first step's start ids with lod [[0, 1, ..., N]]);
    pre_scores: [rows, 1], their accumulated scores (the previous step's
    selected_scores); ids: int64 [rows, K], the candidates of each
    prefix (e.g. topk's indices), or None for ids 0 to K - 1; scores:
    [rows, K], their accumulated scores (is_accumulated=True) or their
    probabilities (False: log-added to pre_scores here).

    A prefix that ended (its id is end_id) offers end_id once more with
    its own score; a source whose kept pairs all come from ended prefixes
    is done and keeps none. The kept pairs come in prefix order, the best
    first within a prefix; ties rank the earlier prefix, then the earlier
    candidate, first. level=1 keeps a beam per group of pre_scores' LoD
    (per prefix of the step before) instead of per source.

    Returns (selected_ids, selected_scores), [n, 1] each, and parent_idx
    (int32 [n], the row of pre_ids each pair extends) with
    return_parent_idx=True. selected_ids carries the sources' LoD and
    selected_scores the prefixes' (see this module's doc).

        >>> sel_ids, sel_scores = fluid.layers.beam_search(
        ...     pre_ids, pre_scores, topk_ids, accu_scores,
        ...     beam_size=4, end_id=1)
    """
    layer = "beam_search"
    if level not in (0, 1) or isinstance(level, bool):
        raise ValueError(f"beam_search(level={level!r}): it must be 0 (a "
                         "beam per source sentence) or 1 (a beam per "
                         "prefix of the step before)")
    if not isinstance(is_accumulated, bool):
        raise TypeError(f"beam_search(is_accumulated={is_accumulated!r}): "
                        "expected a bool")
    if not isinstance(return_parent_idx, bool):
        raise TypeError("beam_search(return_parent_idx="
                        f"{return_parent_idx!r}): expected a bool")
    out = _layers._layer(
        layer, pre_ids=_layers._name(pre_ids, layer, "pre_ids"),
        pre_scores=_layers._name(pre_scores, layer, "pre_scores"),
        ids="" if ids is None else _layers._name(ids, layer, "ids"),
        scores=_layers._name(scores, layer, "scores"),
        beam_size=_int(beam_size, layer, "beam_size", 1),
        end_id=_int(end_id, layer, "end_id"), level=level,
        is_accumulated=is_accumulated, name=name,
        return_parent_idx=return_parent_idx)
    return out


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """The sentences a beam search found, as Fluid 1.x's: each source's
    hypotheses walked back from the tensor arrays of the steps' selected
    ids and scores (beam_search's outputs, array slot 0 the start ids),
    best final score first. A hypothesis keeps one end_id, its last
    token; a source that finished early is read at its last step.

    Returns (sentence_ids, sentence_scores), [tokens] each (int64, and
    the scores' dtype): every token of every hypothesis with its
    accumulated score. sentence_ids carries source -> tokens as its LoD,
    sentence_scores hypothesis -> tokens (see this module's doc).

        >>> sent_ids, sent_scores = fluid.layers.beam_search_decode(
        ...     ids_array, scores_array, beam_size=4, end_id=1)
    """
    layer = "beam_search_decode"
    out = _layers._layer(
        layer, ids=_layers._name(ids, layer, "ids"),
        scores=_layers._name(scores, layer, "scores"),
        beam_size=_int(beam_size, layer, "beam_size", 1),
        end_id=_int(end_id, layer, "end_id"), name=name)
    return out
