"""`threadlab` and `python -m threadlab`: the command line (threadlab.cli).

The entry point imports the command line inside a handler of Ctrl-C: an
interrupt while Python is still loading threadlab ends in one line and
exit status 130, never a traceback.
"""

import sys


def main() -> int:
    try:
        from threadlab.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        try:
            print("threadlab: interrupted", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return 130


if __name__ == "__main__":
    sys.exit(main())
