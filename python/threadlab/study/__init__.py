"""Studies: experiments over a matrix of scenarios, stored as runs.

`threadlab study apps` (apps.py, tables.py) reproduces seed 000: four
multithreaded kernels over thread platforms, architectures, priorities
and affinities, many runs each, speedups with confidence intervals
(docs/study.md).  Later studies (multiprog, spawn) join as modules here.
"""
