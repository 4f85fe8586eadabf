//! What the hot loop needs of an engine: connections that prepare and execute statements. One implementation per
//! engine; the workload code never knows which engine it drives.

use std::sync::Arc;

use crate::job::Job;
use crate::sqlite;

#[derive(Debug, Clone)]
pub enum Value {
    Int(i64),
    Text(String),
}

pub trait Connection: Send {
    /// Runs SQL text without parameters (settings, DDL, BEGIN/COMMIT).
    fn batch(&mut self, sql: &str) -> Result<(), String>;
    /// Registers a statement and returns its id for `execute`.
    fn prepare(&mut self, sql: &str) -> Result<usize, String>;
    /// Executes a registered statement, fetching every row; returns the number of rows.
    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String>;
}

/// An engine opened for a job: it knows how to make connections and how to begin a transaction.
pub struct Engine {
    api: Arc<sqlite::Api>,
    database: String,
    busy_timeout_ms: u32,
    prepared: bool,
    settings: Vec<(String, String)>,
}

impl Engine {
    pub fn open(job: &Job) -> Result<Engine, String> {
        match job.engine.as_str() {
            "sqlite" => {
                let api = sqlite::Api::load(&job.library)?;
                if job.threads > 1 && !api.threadsafe() {
                    return Err(format!(
                        "{} was built with SQLITE_THREADSAFE=0 and cannot serve {} threads",
                        job.library, job.threads
                    ));
                }
                Ok(Engine {
                    api,
                    database: job.database.clone(),
                    busy_timeout_ms: job.busy_timeout_ms,
                    prepared: job.prepared,
                    settings: job.settings.clone(),
                })
            }
            other => Err(format!("engine {other:?} is not supported by this driver")),
        }
    }

    pub fn version(&self) -> String {
        self.api.version()
    }

    pub fn connect(&self) -> Result<Box<dyn Connection>, String> {
        let mut c =
            sqlite::SqliteConnection::open(self.api.clone(), &self.database, self.busy_timeout_ms, self.prepared)?;
        for (key, value) in &self.settings {
            c.batch(&format!("PRAGMA {key} = {value}")).map_err(|e| format!("setting {key}: {e}"))?;
        }
        Ok(Box::new(c))
    }

    /// SQLite: a writing transaction takes the write lock at BEGIN, otherwise two readers upgrading to writers
    /// deadlock and the busy handler cannot help.
    pub fn begin_sql(&self, writes: bool) -> &'static str {
        if writes {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN"
        }
    }
}
