"""Pi's extension dialogs asked in the cell (``pinb.notebook.dialogs``): the question put, and
the answer typed read as Pi expects it."""

from __future__ import annotations

from pinb.notebook.dialogs import dialog_prompt, read_answer


def test_dialog_answers_read_as_pi_expects() -> None:
    select = {"method": "select", "title": "Pick\none", "options": ["Allow", "Block"]}
    assert (
        dialog_prompt(select)
        == "Pi's extension asks: Pick one\n1) Allow  2) Block\nnumber, Enter to cancel: "
    )
    assert read_answer(select, "2") == {"value": "Block"}
    assert read_answer(select, "Allow") == {"value": "Allow"}
    assert read_answer(select, "7") == {"cancelled": True}
    confirm = {"method": "confirm", "title": "Sure?"}
    assert read_answer(confirm, " YES ") == {"confirmed": True}
    assert read_answer(confirm, "n") == {"confirmed": False}
    assert read_answer(confirm, "") == {"cancelled": True}
    editor = {"method": "editor", "title": "Edit", "prefill": "old"}
    assert read_answer(editor, "") == {"value": "old"} and read_answer(editor, "new") == {
        "value": "new"
    }
    assert read_answer({"method": "input", "title": "Name"}, "") == {"cancelled": True}
