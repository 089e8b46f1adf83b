"""Gradient clipping (Fluid's fluid.clip). An optimizer's grad_clip
(Fluid 1.8's way), set_gradient_clip(clip) or ParamAttr(gradient_clip=clip)
marks parameters; minimize() then appends the clipping ops between the
backward pass and the regularization and optimize ops. A clip's need_clip
(a function of a parameter Variable, True where its gradient is clipped)
leaves the others out. Under MPI the clips run on the averaged gradients,
so a global norm is the same on every rank. A sparse gradient
(embedding(is_sparse=True)) has its rows merged first; its values are
clipped and count in a global norm, as the dense gradient's touched rows
would."""
from .framework import current_builder, default_main_program

__all__ = ["GradientClipByValue", "GradientClipByNorm",
           "GradientClipByGlobalNorm", "set_gradient_clip"]


def _number(value, cls, arg):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: {arg} must be a number, got "
                        f"{type(value).__name__}")
    return float(value)


def _need_clip(need_clip, cls):
    if need_clip is not None and not callable(need_clip):
        raise TypeError(f"{cls}(need_clip={need_clip!r}): expected None or "
                        "a function of a parameter Variable returning True "
                        "where its gradient is clipped")
    return need_clip


class BaseGradientClipAttr:
    """Base of the gradient clips: a subclass describes one kind of clip
    for an optimizer's grad_clip, ParamAttr(gradient_clip=...) or
    set_gradient_clip."""

    need_clip = None

    def to_dict(self):
        """The clip as the C++ builder reads it: {"kind": ..., and its
        settings}."""
        raise NotImplementedError


class GradientClipByValue(BaseGradientClipAttr):
    """Clips every element of the gradient to [min, max]; min defaults to
    -max. need_clip: None (every parameter) or a function of a parameter
    Variable, True where its gradient is clipped."""

    def __init__(self, max, min=None, need_clip=None):
        max = _number(max, "GradientClipByValue", "max")
        min = -max if min is None else _number(min, "GradientClipByValue",
                                               "min")
        if min > max:
            raise ValueError(f"GradientClipByValue: min {min} must not "
                             f"exceed max {max}")
        self.max, self.min = max, min
        self.need_clip = _need_clip(need_clip, "GradientClipByValue")

    def to_dict(self):
        return {"kind": "by_value", "min": self.min, "max": self.max}


class GradientClipByNorm(BaseGradientClipAttr):
    """Scales the gradient down to L2 norm clip_norm when it is larger.
    need_clip: as GradientClipByValue's."""

    def __init__(self, clip_norm, need_clip=None):
        self.clip_norm = _number(clip_norm, "GradientClipByNorm", "clip_norm")
        if self.clip_norm <= 0:
            raise ValueError("GradientClipByNorm: clip_norm must be "
                             f"positive, got {clip_norm}")
        self.need_clip = _need_clip(need_clip, "GradientClipByNorm")

    def to_dict(self):
        return {"kind": "by_norm", "clip_norm": self.clip_norm}


class GradientClipByGlobalNorm(BaseGradientClipAttr):
    """Scales all gradients of a group by clip_norm / max(global_norm,
    clip_norm), global_norm being the L2 norm of all of them together.
    need_clip: as GradientClipByValue's (a parameter it leaves out is
    neither clipped nor counted in the norm)."""

    def __init__(self, clip_norm, group_name="default_group", need_clip=None):
        self.clip_norm = _number(clip_norm, "GradientClipByGlobalNorm",
                                 "clip_norm")
        if self.clip_norm <= 0:
            raise ValueError("GradientClipByGlobalNorm: clip_norm must be "
                             f"positive, got {clip_norm}")
        if not isinstance(group_name, str):
            raise TypeError("GradientClipByGlobalNorm: group_name must be a "
                            f"str, got {type(group_name).__name__}")
        self.group_name = group_name
        self.need_clip = _need_clip(need_clip, "GradientClipByGlobalNorm")

    def to_dict(self):
        return {"kind": "by_global_norm", "clip_norm": self.clip_norm,
                "group_name": self.group_name}


def _as_dict(clip, where):
    if clip is None:
        return None
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError(f"{where}: gradient_clip must be a "
                        "fluid.clip.GradientClipByValue, GradientClipByNorm "
                        f"or GradientClipByGlobalNorm, got "
                        f"{type(clip).__name__}")
    return clip.to_dict()


def _check_clip(clip, where):
    """`clip` when it is None or a gradient clip, else TypeError."""
    _as_dict(clip, where)
    return clip


def _wanted(clip, program, name):
    """Whether clip's need_clip (if any) takes parameter `name`."""
    if clip.need_clip is None:
        return True
    return bool(clip.need_clip(program.global_block().var(name)))


def _clip_parameters(builder, program, clip, param_list=None):
    """An optimizer's grad_clip, as Fluid 1.8 applies it: every trainable
    parameter of `program` (those of param_list when given) gets `clip`
    where need_clip takes it and no clip elsewhere, in place of the clips
    of ParamAttr and set_gradient_clip."""
    d, none = clip.to_dict(), {"kind": "none"}
    names = param_list if param_list is not None else [
        p.name for p in program.all_parameters()]
    for name in names:
        builder.set_gradient_clip(name, d if _wanted(clip, program, name)
                                  else none)


def set_gradient_clip(clip, param_list=None, program=None):
    """Gives `clip` to the parameters of param_list (names or Variables;
    default: every parameter of `program`, default the main program) that
    clip.need_clip (if set) takes. Call it before minimize(); an
    optimizer's grad_clip replaces it.

        >>> fluid.clip.set_gradient_clip(
        ...     fluid.clip.GradientClipByGlobalNorm(clip_norm=1.0))
    """
    d = _as_dict(clip, "set_gradient_clip")
    if d is None:
        raise TypeError("set_gradient_clip: clip must not be None")
    if program is None:
        builder, program = current_builder()
        builders = [builder]
    else:
        builders = list(program._builders.values())
        if program is default_main_program():
            builders.insert(0, current_builder()[0])
    if param_list is None:
        param_list = program.all_parameters()
    for p in param_list:
        name = p if isinstance(p, str) else p.name
        if not program.desc.has_var(name):
            raise ValueError(f"set_gradient_clip: '{name}' is not a "
                             "parameter of the program")
        if not _wanted(clip, program, name):
            continue
        if not any(b.set_gradient_clip(name, d) for b in builders):
            raise ValueError(f"set_gradient_clip: '{name}' is not a "
                             "parameter of the program")
