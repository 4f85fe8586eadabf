//! Creates the sbtest tables and fills them in one transaction per table with a prepared insert,
//! deterministically for a seed.

use std::time::Instant;

use crate::rng::WyRand;
use rand::{Rng, SeedableRng};

use crate::engine::factory::Engine;
use crate::engine::{Connection, Value};
use crate::job::{Job, LoadResult, Schema};
use crate::params::digits;

pub fn load(job: &Job) -> Result<LoadResult, String> {
    let schema = job.schema.as_ref().ok_or("load job has no schema")?;
    let engine = Engine::open(job)?;
    let mut conn = engine.connect()?;
    let started = Instant::now();
    load_into(conn.as_mut(), &engine, job, schema)?;
    Ok(LoadResult {
        engine_version: engine.version(),
        tables: job.tables,
        rows: job.tables as u64 * job.table_size,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Creates and fills the tables on this connection (also a run's in-memory SQLite database, see run.rs).
pub fn load_into(conn: &mut dyn Connection, engine: &Engine, job: &Job, schema: &Schema) -> Result<(), String> {
    let mut rng = WyRand::seed_from_u64(job.seed);
    let mut values = vec![Value::Int(0), Value::Int(0), Value::Text(String::new()), Value::Text(String::new())];
    for t in 1..=job.tables {
        let table = t.to_string();
        for sql in &schema.create {
            conn.batch(&sql.replace("{table}", &table))?;
        }
        conn.batch(engine.begin_sql(true))?;
        let insert = conn.prepare(&schema.insert.replace("{table}", &table))?;
        for id in 1..=job.table_size {
            values[0] = Value::Int(id as i64);
            values[1] = Value::Int(rng.gen_range(1..=job.table_size) as i64);
            if let Value::Text(s) = &mut values[2] {
                digits(&mut rng, schema.c_groups, s);
            }
            if let Value::Text(s) = &mut values[3] {
                digits(&mut rng, schema.pad_groups, s);
            }
            conn.execute(insert, &values).map_err(|e| format!("loading sbtest{table} row {id}: {e}"))?;
        }
        conn.batch("COMMIT")?;
        for sql in &schema.after_load {
            conn.batch(&sql.replace("{table}", &table))?;
        }
    }
    Ok(())
}
