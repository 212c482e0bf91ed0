"""Searching sessions (``pinb.analysis.search``): the catalog and its sidecar, the full-text index, queries, hits, the scan, the one fold of words."""
