//! Interpreters named by editors and notebooks: VS Code workspace settings, the PyCharm project
//! SDK, and Jupyter kernelspecs. Files are parsed, never acted on.
//!
//! - VS Code: `<project>/.vscode/settings.json`, then the user's
//!   `${XDG_CONFIG_HOME:-~/.config}/Code/User/settings.json` (JSON with comments and trailing
//!   commas), `python.defaultInterpreterPath` and `python.pythonPath`, with `${workspaceFolder}`,
//!   `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}` and a leading `~` expanded; a
//!   relative path is taken from the project, a bare name is looked up on PATH, a directory
//!   stands for its `bin/python`. Detail: `<file> python.defaultInterpreterPath = "<raw>"`.
//! - PyCharm: `<project>/.idea/misc.xml` `ProjectRootManager` `project-jdk-name`, looked up in
//!   every `${XDG_CONFIG_HOME:-~/.config}/JetBrains/*/options/jdk.table.xml` (`<jdk>` whose
//!   `<name value>` matches; its `<homePath value>` with `$USER_HOME$` / `$PROJECT_DIR$`
//!   expanded). Remote SDKs (not an absolute path) are skipped. Detail: `<misc.xml> project SDK
//!   "<name>" -> <jdk.table.xml> homePath <value>`.
//! - Jupyter: `kernel.json` `argv[0]` of every kernel in `$JUPYTER_PATH/kernels`,
//!   `${JUPYTER_DATA_DIR:-${XDG_DATA_HOME:-~/.local/share}/jupyter}/kernels`,
//!   `<prefix>/share/jupyter/kernels` of every environment found before, `/usr/local/share/
//!   jupyter/kernels` and `/usr/share/jupyter/kernels`; kernels of another `language` are
//!   skipped; a bare `python` is a PATH lookup. Detail: `<kernel.json> argv[0] = "<raw>"`.

use super::locate::{env_path, interpreter_or_default, source, Collector, Hint};
use crate::root::lexical_normalize;
use crate::snapshot::python::SourceKind;
use std::path::{Path, PathBuf};

/// Record the interpreter `raw` names, relative paths taken from `base`.
fn add_reference(c: &mut Collector, raw: &str, base: &Path, kind: SourceKind, detail: String) {
    if raw.contains('/') {
        let p = lexical_normalize(&base.join(raw));
        let py = if c.root.is_dir(&p) {
            interpreter_or_default(c.root, &p)
        } else {
            p
        };
        c.add(&py, source(kind, detail), Hint::default());
        return;
    }
    match super::discovery_path::which(c, raw) {
        Some((py, how)) => c.add(
            &py,
            source(kind, format!("{detail}; {how}")),
            Hint::default(),
        ),
        None => c.add(
            Path::new(raw),
            source(kind, format!("{detail}; not on PATH")),
            Hint::default(),
        ),
    }
}

