//! A SQLite target's settings are PRAGMAs, and SQLite ignores an unknown PRAGMA or a value it cannot use without a
//! word. So each one is applied and then read back: a setting that did not take fails the connection, with what it
//! reads back, instead of being reported as applied.

use crate::engine::sqlite::SqliteConnection;
use crate::engine::Connection;

/// PRAGMAs that act rather than set, or whose plain read form acts (optimizes, checkpoints, vacuums, checks the
/// whole database): applied, not read back, not compared.
const ACTIONS: &[&str] = &[
    "optimize",
    "wal_checkpoint",
    "shrink_memory",
    "incremental_vacuum",
    "integrity_check",
    "quick_check",
    "foreign_key_check",
    "case_sensitive_like", // write-only: reads back nothing
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
    let booleans: &[(&str, &str)] =
        &[("on", "1"), ("true", "1"), ("yes", "1"), ("off", "0"), ("false", "0"), ("no", "0")];
    table.iter().chain(booleans).find(|(w, _)| *w == word).map(|(_, v)| *v)
}

/// The form a value is compared in: lower case, words as the numbers they stand for, numbers (decimal or 0x hex, as
/// SQLite reads them) as numbers.
pub fn normalise(pragma: &str, value: &str) -> String {
    let lower = value.trim().to_ascii_lowercase();
    if let Some(v) = word_value(pragma, &lower) {
        return v.to_string();
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        if let Ok(n) = u64::from_str_radix(hex, 16) {
            return format!("{}", n as i64 as f64); // SQLite reads 0x... as a 64-bit two's complement integer
        }
    }
    match lower.parse::<f64>() {
        Ok(n) => format!("{n}"),
        Err(_) => lower,
    }
}

/// Whether `back`, what `PRAGMA pragma` reads after `PRAGMA pragma = asked`, means the value took. Plain PRAGMAs read
/// back what they were given (normalised); a few legitimately read back something else.
fn took(pragma: &str, asked: &str, back: &str) -> bool {
    match pragma {
        // cache_spill = N sets the spill threshold and turns spilling on; it reads back the threshold in effect, which
        // is never below the cache size in pages (cache_spill = ON reads back e.g. 483). Only on/off compares.
        "cache_spill" => (normalise(pragma, asked) == "0") == (normalise(pragma, back) == "0"),
        // UTF8 and UTF-8 name one encoding; UTF16 (native byte order) reads back UTF-16le or UTF-16be.
        "encoding" => {
            let (a, b) = (asked.to_ascii_lowercase().replace('-', ""), back.to_ascii_lowercase().replace('-', ""));
            a == b || (a == "utf16" && (b == "utf16le" || b == "utf16be"))
        }
        // Deprecated; stores and reads back the absolute value of what it is given.
        "default_cache_size" => {
            normalise(pragma, asked.trim().trim_start_matches('-'))
                == normalise(pragma, back.trim().trim_start_matches('-'))
        }
        _ => normalise(pragma, asked) == normalise(pragma, back),
    }
}

/// Applies a connection's settings in order, each checked as `apply` does.
pub fn apply_all(conn: &mut SqliteConnection, settings: &[(String, String)]) -> Result<(), String> {
    if settings.is_empty() {
        return Ok(());
    }
    // The PRAGMAs this library has. pragma_list is missing from builds with SQLITE_OMIT_INTROSPECTION_PRAGMAS: then it
    // yields no rows (SQLite ignores an unknown PRAGMA), unknown and write-only names cannot be told apart, and only
    // the read-back in `apply` can tell (a PRAGMA that reads back nothing then fails, saying it may be either).
    let known = conn.first_column("PRAGMA pragma_list").map_err(|e| format!("listing the PRAGMAs: {e}"))?;
    for (key, value) in settings {
        apply(conn, &known, key, value)?;
    }
    Ok(())
}

