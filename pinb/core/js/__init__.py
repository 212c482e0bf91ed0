"""JavaScript's semantics where they change results: JSON text, lengths and dates."""
