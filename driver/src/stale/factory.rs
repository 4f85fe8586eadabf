//! Picks the stale-read probe's engine for a job: the one place that knows every engine of the probe.

use crate::stale::{mariadb, mysql, postgres, Probe, StaleJob, Writer};

/// The probe's connections (the writer on the primary, a reader on each replica) of the job's engine.
pub fn open_probe(job: &StaleJob) -> Result<Box<dyn Probe>, String> {
    Ok(match job.engine.as_str() {
        "mariadb" => Box::new(mariadb::MyProbe::open(job, &mariadb::WAIT)?),
        "mysql" => Box::new(mysql::open(job)?),
        "postgres" => Box::new(postgres::PgProbe::open(job)?),
        other => return Err(format!("stale-reads: engine {other:?} is not supported")),
    })
}

/// A background writer on the primary `dsn`; `engine` is one `open_probe` accepted (MariaDB's and MySQL's writer is
/// one: the same UPDATE on the same wire client).
pub fn open_writer(engine: &str, dsn: &str) -> Result<Box<dyn Writer>, String> {
    if engine == "postgres" {
        return postgres::open_writer(dsn);
    }
    mariadb::open_writer(dsn)
}
