"""Fluid 1.x's incubating APIs that scripts of the era import: Fleet's
collective mode (`fluid.incubate.fleet.collective`) and its role makers
(`fluid.incubate.fleet.base.role_maker`)."""
from . import fleet  # noqa: F401

__all__ = ["fleet"]
