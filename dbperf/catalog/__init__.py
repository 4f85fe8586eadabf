"""The microbenchmark catalog: declarative workload files and the schema they run against."""
