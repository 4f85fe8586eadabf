"""Explain: hardware counters where the CPU exposes them, simulated (cachegrind) counters where it does not,
per-function profiles and their diff."""
