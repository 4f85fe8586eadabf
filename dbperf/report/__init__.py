"""Reports of a results directory: the rQPS matrix and per-target absolute figures, in several formats."""
