"""`cudafit containers`: NVIDIA's NGC framework containers (nvcr.io/nvidia/pytorch:YY.MM-py3) that
run on a host: data.py reads matrices/ngc-containers.toml, judge.py decides per release (the
host's driver against the container's CUDA, forward compatibility on data-center GPUs), report.py
words it."""
