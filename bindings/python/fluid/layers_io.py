"""Fluid 1.x's reader layers: fluid.layers.py_reader, read_file,
double_buffer and create_py_reader_by_data.

    reader = fluid.layers.py_reader(capacity=64,
                                    shapes=[(-1, 1, 28, 28), (-1, 1)],
                                    dtypes=["float32", "int64"])
    image, label = fluid.layers.read_file(reader)
    ...                                   # the network on image, label
    reader.decorate_paddle_reader(fluid.io.batch(train_reader, 64))
    for epoch in range(epochs):
        reader.start()
        try:
            while True:
                exe.run(fetch_list=[loss])
        except fluid.core.EOFException:
            reader.reset()

A py_reader declares its data variables in the current main program; a
run of that program (or of a clone of it) with no feed takes the next
batch from the started reader. The machinery, double buffer and sharding
under an MPI launcher included, is the non-iterable loader's of
fluid.io.DataLoader (data_loader.py).
"""
import numpy as np

from . import layers as _layers
from ._data_pass import _positive_int
from .data_loader import _check_places, _Loader
from .framework import Variable, default_main_program

__all__ = ["create_py_reader_by_data", "double_buffer", "py_reader",
           "read_file"]

_DTYPES = ("float32", "float64", "int32", "int64")


class PyReaderVariable(_Loader):
    """What fluid.layers.py_reader and create_py_reader_by_data return (a
    reader Variable in Fluid): read_file gives its data variables;
    decorate_paddle_reader / decorate_sample_list_generator (lists of
    samples) or decorate_tensor_provider / decorate_batch_generator
    (batches) set its data source; start() and reset() bound each pass."""

    def __init__(self, name, data_vars, capacity, use_double_buffer):
        super().__init__("py_reader", data_vars, capacity, use_double_buffer,
                         iterable=False, return_list=False)
        self.name = name

    def decorate_sample_list_generator(self, reader, places=None, *,
                                       shard=None):
        """reader: a callable returning an iterable of lists of samples
        (fluid.io.batch(...)); each sample has one entry per data
        variable. shard: None (default) shards this rank's batches under
        an MPI launcher unless the reader is built on fluid.io.shard;
        False never."""
        return self._set_source("sample_list", reader, places,
                                "py_reader.decorate_sample_list_generator",
                                shard=shard)

    def decorate_paddle_reader(self, reader, places=None, *, shard=None):
        """Fluid's name of decorate_sample_list_generator."""
        return self._set_source("sample_list", reader, places,
                                "py_reader.decorate_paddle_reader",
                                shard=shard)

    def decorate_batch_generator(self, reader, places=None, *, shard=None):
        """reader: a callable returning an iterable of batches, each a
        tuple or list of one value per data variable (an array, batch
        first; a fluid.LoDTensor or a (values, lengths) pair for a
        sequence variable). shard: as decorate_sample_list_generator's."""
        return self._set_source("batch", reader, places,
                                "py_reader.decorate_batch_generator",
                                shard=shard)

    def decorate_tensor_provider(self, reader, places=None, *, shard=None):
        """Fluid's name of decorate_batch_generator."""
        return self._set_source("batch", reader, places,
                                "py_reader.decorate_tensor_provider",
                                shard=shard)

    def __repr__(self):
        return f"PyReaderVariable({self.name!r}, vars={self._names})"


def _free_prefix(program, base):
    """`base`_k for the smallest k whose variables the program lacks."""
    k = 0
    while program.desc.has_var(f"{base}_{k}.data_0"):
        k += 1
    return f"{base}_{k}"


def _dtype_names(dtypes):
    """dtypes with NumPy dtypes (np.float32) given by name, as Fluid takes
    either; anything else is left for _check_shapes to name."""
    if not isinstance(dtypes, (list, tuple)):
        return dtypes
    out = []
    for d in dtypes:
        try:
            out.append(d if isinstance(d, str) else np.dtype(d).name)
        except TypeError:
            out.append(d)
    return out


