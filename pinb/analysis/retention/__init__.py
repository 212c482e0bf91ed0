"""What a compaction kept: the facts of a replaced span, matched against its summary, scored."""
