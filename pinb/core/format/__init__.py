"""Pi's session format: the Pi release, typed entries, migration, field types, the tree."""
