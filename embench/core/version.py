"""The embench version, here so that provenance (a lower layer than the package's public face) can read it."""

__version__ = "0.1.0"
