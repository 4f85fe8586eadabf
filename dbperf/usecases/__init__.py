"""The lab's use cases (run, report, check, build, compare, history, profile, probe) as functions: typed arguments
in, values out. No Typer and no printing of results: the CLI (dbperf/cli/) parses the arguments, calls one of these
and prints what it returns; what they say on the way is the lab's progress on stderr (progress.py)."""
