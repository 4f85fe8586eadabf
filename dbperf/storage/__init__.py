"""Results on disk: one directory per run, written as cells are measured."""
