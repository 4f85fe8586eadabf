//! `turn_checkpoint` (slices runs of SQLite): each side's WAL is checkpointed at the start of each of its turns, by
//! the first client thread to enter the turn, inside that side's own slice, so that the checkpoint's writes and
//! fsyncs are that side's time. Without it, SQLite checkpoints when the WAL passes wal_autocheckpoint pages, inside
//! whichever commit passes it, and with synchronous = NORMAL a commit does not sync: the WAL is dirty pages until a
//! checkpoint syncs it, copies it into the database and syncs that. A commit that checkpoints near its slice's end
//! runs over into the next side's slice (stalls.rs counts it), and what the kernel writes back on its own lands in
//! any turn. Here the auto-checkpoint is off on the sides' connections (slices.rs) and the side runs the checkpoint
//! SQLite would have run, PASSIVE (the WAL synced, copied into the database, the database synced), at its turn's
//! start instead: a side enters each turn with nothing of its own left dirty but what its last turn wrote, and syncs
//! that first, in its own time. PASSIVE, not TRUNCATE or RESTART: those wait for the side's other threads' writes
//! and block them meanwhile, in SQLite's busy handler, whose sleeps of milliseconds would run over the slice's end;
//! a PASSIVE checkpoint waits for nobody, and the next write starts the WAL again from its beginning (the file keeps
//! its blocks) once every frame is in the database.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::event::Hold;
use crate::side_out::SideOut;
use crate::tick;
use crate::turn::Turn;

/// The setting that turns SQLite's own checkpoints off on a side's connections (applied after the side's own).
pub(crate) const AUTO_OFF: (&str, &str) = ("wal_autocheckpoint", "0");
const CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";

/// The run's turn checkpoints: per side, the slice its last one was taken in.
pub(crate) struct TurnCheckpoints {
    /// Per side, 1 + the number of the last slice whose checkpoint a thread claimed (0: none yet).
    claimed: Vec<AtomicU64>,
}

impl TurnCheckpoints {
    pub(crate) fn new(sides: usize) -> TurnCheckpoints {
        TurnCheckpoints { claimed: (0..sides).map(|_| AtomicU64::new(0)).collect() }
    }

    /// Whether the calling thread is the first to enter slice `index` (turn.rs numbers them for every thread alike)
    /// of `side`; a thread that comes later to it, or to an earlier one, is not.
    fn first_in(&self, side: usize, index: u64) -> bool {
        self.claimed[side].fetch_max(index + 1, Ordering::AcqRel) < index + 1
    }