/// Applies `PRAGMA key = value` and checks that it took. `known` is `PRAGMA pragma_list` (empty: unavailable).
fn apply(conn: &mut SqliteConnection, known: &[String], key: &str, value: &str) -> Result<(), String> {
    let key_lower = key.to_ascii_lowercase();
    if !known.is_empty() && !known.iter().any(|n| n.eq_ignore_ascii_case(key)) {
        return Err(format!("unknown PRAGMA {key} (asked to set it to {value}): this SQLite does not have it"));
    }
    conn.batch(&format!("PRAGMA {key} = {value}")).map_err(|e| format!("setting PRAGMA {key} = {value}: {e}"))?;
    if ACTIONS.contains(&key_lower.as_str()) {
        return Ok(());
    }
    let back = conn.first_column(&format!("PRAGMA {key}")).map_err(|e| format!("reading PRAGMA {key} back: {e}"))?;
    let Some(actual) = back.first() else {
        if known.is_empty() {
            return Err(format!(
                "PRAGMA {key} = {value} reads back nothing: unknown to this SQLite, or write-only (this SQLite has no \
                 pragma_list to tell)"
            ));
        }
        return Ok(()); // a known PRAGMA without a value to read
    };
    if !took(&key_lower, value, actual) {
        return Err(format!("PRAGMA {key} = {value} did not take: it reads back '{actual}'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sqlite::Api;

    #[test]
    fn words_and_numbers_compare_as_sqlite_reads_them_back() {
        assert_eq!(normalise("synchronous", "NORMAL"), normalise("synchronous", "1"));
        assert_eq!(normalise("journal_mode", "WAL"), normalise("journal_mode", "wal"));
        assert_eq!(normalise("foreign_keys", "ON"), "1");
        assert_eq!(normalise("cache_size", "-2000"), normalise("cache_size", "-2000.0"));
        assert_eq!(normalise("mmap_size", "0x10000000"), normalise("mmap_size", "268435456"));
        assert_ne!(normalise("journal_mode", "BOGUS"), normalise("journal_mode", "delete"));
        assert_eq!(normalise("temp_store", "memory"), "2");
        assert_eq!(normalise("auto_vacuum", "INCREMENTAL"), "2");
        assert!(
            took("cache_spill", "ON", "483") && took("cache_spill", "100", "483") && took("cache_spill", "off", "0")
        );
        assert!(!took("cache_spill", "ON", "0") && !took("cache_spill", "0", "483"));
        assert!(took("encoding", "UTF8", "UTF-8") && took("encoding", "UTF16", "UTF-16le"));
        assert!(!took("encoding", "UTF16be", "UTF-16le") && !took("encoding", "UTF8", "UTF-16le"));
        assert!(took("default_cache_size", "-3000", "3000") && !took("default_cache_size", "-3000", "2000"));
        assert!(!took("mmap_size", "4294967296", "2147418112")); // capped by SQLITE_MAX_MMAP_SIZE: it did not take
    }

    fn connection(dir: &std::path::Path) -> Option<SqliteConnection> {
        let lib = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
        if !std::path::Path::new(lib).exists() {
            return None; // Debian's libsqlite3-0, installed by `make setup`
        }
        let db = dir.join("t.db");
        Some(SqliteConnection::open(Api::load(lib).unwrap(), db.to_str().unwrap(), 1000, true).unwrap())
    }

    fn set(c: &mut SqliteConnection, key: &str, value: &str) -> Result<(), String> {
        apply_all(c, &[(key.to_string(), value.to_string())])
    }

    #[test]
    fn settings_that_do_not_take_fail_on_the_real_library() {
        let dir = std::env::temp_dir().join(format!("dbperf-pragmas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(mut c) = connection(&dir) {
            let good = [
                ("page_size", "8192"),
                ("auto_vacuum", "INCREMENTAL"),
                ("journal_mode", "WAL"),
                ("synchronous", "NORMAL"),
                ("cache_spill", "ON"),
                ("encoding", "UTF8"),
                ("mmap_size", "0x1000000"),
                ("optimize", "0"),
                ("case_sensitive_like", "ON"),
            ];
            let good: Vec<(String, String)> = good.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            apply_all(&mut c, &good).unwrap();
            let bad = set(&mut c, "journal_mode", "BOGUS").unwrap_err();
            assert_eq!(bad, "PRAGMA journal_mode = BOGUS did not take: it reads back 'wal'");
            let bad = set(&mut c, "synchronous", "SOMETIMES").unwrap_err();
            assert!(bad.starts_with("PRAGMA synchronous = SOMETIMES did not take: it reads back '"), "{bad}");
            let unknown = set(&mut c, "no_such_pragma", "1").unwrap_err();
            assert!(unknown.starts_with("unknown PRAGMA no_such_pragma (asked to set it to 1)"), "{unknown}");
            let capped = set(&mut c, "mmap_size", "1099511627776").unwrap_err();
            assert!(capped.starts_with("PRAGMA mmap_size = 1099511627776 did not take: it reads back '"), "{capped}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
