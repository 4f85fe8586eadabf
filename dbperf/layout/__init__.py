"""Layout check: read-mostly globals that share a cache line with written ones (BRIEF §6, seed 004)."""
