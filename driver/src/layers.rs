//! The driver's module layers, kept one way (issue 24 cut two cycles): `engine/mod.rs` and `stale/mod.rs` hold a
//! trait and the types around it and use nothing else of the crate; each backend uses them, never the factory that
//! picks a backend; the stale-read loop uses the factory, and nothing below uses the loop. Read from the sources, so
//! that a `use` that would close a cycle again fails here, with the file and the line.

#[cfg(test)]
mod tests {
    /// The file's code lines (comments dropped) that name one of `paths`.
    fn naming<'a>(source: &'a str, paths: &[&str]) -> Vec<&'a str> {
        source
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .filter(|l| paths.iter().any(|p| l.contains(p)))
            .collect()
    }

    fn assert_names_none(file: &str, source: &str, paths: &[&str]) {
        let lines = naming(source, paths);
        assert!(lines.is_empty(), "{file} must not use {paths:?}, but does: {lines:?}");
    }

    #[test]
    fn the_traits_use_nothing_of_the_crate() {
        assert_names_none("engine/mod.rs", include_str!("engine/mod.rs"), &["crate::", "super::"]);
        assert_names_none("stale/mod.rs", include_str!("stale/mod.rs"), &["crate::", "super::"]);
    }

    #[test]
    fn backends_never_use_their_factory() {
        let engine = [
            ("engine/dsn.rs", include_str!("engine/dsn.rs")),
            ("engine/mywire.rs", include_str!("engine/mywire.rs")),
            ("engine/pgwire.rs", include_str!("engine/pgwire.rs")),
            ("engine/pragmas.rs", include_str!("engine/pragmas.rs")),
            ("engine/sqlite.rs", include_str!("engine/sqlite.rs")),
            ("engine/sqltext.rs", include_str!("engine/sqltext.rs")),
        ];
        for (file, source) in engine {
            assert_names_none(file, source, &["factory", "crate::stale", "crate::run", "crate::load"]);
        }
        let stale = [
            ("stale/mariadb.rs", include_str!("stale/mariadb.rs")),
            ("stale/postgres.rs", include_str!("stale/postgres.rs")),
        ];
        for (file, source) in stale {
            assert_names_none(file, source, &["factory", "stale::run"]);
        }
        assert_names_none("stale/factory.rs", include_str!("stale/factory.rs"), &["stale::run"]);
    }
}
