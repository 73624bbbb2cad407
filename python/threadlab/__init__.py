"""threadlab: measure thread-level parallelism on Linux.

The Python package is the front end: it runs the native benchmark programs
(build/bin/threadlab-bench-*), validates and stores their records, and
reports them.
"""

__version__ = "0.1.0"
