"""The replication lab ([Nielsen 2014-03-13], [Nielsen 2014-02-10], [Nielsen 2017-05-12]): a primary and N replicas of
MariaDB started by the lab on 127.0.0.1 with GTID replication (cluster.py), and one module per study: the replica's
apply rate against parallel workers and durability (apply_rate.py), stale reads against MASTER_GTID_WAIT
(stale_reads.py). lab.py runs them into a results directory; dbperf/report/replication_view.py reports them. PostgreSQL
streaming replication has its own files: pg_cluster.py (a primary and hot standbys), pg_apply.py (replay paused and
resumed, the lag over time), pg_stale.py (stale reads against synchronous_commit = remote_apply)."""