def _check_shapes(shapes, dtypes, lod_levels):
    if not isinstance(shapes, (list, tuple)) or not shapes:
        raise ValueError(f"py_reader: shapes must be a non-empty list of "
                         f"shapes, one per variable, got {shapes!r}")
    for i, shape in enumerate(shapes):
        if not isinstance(shape, (list, tuple)) or not shape or any(
                isinstance(d, bool) or not isinstance(d, (int, np.integer))
                or d == 0 or
                d < -1 for d in shape):
            raise ValueError(
                f"py_reader: shapes[{i}] = {shape!r}: a list of dims, the "
                "batch first (-1 for any size), each a positive int or -1")
    if not isinstance(dtypes, (list, tuple)) or len(dtypes) != len(shapes):
        raise ValueError(f"py_reader: dtypes must be a list of one dtype per "
                         f"shape ({len(shapes)}), got {dtypes!r}")
    for i, dtype in enumerate(dtypes):
        if dtype not in _DTYPES:
            raise ValueError(f"py_reader: dtypes[{i}] = {dtype!r}: one of "
                             f"{', '.join(_DTYPES)}")
    lod_levels = [0] * len(shapes) if lod_levels is None else lod_levels
    if not isinstance(lod_levels, (list, tuple)) or \
            len(lod_levels) != len(shapes) or \
            any(level not in (0, 1) for level in lod_levels):
        raise ValueError(f"py_reader: lod_levels must be None or a list of "
                         f"one 0 or 1 per shape ({len(shapes)}), got "
                         f"{lod_levels!r} (one level of sequences only)")
    return lod_levels


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None,
              use_double_buffer=True):
    """A reader fed from Python: declares one data variable per entry of
    `shapes` (the batch dim included, -1 for any size), `dtypes` (by name
    or as NumPy dtypes) and `lod_levels` (1: a batch of sequences, each
    entry a step's shape) in the current main program, named NAME.data_I
    (NAME: `name`, else py_reader_K). read_file(reader) returns them.
    capacity: the batches its queue holds; use_double_buffer: a thread
    reads and converts the next batches while the program runs.

        >>> reader = fluid.layers.py_reader(
        ...     capacity=64, shapes=[(-1, 784), (-1, 1)],
        ...     dtypes=["float32", "int64"])
        >>> image, label = fluid.layers.read_file(reader)
        >>> reader.decorate_paddle_reader(fluid.io.batch(train_reader, 64))
    """
    _positive_int(capacity, "py_reader: capacity (the batches its queue "
                  "holds)")
    dtypes = _dtype_names(dtypes)
    lod_levels = _check_shapes(shapes, dtypes, lod_levels)
    if name is not None and not isinstance(name, str):
        raise ValueError(f"py_reader: name must be a str, got {name!r}")
    program = default_main_program()
    prefix = name or _free_prefix(program, "py_reader")
    data_vars = [
        _layers.data(f"{prefix}.data_{i}", list(shape), dtype=dtype,
                     append_batch_size=False, lod_level=level)
        for i, (shape, dtype, level) in enumerate(
            zip(shapes, dtypes, lod_levels))]
    return PyReaderVariable(prefix, data_vars, capacity, use_double_buffer)


def create_py_reader_by_data(capacity, feed_list, name=None,
                             use_double_buffer=True):
    """A py_reader over existing data variables (`feed_list`, from
    fluid.layers.data): read_file returns them.

        >>> image = fluid.layers.data("image", [784])
        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> reader = fluid.layers.create_py_reader_by_data(
        ...     capacity=64, feed_list=[image, label])
    """
    if isinstance(feed_list, Variable):
        feed_list = [feed_list]
    if not isinstance(feed_list, (list, tuple)) or not feed_list or \
            not all(isinstance(v, Variable) for v in feed_list):
        raise ValueError("create_py_reader_by_data: feed_list must be a "
                         "non-empty list of data Variables, got "
                         f"{feed_list!r}")
    return PyReaderVariable(name or "create_py_reader", list(feed_list),
                            capacity, use_double_buffer)


def _reader(reader, who):
    if not isinstance(reader, PyReaderVariable):
        raise ValueError(
            f"{who}: reader must be what fluid.layers.py_reader, "
            "create_py_reader_by_data or double_buffer returns, got "
            f"{type(reader).__name__} {reader!r}"[:300])
    return reader


def read_file(reader):
    """The data variables of `reader`: one Variable, or a list of them
    when it has several.

        >>> image, label = fluid.layers.read_file(reader)
    """
    data_vars = _reader(reader, "read_file")._feed_vars
    return data_vars[0] if len(data_vars) == 1 else list(data_vars)


def double_buffer(reader, place=None, name=None):
    """Turns on the double buffer of `reader` (a thread reading and
    converting the next batches while the program runs) and returns it,
    for read_file. place: accepted for Fluid's signature; the executor
    copies the feed to its device.

        >>> reader = fluid.layers.double_buffer(reader)
        >>> image, label = fluid.layers.read_file(reader)
    """
    _reader(reader, "double_buffer")
    _check_places(place, "double_buffer")
    reader._double_buffer = True
    return reader
