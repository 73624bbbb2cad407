"""`threadlab` and `python -m threadlab`: the command line (threadlab.cli).

The entry point imports the command line inside a handler of Ctrl-C: an
interrupt while Python is still loading threadlab ends in one line and
exit status 130, never a traceback.

`threadlab omp run` starts its program without importing the front end
(threadlab.cli imports the store, rich and, for some commands, numpy: a
quarter of a second before a short OpenMP program could even start;
docs/commands/omp.md): it execs the native launcher at once.
"""

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        if words[:2] == ["omp", "run"]:
            from threadlab import rm_cli

            rm_cli.omp_run_fast(words[2:])  # execs the program, or returns for the full command line
        from threadlab.cli import main as cli_main

        return cli_main(words)
    except KeyboardInterrupt:
        try:
            print("threadlab: interrupted", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return 130


if __name__ == "__main__":
    sys.exit(main())