/// Expand VS Code's variables in a settings value.
fn expand_vscode(c: &Collector, project: &Path, raw: &str) -> String {
    let home = c.home().map(|h| h.to_string_lossy().into_owned());
    let mut s = raw.to_string();
    if let Some(rest) = s.strip_prefix('~') {
        if rest.is_empty() || rest.starts_with('/') {
            if let Some(h) = &home {
                s = format!("{h}{rest}");
            }
        }
    }
    let folder = project.to_string_lossy();
    let base = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    s = s
        .replace("${workspaceFolder}", &folder)
        .replace("${workspaceRoot}", &folder)
        .replace("${workspaceFolderBasename}", &base);
    if let Some(h) = &home {
        s = s.replace("${userHome}", h);
    }
    // `${env:NAME}`, left to right (a value is never expanded again).
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(start) = rest.find("${env:") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(c.env.get(&rest[start + 6..start + len]).unwrap_or(""));
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Deepest `[`/`{` nesting read from a settings file: the JSON-with-comments parser recurses once
/// per level (thousands of levels overflow the stack), and real settings stay below 10.
pub const MAX_JSON_DEPTH: usize = 128;

/// The deepest `[`/`{` nesting of JSON with comments, skipping strings and comments.
pub fn jsonc_depth(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut depth, mut deepest) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// `python.defaultInterpreterPath` / `python.pythonPath` in the project's VS Code settings, then
/// in the user's (`${XDG_CONFIG_HOME:-~/.config}/Code/User/settings.json`).
pub fn vscode(c: &mut Collector) {
    let project = c.project.clone();
    if let Some(p) = &project {
        vscode_file(c, &p.join(".vscode/settings.json"), project.as_deref());
    }
    let config = env_path(c.env, "XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| c.home().map(|h| h.join(".config")));
    if let Some(config) = config {
        vscode_file(
            c,
            &config.join("Code/User/settings.json"),
            project.as_deref(),
        );
    }
}

fn vscode_file(c: &mut Collector, file: &Path, project: Option<&Path>) {
    let Some(text) = c.read_text(file) else {
        return;
    };
    let depth = jsonc_depth(&text);
    if depth > MAX_JSON_DEPTH {
        c.error(
            file,
            format!(
                "invalid settings.json: nested {depth} deep (at most {MAX_JSON_DEPTH} levels are read)"
            ),
        );
        return;
    }
    let value = match jsonc_parser::parse_to_serde_value(&text, &Default::default()) {
        Ok(Some(v)) => v,
        Ok(None) => return,
        Err(e) => {
            c.error(file, format!("invalid settings.json: {e}"));
            return;
        }
    };
    let Some(obj) = value.as_object() else {
        c.error(file, "invalid settings.json: not a JSON object");
        return;
    };
    for key in ["python.defaultInterpreterPath", "python.pythonPath"] {
        let Some(v) = obj.get(key) else {
            continue;
        };
        let Some(raw) = v.as_str() else {
            c.error(file, format!("{key} is not a string"));
            continue;
        };
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let detail = format!("{} {key} = {v}", file.display());
        let expanded = match project {
            Some(p) => expand_vscode(c, p, raw),
            // Without a workspace, workspace-relative values name nothing.
            None if raw.contains("${workspace") => continue,
            None => expand_vscode(c, Path::new("/"), raw),
        };
        if expanded.contains("${") {
            // `${command:...}` and friends are only known inside VS Code.
            continue;
        }
        if !expanded.starts_with('/') && expanded.contains('/') && project.is_none() {
            continue;
        }
        let base = project.unwrap_or(Path::new("/"));
        add_reference(c, &expanded, base, SourceKind::Vscode, detail);
    }
}

/// The PyCharm project SDK, resolved through JetBrains' `jdk.table.xml`.
pub fn pycharm(c: &mut Collector) {
    let Some(project) = c.project.clone() else {
        return;
    };
    let misc = project.join(".idea/misc.xml");
    let Some(sdk) = project_sdk(c, &misc) else {
        return;
    };
    let Some(config) = env_path(c.env, "XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| c.home().map(|h| h.join(".config")))
    else {
        return;
    };
    let home = c.home().map(|h| h.to_string_lossy().into_owned());
    let mut resolved = false;
    for product in c.list_dir(&config.join("JetBrains")) {
        let table = product.join("options/jdk.table.xml");
        let Some(homes) = sdk_homes(c, &table, &sdk) else {
            continue;
        };
        for raw in homes {
            resolved = true;
            let mut p = raw.replace("$PROJECT_DIR$", &project.to_string_lossy());
            if let Some(h) = &home {
                p = p.replace("$USER_HOME$", h);
            }
            if !p.starts_with('/') {
                continue;
            }
            let detail = format!(
                "{} project SDK \"{sdk}\" -> {} homePath {raw}",
                misc.display(),
                table.display()
            );
            add_reference(c, &p, &project, SourceKind::Pycharm, detail);
        }
    }
    if !resolved {
        c.error(
            &misc,
            format!(
                "PyCharm project SDK \"{sdk}\" is not defined in any {}/JetBrains/*/options/jdk.table.xml",
                config.display()
            ),
        );
    }
}

/// The project SDK named in `.idea/misc.xml` (`ProjectRootManager`'s `project-jdk-name`);
/// invalid XML is an error.
fn project_sdk(c: &mut Collector, misc: &Path) -> Option<String> {
    let text = c.read_text(misc)?;
    match roxmltree::Document::parse(&text) {
        Ok(doc) => doc
            .descendants()
            .find(|n| {
                n.has_tag_name("component") && n.attribute("name") == Some("ProjectRootManager")
            })
            .and_then(|n| n.attribute("project-jdk-name"))
            .map(String::from),
        Err(e) => {
            c.error(misc, format!("invalid XML: {e}"));
            None
        }
    }
}

/// The `homePath` of every JDK entry called `sdk` in the `jdk.table.xml` at `table`; `None`
/// when it cannot be read or is invalid XML (an error).
fn sdk_homes(c: &mut Collector, table: &Path, sdk: &str) -> Option<Vec<String>> {
    let text = c.read_text(table)?;
    let doc = match roxmltree::Document::parse(&text) {
        Ok(d) => d,
        Err(e) => {
            c.error(table, format!("invalid XML: {e}"));
            return None;
        }
    };
    let value_of = |jdk: roxmltree::Node, tag: &str| {
        jdk.children()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.attribute("value"))
            .map(String::from)
    };
    Some(
        doc.descendants()
            .filter(|n| n.has_tag_name("jdk"))
            .filter(|j| value_of(*j, "name").as_deref() == Some(sdk))
            .filter_map(|j| value_of(j, "homePath"))
            .collect(),
    )
}

/// The directories holding kernelspecs, in Jupyter's order, then every env's own.
fn kernel_dirs(c: &Collector) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = c
        .env
        .split_path("JUPYTER_PATH")
        .into_iter()
        .filter(|d| d.is_absolute())
        .map(|d| d.join("kernels"))
        .collect();
    let data = env_path(c.env, "JUPYTER_DATA_DIR")
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env_path(c.env, "XDG_DATA_HOME")
                .filter(|p| p.is_absolute())
                .map(|d| d.join("jupyter"))
        })
        .or_else(|| c.home().map(|h| h.join(".local/share/jupyter")));
    dirs.extend(data.map(|d| d.join("kernels")));
    for f in &c.found {
        let mut prefixes = vec![f.path.parent().and_then(Path::parent)];
        if let Some(real) = &f.canonical {
            prefixes.push(real.parent().and_then(Path::parent));
        }
        for p in prefixes.into_iter().flatten() {
            if f.canonical.is_some() && p.is_absolute() {
                dirs.push(p.join("share/jupyter/kernels"));
            }
        }
    }
    dirs.push(PathBuf::from("/usr/local/share/jupyter/kernels"));
    dirs.push(PathBuf::from("/usr/share/jupyter/kernels"));
    let mut uniq = Vec::new();
    for d in dirs {
        if !uniq.contains(&d) {
            uniq.push(d);
        }
    }
    uniq
}

