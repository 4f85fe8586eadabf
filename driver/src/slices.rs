//! Slices runs (`order = "slices"`, dbperf/runner/slices.py): several SQLite builds, or several servers, measured
//! from one process, taking turns every `slice_s`. Where the host's speed changes within a second (docs/verdicts.md:
//! one process's 0.1 s samples correlate at +0.66 0.1 s apart and not at all 2 s apart), two builds alternating every
//! 20 ms meet the same host, where two processes a second apart do not.
//!
//! A run's sides are all SQLite or all servers. A SQLite side is a library file of its own (dlopen maps one file
//! once, whatever its path, so two sides on one file are refused), with its own database and settings. A server side
//! is a server of its own (its engine, DSN and password's variable; two sides on one DSN or one server pid are
//! refused), opened through the engine factory as an ordinary run opens it; sides may be different server engines
//! (the workload is one for all: the lab refuses engines whose SQL differs). Where the lab gives a side's server pid,
//! thread 0 samples every side's server (its process tree's CPU) when the measured window opens and when the run
//! ends: each server over the whole window, its own sides' slices and the others'. Every client thread opens one
//! connection per side and prepares the workload on each; then all threads are released together.
//!
//! How the run is cut into slices, and whose turn it is, is turn.rs's; the threads run the driver's one client loop
//! (client.rs), each event on the connection of the slice's side. Each side's result is what an ordinary run
//! reports: its counts and latencies, its threads' CPU time (read at every switch), and one interval per slice of its
//! own.

use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

use crate::client::{self, Clients, Plan, Shared};
use crate::engine::dsn::label;
use crate::engine::factory::{placement, Engine, Placement};
use crate::job::{Job, SliceSide, SlicesResult, Usage, Workload};
use crate::process;
use crate::result::{side_result, Measured};
use crate::run;
use crate::series::Board;
use crate::turn::Slicing;
use crate::turn_checkpoint::{TurnCheckpoints, AUTO_OFF};

/// Why slices cannot run this job (one line), else its sides.
fn check<'a>(job: &'a Job, workload: &Workload) -> Result<&'a [SliceSide], String> {
    let sides = job.slices.as_deref().ok_or("not a slices job")?;
    let own_side = !(job.library.is_empty() && job.database.is_empty() && job.settings.is_empty())
        || job.dsn.is_some()
        || job.server_pid.is_some()
        || job.password_env.is_some();
    let refusal: Option<String> = if own_side {
        Some(
            "each side's library, database and settings, or its dsn, server pid and password's variable, go in \
             `slices`; the job's own stay empty"
                .into(),
        )
    } else if job.rate.is_some() {
        Some(
            "an open-loop rate: its schedule would run across every side's slices; slices runs are closed loops".into(),
        )
    } else if job.steady.is_some() {
        Some("a steady-state warm-up ends when the process settles, not per side; give a fixed warmup_s".into())
    } else if job.events.is_some() || job.deterministic {
        Some("events (counted) and deterministic runs count work, not time; slices are time".into())
    } else if job.start_fd.is_some() || job.window_fd.is_some() {
        Some("start_fd and window_fd are for runs of several processes (duets) or a steady state".into())
    } else {
        None
    };
    if let Some(why) = refusal {
        return Err(format!("slices: {why}"));
    }
    run::check_job(job, workload)?;
    match same_kind(job, sides)? {
        Placement::InProcess => distinct(sides)?,
        Placement::Server if job.turn_checkpoint => {
            return Err("slices: turn_checkpoint checkpoints SQLite's WAL; a server checkpoints on its own".into())
        }
        Placement::Server => distinct_servers(sides)?,
    }
    Ok(sides)
}

/// The engine a side runs: its own, or the job's.
fn engine_of<'a>(job: &'a Job, side: &'a SliceSide) -> &'a str {
    side.engine.as_deref().unwrap_or(&job.engine)
}

