"""Statistics of repeated measurements: central values, confidence, significance, and the rQPS matrix."""
