"""Fleet's base: the role makers (`role_maker`), which say which rank of
how many this process is."""
from . import role_maker  # noqa: F401

__all__ = ["role_maker"]
