"""sysbench and pgbench as drivers of the lab's targets, and importing their saved output."""
