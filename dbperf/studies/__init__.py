"""Studies: BRIEF's published results reproduced end to end, one command each (`dbperf study`)."""
