"""Compaction and branch summaries: the plan, what it spans, summarizers, carrying them out."""
