//! Resolving `module.name` as an interpreter's importer would, from files only: the module's
//! path components are looked up directory by directory along `sys.path` (a package directory,
//! `name.py`, an extension module `name.*.so`, or a sourceless `name.pyc`), then the name is
//! searched as a word in the module's `.py` source.
//!
//! Only certain absences are reported. A module that can create names or submodules at run time
//! (an extension module, a module with `__getattr__`, star imports, `globals()`, `setattr`,
//! `sys.modules` or `__path__` edits) is trusted; so is a top-level name found in the project
//! or next to the file (the user's own code), one compiled into CPython, or one of the Python 2
//! names `pickle` maps to Python 3 ones for protocols below 3. An interpreter whose standard
//! library is not on its path here (a stand-in without `collections` and `pathlib`) gets no
//! top-level verdict at all.

use crate::root::Root;
use crate::snapshot::checkpoint::UnresolvedReference;
use crate::snapshot::python::{Python, SysPathOrigin};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Most bytes of a module's source searched for a name.
const MAX_SOURCE: u64 = 4 << 20;

/// Modules compiled into CPython (no file on `sys.path`), and the Python 2 module names that
/// `pickle`'s `fix_imports` maps to Python 3 modules (`_compat_pickle.IMPORT_MAPPING`'s keys
/// that pickles commonly carry).
const NO_FILE: &[&str] = &[
    "builtins",
    "sys",
    "_codecs",
    "_collections",
    "_functools",
    "_io",
    "_abc",
    "_thread",
    "_weakref",
    "_operator",
    "_sre",
    "_signal",
    "_stat",
    "_string",
    "_warnings",
    "_imp",
    "atexit",
    "errno",
    "faulthandler",
    "gc",
    "itertools",
    "marshal",
    "posix",
    "pwd",
    "time",
    "__builtin__",
    "copy_reg",
    "exceptions",
    "Queue",
    "cPickle",
    "cStringIO",
    "StringIO",
    "__main__",
];

/// Text that lets a module create names at run time.
const DYNAMIC_NAMES: &[&str] = &[
    "__getattr__",
    "import *",
    "globals()",
    "setattr(",
    "sys.modules",
    "__dict__",
];

/// Text that lets a package create submodules at run time (a module-level `__getattr__` does
/// not: the importer looks submodules up along `__path__`).
const DYNAMIC_MODULES: &[&str] = &["sys.modules", "__path__", "extend_path"];

/// What a module path resolved to.
#[derive(Debug)]
enum Found {
    /// A `.py` file (a module, or a package's `__init__.py`): names can be checked.
    Source(PathBuf),
    /// A module whose names cannot be read statically (extension, `.pyc`, namespace package),
    /// or a place the verdict is left open.
    Opaque,
    /// The package `top` was found (in `dir`) but component `missing` of the path was not.
    NoModule { top_dir: PathBuf, deepest: PathBuf },
    /// No top-level module of that name anywhere.
    NoPackage,
}

/// Resolves names against one interpreter, caching directory listings and sources.
pub struct Resolver<'a> {
    root: &'a Root,
    py: &'a Python,
    dirs: Vec<PathBuf>,
    stdlib: bool,
    project: Vec<PathBuf>,
    listings: HashMap<PathBuf, Vec<String>>,
    sources: HashMap<PathBuf, Option<String>>,
    owners: HashMap<PathBuf, Option<(String, String)>>,
}

impl<'a> Resolver<'a> {
    /// A resolver for `py`'s import path (and `project`, where the user's modules live: the
    /// directory and its immediate subdirectories such as `src/`).
    pub fn new(root: &'a Root, py: &'a Python, project: Option<&Path>) -> Self {
        let dirs: Vec<PathBuf> = py
            .sys_path
            .iter()
            .filter(|e| e.exists)
            .map(|e| PathBuf::from(&e.path))
            .collect();
        // A standard library that is really there (not a stand-in with a file or two): only
        // then does a top-level name found nowhere count as not installed.
        let stdlib = py.sys_path.iter().any(|e| {
            let d = Path::new(&e.path);
            e.exists
                && e.origin == SysPathOrigin::Stdlib
                && root.is_file(&d.join("collections/__init__.py"))
                && (root.is_file(&d.join("pathlib.py")) || root.is_dir(&d.join("pathlib")))
        });
        let mut projects = Vec::new();
        if let Some(p) = project {
            projects.push(p.to_path_buf());
            if let Ok(entries) = root.read_dir(p) {
                projects.extend(entries.into_iter().filter(|e| root.is_dir(e)).take(64));
            }
        }
        Resolver {
            root,
            py,
            dirs,
            stdlib,
            project: projects,
            listings: HashMap::new(),
            sources: HashMap::new(),
            owners: HashMap::new(),
        }
    }

