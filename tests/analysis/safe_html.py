"""What a notebook sanitizer leaves of a view: only plain structure, no style, script or SVG."""

from __future__ import annotations

from html.parser import HTMLParser

#: The tags the comparison and ledger views may write.
ALLOWED_TAGS = {"div", "span", "strong", "code", "table", "thead", "tbody", "tr", "th", "td"}
ALLOWED_ATTRS = {"class"}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            assert name in ALLOWED_ATTRS, f"unexpected attribute {name}={value!r} on <{tag}>"

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def visible_text(html: str) -> str:
    """The text a reader sees, after checking every tag and attribute is allowed."""
    checker = _Checker()
    checker.feed(html)
    checker.close()
    unexpected = checker.tags - ALLOWED_TAGS
    assert not unexpected, f"unexpected tags {sorted(unexpected)}"
    return "".join(checker.text)
