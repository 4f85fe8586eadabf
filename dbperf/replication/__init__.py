"""The replication lab ([Nielsen 2014-03-13], [Nielsen 2014-02-10], [Nielsen 2017-05-12]): a primary and N replicas
started by the lab on 127.0.0.1, and the studies run on them; lab.py runs them into a results directory and
dbperf/report/replication_view.py reports them. Each kind of replication is an object (kind.py) in a module of its
own, asked, never branched on (lab.KINDS lists them): binlog.py, MariaDB's GTID replicas (cluster.py; the apply rate
against parallel workers and durability, apply_rate.py; stale reads against MASTER_GTID_WAIT, stale_reads.py;
cross-engine commits, cross_engine.py), and PostgreSQL's hot standbys (pg_cluster.py; replay paused and resumed and
the lag over time, pg_apply.py; stale reads against synchronous_commit = remote_apply, pg_stale.py). What they share:
replica_set.py (the cluster's frame), apply_study.py (the apply study's plan and records), fsync_rate.py."""