    /// Check one `module.name` reference; `Some` when the interpreter certainly lacks it.
    /// `here` are the directories the file's own code may sit in.
    pub fn check(&mut self, global: &str, here: &[PathBuf]) -> Option<UnresolvedReference> {
        let (module, name) = global.rsplit_once('.')?;
        if module.is_empty() || name.is_empty() {
            return None;
        }
        let (module, name) = (module.to_string(), name.to_string());
        let found = self.find_module(&module, here);
        let mut u = UnresolvedReference {
            global: global.to_string(),
            module: module.clone(),
            name: name.clone(),
            ..Default::default()
        };
        match found {
            Found::Opaque => return None,
            Found::NoPackage => u.reason = "package-not-installed".into(),
            Found::NoModule { .. } if self.nested_class(&module) => return None,
            Found::NoModule { top_dir, deepest } => {
                u.reason = "module-not-found".into();
                u.file = Some(deepest.display().to_string());
                (u.package, u.version) = self.owner(&top_dir, top(&module)).unzip();
            }
            Found::Source(file) => {
                if !self.lacks_name(&file, &name) {
                    return None;
                }
                u.reason = "name-not-found".into();
                u.file = Some(file.display().to_string());
                let top_dir = self.top_dir(&file, &module);
                (u.package, u.version) = self.owner(&top_dir, top(&module)).unzip();
            }
        }
        Some(u)
    }

    /// True when `module` is really `real_module.Outer` with `class Outer` in its source: a
    /// protocol 4 pickle names a nested class by its qualified name (`pkg.mod.Outer.Inner`),
    /// which reads like a submodule once module and name are joined.
    fn nested_class(&mut self, module: &str) -> bool {
        let mut m = module;
        while let Some((shorter, class)) = m.rsplit_once('.') {
            if let Found::Source(file) = self.find_module(shorter, &[]) {
                let class = class.to_string();
                return self
                    .source(&file)
                    .is_some_and(|s| has_word(s, &format!("class {class}")));
            }
            m = shorter;
        }
        false
    }

    /// The names of a directory (cached).
    fn names(&mut self, dir: &Path) -> &[String] {
        if !self.listings.contains_key(dir) {
            let names = self
                .root
                .read_dir(dir)
                .map(|v| {
                    v.iter()
                        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                        .collect()
                })
                .unwrap_or_default();
            self.listings.insert(dir.to_path_buf(), names);
        }
        &self.listings[dir]
    }

    /// Component `c` in directory `dir`: a package directory, a `.py`, an extension or a `.pyc`.
    fn lookup(&mut self, dir: &Path, c: &str) -> Option<Step> {
        let names = self.names(dir);
        let ext = format!("{c}.");
        let has = |n: &str| names.iter().any(|x| x == n);
        if has(c) && self.root.is_dir(&dir.join(c)) {
            let pkg = dir.join(c);
            let init = pkg.join("__init__.py");
            return Some(if self.root.is_file(&init) {
                Step::Package(pkg, init)
            } else if self.names(&pkg).iter().any(|n| n.starts_with("__init__.")) {
                Step::Opaque
            } else {
                Step::Namespace(pkg)
            });
        }
        let names = self.names(dir);
        if names.iter().any(|n| *n == format!("{c}.py")) {
            return Some(Step::Module(dir.join(format!("{c}.py"))));
        }
        let so = names
            .iter()
            .any(|n| n.starts_with(&ext) && (n.ends_with(".so") || n.ends_with(".pyc")));
        so.then_some(Step::Opaque)
    }

    /// Where the top-level component `t` is: the first regular package or module on the path,
    /// else the namespace portions (all of them, as the importer merges them).
    fn find_top(&mut self, t: &str, here: &[PathBuf]) -> Option<(PathBuf, Vec<Step>)> {
        let mut portions = Vec::new();
        let dirs: Vec<PathBuf> = self.dirs.clone();
        for d in &dirs {
            match self.lookup(d, t) {
                Some(Step::Namespace(p)) => portions.push((d.clone(), Step::Namespace(p))),
                Some(s) => return Some((d.clone(), vec![s])),
                None => {}
            }
        }
        if let Some((d, _)) = portions.first() {
            let d = d.clone();
            return Some((d, portions.into_iter().map(|(_, s)| s).collect()));
        }
        let extra: Vec<PathBuf> = self.project.iter().chain(here).cloned().collect();
        for d in &extra {
            if self.lookup(d, t).is_some() {
                return Some((d.clone(), vec![Step::Opaque]));
            }
        }
        None
    }

