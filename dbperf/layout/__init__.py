"""Layout check: read-mostly globals that share a cache line with written ones ([MySQL bug #97777])."""
