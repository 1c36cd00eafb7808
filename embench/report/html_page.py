"""One self-contained static HTML page: tables and figures, every image embedded as a ``data:`` URI,
no script, no font, no stylesheet fetched: it opens the same from a disk, an e-mail or an archive."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

# The page may load nothing: images only from data: URIs, styles only inline, no script at all.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
table.paper { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }
table.paper caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: .4rem; }
table.paper th, table.paper td { padding: .2rem .6rem; text-align: right; }
table.paper th.row_heading { text-align: left; font-weight: normal; }
table.paper th.index_name { text-align: left; }
table.paper thead tr:first-child th { border-top: 2px solid #222; border-bottom: 1px solid #222; }
table.paper tbody tr:last-child td, table.paper tbody tr:last-child th { border-bottom: 2px solid #222; }
p.note { font-size: .8rem; color: #555; max-width: 60rem; }
.gallery { display: flex; flex-wrap: wrap; gap: 1.5rem; }
figure { margin: 0; max-width: 34rem; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .85rem; color: #444; }
"""


def embedded_image(path: Path | str) -> str:
    """``data:image/png;base64,...`` of a PNG (or SVG/JPEG) file."""
    path = Path(path)
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}[path.suffix.lower()]
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def figure_html(path: Path | str, caption: str) -> str:
    return (f'<figure><img src="{embedded_image(path)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


_STYLE_BLOCK = re.compile(r"<style[^>]*>.*?</style>\n?", re.S)
_STYLE_TAGS = re.compile(r"</?style[^>]*>")


def page(title: str, sections: Sequence[tuple[str, str]], intro: str = "") -> str:
    """``sections`` are ``(heading, html)``; a heading of ``"table"`` adds the table without a heading. A section's own
    ``<style>`` blocks (pandas' Styler writes one before each table) move to the head, where HTML allows them."""
    own = [m.strip() for _, body in sections for m in _STYLE_BLOCK.findall(body)]
    own = list(dict.fromkeys(m for m in own if _STYLE_TAGS.sub("", m).strip()))  # each rule set once; none empty
    sections = [(heading, _STYLE_BLOCK.sub("", body)) for heading, body in sections]
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style>", *own, "</head>\n<body>", f"<h1>{html.escape(title)}</h1>"]
    if intro:
        parts.append(f"<p>{html.escape(intro)}</p>")
    for heading, body in sections:
        if heading != "table":
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(body)
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)
