"""Files on disk: a session's reading and appending, its turn lock and other writers, listing, trash; Pi's shared JSON files."""
