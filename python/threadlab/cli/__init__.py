"""The `threadlab` command line (docs/commands/): one module per command or
command group, each with a register(commands, common) that adds its
parser, and cli/options.py for what they share.  This module assembles
the parser and turns every outcome into an exit status.

Every user mistake ends in one line, `threadlab: error: ...`, naming the
bad value and what is accepted, with exit status 2 and no traceback.
Exit status 1 means something threadlab depends on failed (a native
program, the store, an output that was closed or could not be written)
or, for `bench`, that a data point failed.

Start-up stays light: numpy, scipy, jsonschema, rich and matplotlib are
imported by the commands that use them, not for `--help` or `--version`,
and a command's parser is built from its own module alone (the others are
imported only for `threadlab --help` or a line the command's parser
refuses, which the whole parser then reads again for its message).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sqlite3
import sys
from typing import Sequence

from threadlab import __version__
from threadlab.cli.options import EXIT_FAILED, EXIT_OK, PROG, ArgumentParser, common_parser
from threadlab.errors import ThreadlabError, UserError
from threadlab.output.files import OutputClosed
from threadlab.output.sanitize import printable_lines

# The commands in the order `threadlab --help` lists them: each one's
# module under threadlab.cli and the function there that adds its parser.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("bench", "bench", "register"),
    ("list", "catalog", "register"),
    ("runs", "runs", "register"),
    ("show", "show", "register"),
    ("crosscheck", "crosscheck", "register"),
    ("compare", "compare", "register"),
    ("import", "transfer", "register_import"),
    ("study", "study", "register"),
    ("rm", "rm", "register"),  # rm and omp
    ("omp", "rm", "register"),
    ("spawn", "spawn", "register"),
    ("export", "transfer", "register_export"),
    ("report", "report", "register"),
)


def _command_word(words: Sequence[str]) -> str | None:
    """The command a command line names, when its first word that is not an
    option is one; "" for --version before any (no command's parser is
    needed); None for anything else (no command, --help before it, an
    option's value first), which the whole parser reads."""
    names = {name for name, _, _ in COMMANDS}
    for word in words:
        if word == "--version":
            return ""
        if word in ("-h", "--help", "--"):
            return None
        if not word.startswith("-"):
            return word if word in names else None
    return None


def build_parser(command: str | None = None) -> ArgumentParser:
    """The parser of every command, or of `command` alone (none for "")."""
    common = common_parser()
    parser = ArgumentParser(
        prog=PROG,
        parents=[common],
        description="Measure thread-level parallelism on Linux: run the benchmark suites, keep every "
        "record in a SQLite store, and show the results.",
        epilog="Commands are described in docs/commands/. Example: threadlab bench --quick",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    registered = set()
    for name, module, function in COMMANDS:
        if (command is None or name == command) and (module, function) not in registered:
            registered.add((module, function))
            getattr(importlib.import_module(f"threadlab.cli.{module}"), function)(commands, common)
    return parser


def parse(arguments: Sequence[str]) -> argparse.Namespace:
    """The command line read by its command's parser; by the whole parser
    when it names none or its command's parser refuses it (an option's
    value that looked like a command: the whole parser's verdict and
    message are the ones that count)."""
    command = _command_word(arguments)
    if command is not None:
        try:
            return build_parser(command).parse_args(arguments)
        except UserError:
            pass
    return build_parser().parse_args(arguments)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        arguments = list(sys.argv[1:] if argv is None else argv)
        args = parse(arguments)
        args.argv = arguments
        if not getattr(args, "handler", None):
            names = [name for name, _, _ in COMMANDS]
            raise UserError(f"a command is required: {', '.join(names[:-1])} or {names[-1]} (see `{PROG} --help`)")
        status = int(args.handler(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return status
    except OutputClosed as closed:
        return _output_closed(str(closed))
    except BrokenPipeError:
        return _output_closed("the output was closed before everything was written (broken pipe); it is incomplete")
    except ThreadlabError as error:  # UserError included
        _error(str(error))
        return error.exit_status
    except sqlite3.Error as error:
        _error(f"store: {error}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted", prefix=f"{PROG}: ")
        return 128 + signal.SIGINT
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_OK


def _error(message: str, prefix: str = f"{PROG}: error: ") -> None:
    """One message on stderr: stored text in it cannot reach the terminal as
    escape sequences; a closed stderr is not an error of its own."""
    try:
        print(prefix + printable_lines(message), file=sys.stderr)
    except (OSError, ValueError):
        pass


def _output_closed(message: str) -> int:
    """A reader that left (`threadlab runs | head`) is an error: what it got
    is incomplete.  stdout then points at /dev/null, so the interpreter's
    final flush is quiet."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    _error(message)
    return EXIT_FAILED
