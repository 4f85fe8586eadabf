"""Studies: published results (blog posts and bug reports, docs/sources.md) reproduced end to end, one command
each (`dbperf study`)."""
