//! Opens the engine a job names: picks the backend (SQLite, PostgreSQL, MariaDB/MySQL) and makes its connections.
//! The one place that knows every backend; the backends know only the `Connection` trait.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::dsn::{label, password_in};
use crate::engine::{mywire, paced, page_cache, pgwire, pragmas, sqlite, Connection, Value};
use crate::job::Job;

/// Where an engine a job names runs: inside this process (a library loaded) or as a server it connects to. Asked
/// by whoever must treat the two apart (slices.rs: a run's sides are all one or all the other).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Placement {
    InProcess,
    Server,
}

/// The placement of a named engine; an engine this driver does not run is an error naming those it does.
pub fn placement(engine: &str) -> Result<Placement, String> {
    match engine {
        "sqlite" => Ok(Placement::InProcess),
        "postgres" | "mariadb" | "mysql" => Ok(Placement::Server),
        other => Err(format!("engine {other:?} is not one this driver runs (sqlite, postgres, mariadb, mysql)")),
    }
}

enum Kind {
    Sqlite { api: Arc<sqlite::Api>, database: String, busy_timeout_ms: u32, settings: Vec<(String, String)> },
    Postgres { config: Box<postgres::Config>, label: String },
    Mysql { opts: Box<mywire::Options>, label: String },
}

/// An engine opened for a job: it knows how to make connections and how to begin a transaction.
pub struct Engine {
    kind: Kind,
    prepared: bool,
    version: String,
    page_cache: Option<page_cache::PageCacheFacts>,
    /// Servers, counted runs: the pause before each request (Job::request_pause_us).
    request_pause: Option<Duration>,
}

impl Engine {
    pub fn open(job: &Job) -> Result<Engine, String> {
        let password = password_in(job.password_env.as_deref())?;
        let dsn = || job.dsn.clone().ok_or_else(|| format!("engine {} needs a dsn", job.engine));
        let mut page_cache = None;
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
                if job.page_cache_slots > 0 {
                    // Before the first connection: SQLite refuses the buffer once it has initialised.
                    let page_size = job
                        .settings
                        .iter()
                        .find(|(name, _)| name == "page_size")
                        .and_then(|(_, v)| v.parse().ok())
                        .unwrap_or(4096);
                    page_cache =
                        Some(page_cache::configure(&api, job.page_cache_slots, job.page_cache_huge, page_size)?);
                }
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
                let opts = mywire::options(&dsn, password.as_deref())?;
                let label = label(&dsn);
                let version = mywire::MyWire::open(&opts, &label, false)?.version()?;
                (Kind::Mysql { opts: Box::new(opts), label }, version)
            }
            other => return Err(format!("engine {other:?} is not supported by this driver")),
        };
        if job.page_cache_slots > 0 && page_cache.is_none() {
            return Err(format!("page_cache_slots is for SQLite, not {}", job.engine));
        }
        let request_pause = (job.request_pause_us > 0).then(|| Duration::from_micros(job.request_pause_us));
        if request_pause.is_some() && matches!(kind, Kind::Sqlite { .. }) {
            return Err("request_pause_us is for servers (SQLite runs inside the driver: it never waits)".into());
        }
        Ok(Engine { kind, prepared: job.prepared, version, page_cache, request_pause })
    }

    pub fn version(&self) -> String {
        self.version.clone()
    }

    /// The page cache buffer's facts at the end of the run (None: SQLite's own malloc'd pages, or a server).
    pub fn page_cache_at_end(&self) -> Option<page_cache::PageCacheFacts> {
        match (&self.kind, &self.page_cache) {
            (Kind::Sqlite { api, .. }, Some(facts)) => Some(facts.at_end(api)),
            _ => None,
        }
    }

    pub fn connect(&self) -> Result<Box<dyn Connection>, String> {
        Ok(match self.connect_for_loop()? {
            Connected::Sqlite(c) => c,
            Connected::Server(c) => c,
        })
    }

    /// A connection for the hot loop: SQLite's by its type, so that its execute inlines there (the engine is
    /// cheapest and the driver's own cost shows most), a server's behind the trait.
    pub fn connect_for_loop(&self) -> Result<Connected, String> {
        match &self.kind {
            Kind::Sqlite { api, database, busy_timeout_ms, settings } => {
                let mut c = sqlite::SqliteConnection::open(api.clone(), database, *busy_timeout_ms, self.prepared)?;
                pragmas::apply_all(&mut c, settings)?;
                Ok(Connected::Sqlite(Box::new(c)))
            }
            Kind::Postgres { config, label } => {
                Ok(self.server(Box::new(pgwire::PgWire::open(config, label, self.prepared)?)))
            }
            Kind::Mysql { opts, label } => Ok(self.server(Box::new(mywire::MyWire::open(opts, label, self.prepared)?))),
        }
    }

    fn server(&self, c: Box<dyn Connection>) -> Connected {
        Connected::Server(match self.request_pause {
            Some(pause) => Box::new(paced::Paced::new(c, pause)),
            None => c,
        })
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

/// See `Engine::connect_for_loop`.
pub enum Connected {
    Sqlite(Box<sqlite::SqliteConnection>),
    Server(Box<dyn Connection>),
}

impl Connected {
    pub fn as_dyn(&mut self) -> &mut dyn Connection {
        match self {
            Connected::Sqlite(c) => c.as_mut(),
            Connected::Server(c) => c.as_mut(),
        }
    }

    #[inline(always)]
    pub fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        match self {
            Connected::Sqlite(c) => c.execute(id, values),
            Connected::Server(c) => c.execute(id, values),
        }
    }
}
