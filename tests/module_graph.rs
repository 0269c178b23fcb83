//! No import circles between modules: the module graph of `src/`, read from the `crate::` and
//! `super::` paths each file names, has no cycle among modules that are not each other's
//! ancestor (a parent declaring its children and a child using its parent's helpers is the
//! tree itself, not a circle). And no arrow runs up the layers (`LAYERS`: probe ∌ report,
//! snapshot ∌ probe, compare ∌ report|rules, diagnose ∌ report, nothing below `cli`
//! imports it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/probe/libs/search.rs` → `probe::libs::search`; `.../mod.rs` and `lib.rs` name their dir.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

fn is_ancestor(a: &str, b: &str) -> bool {
    a.is_empty() || b == a || b.starts_with(&format!("{a}::"))
}

/// The module named by a path as far as it is a module (`probe::libs::search::Loader` →
/// `probe::libs::search`).
fn longest_module(modules: &BTreeSet<String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains(m))
}

/// The modules `text` (the source of `module`) refers to, outside its `#[cfg(test)]` part.
fn references(text: &str, module: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or(text)
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    let mut out = BTreeSet::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (i, _) in code.match_indices("crate::") {
        let rest: String = code[i + 7..].chars().take_while(|c| ident(*c)).collect();
        if let Some(m) = longest_module(modules, rest.trim_end_matches(':')) {
            out.insert(m);
        }
    }
    for (i, _) in code.match_indices("super::") {
        if i > 0 && code[..i].ends_with("::") {
            continue;
        }
        // One `super::` from a file module is its parent; chains climb further.
        let mut base: Vec<&str> = module.split("::").collect();
        let mut rest = &code[i..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let tail: String = rest.chars().take_while(|c| ident(*c)).collect();
        let full = if base.is_empty() {
            tail.trim_end_matches(':').to_string()
        } else {
            format!("{}::{}", base.join("::"), tail.trim_end_matches(':'))
        };
        if let Some(m) = longest_module(modules, &full) {
            out.insert(m);
        }
    }
    out.remove(module);
    out
}

/// Strongly connected components with more than one module (Tarjan, iterative enough for a
/// crate's size).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(lw));
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeSet<String> = all.iter().map(|f| module_of(&src, f)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let m = module_of(&src, f);
        let text = std::fs::read_to_string(f).unwrap();
        let refs = references(&text, &m, &modules)
            .into_iter()
            .filter(|r| !is_ancestor(r, &m) && !is_ancestor(&m, r))
            .collect();
        g.insert(m, refs);
    }
    g
}

#[test]
fn the_modules_of_src_have_no_import_circle() {
    let g = graph();
    assert!(g.len() > 50, "{} modules", g.len());
    // The graph sees real edges (a check that the reader works).
    assert!(
        g["probe::libs::search"].contains("probe::libs::layout"),
        "{:?}",
        g["probe::libs::search"]
    );
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "import circles (modules that reach each other):\n{}",
        found
            .iter()
            .map(|c| format!("  {}", c.join(" <-> ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_cycle_finder_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    g.insert("d".into(), ["a".to_string()].into());
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// Whether module `m` is `layer` or inside it.
fn in_layer(m: &str, layer: &str) -> bool {
    m == layer || m.starts_with(&format!("{layer}::"))
}

/// The flow `lib.rs` draws, `probes → Snapshot → rules → Findings → reporters` (and
/// `Snapshot → compare → reporters`), with `cli` on top: each layer names what it must not
/// import.
const LAYERS: &[(&str, &[&str])] = &[
    ("probe", &["report", "rules", "compare", "diagnose", "cli"]),
    (
        "snapshot",
        &["probe", "report", "rules", "compare", "diagnose", "cli"],
    ),
    ("compare", &["report", "rules", "diagnose", "cli"]),
    ("rules", &["cli", "compare", "diagnose"]),
    ("report", &["cli", "probe"]),
    ("diagnose", &["report", "cli"]),
];

fn upward_arrows(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (m, refs) in g {
        for (layer, banned) in LAYERS {
            if !in_layer(m, layer) {
                continue;
            }
            for r in refs {
                if let Some(b) = banned.iter().find(|b| in_layer(r, b)) {
                    out.push(format!(
                        "{m} -> {r} (the {layer} layer must not import {b})"
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn no_arrow_runs_up_the_layers() {
    let g = graph();
    // The reader sees the real downward arrows it is meant to allow.
    assert!(
        g["cli::compare"].contains("compare"),
        "{:?}",
        g["cli::compare"]
    );
    assert!(
        g["cli"].iter().any(|r| in_layer(r, "report")),
        "{:?}",
        g["cli"]
    );
    let up = upward_arrows(&g);
    assert!(up.is_empty(), "arrows that run up:\n  {}", up.join("\n  "));
}

#[test]
fn the_layer_check_finds_an_upward_arrow() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("probe::gpu".into(), ["report::progress".to_string()].into());
    g.insert("snapshot".into(), ["probe::python".to_string()].into());
    g.insert(
        "cli".into(),
        ["probe".to_string(), "report".to_string()].into(),
    );
    let up = upward_arrows(&g);
    assert_eq!(up.len(), 2, "{up:?}");
    assert!(
        up[0].starts_with("probe::gpu -> report::progress"),
        "{up:?}"
    );
}
