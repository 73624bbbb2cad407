"""The `threadlab` command line."""

from threadlab.cli.bench import main  # noqa: F401