    /// Resolve a dotted module path.
    fn find_module(&mut self, module: &str, here: &[PathBuf]) -> Found {
        let mut parts = module.split('.');
        let t = parts.next().unwrap_or("");
        if t.is_empty() || NO_FILE.contains(&t) {
            return Found::Opaque;
        }
        let Some((top_dir, mut at)) = self.find_top(t, here) else {
            return if self.stdlib {
                Found::NoPackage
            } else {
                Found::Opaque
            };
        };
        let mut deepest = top_dir.join(t);
        for c in parts {
            let mut next = Vec::new();
            for step in &at {
                match step {
                    Step::Package(dir, init) => {
                        if self.dynamic(init, DYNAMIC_MODULES) {
                            return Found::Opaque;
                        }
                        deepest = dir.clone();
                        next.extend(self.lookup(dir, c));
                    }
                    Step::Namespace(dir) => {
                        deepest = dir.clone();
                        next.extend(self.lookup(dir, c));
                    }
                    // A module or extension can put submodules in sys.modules itself.
                    Step::Module(_) | Step::Opaque => return Found::Opaque,
                }
                if !next.is_empty() && !matches!(next[0], Step::Namespace(_)) {
                    break;
                }
            }
            if next.is_empty() {
                return Found::NoModule { top_dir, deepest };
            }
            at = next;
        }
        match at.into_iter().next() {
            Some(Step::Package(_, init)) => Found::Source(init),
            Some(Step::Module(file)) => Found::Source(file),
            _ => Found::Opaque,
        }
    }

    /// A module's source (cached, bounded), `None` when unreadable.
    fn source(&mut self, file: &Path) -> Option<&str> {
        if !self.sources.contains_key(file) {
            let text = self
                .root
                .read_limited(file, MAX_SOURCE)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            self.sources.insert(file.to_path_buf(), text);
        }
        self.sources[file].as_deref()
    }

    /// True when the source holds one of `marks` (or cannot be read).
    fn dynamic(&mut self, file: &Path, marks: &[&str]) -> bool {
        self.source(file)
            .is_none_or(|s| marks.iter().any(|d| s.contains(d)))
    }

    /// True when `file` certainly lacks `name` (its first component, for a nested class).
    fn lacks_name(&mut self, file: &Path, name: &str) -> bool {
        let first = name.split('.').next().unwrap_or(name);
        if self.dynamic(file, DYNAMIC_NAMES) {
            return false;
        }
        self.source(file).is_some_and(|s| !has_word(s, first))
    }

    /// The sys.path directory holding the top-level package of `module`, from a file in it.
    fn top_dir(&self, file: &Path, module: &str) -> PathBuf {
        let t = top(module);
        file.ancestors()
            .find(|a| {
                a.file_name().is_some_and(|n| n == t)
                    || a.file_name()
                        .is_some_and(|n| n == format!("{t}.py").as_str())
            })
            .and_then(Path::parent)
            .map_or_else(|| file.to_path_buf(), Path::to_path_buf)
    }

    /// The distribution (name, version) installed in `dir` that provides top-level `t`: its
    /// `top_level.txt`, else a `RECORD` line under `t/`.
    fn owner(&mut self, dir: &Path, t: &str) -> Option<(String, String)> {
        let key = dir.join(t);
        if let Some(o) = self.owners.get(&key) {
            return o.clone();
        }
        let found = self
            .py
            .packages
            .iter()
            .filter(|p| Path::new(&p.location) == dir)
            .find(|p| {
                let meta = Path::new(&p.metadata);
                let read = |f: &str| {
                    self.root
                        .read_limited(&meta.join(f), 8 << 20)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default()
                };
                read("top_level.txt").lines().any(|l| l.trim() == t)
                    || read("RECORD").lines().any(|l| {
                        l.strip_prefix(t)
                            .is_some_and(|r| r.starts_with('/') || r.starts_with(".py,"))
                    })
            })
            .map(|p| (p.name.clone(), p.version.clone()));
        self.owners.insert(key, found.clone());
        found
    }
}

/// One resolved path component.
#[derive(Debug)]
enum Step {
    Package(PathBuf, PathBuf),
    Namespace(PathBuf),
    Module(PathBuf),
    Opaque,
}

fn top(module: &str) -> &str {
    module.split('.').next().unwrap_or(module)
}

/// True when `word` occurs in `text` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return true;
    }
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(i, _)| {
        !ident(text[..i].chars().next_back()) && !ident(text[i + word.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_whole_identifiers() {
        assert!(has_word("class _Scorer(_BaseScorer):", "_Scorer"));
        assert!(!has_word(
            "class _BaseScorer:\n_PredictScorer = 1",
            "_Scorer"
        ));
        assert!(has_word("from .x import (a,\n Net)", "Net"));
    }
}
