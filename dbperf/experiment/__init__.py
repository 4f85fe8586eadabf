"""Experiment files: what to run (benchmarks, sizes, durations, repeats) against which targets."""
