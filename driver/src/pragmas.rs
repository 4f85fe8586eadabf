//! A SQLite target's settings are PRAGMAs, and SQLite ignores an unknown PRAGMA or a value it cannot use without a
//! word. So each one is applied and then read back: a setting that did not take fails the connection, with what it
//! reads back, instead of being reported as applied.

use crate::engine::Connection;
use crate::sqlite::SqliteConnection;

/// PRAGMAs that act rather than set (or that cannot be read back): applied, not compared.
const ACTIONS: &[&str] = &[
    "optimize",
    "wal_checkpoint",
    "shrink_memory",
    "incremental_vacuum",
    "integrity_check",
    "quick_check",
    "foreign_key_check",
    "case_sensitive_like",
];

/// Words a PRAGMA accepts for the numbers it reads back as, per PRAGMA (booleans apply to every PRAGMA).
fn word_value(pragma: &str, word: &str) -> Option<&'static str> {
    let table: &[(&str, &str)] = match pragma {
        "synchronous" => &[("off", "0"), ("normal", "1"), ("full", "2"), ("extra", "3")],
        "temp_store" => &[("default", "0"), ("file", "1"), ("memory", "2")],
        "auto_vacuum" => &[("none", "0"), ("full", "1"), ("incremental", "2")],
        "secure_delete" => &[("fast", "2")],
        _ => &[],
    };
    let booleans: &[(&str, &str)] = &[("on", "1"), ("true", "1"), ("yes", "1"), ("off", "0"), ("false", "0"), ("no", "0")];
    table.iter().chain(booleans).find(|(w, _)| *w == word).map(|(_, v)| *v)
}

/// The form a value is compared in: lower case, words as the numbers they stand for, numbers as numbers.
pub fn normalise(pragma: &str, value: &str) -> String {
    let lower = value.trim().to_ascii_lowercase();
    if let Some(v) = word_value(pragma, &lower) {
        return v.to_string();
    }
    match lower.parse::<f64>() {
        Ok(n) => format!("{n}"),
        Err(_) => lower,
    }
}

/// Applies `PRAGMA key = value` and checks that it took.
pub fn apply(conn: &mut SqliteConnection, key: &str, value: &str) -> Result<(), String> {
    let key_lower = key.to_ascii_lowercase();
    // pragma_list is missing from builds with SQLITE_OMIT_INTROSPECTION_PRAGMAS: then it yields no rows (SQLite
    // ignores the unknown PRAGMA), and only the read-back below can tell.
    let known = conn.first_column("PRAGMA pragma_list")?;
    if !known.is_empty() && !known.iter().any(|n| n.eq_ignore_ascii_case(key)) {
        return Err(format!("unknown PRAGMA {key} (this SQLite does not have it)"));
    }
    conn.batch(&format!("PRAGMA {key} = {value}")).map_err(|e| format!("setting PRAGMA {key}: {e}"))?;
    if ACTIONS.contains(&key_lower.as_str()) {
        return Ok(());
    }
    let back = conn.first_column(&format!("PRAGMA {key}")).map_err(|e| format!("reading PRAGMA {key} back: {e}"))?;
    let Some(actual) = back.first() else {
        if known.is_empty() {
            return Err(format!("PRAGMA {key} reads back nothing: unknown to this SQLite, or write-only"));
        }
        return Ok(()); // a known PRAGMA without a value to read
    };
    if normalise(&key_lower, actual) != normalise(&key_lower, value) {
        return Err(format!("PRAGMA {key} = {value} did not take: it reads back '{actual}'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::Api;

    #[test]
    fn words_and_numbers_compare_as_sqlite_reads_them_back() {
        assert_eq!(normalise("synchronous", "NORMAL"), normalise("synchronous", "1"));
        assert_eq!(normalise("journal_mode", "WAL"), normalise("journal_mode", "wal"));
        assert_eq!(normalise("foreign_keys", "ON"), "1");
        assert_eq!(normalise("cache_size", "-2000"), normalise("cache_size", "-2000.0"));
        assert_ne!(normalise("journal_mode", "BOGUS"), normalise("journal_mode", "delete"));
        assert_eq!(normalise("temp_store", "memory"), "2");
    }

    fn connection(dir: &std::path::Path) -> Option<SqliteConnection> {
        let lib = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
        if !std::path::Path::new(lib).exists() {
            return None; // Debian's libsqlite3-0, installed by `make setup`
        }
        let db = dir.join("t.db");
        Some(SqliteConnection::open(Api::load(lib).unwrap(), db.to_str().unwrap(), 1000, true).unwrap())
    }

    #[test]
    fn settings_that_do_not_take_fail_on_the_real_library() {
        let dir = std::env::temp_dir().join(format!("dbperf-pragmas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(mut c) = connection(&dir) {
            apply(&mut c, "journal_mode", "WAL").unwrap();
            apply(&mut c, "synchronous", "NORMAL").unwrap();
            apply(&mut c, "optimize", "0").unwrap();
            let bad = apply(&mut c, "journal_mode", "BOGUS").unwrap_err();
            assert!(bad.contains("did not take") && bad.contains("'wal'"), "{bad}");
            let unknown = apply(&mut c, "no_such_pragma", "1").unwrap_err();
            assert!(unknown.contains("unknown PRAGMA no_such_pragma"), "{unknown}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
