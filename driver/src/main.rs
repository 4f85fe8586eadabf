//! dbperf-driver: runs one benchmark cell (or loads the tables) as described by a JSON job and prints a JSON
//! result on stdout. Errors are one line on stderr and exit code 2.
//!
//! Usage: dbperf-driver run|load|exec JOB.json   (or `-` for stdin)
//!        dbperf-driver info sqlite LIBRARY  (engine version of a library)
//!        dbperf-driver --version

mod client;
#[cfg(test)]
mod contract;
mod engine;
mod event;
mod job;
#[cfg(test)]
mod layers;
mod load;
#[cfg(test)]
mod no_alloc;
mod params;
mod process;
mod procstat;
mod result;
mod rng;
mod run;
mod schedule;
mod series;
mod side_out;
mod slices;
mod stale;
mod stalls;
mod start;
mod steady;
mod tick;
mod turn;
mod turn_checkpoint;
mod usage;

use std::io::Read;
use std::process::ExitCode;

use job::{Job, Mode};

fn read_job(path: &str) -> Result<Job, String> {
    let text = if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| format!("reading stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?
    };
    serde_json::from_str(&text).map_err(|e| format!("bad job: {e}"))
}

fn main_inner(args: &[String]) -> Result<String, String> {
    match args {
        [flag] if flag == "--version" => Ok(format!("dbperf-driver {}", env!("CARGO_PKG_VERSION"))),
        [cmd, engine, library] if cmd == "info" => {
            if engine != "sqlite" {
                return Err(format!("engine {engine:?} is not supported by this driver"));
            }
            let api = engine::sqlite::Api::load(library)?;
            Ok(serde_json::json!({"engine_version": api.version(), "threadsafe": api.threadsafe()}).to_string())
        }
        [cmd, path] if cmd == "run" || cmd == "load" || cmd == "exec" => {
            let job = read_job(path)?;
            let expected = match cmd.as_str() {
                "run" => Mode::Run,
                "load" => Mode::Load,
                _ => Mode::Exec,
            };
            if job.mode != expected {
                return Err(format!("job mode is {:?} but the command is {cmd}", job.mode));
            }
            let out = match job.mode {
                Mode::Run if job.slices.is_some() => serde_json::to_string(&slices::run(&job)?),
                Mode::Run => serde_json::to_string(&run::run(&job)?),
                Mode::Load => serde_json::to_string(&load::load(&job)?),
                Mode::Exec => {
                    let engine = engine::factory::Engine::open(&job)?;
                    let mut conn = engine.connect()?;
                    for sql in &job.statements {
                        conn.batch(sql)?;
                    }
                    serde_json::to_string(&serde_json::json!({"engine_version": engine.version()}))
                }
            };
            out.map_err(|e| e.to_string())
        }
        [cmd, path] if cmd == "stale-reads" => stale::run::main(path),
        _ => Err("usage: dbperf-driver run|load|exec|stale-reads JOB.json | info sqlite LIBRARY | --version".into()),
    }
}

/// The lab passes its pid (DBPERF_PARENT_PID, set by dbperf/runner/driver.py): the driver then dies with its parent
/// (SIGKILL when the lab goes, however it goes, SIGKILL and the OOM killer included) instead of running on under PID 1.
/// PR_SET_PDEATHSIG fires when the *thread* that forked us exits, not the process: the lab forks drivers from its main
/// thread (cells, loads), PGO training from a build pool thread, and in every case the forking thread blocks until the
/// driver has exited, so a thread's end never kills a running driver. Run by hand, or under valgrind or perf by
/// `dbperf profile` (dbperf/explain/cachegrind.py and perfstat.py give the tool an environment of their own, without
/// the variable; perf forks us, so our parent would not be the lab), nothing is set.
fn die_with_the_lab() {
    let Some(lab) = std::env::var("DBPERF_PARENT_PID").ok().and_then(|v| v.parse::<libc::pid_t>().ok()) else {
        return;
    };
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number; getppid has no arguments.
    let parent = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::getppid()
    };
    // If the lab died before the prctl we have been adopted, and no signal will come. A parent other than the lab
    // (a wrapper script given as DBPERF_DRIVER that starts us as its child) is fine as long as the lab itself lives;
    // the signal then comes when the wrapper goes.
    if parent != lab && !alive(lab) {
        eprintln!("dbperf-driver: the lab (pid {lab}) is gone; exiting");
        std::process::exit(3);
    }
}

/// Running, not a zombie: a lab killed hard is a zombie until its own parent reaps it.
fn alive(pid: libc::pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may itself hold spaces or ')'.
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

fn main() -> ExitCode {
    die_with_the_lab();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match main_inner(&args) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dbperf-driver: {}", e.replace('\n', " "));
            ExitCode::from(2)
        }
    }
}
