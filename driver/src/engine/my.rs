//! MariaDB and MySQL through the `mysql` crate (synchronous, one connection per thread).

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, Params, Statement};

use crate::engine::sqltext::inline;
use crate::engine::{Connection, Value};

pub struct MyConnection {
    conn: Conn,
    prepared: bool,
    sql: Vec<String>,
    stmts: Vec<Option<Statement>>,
}

pub fn options(dsn: &str, password: Option<&str>) -> Result<Opts, String> {
    let opts = Opts::from_url(dsn).map_err(|e| format!("bad MySQL DSN: {e}"))?;
    let mut builder = OptsBuilder::from_opts(opts).prefer_socket(false);
    if let Some(p) = password {
        builder = builder.pass(Some(p));
    }
    Ok(builder.into())
}

impl MyConnection {
    pub fn open(opts: &Opts, label: &str, prepared: bool) -> Result<Self, String> {
        let conn = Conn::new(opts.clone()).map_err(|e| format!("cannot connect to {label}: {e}"))?;
        Ok(MyConnection { conn, prepared, sql: Vec::new(), stmts: Vec::new() })
    }

    pub fn version(&mut self) -> Result<String, String> {
        let v: Option<String> = self.conn.query_first("SELECT VERSION()").map_err(|e| e.to_string())?;
        Ok(v.unwrap_or_default())
    }
}

fn to_my(v: &Value) -> mysql::Value {
    match v {
        Value::Int(x) => mysql::Value::Int(*x),
        Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
    }
}

impl Connection for MyConnection {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.conn.query_drop(sql).map_err(|e| e.to_string())
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        let stmt = self.conn.prep(sql).map_err(|e| format!("prepare failed: {e}: {sql}"))?;
        if !self.prepared {
            self.conn.close(stmt.clone()).map_err(|e| e.to_string())?;
        }
        self.stmts.push(self.prepared.then_some(stmt));
        self.sql.push(sql.to_string());
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        let mut rows = 0u64;
        match &self.stmts[id] {
            Some(stmt) => {
                let params = if values.is_empty() {
                    Params::Empty
                } else {
                    Params::Positional(values.iter().map(to_my).collect())
                };
                let result = self.conn.exec_iter(stmt, params).map_err(|e| e.to_string())?;
                for row in result {
                    row.map_err(|e| e.to_string())?;
                    rows += 1;
                }
            }
            None => {
                let text = inline(&self.sql[id], values, true);
                let result = self.conn.query_iter(text).map_err(|e| e.to_string())?;
                for row in result {
                    row.map_err(|e| e.to_string())?;
                    rows += 1;
                }
            }
        }
        Ok(rows)
    }
}