/// The kind of every side, which must be one: a run holds SQLite libraries or connections to servers, not both (a
/// SQLite side runs on the client's CPU, a server's on its own: their slices would not measure alike).
fn same_kind(job: &Job, sides: &[SliceSide]) -> Result<Placement, String> {
    let mut first: Option<(Placement, &str)> = None;
    for (j, side) in sides.iter().enumerate() {
        let engine = engine_of(job, side);
        let kind = placement(engine).map_err(|e| format!("slices: side {j}'s {e}"))?;
        match first {
            None => first = Some((kind, engine)),
            Some((k, e0)) if k != kind => {
                return Err(format!(
                    "slices: side 0 is {e0} and side {j} {engine}: a run's sides are all SQLite libraries or all \
                     servers"
                ))
            }
            Some(_) => {}
        }
    }
    first.map(|(k, _)| k).ok_or_else(|| "slices: the job lists no side".to_string())
}

/// Two sides on one library file would run one copy of it (dlopen maps a file once, by device and inode), and two
/// on one database file would have two copies of SQLite's per-process lock table, each blind to the other's locks.
fn distinct(sides: &[SliceSide]) -> Result<(), String> {
    for (j, b) in sides.iter().enumerate() {
        if b.library.is_empty() {
            return Err(format!("slices: side {j} names no library"));
        }
        if b.dsn.is_some() || b.server_pid.is_some() || b.password_env.is_some() {
            return Err(format!("slices: side {j} is a SQLite library; a dsn, server pid or password is a server's"));
        }
        if b.database.is_empty() || b.database == ":memory:" {
            return Err(format!("slices: side {j} needs a database file (an in-memory one lives in one connection)"));
        }
        for (i, a) in sides[..j].iter().enumerate() {
            if same_file(&a.library, &b.library) {
                return Err(format!(
                    "slices: sides {i} and {j} load the same library file {} (dlopen maps a file once: both would run \
                     one copy); give each side a copy of its own",
                    b.library
                ));
            }
            if same_file(&a.database, &b.database) {
                return Err(format!(
                    "slices: sides {i} and {j} use the same database {}; give each its own",
                    b.database
                ));
            }
        }
    }
    Ok(())
}

/// Two server sides on one DSN (or one server) would measure one server twice, each side's writes in the other's
/// tables; a server side names no library, database or settings (its settings are its server's configuration).
fn distinct_servers(sides: &[SliceSide]) -> Result<(), String> {
    for (j, b) in sides.iter().enumerate() {
        if !(b.library.is_empty() && b.database.is_empty() && b.settings.is_empty()) {
            return Err(format!(
                "slices: side {j} is a server: it names a dsn, not a library, database or settings (its settings are \
                 its server's configuration)"
            ));
        }
        let Some(dsn) = b.dsn.as_deref().filter(|d| !d.is_empty()) else {
            return Err(format!("slices: side {j} is a server and names no dsn"));
        };
        for (i, a) in sides[..j].iter().enumerate() {
            if a.dsn == b.dsn || (b.server_pid.is_some() && a.server_pid == b.server_pid) {
                return Err(format!(
                    "slices: sides {i} and {j} connect to the same server ({}); give each its own",
                    label(dsn)
                ));
            }
        }
    }
    Ok(())
}

fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// The job an ordinary run of this side would have: the engine factory opens the side from it.
fn side_job(job: &Job, side: &SliceSide) -> Job {
    let (library, database, mut settings) = (side.library.clone(), side.database.clone(), side.settings.clone());
    if job.turn_checkpoint {
        settings.push((AUTO_OFF.0.into(), AUTO_OFF.1.into())); // after the side's own: the turn checkpoints instead
    }
    let (engine, dsn, password_env) = (engine_of(job, side).to_string(), side.dsn.clone(), side.password_env.clone());
    Job {
        engine,
        library,
        database,
        settings,
        dsn,
        server_pid: side.server_pid,
        password_env,
        slices: None,
        ..job.clone()
    }
}

