"""Stored text on its way out: to a terminal, a spreadsheet, a Markdown page.

Run names, hostnames, failure reasons and everything else in the store may
come from an imported file or a program's stderr: they are data, never
commands to whatever displays them (docs/security.md).

- printable(): control characters (C0, DEL, C1: the escape sequences a
  terminal obeys) and the Unicode controls that reorder or hide text are
  written as visible escapes (\\x1b, \\u202e).
- CsvWriter: OWASP's rule against formula injection: a cell that starts
  with =, +, -, @, TAB or CR gets a leading single quote, unless it is a
  number (threadlab's own -1.5 stays a number).
- markdown(): Markdown text that cannot open HTML, links, images or code.

Kept free of heavy imports: the command line's error path uses it.
"""

from __future__ import annotations

import csv
import re
from typing import IO, Any, Iterable

# C0 controls, DEL and C1 controls; the bidirectional overrides, isolates
# and marks; zero-width characters that hide text; the line and paragraph
# separators (a terminal or editor breaks lines at them).
_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any) -> str:
    """str(text) with every control character written as a visible escape
    (a newline too: one value stays on one line)."""
    value = text if isinstance(text, str) else str(text)
    return _UNPRINTABLE.sub(_escape, value)


def printable_lines(text: str) -> str:
    """printable() of each line: a message of several lines keeps them."""
    return "\n".join(printable(line) for line in text.split("\n"))


# ------------------------------------------------------------------- CSV

# What a spreadsheet may take for the start of a formula (OWASP, "CSV
# Injection"): =, +, -, @, and TAB or CR before them.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A plain decimal number: a spreadsheet reads it as a number, never a formula.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """A cell that no spreadsheet evaluates: numbers as they are, text
    starting like a formula behind a single quote."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


class CsvWriter:
    """csv.writer whose every cell goes through csv_cell()."""

    def __init__(self, stream: IO[str]) -> None:
        self._writer = csv.writer(stream, lineterminator="\n")

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(value) for value in row])


# -------------------------------------------------------------- Markdown

# Characters that start HTML, an entity, a link or image, emphasis, code,
# or end a table cell.  CommonMark lets a backslash escape any of them.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>!|&#~])")


def markdown(text: Any) -> str:
    """Stored text as literal Markdown: printable, and every character that
    could make HTML, a link, an image, emphasis or code escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(text))


def markdown_code(text: Any) -> str:
    """Stored text as a Markdown code span: fenced by more backticks than it
    holds in a row, so it cannot close the span early."""
    value = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"
