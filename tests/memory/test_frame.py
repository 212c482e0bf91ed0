"""memory_frame gives a typed DataFrame of the notes."""

from __future__ import annotations

from pinb.memory import MEMORY_COLUMNS, MemoryStore, memory_frame


def test_memory_frame_columns_and_types(store: MemoryStore) -> None:
    a = store.save("first", project="p", kind="fact", tags=["x", "y"], source_session="/s.jsonl")
    b = store.save("second", project="p")
    store.forget(b.id, "why not")
    store.save("elsewhere", project="q")
    frame = memory_frame(store, "p")
    assert tuple(frame.columns) == MEMORY_COLUMNS
    assert frame["id"].tolist() == [a.id]
    assert frame.loc[0, "tags"] == ["x", "y"] and frame.loc[0, "source_session"] == "/s.jsonl"
    assert str(frame["created"].dtype).startswith("datetime64") and frame["deleted"].isna().all()
    both = memory_frame(store, "p", include_deleted=True)
    assert both["id"].tolist() == [a.id, b.id]
    assert both.loc[1, "deleted_reason"] == "why not" and not both["deleted"].isna().all()
    assert len(memory_frame(store, all_projects=True)) == 2
    assert tuple(memory_frame(MemoryStore(), "nobody").columns) == MEMORY_COLUMNS
