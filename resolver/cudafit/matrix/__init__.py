"""`cudafit matrix`: a framework's releases (rows) by builds (columns) for a machine, a driver, a
set of GPUs or a fleet's node classes, each cell runs / does not run / unknown with its reason and
evidence grade, and the build `cudafit resolve` picks marked.

build.py computes it from the providers' own candidates and rejections (the solver's judgment,
never a second one); model.py holds the records; text.py, page.py (HTML), ci.py (GitHub and
GitLab matrices) and report.py (JSON) render it."""
