"""Studies: experiments over a matrix of scenarios, stored as runs, all on
one engine (engine.py: jobs in a seeded random order, the loop, keeping
what was measured on Ctrl-C) and listed in registry.py.

`threadlab study apps` (apps.py, tables.py) reproduces seed 000: four
multithreaded kernels over thread platforms, architectures, priorities
and affinities (docs/study.md).  `threadlab study multiprog`
(multiprog.py, tables_multiprog.py) reproduces seed 004's evaluation:
OpenMP programs sharing the CPUs, under the resource manager and under
libgomp's own settings (docs/study-multiprog.md).
"""
