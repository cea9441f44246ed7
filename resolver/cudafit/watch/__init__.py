"""`cudafit watch`: runs a command (or attaches to a process), samples the GPUs and the process
tree while it runs, scans its output for known failure lines, and reports the warning signs of a
misconfigured run (an input-bound GPU, VRAM left empty, stalls, out of memory, a GPU never used).
Reading (model, smi, nvml, proc, output) is apart from judging (findings) and wording (report)."""
