//! What the hot loop needs of an engine: connections that prepare and execute statements. One implementation per
//! engine (`sqlite`, `mywire`, `pgwire`); the workload code never knows which engine it drives. `factory` picks the
//! implementation for a job. Dependencies point one way: the backends use this module's trait and types, the factory
//! uses the backends, and this module uses none of them.

pub mod dsn;
pub mod factory;
pub mod mywire;
pub mod paced;
pub mod page_cache;
pub mod pgwire;
pub mod pragmas;
pub mod sqlite;
pub mod sqltext;

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
