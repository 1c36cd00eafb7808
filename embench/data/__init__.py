"""Where data comes from: the data root, readers that name file and line on bad input, downloads."""

from .root import DataRoot, resolve_data_root

__all__ = ["DataRoot", "resolve_data_root"]
