//! One contract every `Connection` keeps, whatever the engine: statements prepare (or fail at prepare), bind
//! integers and text, execute as often as asked, count the rows a query returned, and report errors without
//! poisoning the connection; both with prepared statements and with SQL text. It runs on SQLite (Debian's library)
//! always, and on PostgreSQL and MariaDB when `DBPERF_CONTRACT_POSTGRES` / `DBPERF_CONTRACT_MARIADB` name a DSN
//! (password in DBPERF_PASSWORD): tests/test_driver_contract.py starts lab servers and runs it against them.

#[cfg(test)]
mod tests {
    use crate::engine::factory::Engine;
    use crate::engine::{Connection, Value};
    use crate::job::Job;

    const SQLITE: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

    fn engine(engine: &str, target: serde_json::Value, prepared: bool) -> Engine {
        let mut job = serde_json::json!({"mode": "exec", "engine": engine, "tables": 1, "table_size": 10,
                                          "prepared": prepared});
        job.as_object_mut().unwrap().extend(target.as_object().unwrap().clone());
        let job: Job = serde_json::from_value(job).unwrap();
        Engine::open(&job).unwrap_or_else(|e| panic!("{engine}: {e}"))
    }

    fn keeps_the_contract(c: &mut dyn Connection, label: &str) {
        use Value::{Int, Text};
        c.batch("DROP TABLE IF EXISTS dbperf_contract").unwrap();
        c.batch("CREATE TABLE dbperf_contract (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, c VARCHAR(20) NOT NULL)")
            .unwrap();
        let insert = c.prepare("INSERT INTO dbperf_contract (id, k, c) VALUES (?, ?, ?)").unwrap();
        for i in 1..=10 {
            let rows = c.execute(insert, &[Int(i), Int(i % 3), Text(format!("row-'{i}'"))]).unwrap();
            assert_eq!(rows, 0, "{label}: an INSERT returns no rows");
        }
        let by_k = c.prepare("SELECT c FROM dbperf_contract WHERE k = ?").unwrap();
        assert_eq!(c.execute(by_k, &[Int(1)]).unwrap(), 4, "{label}: k = 1 is ids 1, 4, 7, 10");
        assert_eq!(c.execute(by_k, &[Int(0)]).unwrap(), 3, "{label}: a statement runs again with new binds");
        let range = c.prepare("SELECT id FROM dbperf_contract WHERE id BETWEEN ? AND ?").unwrap();
        assert_eq!(c.execute(range, &[Int(3), Int(7)]).unwrap(), 5, "{label}: two binds");
        let by_text = c.prepare("SELECT id FROM dbperf_contract WHERE c = ?").unwrap();
        assert_eq!(c.execute(by_text, &[Text("row-'5'".into())]).unwrap(), 1, "{label}: a text bind, quote included");
        assert_eq!(c.execute(by_text, &[Text("absent".into())]).unwrap(), 0, "{label}: no row");
        assert!(c.prepare("SELECT no_such_column FROM dbperf_contract").is_err(), "{label}: bad SQL fails at prepare");
        let duplicate = c.execute(insert, &[Int(1), Int(0), Text("again".into())]);
        assert!(duplicate.is_err(), "{label}: a duplicate key is an error");
        assert_eq!(c.execute(by_k, &[Int(1)]).unwrap(), 4, "{label}: the connection works after an error");
        c.batch("BEGIN").unwrap();
        let update = c.prepare("UPDATE dbperf_contract SET k = ? WHERE id = ?").unwrap();
        c.execute(update, &[Int(0), Int(2)]).unwrap();
        c.batch("COMMIT").unwrap();
        assert_eq!(c.execute(by_k, &[Int(0)]).unwrap(), 4, "{label}: a committed update is seen");
        c.batch("DROP TABLE dbperf_contract").unwrap();
    }

    fn on(name: &str, target: serde_json::Value) {
        for prepared in [true, false] {
            let e = engine(name, target.clone(), prepared);
            let mut c = e.connect().unwrap();
            keeps_the_contract(c.as_mut(), &format!("{name} prepared={prepared}"));
        }
    }

    #[test]
    fn sqlite_keeps_the_contract() {
        if !std::path::Path::new(SQLITE).exists() {
            return; // Debian's libsqlite3-0, installed by `make setup`
        }
        let dir = std::env::temp_dir().join(format!("dbperf-contract-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        on("sqlite", serde_json::json!({"library": SQLITE, "database": dir.join("c.db").to_str().unwrap()}));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Run by tests/test_driver_contract.py with the DSN of a server it started; a no-op otherwise.
    #[test]
    fn servers_keep_the_contract() {
        for (engine, var) in [("postgres", "DBPERF_CONTRACT_POSTGRES"), ("mariadb", "DBPERF_CONTRACT_MARIADB")] {
            if let Ok(dsn) = std::env::var(var) {
                on(engine, serde_json::json!({"dsn": dsn}));
                println!("contract kept: {engine}");
            }
        }
    }
}
