//! dbperf-driver: runs one benchmark cell (or loads the tables) as described by a JSON job and prints a JSON
//! result on stdout. Errors are one line on stderr and exit code 2.
//!
//! Usage: dbperf-driver run|load|exec JOB.json   (or `-` for stdin)
//!        dbperf-driver info sqlite LIBRARY  (engine version of a library)
//!        dbperf-driver --version

mod engine;
mod job;
mod load;
mod my;
mod params;
mod pg;
mod process;
mod procstat;
mod run;
mod sqlite;
mod sqltext;
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
            let api = sqlite::Api::load(library)?;
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
                Mode::Run => serde_json::to_string(&run::run(&job)?),
                Mode::Load => serde_json::to_string(&load::load(&job)?),
                Mode::Exec => {
                    let engine = engine::Engine::open(&job)?;
                    let mut conn = engine.connect()?;
                    for sql in &job.statements {
                        conn.batch(sql)?;
                    }
                    serde_json::to_string(&serde_json::json!({"engine_version": engine.version()}))
                }
            };
            out.map_err(|e| e.to_string())
        }
        _ => Err("usage: dbperf-driver run|load|exec JOB.json | info sqlite LIBRARY | --version".into()),
    }
}

fn main() -> ExitCode {
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
