//! The stale-read probe on MySQL: MariaDB's (stale/mariadb.rs: the write on the primary in autocommit, the wait on
//! the replica before the read) with MySQL's GTID wait. MySQL has no @@last_gtid, and the driver's wire client does
//! not ask for session-state tracking (session_track_gtids), so the position waited for is the primary's
//! @@GLOBAL.gtid_executed read just after the write's commit: a superset of the write's GTID (it holds the
//! background writers' commits too), so the wait can last longer than the write alone needs, never shorter; the read
//! after it is never stale. `SELECT WAIT_FOR_EXECUTED_GTID_SET(set, timeout)` returns 0 once the replica has applied
//! the set, 1 on a timeout.

use crate::stale::mariadb::{GtidWait, MyProbe};
use crate::stale::StaleJob;

pub const WAIT: GtidWait = GtidWait {
    position_sql: "SELECT @@GLOBAL.gtid_executed",
    position_name: "@@GLOBAL.gtid_executed",
    wait_sql: "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)",
    wait_name: "WAIT_FOR_EXECUTED_GTID_SET",
};

pub fn open(job: &StaleJob) -> Result<MyProbe, String> {
    MyProbe::open(job, &WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stale::mariadb::{one_line, timed_out};

    #[test]
    fn a_gtid_set_broken_over_lines_is_waited_for_as_one_token() {
        let set = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4c2e7f10-71ca-11e1-9e33-c80aa9429562:1-3";
        assert_eq!(one_line(set), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4c2e7f10-71ca-11e1-9e33-c80aa9429562:1-3");
    }

    #[test]
    fn both_engines_timeouts_count_as_timeouts_and_0_as_reached() {
        assert!(!timed_out(Some(0)));
        assert!(timed_out(Some(1))); // WAIT_FOR_EXECUTED_GTID_SET
        assert!(timed_out(Some(-1))); // MASTER_GTID_WAIT
        assert!(timed_out(None));
    }

    #[test]
    fn mysql_reads_the_global_set_and_waits_with_its_own_function() {
        assert_eq!(WAIT.position_sql, "SELECT @@GLOBAL.gtid_executed");
        assert_eq!(WAIT.wait_sql, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)");
        assert_eq!(crate::stale::mariadb::WAIT.wait_sql, "SELECT MASTER_GTID_WAIT(?, ?)");
        assert_eq!(crate::stale::mariadb::WAIT.position_sql, "SELECT @@last_gtid");
    }
}