/// Every Python kernelspec's `argv[0]`.
pub fn jupyter(c: &mut Collector) {
    for dir in kernel_dirs(c) {
        for kernel in c.list_dir(&dir) {
            let file = kernel.join("kernel.json");
            if !c.root.exists(&file) {
                continue;
            }
            let Some(text) = c.read_text(&file) else {
                continue;
            };
            let spec: serde_json::Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    c.error(&file, format!("invalid kernel.json: {e}"));
                    continue;
                }
            };
            let language = spec.get("language").and_then(|l| l.as_str());
            if language.is_some_and(|l| !l.eq_ignore_ascii_case("python")) {
                continue;
            }
            let Some(argv0) = spec
                .get("argv")
                .and_then(|a| a.as_array())
                .and_then(|a| a.first())
                .and_then(|a| a.as_str())
            else {
                c.error(&file, "invalid kernel.json: no argv[0] string");
                continue;
            };
            let detail = format!("{} argv[0] = \"{argv0}\"", file.display());
            let raw = argv0.replace("{resource_dir}", &kernel.to_string_lossy());
            add_reference(c, &raw, &kernel, SourceKind::JupyterKernel, detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root::{Env, Root};

    #[test]
    fn vscode_variables() {
        let root = Root::new("/nonexistent-root");
        let env = Env::from_pairs([("HOME", "/home/u"), ("LOOP", "${env:LOOP}"), ("V", "venv")]);
        let mut errors = Vec::new();
        let c = Collector::new(&root, &env, None, &mut errors);
        let p = Path::new("/w/proj");
        let x = |raw: &str| expand_vscode(&c, p, raw);
        assert_eq!(
            x("${workspaceFolder}/.venv/bin/python"),
            "/w/proj/.venv/bin/python"
        );
        assert_eq!(
            x("~/envs/${workspaceFolderBasename}/bin/python"),
            "/home/u/envs/proj/bin/python"
        );
        assert_eq!(
            x("${userHome}/${env:V}/bin/python"),
            "/home/u/venv/bin/python"
        );
        // A value that names itself is expanded once, not forever.
        assert_eq!(x("/a/${env:LOOP}/b"), "/a/${env:LOOP}/b");
        assert_eq!(x("${env:UNSET}python"), "python");
        assert_eq!(x("~user/x"), "~user/x");
        assert_eq!(x("/open/${env:"), "/open/${env:");
    }
}
