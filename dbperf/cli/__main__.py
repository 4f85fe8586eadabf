"""`python -m dbperf.cli`, as the tests, the fleet's workers and the benchmarks start the CLI."""

from dbperf.cli import main

if __name__ == "__main__":
    main()
