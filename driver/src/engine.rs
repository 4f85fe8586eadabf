//! What the hot loop needs of an engine: connections that prepare and execute statements. One implementation per
//! engine; the workload code never knows which engine it drives.

use std::sync::Arc;

use crate::job::Job;
use crate::{my, pgwire, pragmas, sqlite};

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

/// The password of a server engine comes from the environment only, never from the job or the command line.
const PASSWORD_ENV: &str = "DBPERF_PASSWORD";

enum Kind {
    Sqlite { api: Arc<sqlite::Api>, database: String, busy_timeout_ms: u32, settings: Vec<(String, String)> },
    Postgres { config: Box<postgres::Config>, label: String },
    Mysql { opts: Box<mysql::Opts>, label: String },
}

/// An engine opened for a job: it knows how to make connections and how to begin a transaction.
pub struct Engine {
    kind: Kind,
    prepared: bool,
    version: String,
}

/// The DSN without anything after a user's ':' (a password never reaches a message).
fn label(dsn: &str) -> String {
    match (dsn.find("://"), dsn.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &dsn[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}{}", &dsn[..s + 3], user, &dsn[at..])
        }
        _ => dsn.to_string(),
    }
}

impl Engine {
    pub fn open(job: &Job) -> Result<Engine, String> {
        let password = std::env::var(PASSWORD_ENV).ok();
        let dsn = || job.dsn.clone().ok_or_else(|| format!("engine {} needs a dsn", job.engine));
        let (kind, version) = match job.engine.as_str() {
            "sqlite" => {
                let api = sqlite::Api::load(&job.library)?;
                if job.threads > 1 && !api.threadsafe() {
                    return Err(format!(
                        "{} was built with SQLITE_THREADSAFE=0 and cannot serve {} threads",
                        job.library, job.threads
                    ));
                }
                let version = api.version();
                let kind = Kind::Sqlite {
                    api,
                    database: job.database.clone(),
                    busy_timeout_ms: job.busy_timeout_ms,
                    settings: job.settings.clone(),
                };
                (kind, version)
            }
            "postgres" => {
                let dsn = dsn()?;
                let config = pgwire::config(&dsn, password.as_deref())?;
                let label = label(&dsn);
                let version = pgwire::PgWire::open(&config, &label, false)?.version()?;
                (Kind::Postgres { config: Box::new(config), label }, version)
            }
            "mariadb" | "mysql" => {
                let dsn = dsn()?;
                let opts = my::options(&dsn, password.as_deref())?;
                let label = label(&dsn);
                let version = my::MyConnection::open(&opts, &label, false)?.version()?;
                (Kind::Mysql { opts: Box::new(opts), label }, version)
            }
            other => return Err(format!("engine {other:?} is not supported by this driver")),
        };
        Ok(Engine { kind, prepared: job.prepared, version })
    }

    pub fn version(&self) -> String {
        self.version.clone()
    }

    pub fn connect(&self) -> Result<Box<dyn Connection>, String> {
        match &self.kind {
            Kind::Sqlite { api, database, busy_timeout_ms, settings } => {
                let mut c = sqlite::SqliteConnection::open(api.clone(), database, *busy_timeout_ms, self.prepared)?;
                pragmas::apply_all(&mut c, settings)?;
                Ok(Box::new(c))
            }
            Kind::Postgres { config, label } => Ok(Box::new(pgwire::PgWire::open(config, label, self.prepared)?)),
            Kind::Mysql { opts, label } => Ok(Box::new(my::MyConnection::open(opts, label, self.prepared)?)),
        }
    }

    /// SQLite: a writing transaction takes the write lock at BEGIN, otherwise two readers upgrading to writers
    /// deadlock and the busy handler cannot help. Servers lock rows as they go.
    pub fn begin_sql(&self, writes: bool) -> &'static str {
        match self.kind {
            Kind::Sqlite { .. } if writes => "BEGIN IMMEDIATE",
            _ => "BEGIN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels_drop_passwords() {
        assert_eq!(label("postgresql://bob:secret@127.0.0.1:5432/db"), "postgresql://bob@127.0.0.1:5432/db");
        assert_eq!(label("mysql://bob@127.0.0.1:3306/db"), "mysql://bob@127.0.0.1:3306/db");
        assert_eq!(label("mysql://127.0.0.1/db"), "mysql://127.0.0.1/db");
    }
}
