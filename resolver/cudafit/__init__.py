"""cudafit: the PyTorch/CUDA build that will run on this machine, and why."""

__version__ = "0.1.0"
