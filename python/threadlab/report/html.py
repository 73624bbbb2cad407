"""The report's page: one self-contained HTML file.

Inline CSS, inline SVG figures, no script, no font or stylesheet from the
network: the file can be mailed, archived or opened offline and looks the
same.  Every text that comes from data is escaped here.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, Sequence

from threadlab.report.figures import RenderedFigure

CSS = """
:root { --ink: #1d232a; --muted: #5b6570; --line: #dfe3e8; --bg: #f6f7f9; --card: #ffffff;
        --warn-bg: #fff6e0; --warn-line: #e0b252; --bad: #b3261e; --good: #1e7a3c; --accent: #0a5fa3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif;
       color: var(--ink); background: var(--bg); }
main { max-width: 1240px; margin: 0 auto; padding: 0 20px 48px; }
header.top { background: #14283c; color: #fff; padding: 14px 20px 12px; }
header.top .inner { max-width: 1240px; margin: 0 auto; display: flex; flex-wrap: wrap; align-items: baseline;
                    gap: 6px 18px; }
header.top h1 { margin: 0; font-size: 21px; font-weight: 650; letter-spacing: .2px; }
header.top .sub { color: #c9d6e3; font-size: 13px; }
header.top nav { margin-left: auto; font-size: 13px; }
header.top nav a { color: #cfe5ff; text-decoration: none; margin-left: 12px; }
h2 { font-size: 17px; margin: 26px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
p.lede { color: var(--muted); margin: 2px 0 10px; font-size: 13px; }
.cards { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 14px; margin-top: 16px;
         align-items: start; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.card h2 { margin-top: 0; border: 0; font-size: 15px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0; font-size: 13px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.warnings { background: var(--warn-bg); border-color: var(--warn-line); }
.warnings ul { margin: 0; padding-left: 18px; font-size: 13px; }
.warnings li { margin: 3px 0; }
.ok-box { color: var(--good); font-size: 13px; }
table.data { border-collapse: collapse; background: var(--card); font-size: 12.5px; width: 100%;
             border: 1px solid var(--line); }
table.data th, table.data td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left;
                               vertical-align: top; white-space: nowrap; }
table.data th { background: #eef1f4; font-weight: 600; position: sticky; top: 0; }
table.data td.num, table.data th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.data td.wrap { white-space: normal; min-width: 16em; }
table.data tr.summary td { font-weight: 600; background: #f3f6f9; }
.scroll { overflow-x: auto; max-width: 100%; }
.na { color: var(--muted); }
.failed { color: var(--bad); font-weight: 600; }
.flag { color: #9a6700; font-weight: 600; }
.slower { color: var(--bad); font-weight: 600; }
.faster { color: var(--good); font-weight: 600; }
figure.plot { margin: 10px 0 18px; background: var(--card); border: 1px solid var(--line); border-radius: 8px;
              padding: 8px 10px; }
figure.plot svg { display: block; width: 100%; height: auto; max-width: 900px; }
figure.plot figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
figure.plot figcaption a { color: var(--accent); }
ol.notes { font-size: 12px; color: var(--muted); margin: 6px 0 0; padding-left: 22px; }
details { margin: 8px 0; }
details summary { cursor: pointer; color: var(--accent); }
pre.env { background: var(--card); border: 1px solid var(--line); padding: 10px; font-size: 11.5px;
          overflow-x: auto; max-height: 420px; }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; border-top: 1px solid var(--line);
         padding-top: 10px; }
@media (max-width: 820px) { .cards { grid-template-columns: 1fr; } }
"""


def e(text: object) -> str:
    return escape(str(text), quote=True)


def page(title: str, subtitle: str, nav: Sequence[tuple[str, str]], body: str, generator: str) -> str:
    links = "".join(f'<a href="#{e(anchor)}">{e(label)}</a>' for anchor, label in nav)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="{e(generator)}">\n'
        # An empty icon: the browser asks for nothing else.
        '<link rel="icon" href="data:,">\n'
        f"<title>{e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<header class="top"><div class="inner"><h1>{e(title)}</h1><span class="sub">{e(subtitle)}</span>'
        f"<nav>{links}</nav></div></header>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def facts(items: Iterable[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items) + "</dl>"


def card(title: str, inner: str, classes: str = "") -> str:
    return f'<section class="card {classes}"><h2>{e(title)}</h2>{inner}</section>'


def bullet_list(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{e(item)}</li>" for item in items) + "</ul>"


class Cell:
    """A table cell: text, optional CSS class, optional tooltip."""

    def __init__(self, text: str, cls: str = "", title: str = "") -> None:
        self.text, self.cls, self.title = text, cls, title

    def html(self, tag: str = "td") -> str:
        cls = f' class="{e(self.cls)}"' if self.cls else ""
        tip = f' title="{e(self.title)}"' if self.title else ""
        return f"<{tag}{cls}{tip}>{e(self.text)}</{tag}>"


def data_table(headers: Sequence[Cell | str], rows: Sequence[Sequence[Cell | str]], summary_rows: int = 0,
               table_id: str = "") -> str:
    def cell(value: Cell | str) -> Cell:
        return value if isinstance(value, Cell) else Cell(value)

    head = "".join(cell(h).html("th") for h in headers)
    body = []
    for index, row in enumerate(rows):
        cls = ' class="summary"' if index >= len(rows) - summary_rows else ""
        body.append(f"<tr{cls}>" + "".join(cell(c).html() for c in row) + "</tr>")
    ident = f' id="{e(table_id)}"' if table_id else ""
    return f'<div class="scroll"><table class="data"{ident}><thead><tr>{head}</tr></thead><tbody>' + "".join(body) + "</tbody></table></div>"


def notes_list(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return '<ol class="notes">' + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ol>"


def figure(rendered: RenderedFigure, png_href: str) -> str:
    caption = e(rendered.caption) + (" " if rendered.caption else "")
    return (
        f'<figure class="plot" id="fig-{e(rendered.name)}" data-figure="{e(rendered.name)}">{rendered.svg}'
        f'<figcaption>{caption}<a href="{e(png_href)}">PNG</a></figcaption></figure>'
    )
