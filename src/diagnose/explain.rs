//! An explanation for every event the log reader recognised that no rule explains, from the
//! machine's facts: for a missing soname, which copies exist (`libraries[].candidates`,
//! `cuda.inventory`) and why the loader does not see them; for an undefined symbol, which copy
//! wins and which others there are; for the other kinds, the values the log gives set against
//! the facts they concern. These say what the facts show, not why it broke: causes are rules.

use super::logfacts::{LogEvent, LogFacts};
use crate::rules::Evidence;
use serde::Serialize;
use serde_json::Value;

/// What the facts say about one event.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Explanation {
    /// The event's line.
    pub line: u64,
    /// The event's kind (`missing-object`, `undefined-symbol`, `oom`, …).
    pub kind: String,
    /// What the facts show about it, in sentences.
    pub summary: String,
    /// The facts it rests on.
    pub facts: Vec<Evidence>,
}

fn text<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn ev(path: impl Into<String>, value: Value) -> Evidence {
    Evidence {
        path: path.into(),
        value,
    }
}

/// The libraries entries for `soname`.
fn libraries<'a>(root: &'a Value, soname: &str) -> Vec<&'a Value> {
    root.get("libraries")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter(|x| text(x, "soname") == Some(soname))
                .collect()
        })
        .unwrap_or_default()
}

/// The `cuda.inventory` files that carry `soname`.
fn inventory<'a>(root: &'a Value, soname: &str) -> Vec<&'a str> {
    root.pointer("/cuda/inventory")
        .and_then(Value::as_array)
        .map(|inv| {
            inv.iter()
                .filter(|f| {
                    f.get("names")
                        .and_then(Value::as_array)
                        .is_some_and(|n| n.iter().any(|x| x.as_str() == Some(soname)))
                        || text(f, "path").is_some_and(|p| p.ends_with(soname))
                })
                .filter_map(|f| text(f, "path"))
                .collect()
        })
        .unwrap_or_default()
}

