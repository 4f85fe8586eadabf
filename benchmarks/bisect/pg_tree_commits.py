"""benchmarks/bisect/pg_tree_commits: `dbperf bisect --tree --engine postgres` over 64 commits of a PostgreSQL tree,
one adding a loop to StartTransactionCommand, against a target of 25 minutes after the tree's first build: the
PostgreSQL case of benchmarks/bisect/server_tree_commits.py (its docstring says how it is made and timed; the last
line is `ratio <elapsed / 1500 s>`).

Usage: .venv/bin/python benchmarks/bisect/pg_tree_commits.py [--commits 64] [--at 41] [--table-size 100000]
       [--cache DIR] [--prepare] [--confirm]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_tree_commits import main

if __name__ == "__main__":
    sys.argv[1:1] = ["--engine", "postgres"]
    sys.exit(main())