pub fn run(job: &Job) -> Result<SlicesResult, String> {
    let workload = job.workload.clone().ok_or("run job has no workload")?;
    let sides = check(job, &workload)?;
    let slicing = Slicing::new(sides.len(), job.slice_s, job.warmup_s, job.time_s)?;
    if job.thp_disable {
        process::disable_thp()?;
    }
    let engines = sides.iter().map(|s| Engine::open(&side_job(job, s))).collect::<Result<Vec<_>, _>>()?;
    let servers: Vec<Option<u32>> = sides.iter().map(|s| s.server_pid).collect();
    let boards: Vec<Board> = (0..sides.len()).map(|s| Board::with_spans(job.threads, slicing.spans(s))).collect();
    let checkpoints = TurnCheckpoints::new(sides.len());
    let mut shared = Shared::new((&engines, &servers), &workload, &boards, Plan::new(job, Some(slicing)), None);
    shared.checkpoints = job.turn_checkpoint.then_some(&checkpoints);
    let Clients { sides: outs, sampled, t0, .. } = client::run_clients(&shared, None)?;
    let (client_usage, servers) = match sampled {
        Some(s) => (s.usage, s.servers),
        None => (Usage::default(), vec![None; sides.len()]),
    };
    let window = Window {
        warmup_s: slicing.window_ns() as f64 / 1e9,
        per_side_s: slicing.per_side_ns() as f64 / 1e9,
        start_unix_s: unix_now() - t0.elapsed().as_secs_f64() + slicing.window_ns() as f64 / 1e9,
    };
    let results = outs
        .into_iter()
        .zip(boards)
        .zip(engines.iter().zip(servers))
        .map(|((out, board), (engine, server))| {
            // A side's window is its own measured slices (duration_s = time_s), its client CPU its threads' CPU
            // time in them, its intervals its slices; its server's usage (a server side the lab started) is the
            // server's over the process's whole measured window.
            let turns = Some(out.stalls.report(job.turn_checkpoint));
            let measured = Measured {
                secs: window.per_side_s,
                client_usage: out.cpu.usage(),
                server,
                intervals: board.into_intervals(),
                interval_s: job.slice_s,
                warmup_s: window.warmup_s,
                window_start_unix_s: window.start_unix_s,
                steady: None,
                open_loop: None,
                turns,
            };
            side_result(job, &workload, engine, out, measured)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SlicesResult {
        slice_s: job.slice_s,
        threads: job.threads,
        duration_s: window.per_side_s * sides.len() as f64,
        warmup_s: window.warmup_s,
        window_start_unix_s: window.start_unix_s,
        client_usage,
        process: process::facts(job.thp_disable),
        sides: results,
    })
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The process's window, as every side's result says it.
struct Window {
    warmup_s: f64,
    per_side_s: f64,
    start_unix_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQLITE: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

    fn job(extra: serde_json::Value) -> Job {
        let mut job = serde_json::json!({
            "mode": "run", "engine": "sqlite", "tables": 1, "table_size": 10, "time_s": 0.5, "warmup_s": 0.1,
            "slices": [{"library": "/a/lib1.so", "database": "/a/1.db"},
                       {"library": "/a/lib2.so", "database": "/a/2.db"}],
            "workload": {"name": "w", "transaction": false, "writes": false, "slots": 0,
                         "statements": [{"sql": "SELECT 1", "binds": []}]}});
        job.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(job).unwrap()
    }

    fn refusal(extra: serde_json::Value) -> String {
        let job = job(extra);
        check(&job, job.workload.as_ref().unwrap()).map(|_| ()).unwrap_err()
    }

    #[test]
    fn what_slices_cannot_do_is_refused_in_one_line() {
        let plain = job(serde_json::json!({}));
        assert!(check(&plain, plain.workload.as_ref().unwrap()).is_ok());
        for (extra, says) in [
            (serde_json::json!({"engine": "postgres"}), "side 0 is a server: it names a dsn, not a library"),
            (serde_json::json!({"engine": "oracle"}), "side 0's engine \"oracle\" is not one this driver runs"),
            (serde_json::json!({"dsn": "postgresql://u@h:1/db"}), "the job's own stay empty"),
            (serde_json::json!({"password_env": "X"}), "the job's own stay empty"),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/1.db"},
                                              {"engine": "postgres", "dsn": "postgresql://u@h:1/db"}]}),
                "side 0 is sqlite and side 1 postgres: a run's sides are all SQLite libraries or all servers",
            ),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/1.db", "password_env": "P"},
                                              {"library": "/a/2.so", "database": "/a/2.db"}]}),
                "side 0 is a SQLite library; a dsn, server pid or password is a server's",
            ),
            (serde_json::json!({"rate": 100.0}), "open-loop rate"),
            (
                serde_json::json!({"steady": {"tolerance": 0.05, "window": 3, "interval_s": 1.0,
                                              "max_warmup_s": 30.0}}),
                "steady-state",
            ),
            (serde_json::json!({"events": 100}), "events (counted)"),
            (serde_json::json!({"deterministic": true}), "deterministic"),
            (serde_json::json!({"start_fd": 3}), "start_fd"),
            (serde_json::json!({"library": "/a/lib1.so"}), "the job's own stay empty"),
            (
                serde_json::json!({"slices": [{"library": "/a/lib.so", "database": "/a/1.db"},
                                              {"library": "/a/lib.so", "database": "/a/2.db"}]}),
                "sides 0 and 1 load the same library file /a/lib.so",
            ),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/x.db"},
                                              {"library": "/a/2.so", "database": "/a/x.db"}]}),
                "sides 0 and 1 use the same database /a/x.db",
            ),
            (serde_json::json!({"slices": [{"library": "/a/1.so", "database": ":memory:"}]}), "needs a database file"),
        ] {
            let why = refusal(extra.clone());
            assert!(why.starts_with("slices: ") && why.contains(says), "{extra}: {why}");
            assert!(!why.contains('\n'));
        }
    }

    fn servers(sides: serde_json::Value) -> Job {
        job(serde_json::json!({"engine": "postgres", "slices": sides}))
    }

    #[test]
    fn server_sides_each_name_a_server_of_their_own() {
        let pg = |port: u16, pid: u32, var: &str| {
            serde_json::json!({"engine": "postgres", "dsn": format!("postgresql://dbperf@127.0.0.1:{port}/sbtest"),
                               "server_pid": pid, "password_env": var})
        };
        let two = servers(serde_json::json!([pg(5001, 11, "P1"), pg(5002, 12, "P2")]));
        assert_eq!(check(&two, two.workload.as_ref().unwrap()).unwrap().len(), 2);
        // different server engines in one run: the driver holds both (the lab checks that their SQL is one)
        let mixed = servers(serde_json::json!([pg(5001, 11, "P1"),
            {"engine": "mariadb", "dsn": "mysql://dbperf@127.0.0.1:3306/sbtest", "server_pid": 13}]));
        assert!(check(&mixed, mixed.workload.as_ref().unwrap()).is_ok());
        for (sides, says) in [
            (serde_json::json!([pg(5001, 11, "P1"), pg(5001, 12, "P2")]), "sides 0 and 1 connect to the same server"),
            (serde_json::json!([pg(5001, 11, "P1"), pg(5002, 11, "P2")]), "sides 0 and 1 connect to the same server"),
            (serde_json::json!([pg(5001, 11, "P1"), {"engine": "postgres"}]), "side 1 is a server and names no dsn"),
            (
                serde_json::json!([pg(5001, 11, "P1"), {"engine": "postgres", "dsn": "postgresql://u@h:2/d",
                                                        "settings": [["a", "b"]]}]),
                "side 1 is a server: it names a dsn, not a library, database or settings",
            ),
        ] {
            let job = servers(sides.clone());
            let why = check(&job, job.workload.as_ref().unwrap()).map(|_| ()).unwrap_err();
            assert!(why.starts_with("slices: ") && why.contains(says) && !why.contains('\n'), "{sides}: {why}");
        }
        let mut checkpointed = two.clone();
        checkpointed.turn_checkpoint = true;
        let why = check(&checkpointed, two.workload.as_ref().unwrap()).map(|_| ()).unwrap_err();
        assert!(why.starts_with("slices: turn_checkpoint checkpoints SQLite's WAL") && !why.contains('\n'), "{why}");
        // a side's job is what an ordinary run of its server would get
        let side: SliceSide = serde_json::from_value(pg(5002, 12, "P2")).unwrap();
        let one = side_job(&two, &side);
        assert_eq!(
            (one.engine.as_str(), one.dsn.as_deref()),
            ("postgres", Some("postgresql://dbperf@127.0.0.1:5002/sbtest"))
        );
        assert_eq!((one.server_pid, one.password_env.as_deref(), one.slices.is_none()), (Some(12), Some("P2"), true));
    }

    #[test]
    fn a_server_sides_password_is_in_its_own_variable_which_must_be_set() {
        let side: SliceSide = serde_json::from_value(serde_json::json!({
            "engine": "postgres", "dsn": "postgresql://dbperf@127.0.0.1:1/sbtest",
            "password_env": "DBPERF_TEST_SLICES_UNSET_PASSWORD"}))
        .unwrap();
        let job = side_job(&servers(serde_json::json!([])), &side);
        let why = Engine::open(&job).err().expect("no password: refused before connecting");
        assert!(why.contains("DBPERF_TEST_SLICES_UNSET_PASSWORD is not set"), "{why}");
    }

    #[test]
    fn one_library_file_under_two_names_is_the_same_file() {
        let dir = std::env::temp_dir().join(format!("dbperf-slices-same-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("lib.so"), dir.join("alias.so"));
        std::fs::write(&a, b"x").unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let sides = [
            SliceSide { library: a.to_str().unwrap().into(), database: "/a/1.db".into(), ..Default::default() },
            SliceSide { library: b.to_str().unwrap().into(), database: "/a/2.db".into(), ..Default::default() },
        ];
        assert!(distinct(&sides).unwrap_err().contains("same library file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The loop's share of an event (drawing it, executing it on SQLite, counting it) allocates nothing once its
    /// buffers are sized (no_alloc.rs). SQLite's own memory is malloc's, not counted.
    #[test]
    fn an_events_bookkeeping_allocates_nothing() {
        use crate::event::{hold, kinds_of, Draws, Hold};
        use crate::series::Tally;
        use crate::side_out::{Rules, SideOut, Times};
        use crate::tick;
        if !std::path::Path::new(SQLITE).exists() {
            return;
        }
        let select = |name: &str| {
            serde_json::json!({"name": name, "transaction": false, "writes": false, "slots": 0,
                               "statements": [{"sql": "SELECT ?", "binds": [{"gen": {"kind": "uniform", "lo": 1,
                                                                                      "hi": 100}, "slot": null}]}]})
        };
        let j = job(serde_json::json!({"workload": {"name": "mix", "transaction": false, "writes": false, "slots": 0,
                                                    "statements": [], "mix": [select("a"), select("b")]}}));
        let side = SliceSide { library: SQLITE.into(), database: ":memory:".into(), ..Default::default() };
        let engine = Engine::open(&side_job(&j, &side)).unwrap();
        let specs = kinds_of(j.workload.as_ref().unwrap());
        let (mut hold, mut draws) = (hold(&engine, &specs, 1, None).unwrap(), Draws::new(&specs, 1, 0, 1).unwrap());
        let rules = Rules { deterministic: false, open: false, limit_ns: None };
        let (mut out, mut cur) = (SideOut::new(&specs, rules), Tally::new());
        let mut one = |hold: &mut Hold, draws: &mut Draws, out: &mut SideOut| {
            let started = tick::now();
            let (k, outcome) = draws.event::<false>(hold, started);
            let done = tick::now();
            let at = Times { due: started, started, done };
            out.count::<false>(&mut cur, (k, &hold.kinds[k]), outcome, at, &draws.scratch);
        };
        one(&mut hold, &mut draws, &mut out); // the first use sizes the buffers
        let before = crate::no_alloc::allocations();
        for _ in 0..10_000 {
            one(&mut hold, &mut draws, &mut out);
        }
        assert_eq!(crate::no_alloc::allocations() - before, 0, "allocations in 10,000 events");
        assert_eq!(out.kind_events.iter().sum::<u64>(), 10_001);
    }

    /// A plain run and a one-side slices run of one seed run the same events, in the same order: the values a
    /// writing workload drew are one sequence (the longer run's goes on where the shorter one's stops). Each run
    /// appends to a database of its own; the two are compared row by row, by insertion order.
    #[test]
    fn a_plain_run_and_a_one_side_slices_run_draw_the_same_events() {
        if !std::path::Path::new(SQLITE).exists() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("dbperf-slices-same-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let workload = serde_json::json!({"name": "w", "transaction": false, "writes": true, "slots": 0,
            "statements": [{"sql": "INSERT INTO sbtest{table} (k) VALUES (?)",
                            "binds": [{"gen": {"kind": "uniform", "lo": 1, "hi": 1_000_000_000_i64}, "slot": null}]}]});
        let common = serde_json::json!({"seed": 7, "time_s": 0.1, "warmup_s": 0.02, "workload": workload});
        let fast = vec![("journal_mode".to_string(), "WAL".to_string()), ("synchronous".into(), "OFF".into())];
        let mut databases = Vec::new();
        for (name, sliced) in [("plain", false), ("sliced", true)] {
            let database = dir.join(format!("{name}.db")).to_str().unwrap().to_string();
            let side = SliceSide {
                library: SQLITE.into(),
                database: database.clone(),
                settings: fast.clone(),
                ..Default::default()
            };
            let engine = Engine::open(&side_job(&job(serde_json::json!({"slices": []})), &side)).unwrap();
            engine.connect().unwrap().batch("CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER)").unwrap();
            let mut j = job(common.clone());
            let events = if sliced {
                j.slice_s = 0.01;
                j.slices = Some(vec![side]);
                run(&j).unwrap().sides[0].events
            } else {
                (j.library, j.database, j.settings, j.slices) = (SQLITE.into(), database.clone(), fast.clone(), None);
                run::run(&j).unwrap().events
            };
            assert!(events > 0, "{name}: no events");
            databases.push(database);
        }
        let side = SliceSide { library: SQLITE.into(), database: databases[0].clone(), ..Default::default() };
        let engine = Engine::open(&side_job(&job(serde_json::json!({"slices": []})), &side)).unwrap();
        let mut c = engine.connect().unwrap();
        c.batch(&format!("ATTACH DATABASE '{}' AS sliced", databases[1])).unwrap();
        let mut rows = |sql: &str| {
            let id = c.prepare(sql).unwrap();
            c.execute(id, &[]).unwrap()
        };
        let (plain, sliced) = (rows("SELECT id FROM main.sbtest1"), rows("SELECT id FROM sliced.sbtest1"));
        let same = rows("SELECT a.id FROM main.sbtest1 a JOIN sliced.sbtest1 b ON a.id = b.id AND a.k = b.k");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(plain > 0 && sliced > 0);
        assert_eq!(same, plain.min(sliced), "{plain} and {sliced} events drawn, the first {same} alike");
    }

    /// Two sides on copies of Debian's SQLite library in DIR (dlopen maps one file once), each with its own
    /// database holding an empty sbtest1, opened with SETTINGS; the engine each side was set up through.
    fn two_sqlite_sides(dir: &std::path::Path, settings: Vec<(String, String)>) -> Vec<(SliceSide, Engine)> {
        std::fs::create_dir_all(dir).unwrap();
        (0..2)
            .map(|i| {
                let (library, database) = (dir.join(format!("lib{i}.so")), dir.join(format!("{i}.db")));
                std::fs::copy(SQLITE, &library).unwrap();
                let side = SliceSide {
                    library: library.to_str().unwrap().into(),
                    database: database.to_str().unwrap().into(),
                    settings: settings.clone(),
                    ..Default::default()
                };
                let engine = Engine::open(&side_job(&job(serde_json::json!({"slices": []})), &side)).unwrap();
                engine.connect().unwrap().batch("CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER)").unwrap();
                (side, engine)
            })
            .collect()
    }

    /// Two copies of Debian's SQLite side by side, two threads: every side measured, its time its own, one interval
    /// per slice. No timing is asserted beyond that each side completed events.
    #[test]
    fn two_copies_of_one_sqlite_take_turns_in_one_process() {
        if !std::path::Path::new(SQLITE).exists() {
            return; // Debian's libsqlite3-0, installed by `make setup`
        }
        let dir = std::env::temp_dir().join(format!("dbperf-slices-{}", std::process::id()));
        let mut sides = Vec::new();
        for (side, engine) in two_sqlite_sides(&dir, vec![("journal_mode".into(), "WAL".into())]) {
            let mut c = engine.connect().unwrap();
            for id in 1..=10 {
                c.batch(&format!("INSERT INTO sbtest1 VALUES ({id}, {id})")).unwrap();
            }
            sides.push(serde_json::json!({"library": side.library, "database": side.database,
                                          "settings": [["journal_mode", "WAL"]]}));
        }
        let job = job(serde_json::json!({
            "threads": 2, "time_s": 0.2, "warmup_s": 0.04, "slice_s": 0.02, "slices": sides,
            "workload": {"name": "w", "transaction": false, "writes": false, "slots": 0,
                         "statements": [{"sql": "SELECT k FROM sbtest{table} WHERE id = ?",
                                         "binds": [{"gen": {"kind": "uniform", "lo": 1, "hi": 10}, "slot": null}]}]}}));
        let r = run(&job).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(r.sides.len(), 2);
        assert!((r.duration_s - 0.4).abs() < 1e-9 && (r.warmup_s - 0.08).abs() < 1e-9);
        for (i, side) in r.sides.iter().enumerate() {
            assert!(side.events > 0 && side.errors == 0, "side {i}: {} events, {:?}", side.events, side.error_samples);
            assert!((side.duration_s - 0.2).abs() < 1e-9);
            assert_eq!(side.intervals.len(), 10, "side {i}: one interval per slice");
            assert_eq!(side.intervals.iter().map(|iv| iv.events).sum::<u64>(), side.events);
            let first = if i == 0 { 0.02 } else { 0.04 };
            assert!((side.intervals[0].t_s - first).abs() < 1e-9, "side {i} starts at {}", side.intervals[0].t_s);
            assert!(side.client_usage.user_us + side.client_usage.system_us > 0.0);
        }
    }

    /// Two copies of Debian's SQLite in WAL, both writing, with turn_checkpoint: each side's result says its own
    /// turn checkpoints (at most one per measured slice) and its spill; its connections run without SQLite's
    /// auto-checkpoint; without turn_checkpoint a side's result says none was run.
    #[test]
    fn each_side_checkpoints_in_its_own_turns_and_says_so() {
        if !std::path::Path::new(SQLITE).exists() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("dbperf-slices-checkpoint-{}", std::process::id()));
        let settings = vec![("journal_mode".into(), "WAL".into()), ("synchronous".into(), "NORMAL".into())];
        let sides: Vec<SliceSide> = two_sqlite_sides(&dir, settings).into_iter().map(|(side, _)| side).collect();
        let workload = serde_json::json!({"name": "w", "transaction": false, "writes": true, "slots": 0,
            "statements": [{"sql": "INSERT INTO sbtest{table} (k) VALUES (?)",
                            "binds": [{"gen": {"kind": "uniform", "lo": 1, "hi": 1000}, "slot": null}]}]});
        let mut j = job(serde_json::json!({"threads": 2, "time_s": 0.2, "warmup_s": 0.04, "slice_s": 0.02,
                                           "workload": workload}));
        j.slices = Some(sides.clone());
        j.turn_checkpoint = true;
        let off = side_job(&j, &sides[0]);
        assert_eq!(off.settings.last().map(|(k, v)| (k.as_str(), v.as_str())), Some(AUTO_OFF));
        let checkpointed = run(&j).unwrap();
        j.turn_checkpoint = false;
        let plain = run(&j).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for (i, side) in checkpointed.sides.iter().enumerate() {
            let t = side.turns.expect("a slices side says its turns");
            assert!(side.events > 0 && side.errors == 0, "side {i}: {:?}", side.error_samples);
            assert!(t.turn_checkpoint && (1..=10).contains(&t.checkpoints), "side {i}: {t:?}");
            assert!(t.checkpoint_s > 0.0 && t.checkpoint_max_s <= t.checkpoint_s, "side {i}: {t:?}");
            assert!(t.spill_s >= t.spill_max_s && t.spill_max_s >= 0.0, "side {i}: {t:?}");
        }
        for side in &plain.sides {
            let t = side.turns.expect("a slices side says its turns");
            assert_eq!((t.turn_checkpoint, t.checkpoints, t.checkpoint_s), (false, 0, 0.0));
            assert!(side.events > 0);
        }
    }
}
