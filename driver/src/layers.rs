//! The driver's module layers, kept one way. Every module's non-test code is read from the sources (all of src/, so a
//! new module is checked without being listed) and its uses of the crate's other modules form a graph that must have
//! no cycle (issue 61 cut job.rs <-> series.rs). Within that: `engine/mod.rs` and `stale/mod.rs` hold a trait and the
//! types around it and use nothing else of the crate; each backend uses them, never the factory that picks a backend;
//! the stale-read loop uses the factory, and nothing below uses the loop (issue 24). A `use` that would close a cycle
//! again fails here, with the files and the lines.

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    /// A module's path in the crate (`engine::sqlite`; `engine` for engine/mod.rs) and its code: comment lines and
    /// the trailing `#[cfg(test)] mod tests` dropped.
    struct Module {
        path: String,
        file: String,
        code: Vec<(usize, String)>,
    }

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }

    fn modules() -> Vec<Module> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&root, &mut files);
        files.sort();
        let mut out = Vec::new();
        for f in files {
            let file = f.strip_prefix(&root).unwrap().to_str().unwrap().to_string();
            if file == "main.rs" {
                continue; // the crate root declares every module and uses none of them as a layer
            }
            let path = file.trim_end_matches(".rs").trim_end_matches("/mod").replace('/', "::");
            let text = std::fs::read_to_string(&f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let tests = (0..lines.len()).find(|&i| {
                lines[i].trim() == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.trim() == "mod tests {")
            });
            let code = lines[..tests.unwrap_or(lines.len())]
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.trim_start().starts_with("//"))
                .map(|(i, l)| (i + 1, l.to_string()))
                .collect();
            out.push(Module { path, file, code });
        }
        out
    }

    fn ident(s: &str) -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len())
    }

    /// The paths a `crate::...` or `super::...` reference starting at `rest` names, a `{a, b::c}` group expanded.
    fn paths(prefix: &str, rest: &str, out: &mut Vec<String>) {
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        paths(prefix, group[start..i].trim(), out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        paths(prefix, group[start..i].trim(), out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let n = ident(rest);
        if n == 0 || &rest[..n] == "self" {
            out.push(prefix.to_string());
            return;
        }
        let path = if prefix.is_empty() { rest[..n].to_string() } else { format!("{prefix}::{}", &rest[..n]) };
        match rest[n..].strip_prefix("::") {
            Some(more) => paths(&path, more, out),
            None => out.push(path),
        }
    }

    /// The modules each module uses, with the line that does: a named path resolves to the longest module it starts
    /// with (`crate::engine::factory::Engine` is engine::factory's, `crate::engine::Value` engine's).
    fn uses(modules: &[Module]) -> BTreeMap<&str, BTreeMap<&str, String>> {
        let known: Vec<&str> = modules.iter().map(|m| m.path.as_str()).collect();
        let resolve = |p: &str| {
            known.iter().filter(|k| p == **k || p.starts_with(&format!("{k}::"))).max_by_key(|k| k.len()).copied()
        };
        let mut graph = BTreeMap::new();
        for m in modules {
            let parent = m.path.rsplit_once("::").map_or("", |(p, _)| p);
            let edges: &mut BTreeMap<&str, String> = graph.entry(m.path.as_str()).or_default();
            for (n, line) in &m.code {
                let mut named = Vec::new();
                for (word, prefix) in [("crate::", ""), ("super::", parent)] {
                    for (at, _) in line.match_indices(word) {
                        paths(prefix, &line[at + word.len()..], &mut named);
                    }
                }
                for to in named.iter().filter_map(|p| resolve(p)).filter(|to| *to != m.path) {
                    edges.entry(to).or_insert_with(|| format!("{}:{n}: {}", m.file, line.trim()));
                }
            }
        }
        graph
    }

    /// A cycle of the graph, as the lines that close it, if there is one.
    fn cycle<'a>(graph: &BTreeMap<&'a str, BTreeMap<&'a str, String>>) -> Option<Vec<String>> {
        fn visit<'a>(
            at: &'a str,
            graph: &BTreeMap<&'a str, BTreeMap<&'a str, String>>,
            state: &mut BTreeMap<&'a str, bool>,
            stack: &mut Vec<&'a str>,
        ) -> Option<Vec<String>> {
            state.insert(at, false);
            stack.push(at);
            for (to, line) in graph.get(at).into_iter().flatten() {
                match state.get(to) {
                    Some(false) => {
                        let from = stack.iter().position(|m| m == to).unwrap();
                        let mut lines: Vec<String> =
                            stack[from..].windows(2).map(|w| graph[w[0]][w[1]].clone()).collect();
                        lines.push(line.clone());
                        return Some(lines);
                    }
                    None => {
                        if let Some(c) = visit(to, graph, state, stack) {
                            return Some(c);
                        }
                    }
                    Some(true) => {}
                }
            }
            stack.pop();
            state.insert(at, true);
            None
        }
        let mut state = BTreeMap::new();
        for m in graph.keys() {
            if !state.contains_key(m) {
                if let Some(c) = visit(m, graph, &mut state, &mut Vec::new()) {
                    return Some(c);
                }
            }
        }
        None
    }

    fn module<'a>(modules: &'a [Module], path: &str) -> &'a Module {
        modules.iter().find(|m| m.path == path).unwrap_or_else(|| panic!("no module {path}"))
    }

    /// The lines of `m` that name one of `paths`.
    fn assert_names_none(m: &Module, paths: &[&str]) {
        let lines: Vec<&str> =
            m.code.iter().map(|(_, l)| l.as_str()).filter(|l| paths.iter().any(|p| l.contains(p))).collect();
        assert!(lines.is_empty(), "{} must not use {paths:?}, but does: {lines:?}", m.file);
    }

    #[test]
    fn no_module_uses_itself_through_others() {
        let modules = modules();
        assert!(modules.len() > 30, "read {} modules", modules.len());
        let graph = uses(&modules);
        assert!(graph["run"].contains_key("client") && graph["client"].contains_key("turn"), "{:?}", graph["run"]);
        assert!(graph["engine::sqlite"].contains_key("engine"), "super:: names the parent module");
        if let Some(lines) = cycle(&graph) {
            panic!("a cycle of uses: {}", lines.join(" -> "));
        }
    }

    #[test]
    fn the_cycle_check_sees_a_cycle() {
        let m = |path: &str, code: &str| Module {
            path: path.into(),
            file: format!("{path}.rs"),
            code: vec![(1, code.into())],
        };
        let two = [
            m("job", "pub x: crate::series::Interval,"),
            m("series", "use crate::{job::Latency, tick};"),
            m("tick", ""),
        ];
        let lines = cycle(&uses(&two)).expect("job -> series -> job");
        assert_eq!(
            lines,
            ["job.rs:1: pub x: crate::series::Interval,", "series.rs:1: use crate::{job::Latency, tick};"]
        );
        let one_way =
            [m("job", "use crate::series::{self, Interval};"), m("series", "use crate::tick;"), m("tick", "")];
        assert_eq!(cycle(&uses(&one_way)), None);
    }

    #[test]
    fn the_traits_use_nothing_of_the_crate() {
        let modules = modules();
        assert_names_none(module(&modules, "engine"), &["crate::", "super::"]);
        assert_names_none(module(&modules, "stale"), &["crate::", "super::"]);
    }

    #[test]
    fn backends_never_use_their_factory() {
        let modules = modules();
        let in_ = |dir: &str, not: &[&str]| -> Vec<&Module> {
            let within = |m: &&Module| m.path.starts_with(&format!("{dir}::"));
            modules.iter().filter(within).filter(|m| !not.iter().any(|n| m.path == format!("{dir}::{n}"))).collect()
        };
        let engine = in_("engine", &["factory"]);
        assert!(engine.iter().any(|m| m.path == "engine::sqlite"), "engine backends found");
        for m in engine {
            assert_names_none(m, &["factory", "crate::stale", "crate::run", "crate::load", "crate::client"]);
        }
        let stale = in_("stale", &["factory", "run"]);
        assert!(stale.iter().any(|m| m.path == "stale::mysql"), "every stale backend, mysql.rs too");
        for m in stale {
            assert_names_none(m, &["factory", "stale::run"]);
        }
        assert_names_none(module(&modules, "stale::factory"), &["stale::run"]);
    }
}
