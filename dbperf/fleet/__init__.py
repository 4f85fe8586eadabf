"""The fleet: one experiment's matrix on many benchmark hosts, on Dask distributed.

Each host runs `dbperf worker` (a Dask worker with one thread and the resource `host-NAME`, so one matrix runs on a
host at a time); the controller (`dbperf fleet run` / `dbperf fleet local`) submits to every host the part of the
matrix it runs, as one task: build, start, load, drive and stop happen there, through the same code path as a local
run (runner/matrix.py), in a child process of the worker. Each record comes back the moment it is measured and is
written, with its host, into the one results directory.
"""
