"""The exports of a session: a standalone HTML page, a Markdown file, a Jupyter notebook.

Session text is untrusted. What the model wrote as Markdown (its replies, thinking and
summaries) goes through pinb's one Markdown policy (:mod:`pinb.render.markdown`): its
formatting renders, in the HTML page (``markdown_to_html``) as in the Markdown file and the
notebook's Markdown cells (``markdown_to_markdown``), with no raw HTML, no image (a picture
the model links to becomes a link) and no script link. Everything else (prompts, tool
output, names) shows as exactly the text the session holds: escaped into HTML by
:func:`~pinb.render.html.escape`, the one HTML escape every view uses too, in Markdown
fenced (tool output) or :func:`~pinb.render.markdown.literal`. Images are embedded only
from the session's own image blocks, as well-formed base64 of common image types, so
nothing in an export is fetched from anywhere. Values of any JSON type are accepted where
text is expected; lone surrogates (valid JSON, unencodable) become U+FFFD, and so, in the
HTML page, do the control characters HTML and XML cannot carry.

Choosing the output file and writing it is :mod:`pinb.analysis.export`'s job.
"""

from __future__ import annotations

from .html_page import export_html
from .markdown_file import export_markdown
from .notebook import export_ipynb

__all__ = ["export_html", "export_ipynb", "export_markdown"]
