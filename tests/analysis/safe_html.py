"""What a notebook sanitizer leaves of an analysis view: the views' checks, applied here."""

from __future__ import annotations

from tests.views.sanitizers import check_html_survives, parse


def visible_text(html: str) -> str:
    """The text a reader sees, after checking the HTML survives JupyterLab and nbconvert."""
    check_html_survives(html)
    return "".join(parse(html).text)
