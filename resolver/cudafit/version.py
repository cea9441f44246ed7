"""The version of cudafit, in a module of its own so that every module can read it without importing the package (import cycles)."""

__version__ = "0.1.0"