    /// A thread has just entered its `turn`'s slice: the first to enter it checkpoints the side's database on its
    /// own connection, timed as the side's (in its measured slices). Its time is the side's: the slice goes on.
    pub(crate) fn at_turn_start(&self, turn: &Turn, hold: &mut Hold, out: &mut SideOut) -> Result<(), String> {
        let side = turn.slice.side;
        if !self.first_in(side, turn.index()) {
            return Ok(());
        }
        let started = tick::now();
        hold.conn.as_dyn().batch(CHECKPOINT).map_err(|e| format!("side {side}'s turn checkpoint: {e}"))?;
        if turn.slice.measured.is_some() {
            out.stalls.checkpoint.record(tick::now().saturating_sub(started));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::factory::Engine;
    use crate::event::{hold, kinds_of};
    use crate::job::Job;
    use crate::series::Clock;
    use crate::side_out::Rules;
    use crate::turn::Slicing;

    const SQLITE: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

    #[test]
    fn only_the_first_thread_into_a_slice_checkpoints_it() {
        let c = TurnCheckpoints::new(2);
        assert!(c.first_in(0, 0) && !c.first_in(0, 0), "slice 0: the second thread does not");
        assert!(c.first_in(1, 1), "another side's slice is its own");
        assert!(c.first_in(0, 2) && !c.first_in(0, 0), "a thread late into an earlier slice does not");
        assert!(c.first_in(0, 6), "a side's slices need not follow each other (one spent inside an event)");
    }

    #[test]
    fn a_plain_run_refuses_it_in_one_line() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "mode": "run", "engine": "sqlite", "tables": 1, "table_size": 10, "library": SQLITE,
            "database": "/nonexistent/x.db", "time_s": 0.1, "turn_checkpoint": true,
            "workload": {"name": "w", "transaction": false, "writes": true, "slots": 0,
                         "statements": [{"sql": "SELECT 1", "binds": []}]}}))
        .unwrap();
        let why = crate::run::run(&job).map(|_| ()).unwrap_err();
        assert!(why.starts_with("turn_checkpoint") && why.contains("no slices") && !why.contains('\n'), "{why}");
    }

    fn bytes(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }

    /// 2000 rows of 200 bytes into a side's WAL (the database file stays as it was until a checkpoint).
    fn write(hold: &mut Hold) {
        hold.conn
            .as_dyn()
            .batch(
                "INSERT INTO sbtest1 (k, pad) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c \
                 WHERE x < 2000) SELECT x, randomblob(200) FROM c",
            )
            .unwrap();
    }

    /// Two SQLite databases in WAL, both written: entering side 0's slice checkpoints side 0's WAL into its
    /// database and not side 1's, a second thread into the same slice checkpoints nothing, and side 1's next slice
    /// checkpoints side 1's.
    #[test]
    fn a_sides_wal_goes_into_its_database_when_its_turn_starts_and_only_its_own() {
        if !std::path::Path::new(SQLITE).exists() {
            return; // Debian's libsqlite3-0, installed by `make setup`
        }
        let dir = std::env::temp_dir().join(format!("dbperf-turn-checkpoint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let workload = serde_json::json!({"name": "w", "transaction": false, "writes": true, "slots": 0,
            "statements": [{"sql": "INSERT INTO sbtest{table} (k) VALUES (1)", "binds": []}]});
        let (mut holds, mut paths) = (Vec::new(), Vec::new());
        for i in 0..2 {
            let database = dir.join(format!("{i}.db"));
            let job: Job = serde_json::from_value(serde_json::json!({
                "mode": "run", "engine": "sqlite", "tables": 1, "table_size": 10, "library": SQLITE,
                "database": database.to_str().unwrap(), "workload": workload,
                "settings": [["journal_mode", "WAL"], ["synchronous", "NORMAL"], [AUTO_OFF.0, AUTO_OFF.1]]}))
            .unwrap();
            let engine = Engine::open(&job).unwrap();
            let create = "CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER, pad BLOB)";
            engine.connect().unwrap().batch(create).unwrap();
            let mut h = hold(&engine, &kinds_of(job.workload.as_ref().unwrap()), 1, None).unwrap();
            write(&mut h);
            holds.push(h);
            paths.push(database);
        }
        let before: Vec<u64> = paths.iter().map(|p| bytes(p)).collect();
        assert!(before.iter().all(|&b| b < 100_000), "the rows are in the WALs only: {before:?}");
        let rules = Rules { deterministic: false, open: false, limit_ns: None };
        let mut outs = [SideOut::new(&[], rules), SideOut::new(&[], rules)];
        let mut clock = Clock::new(None, 0, 1);
        let checkpoints = TurnCheckpoints::new(2);
        let (mut first, mut second) = (
            Turn::new(Slicing::new(2, 0.01, 0.0, 0.02).unwrap(), None, 0, false),
            Turn::new(Slicing::new(2, 0.01, 0.0, 0.02).unwrap(), None, 0, false),
        );
        assert!(first.move_to(0, &mut outs, &mut clock).unwrap() && second.move_to(0, &mut outs, &mut clock).unwrap());
        checkpoints.at_turn_start(&first, &mut holds[0], &mut outs[0]).unwrap();
        let side0 = bytes(&paths[0]);
        assert!(side0 > 300_000 && outs[0].stalls.checkpoint.count == 1, "side 0's rows in its database: {side0}");
        assert_eq!(bytes(&paths[1]), before[1], "side 1's WAL untouched in side 0's turn");
        write(&mut holds[0]);
        checkpoints.at_turn_start(&second, &mut holds[0], &mut outs[0]).unwrap();
        assert!(bytes(&paths[0]) == side0 && outs[0].stalls.checkpoint.count == 1, "one checkpoint a turn");
        assert!(first.move_to(10_000_000, &mut outs, &mut clock).unwrap());
        assert_eq!(first.slice.side, 1);
        checkpoints.at_turn_start(&first, &mut holds[1], &mut outs[1]).unwrap();
        assert!(bytes(&paths[1]) > 300_000 && outs[1].stalls.checkpoint.count == 1, "side 1's, in its own turn");
        assert_eq!(bytes(&paths[0]), side0, "and not side 0's");
        assert!(outs.iter().all(|o| o.stalls.checkpoint.sum_ns > 0));
        drop(holds);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
