"""dbperf: a performance lab for database engines."""

__version__ = "0.1.0"
