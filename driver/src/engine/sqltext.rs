//! SQL text rewriting shared by the server engines: `?` placeholders to PostgreSQL's `$n`, and parameters inlined
//! as literals for unprepared execution (sysbench's --db-ps-mode=disable sends plain text).

use std::fmt::Write as _;

use crate::engine::Value;

/// Calls `f(index)` for each `?` outside string literals and identifiers quoted with `"` or backticks.
fn rewrite(sql: &str, f: impl FnMut(usize, &mut String)) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    rewrite_into(sql, &mut out, f);
    out
}

/// `rewrite` appending to `out`.
fn rewrite_into(sql: &str, out: &mut String, mut f: impl FnMut(usize, &mut String)) {
    let mut quote: Option<char> = None;
    let mut n = 0;
    for ch in sql.chars() {
        match quote {
            Some(q) if ch == q => {
                quote = None;
                out.push(ch);
            }
            Some(_) => out.push(ch),
            None if ch == '\'' || ch == '"' || ch == '`' => {
                quote = Some(ch);
                out.push(ch);
            }
            None if ch == '?' => {
                f(n, out);
                n += 1;
            }
            None => out.push(ch),
        }
    }
}

pub fn dollar_placeholders(sql: &str) -> String {
    rewrite(sql, |i, out| {
        out.push('$');
        out.push_str(&(i + 1).to_string());
    })
}

/// Parameters inlined as SQL literals; strings quoted with '' doubled. `backslash_escapes`: MySQL also treats
/// backslash as an escape inside strings, so it is doubled there.
pub fn inline(sql: &str, values: &[Value], backslash_escapes: bool) -> String {
    rewrite(sql, |i, out| inline_value(values.get(i), backslash_escapes, out))
}

/// `inline` appending to `out`: no allocation once `out` has grown to size (the unprepared hot loop reuses it).
pub fn inline_into(sql: &str, values: &[Value], backslash_escapes: bool, out: &mut String) {
    rewrite_into(sql, out, |i, out| inline_value(values.get(i), backslash_escapes, out))
}

fn inline_value(v: Option<&Value>, backslash_escapes: bool, out: &mut String) {
    match v {
        Some(Value::Int(x)) => {
            let _ = write!(out, "{x}");
        }
        Some(Value::Text(s)) => {
            out.push('\'');
            for c in s.chars() {
                if c == '\'' || (backslash_escapes && c == '\\') {
                    out.push(c);
                }
                out.push(c);
            }
            out.push('\'');
        }
        None => out.push_str("NULL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_outside_literals_only() {
        assert_eq!(
            dollar_placeholders("SELECT '?' , c FROM t WHERE id = ? AND k BETWEEN ? AND ?"),
            "SELECT '?' , c FROM t WHERE id = $1 AND k BETWEEN $2 AND $3"
        );
    }

    #[test]
    fn inlined_strings_are_quoted() {
        let v = [Value::Int(-5), Value::Text("it's a \\ test".into())];
        assert_eq!(inline("UPDATE t SET c = ? WHERE id = ?", &v[..0], false), "UPDATE t SET c = NULL WHERE id = NULL");
        assert_eq!(inline("SELECT ?, ?", &v, false), "SELECT -5, 'it''s a \\ test'");
        assert_eq!(inline("SELECT ?, ?", &v, true), "SELECT -5, 'it''s a \\\\ test'");
    }
}
