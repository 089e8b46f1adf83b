"""AutoMixedPrecisionLists: which ops run in 16 bits (white), which in
float32 (black), and which follow their inputs (gray)."""
from ... import _core
from ...distributed_strategy import DistributedStrategy


def _names(value, arg):
    if value is None:
        return []
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise TypeError(f"AutoMixedPrecisionLists({arg}=...) takes a set or "
                        f"list of op type names, got {value!r}")
    names = list(value)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"AutoMixedPrecisionLists({arg}=...): op names "
                            f"are str, got {n!r}")
    return sorted(set(names))


class AutoMixedPrecisionLists:
    """The op lists of mixed precision: the defaults, with
    custom_white_list's ops moved to the white list and
    custom_black_list's to the black list (Fluid 1.x's arguments).

    white_list, black_list, gray_list: the resulting sets of op types. An op
    in both custom lists, or a name no op has, is a ValueError naming it.

        >>> lists = AutoMixedPrecisionLists(custom_black_list={"pool2d"})
        >>> "pool2d" in lists.black_list
        True
    """

    def __init__(self, custom_white_list=None, custom_black_list=None):
        self.custom_white_list = _names(custom_white_list,
                                        "custom_white_list")
        self.custom_black_list = _names(custom_black_list,
                                        "custom_black_list")
        both = set(self.custom_white_list) & set(self.custom_black_list)
        if both:
            raise ValueError(f"AutoMixedPrecisionLists: op '{sorted(both)[0]}'"
                             " is in both custom_white_list and "
                             "custom_black_list")
        white, black, gray = _core.amp_lists(self._config_bytes("bf16"))
        self.white_list, self.black_list = set(white), set(black)
        self.gray_list = set(gray)

    def _config_bytes(self, dtype, **scaling):
        """The serialized AmpConfig of these lists for `dtype` and the
        loss-scaling settings given."""
        s = DistributedStrategy()
        s.amp = True
        configs = {"dtype": dtype,
                   "custom_white_list": self.custom_white_list,
                   "custom_black_list": self.custom_black_list}
        configs.update(scaling)
        s.amp_configs = configs
        return _core.strategy_amp_config(s.serialize())

    def __repr__(self):
        return (f"AutoMixedPrecisionLists(custom_white_list="
                f"{self.custom_white_list!r}, custom_black_list="
                f"{self.custom_black_list!r})")
