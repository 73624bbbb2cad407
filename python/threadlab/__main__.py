"""`python -m threadlab` and the `threadlab` command.

The entry point imports the command line inside a handler of Ctrl-C: an
interrupt while Python is still loading threadlab ends in one line and
exit status 130, never a traceback.

`threadlab omp run` starts its program without importing the command
line (threadlab.cli imports the store, rich and, for some commands,
numpy: a quarter of a second before a short OpenMP program could even
start; docs/commands/omp.md): the entry reads its few options itself and
execs the native launcher at once (threadlab.native.rm.omp_run, what the
command's handler in cli/rm.py calls too).
"""

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        if words[:2] == ["omp", "run"]:
            _omp_run_fast(words[2:])  # execs the program, or returns for the full command line
        from threadlab.cli import main as cli_main

        return cli_main(words)
    except KeyboardInterrupt:
        try:
            print("threadlab: interrupted", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return 130


def _omp_run_fast(words: Sequence[str]) -> None:
    """`threadlab omp run WORDS` without the command line: --dir PATH,
    --runtime R, --pin and --quiet read here, then PROGRAM.  Returns, having done
    nothing, for anything else (--help, a mistake, a missing build): the
    command line then handles it, with its messages."""
    from pathlib import Path

    from threadlab.errors import ThreadlabError
    from threadlab.native import rm

    directory: Path | None = None
    runtime = rm.DEFAULT_OMP_RUNTIME
    pin = quiet = False
    rest = list(words)
    while rest:
        word = rest[0]
        if word == "--pin":
            pin = True
        elif word == "--quiet":
            quiet = True
        elif word == "--dir" and len(rest) > 1:
            directory = Path(rest.pop(1))
        elif word.startswith("--dir="):
            directory = Path(word.split("=", 1)[1])
        elif word == "--runtime" and len(rest) > 1:
            runtime = rest.pop(1)
        elif word.startswith("--runtime="):
            runtime = word.split("=", 1)[1]
        elif word == "--" or not word.startswith("-"):
            break
        else:
            return
        rest.pop(0)
    try:
        rm.omp_run(rest, directory=directory, pin=pin, quiet=quiet, runtime=runtime)
    except ThreadlabError:  # UserError included
        return


if __name__ == "__main__":
    sys.exit(main())