fn candidates(lib: &Value) -> Vec<String> {
    lib.get("candidates")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|c| {
                    let p = text(c, "path")?;
                    let o = text(c, "origin").unwrap_or("?");
                    let w = if c.get("wins") == Some(&Value::Bool(true)) {
                        ", wins"
                    } else {
                        ""
                    };
                    Some(format!("{p} ({o}{w})"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn missing_object(e: &LogEvent, root: &Value) -> Option<(String, Vec<Evidence>)> {
    let soname = e.values.get("soname")?.as_str()?;
    let libs = libraries(root, soname);
    let inv = inventory(root, soname);
    let mut facts = Vec::new();
    let mut s = format!("The log asks for {soname}. ");
    if let Some(lib) = libs.first() {
        let c = candidates(lib);
        facts.push(ev(
            format!("libraries[{soname}].resolves"),
            lib.get("resolves").cloned().unwrap_or(Value::Null),
        ));
        facts.push(ev(
            format!("libraries[{soname}].candidates"),
            Value::from(c.clone()),
        ));
        if lib.get("resolves") == Some(&Value::Bool(true)) {
            s.push_str(&format!(
                "Here the loader finds it at {} (via {}): the job ran with another search path (LD_LIBRARY_PATH, a different interpreter or container) or on another machine.",
                text(lib, "path").unwrap_or("?"),
                text(lib, "found_via").unwrap_or("?")
            ));
        } else if c.is_empty() && inv.is_empty() {
            s.push_str("No copy of it exists on this machine (no candidate, none in the CUDA inventory): install the package that ships it.");
        } else {
            s.push_str(&format!(
                "Copies exist ({}) but none is where the loader looks for {} (its RUNPATH/RPATH, LD_LIBRARY_PATH, ld.so.cache, /lib and /usr/lib){}.",
                c.iter().map(String::as_str).chain(inv.iter().copied()).collect::<Vec<_>>().join("; "),
                text(lib, "requester").unwrap_or("the requester"),
                text(lib, "error").map(|e| format!("; the search stopped on: {e}")).unwrap_or_default()
            ));
        }
    } else if !inv.is_empty() {
        facts.push(ev("cuda.inventory", Value::from(inv.clone())));
        s.push_str(&format!(
            "Copies exist ({}) but no framework here resolves it, so the loader's view of them is unknown: add their directory to LD_LIBRARY_PATH, or install the framework's pip nvidia-* package.",
            inv.join("; ")
        ));
    } else {
        s.push_str("The facts hold no copy of it and no library that asks for it: probe the machine where the job ran (`envdoctor snapshot` there), or install the package that ships it.");
    }
    Some((s, facts))
}

fn undefined_symbol(e: &LogEvent, root: &Value) -> Option<(String, Vec<Evidence>)> {
    let symbol = e.values.get("symbol")?.as_str()?;
    // The library that should export it: the symbol version names it (`libnvJitLink.so.12`).
    let provider = e
        .values
        .get("version")
        .and_then(Value::as_str)
        .filter(|v| v.contains(".so"));
    let object = e.values.get("object").and_then(Value::as_str);
    let mut s = format!("{} needs {symbol}", object.unwrap_or("the object"));
    let mut facts = Vec::new();
    match provider {
        Some(p) => {
            s.push_str(&format!(" from {p}. "));
            if let Some(lib) = libraries(root, p).first() {
                let c = candidates(lib);
                facts.push(ev(format!("libraries[{p}].path"), lib.get("path").cloned().unwrap_or(Value::Null)));
                facts.push(ev(format!("libraries[{p}].candidates"), Value::from(c.clone())));
                s.push_str(&format!(
                    "The copy that wins is {} (via {}); it does not export {symbol}. The other copies ({}) are candidates: the one the requester was built with (usually its pip nvidia-* or framework copy) must win, e.g. by removing the other from LD_LIBRARY_PATH.",
                    text(lib, "path").unwrap_or("?"),
                    text(lib, "found_via").unwrap_or("?"),
                    if c.is_empty() { "none".to_string() } else { c.join("; ") }
                ));
            } else {
                s.push_str("The facts do not hold that library: probe where the job ran to see which copy wins.");
            }
        }
        None => s.push_str(". The symbol is not versioned by a library: an extension built against another release of the library that defines it (rebuild it against the installed one, or install the matching release)."),
    }
    Some((s, facts))
}

fn oom(e: &LogEvent) -> Option<(String, Vec<Evidence>)> {
    let v = &e.values;
    let held = v.get("held_elsewhere_gib")?.as_f64()?;
    let total = v.get("total_gib")?.as_f64()?;
    let s = if held >= 0.5 {
        format!("Of {total} GiB, about {held} GiB was held outside this process when it ran out of memory: another process (or another framework in this one) shares the GPU.")
    } else {
        format!("This process held nearly all of the GPU's {total} GiB: the model, batch or activations do not fit (reduce the batch, use mixed precision or checkpointing).")
    };
    Some((s, vec![ev("log.oom.held_elsewhere_gib", Value::from(held))]))
}

fn gpu_arch(e: &LogEvent, root: &Value) -> Option<(String, Vec<Evidence>)> {
    let cc = e.values.get("compute_capability")?.as_str()?;
    let arches = root.pointer("/log/torch-arch-list/arches").cloned();
    let s = format!(
        "The GPU has compute capability {cc}; the framework carries kernels for {}: install a build that includes sm_{}.",
        arches.as_ref().map_or("other architectures".into(), |a| a.to_string()),
        cc.replace('.', "")
    );
    Some((
        s,
        vec![ev("log.gpu-arch.compute_capability", Value::from(cc))],
    ))
}

fn module_not_found(e: &LogEvent, root: &Value) -> Option<(String, Vec<Evidence>)> {
    let module = e.values.get("module")?.as_str()?;
    let top = module.split('.').next().unwrap_or(module);
    let dist = crate::rules::eval::normalize_name(top);
    let mut have = Vec::new();
    for py in root
        .get("pythons")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let found = py.get("packages").and_then(Value::as_array).and_then(|p| {
            p.iter().find(|x| {
                text(x, "name").map(crate::rules::eval::normalize_name) == Some(dist.clone())
            })
        });
        if let Some(f) = found {
            have.push(format!(
                "{} has {} {}",
                text(py, "path").unwrap_or("?"),
                dist,
                text(f, "version").unwrap_or("?")
            ));
        }
    }
    let s = if module.starts_with("numpy._core") {
        "`numpy._core` exists only in NumPy 2: the file or extension was written or built with NumPy 2 and is read with NumPy 1 (upgrade numpy to 2, or re-save it under NumPy 1).".to_string()
    } else if have.is_empty() {
        format!("No interpreter here has a distribution named {dist}: the job's interpreter lacks it (or it is published under another name).")
    } else {
        format!("{} is installed ({}): the job ran another interpreter, or {module} is a submodule this version does not have.", dist, have.join("; "))
    };
    Some((
        s,
        vec![ev("log.module-not-found.module", Value::from(module))],
    ))
}

/// One sentence from the event's values, for kinds without a fact-specific reading.
fn values_only(e: &LogEvent) -> (String, Vec<Evidence>) {
    let vals: Vec<String> = e
        .values
        .iter()
        .filter(|(k, _)| k.as_str() != "line")
        .map(|(k, v)| {
            format!(
                "{k} = {}",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            )
        })
        .collect();
    let what = match e.kind {
        "cuda-init" | "cuda-error" | "no-driver" | "driver-too-old" => {
            "the CUDA driver or runtime refused"
        }
        "library-status" | "nccl" => "a CUDA library returned an error status",
        "resolver" => "the resolver found no installable version",
        "no-gpu-device" | "jax-cpu-fallback" => {
            "the framework found no usable GPU and fell back (or failed)"
        }
        "ptx-version" | "ptxas-old" | "driver-older-than-ptxas" | "no-kernel-image" => {
            "the GPU code is for another architecture or toolchain"
        }
        "nccl-shm" => "NCCL could not create its shared-memory segments",
        "weights-only" | "unpickling" | "torch-zip" | "safetensors" | "h5py" | "keras-format"
        | "tf-checkpoint" => "a serialized file could not be read",
        "loads-file" => "the traceback loads a file",
        _ => "the log reports a version or format mismatch",
    };
    let facts = e
        .values
        .iter()
        .map(|(k, v)| ev(format!("log.{}.{k}", e.kind), v.clone()))
        .collect();
    if vals.is_empty() {
        (format!("Line {}: {what}.", e.line), facts)
    } else {
        (
            format!("Line {}: {what} ({}).", e.line, vals.join(", ")),
            facts,
        )
    }
}

/// An explanation for each recognised event (one per kind and value set), skipping lines a
/// diagnosis already explains (`explained`).
pub fn explain(log: &LogFacts, root: &Value, explained: &[u64]) -> Vec<Explanation> {
    let mut out: Vec<Explanation> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for e in &log.events {
        if explained.contains(&e.line) {
            continue;
        }
        let key = (
            e.kind.to_string(),
            serde_json::to_string(&e.values).unwrap_or_default(),
        );
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let specific = match e.kind {
            "missing-object" => missing_object(e, root),
            "undefined-symbol" => undefined_symbol(e, root),
            "oom" => oom(e),
            "gpu-arch" => gpu_arch(e, root),
            "module-not-found" => module_not_found(e, root),
            _ => None,
        };
        let (summary, facts) = specific.unwrap_or_else(|| values_only(e));
        out.push(Explanation {
            line: e.line,
            kind: e.kind.to_string(),
            summary,
            facts,
        });
        if out.len() == 20 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_missing_soname_names_the_copies_the_loader_does_not_see() {
        let log = super::super::logfacts::read_text(
            "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory",
        );
        let root = json!({"libraries": [{"soname": "libcudnn.so.9", "resolves": false, "requester": "/v/torch/lib/libtorch_cuda.so",
            "candidates": [{"path": "/opt/cudnn/lib/libcudnn.so.9", "origin": "system", "wins": false}]}]});
        let x = explain(&log, &root, &[]);
        assert!(
            x[0].summary.contains("/opt/cudnn/lib/libcudnn.so.9"),
            "{x:?}"
        );
        assert!(x[0].summary.contains("libtorch_cuda.so"), "{x:?}");
        let x = explain(&log, &json!({}), &[]);
        assert!(x[0].summary.contains("hold no copy"), "{x:?}");
    }

    #[test]
    fn an_undefined_symbol_names_the_copy_that_wins() {
        let log = super::super::logfacts::read_text("ImportError: /v/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12");
        let root = json!({"libraries": [{"soname": "libnvJitLink.so.12", "resolves": true, "path": "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12", "found_via": "ld-library-path",
            "candidates": [{"path": "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12", "origin": "cuda-toolkit", "wins": true},
                           {"path": "/v/nvidia/nvjitlink/lib/libnvJitLink.so.12", "origin": "pip-nvidia", "wins": false}]}]});
        let x = explain(&log, &root, &[]);
        let s = &x[0].summary;
        assert!(
            s.contains(
                "wins is /usr/local/cuda-12.1/lib64/libnvJitLink.so.12 (via ld-library-path)"
            ),
            "{s}"
        );
        assert!(s.contains("pip-nvidia"), "{s}");
    }
}
