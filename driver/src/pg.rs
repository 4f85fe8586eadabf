//! PostgreSQL through the `postgres` crate (synchronous, one connection per thread).

use bytes::BytesMut;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls, Statement};

use crate::engine::{Connection, Value};
use crate::sqltext::{dollar_placeholders, inline};

pub struct PgConnection {
    client: Client,
    prepared: bool,
    sql: Vec<String>,
    stmts: Vec<Option<Statement>>,
}

pub fn config(dsn: &str, password: Option<&str>) -> Result<postgres::Config, String> {
    let mut cfg: postgres::Config = dsn.parse().map_err(|e| format!("bad PostgreSQL DSN: {e}"))?;
    if let Some(p) = password {
        cfg.password(p);
    }
    Ok(cfg)
}

/// The server's own message where there is one ("password authentication failed for user ..."), not "db error".
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

impl PgConnection {
    pub fn open(cfg: &postgres::Config, label: &str, prepared: bool) -> Result<Self, String> {
        let client = cfg.connect(NoTls).map_err(|e| format!("cannot connect to {label}: {}", describe(&e)))?;
        Ok(PgConnection { client, prepared, sql: Vec::new(), stmts: Vec::new() })
    }

    pub fn version(&mut self) -> Result<String, String> {
        let row = self.client.query_one("SHOW server_version", &[]).map_err(|e| describe(&e))?;
        Ok(row.get::<_, String>(0))
    }
}

/// A parameter converted to the type the server inferred for its placeholder, passed without boxing or collecting
/// (the hot loop allocates nothing per parameter).
#[derive(Debug)]
enum Param<'a> {
    I16(i16),
    I32(i32),
    I64(i64),
    F64(f64),
    Str(&'a str),
    Owned(String),
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::I16(x) => x.to_sql(ty, out),
            Param::I32(x) => x.to_sql(ty, out),
            Param::I64(x) => x.to_sql(ty, out),
            Param::F64(x) => x.to_sql(ty, out),
            Param::Str(s) => s.to_sql(ty, out),
            Param::Owned(s) => s.as_str().to_sql(ty, out),
        }
    }

    // `convert` already chose the representation from the statement's parameter type.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn convert<'a>(v: &'a Value, ty: &Type) -> Param<'a> {
    match (v, ty) {
        (Value::Int(x), t) if *t == Type::INT2 => {
            i16::try_from(*x).map_or_else(|_| Param::Owned(x.to_string()), Param::I16)
        }
        (Value::Int(x), t) if *t == Type::INT4 => {
            i32::try_from(*x).map_or_else(|_| Param::Owned(x.to_string()), Param::I32)
        }
        (Value::Int(x), t) if *t == Type::INT8 => Param::I64(*x),
        (Value::Int(x), t) if *t == Type::FLOAT8 => Param::F64(*x as f64),
        (Value::Int(x), _) => Param::Owned(x.to_string()),
        (Value::Text(s), _) => Param::Str(s),
    }
}

impl Connection for PgConnection {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.client.batch_execute(sql).map_err(|e| describe(&e))
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        let text = dollar_placeholders(sql);
        // Prepare even in unprepared mode so that bad SQL fails before the clock starts.
        let stmt = self.client.prepare(&text).map_err(|e| format!("prepare failed: {}: {text}", describe(&e)))?;
        self.stmts.push(self.prepared.then_some(stmt));
        self.sql.push(sql.to_string());
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        match &self.stmts[id] {
            Some(stmt) => {
                let params = values.iter().zip(stmt.params()).map(|(v, t)| convert(v, t));
                let mut rows = self.client.query_raw(stmt, params).map_err(|e| describe(&e))?;
                let mut n = 0u64;
                while rows.next().map_err(|e| describe(&e))?.is_some() {
                    n += 1;
                }
                Ok(n)
            }
            None => {
                let text = inline(&self.sql[id], values, false);
                let messages = self.client.simple_query(&text).map_err(|e| describe(&e))?;
                Ok(messages.iter().filter(|m| matches!(m, postgres::SimpleQueryMessage::Row(_))).count() as u64)
            }
        }
    }
}
