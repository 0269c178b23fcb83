//! Flattening a snapshot into comparable facts: `(key, value)` pairs with a section, a rank
//! hint (ML-relevant or not), a comparison kind and an optional *scope*.
//!
//! Keys are stable and machine-independent: interpreters are named by their matched role
//! (`pythons[PATH:python3].packages[torch]`), home directories are written `~`
//! (`/home/alice/x` and `/home/bob/x` are the same fact), GPUs by index, toolkits by path.
//! A scope is the key of an *entity* fact (`pythons[conda-env:ml]`, `gpus[1]`): when the entity
//! is missing on a machine, the facts under it are not compared there (the entity itself is
//! reported once as added or removed instead of every package in it).
//!
//! Volatile facts (`collected_at`, `live` sub-structs, running jobs) and machine identity
//! (hostname, GPU UUIDs and PCI ids, the probe root) are emitted only with `--all`.

use super::packages::{is_ml_package, ValueKind};
use super::{homeless, Section, Verdict};
use crate::Snapshot;
use std::collections::{HashMap, HashSet};

/// A flattened snapshot: its facts and the entities (interpreters, GPUs, toolkits, checkpoints)
/// it has, whatever the section filter kept.
#[derive(Clone, Debug, Default)]
pub struct Flat {
    /// The facts, in emission order.
    pub facts: Vec<Fact>,
    /// Keys of the entities present.
    pub entities: HashSet<String>,
}

/// One comparable fact.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// Stable key (`pythons[PATH:python3].packages[torch]`).
    pub key: String,
    /// The value, as text.
    pub value: String,
    /// The section it belongs to (`--only`).
    pub section: Section,
    /// True when it is ML- or CUDA-relevant (ranked before the rest).
    pub ml: bool,
    /// True for a rule verdict (ranked first).
    pub verdict: bool,
    /// How its values compare.
    pub kind: ValueKind,
    /// The entity fact it belongs to, when any.
    pub scope: Option<String>,
    /// Display-only context (an interpreter's path, a verdict's title); never compared.
    pub note: Option<String>,
}

/// What to emit.
pub struct FlattenOptions<'a> {
    /// Include volatile and identity facts.
    pub all: bool,
    /// Sections to keep (empty: all).
    pub only: &'a [Section],
}

struct Out<'a> {
    facts: Vec<Fact>,
    entities: HashSet<String>,
    opts: &'a FlattenOptions<'a>,
}

impl Out<'_> {
    fn keep(&self, s: Section) -> bool {
        self.opts.only.is_empty() || self.opts.only.contains(&s)
    }

    /// An entity (a toolkit, a GPU, a checkpoint): facts under it are compared only where it
    /// exists on both sides, and its own presence is an ML fact (`note`: display context).
    fn entity(&mut self, section: Section, ent: &str, note: Option<String>) {
        self.entities.insert(ent.to_string());
        self.push_full(
            section,
            ent.to_string(),
            "present".into(),
            true,
            ValueKind::Text,
            None,
            note,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn push_full(
        &mut self,
        section: Section,
        key: String,
        value: String,
        ml: bool,
        kind: ValueKind,
        scope: Option<&str>,
        note: Option<String>,
    ) {
        if !self.keep(section) {
            return;
        }
        self.facts.push(Fact {
            key,
            value,
            section,
            ml,
            verdict: section == Section::Verdicts,
            kind,
            scope: scope.map(str::to_string),
            note,
        });
    }

    fn text(&mut self, section: Section, ml: bool, scope: Option<&str>, key: String, v: String) {
        self.push_full(section, key, v, ml, ValueKind::Text, scope, None);
    }

    fn opt<T: ToString>(
        &mut self,
        section: Section,
        ml: bool,
        scope: Option<&str>,
        key: String,
        v: &Option<T>,
    ) {
        if let Some(v) = v {
            self.text(section, ml, scope, key, v.to_string());
        }
    }

    fn dotted(&mut self, section: Section, scope: Option<&str>, key: String, v: &Option<String>) {
        if let Some(v) = v {
            self.push_full(
                section,
                key,
                v.clone(),
                true,
                ValueKind::Dotted,
                scope,
                None,
            );
        }
    }

    fn list(&mut self, section: Section, ml: bool, scope: Option<&str>, key: String, v: &[String]) {
        if !v.is_empty() {
            self.text(section, ml, scope, key, v.join(", "));
        }
    }
}

fn env_is_ml(name: &str) -> bool {
    const P: &[&str] = &[
        "CUDA",
        "NVIDIA_",
        "NCCL_",
        "XLA_",
        "TF_",
        "TORCH",
        "PYTORCH_",
        "JAX_",
        "CUDNN",
        "LD_",
        "HF_",
        "TRANSFORMERS_",
        "OMP_",
        "MKL_",
    ];
    P.iter().any(|p| name.starts_with(p))
}

/// Flatten one snapshot. `labels[i]` names `snap.pythons[i]` (from matching); `verdicts` are the
/// rule verdicts on this snapshot, when a rule engine was given.
pub fn flatten(
    snap: &Snapshot,
    labels: &[String],
    verdicts: Option<&[Verdict]>,
    opts: &FlattenOptions,
) -> Flat {
    let mut o = Out {
        entities: HashSet::new(),
        facts: Vec::with_capacity(
            64 + snap.pythons.iter().map(|p| p.packages.len()).sum::<usize>(),
        ),
        opts,
    };
    use Section as S;
    let all = opts.all;

    if let Some(vs) = verdicts {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for v in vs {
            let subject = v
                .subject
                .as_deref()
                .map(homeless)
                .unwrap_or_else(|| "machine".into());
            let base = format!("verdicts[{}] {}", v.rule_id, subject);
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let key = if *n == 1 {
                base
            } else {
                format!("{base} #{n}")
            };
            o.push_full(
                S::Verdicts,
                key,
                v.severity.clone(),
                true,
                ValueKind::Text,
                None,
                Some(format!("{}: {}", v.title, homeless(&v.message))),
            );
        }
    }

    // Meta and identity.
    if all {
        o.text(
            S::Meta,
            false,
            None,
            "collected_at".into(),
            snap.collected_at.clone(),
        );
        o.text(
            S::Meta,
            false,
            None,
            "envdoctor_version".into(),
            snap.envdoctor_version.clone(),
        );
        o.text(S::Meta, false, None, "root".into(), snap.root.clone());
        o.opt(
            S::Host,
            false,
            None,
            "host.hostname".into(),
            &snap.host.hostname,
        );
    }

    // Host.
    let h = &snap.host;
    o.opt(S::Host, false, None, "host.os_name".into(), &h.os_name);
    o.opt(
        S::Host,
        false,
        None,
        "host.os_version".into(),
        &h.os_version,
    );
    o.opt(S::Host, false, None, "host.kernel".into(), &h.kernel);
    o.opt(S::Host, false, None, "host.arch".into(), &h.arch);
    o.opt(
        S::Host,
        false,
        None,
        "host.glibc_version".into(),
        &h.glibc_version,
    );
    o.opt(S::Host, false, None, "host.cpu_model".into(), &h.cpu_model);
    o.opt(S::Host, false, None, "host.cpu_cores".into(), &h.cpu_cores);
    o.opt(
        S::Host,
        false,
        None,
        "host.cpu_threads".into(),
        &h.cpu_threads,
    );
    o.list(S::Host, false, None, "host.cpu_flags".into(), &h.cpu_flags);
    o.opt(
        S::Host,
        false,
        None,
        "host.memory_total_mib".into(),
        &h.memory_total_mib,
    );
    o.opt(
        S::Host,
        false,
        None,
        "host.memory_limit_mib".into(),
        &h.memory_limit_mib,
    );
    o.opt(
        S::Host,
        false,
        None,
        "host.swap_total_mib".into(),
        &h.swap_total_mib,
    );
    o.opt(
        S::Host,
        true,
        None,
        "host.shm_total_mib".into(),
        &h.shm_total_mib,
    );
    if let Some(c) = &h.container {
        o.text(
            S::Host,
            false,
            None,
            "host.container".into(),
            c.kind.clone(),
        );
    }
    if h.wsl {
        o.text(S::Host, false, None, "host.wsl".into(), "true".into());
    }
    if all {
        let l = &h.live;
        o.opt(
            S::Host,
            false,
            None,
            "host.live.memory_available_mib".into(),
            &l.memory_available_mib,
        );
        o.opt(
            S::Host,
            false,
            None,
            "host.live.swap_free_mib".into(),
            &l.swap_free_mib,
        );
        o.opt(
            S::Host,
            false,
            None,
            "host.live.shm_free_mib".into(),
            &l.shm_free_mib,
        );
    }

    // Environment.
    for (k, v) in &snap.env {
        o.text(S::Env, env_is_ml(k), None, format!("env.{k}"), homeless(v));
    }

    // Interpreters and their packages.
    let label_of: HashMap<&str, &str> = snap
        .pythons
        .iter()
        .zip(labels)
        .map(|(p, l)| (p.path.as_str(), l.as_str()))
        .collect();
    for (py, label) in snap.pythons.iter().zip(labels) {
        let ent = format!("pythons[{label}]");
        o.entities.insert(ent.clone());
        let sc = Some(ent.as_str());
        let note = Some(format!(
            "{}{}",
            py.path,
            py.version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default()
        ));
        // The entity itself: present, with its path as context.
        if o.keep(S::Pythons) || o.keep(S::Packages) {
            o.facts.push(Fact {
                key: ent.clone(),
                value: "present".into(),
                section: S::Pythons,
                ml: false,
                verdict: false,
                kind: ValueKind::Text,
                scope: None,
                note,
            });
        }
        o.text(
            S::Pythons,
            false,
            sc,
            format!("{ent}.path"),
            homeless(&py.path),
        );
        if let Some(v) = &py.version {
            o.push_full(
                S::Pythons,
                format!("{ent}.version"),
                v.clone(),
                true,
                ValueKind::Pep440,
                sc,
                None,
            );
        }
        o.text(
            S::Pythons,
            false,
            sc,
            format!("{ent}.kind"),
            kind_name(py.kind),
        );
        o.text(
            S::Pythons,
            false,
            sc,
            format!("{ent}.exists"),
            py.exists.to_string(),
        );
        o.opt(
            S::Pythons,
            false,
            sc,
            format!("{ent}.conda_env"),
            &py.conda_env,
        );
        if let Some(b) = &py.base_executable {
            o.text(
                S::Pythons,
                false,
                sc,
                format!("{ent}.base_executable"),
                homeless(b),
            );
        }
        if py.kind == crate::snapshot::python::PythonKind::Venv {
            o.text(
                S::Pythons,
                false,
                sc,
                format!("{ent}.include_system_site_packages"),
                py.include_system_site_packages.to_string(),
            );
        }
        let mut kinds: Vec<String> = py.sources.iter().map(|s| source_name(s.kind)).collect();
        kinds.sort();
        kinds.dedup();
        o.list(S::Pythons, false, sc, format!("{ent}.sources"), &kinds);
        if o.keep(S::Packages) {
            // One fact per name: the copy `import` sees (shadowed copies are their own fact).
            // Packages are sorted by name; the winner is the first of its name unless `shadowed`
            // names another location (what `Python::package` does, without its linear scans).
            let winners: HashMap<&str, &str> = py
                .shadowed
                .iter()
                .map(|s| (s.name.as_str(), s.winner.location.as_str()))
                .collect();
            let mut last: Option<&str> = None;
            for (i, p) in py.packages.iter().enumerate() {
                if last == Some(p.name.as_str()) {
                    continue;
                }
                last = Some(p.name.as_str());
                let w = match winners.get(p.name.as_str()) {
                    Some(loc) => py.packages[i..]
                        .iter()
                        .take_while(|q| q.name == p.name)
                        .find(|q| q.location == *loc)
                        .unwrap_or(p),
                    None => p,
                };
                let kind = if w.version_valid {
                    ValueKind::Pep440
                } else {
                    ValueKind::Text
                };
                o.push_full(
                    S::Packages,
                    format!("{ent}.packages[{}]", w.name),
                    w.version.clone(),
                    is_ml_package(&w.name),
                    kind,
                    sc,
                    None,
                );
            }
            for s in &py.shadowed {
                let hidden: Vec<String> = s.hidden.iter().map(|c| c.version.clone()).collect();
                o.text(
                    S::Packages,
                    is_ml_package(&s.name),
                    sc,
                    format!("{ent}.shadowed[{}]", s.name),
                    format!("{} hides {}", s.winner.version, hidden.join(", ")),
                );
            }
        }
    }
    let py_label = |p: &str| -> String {
        label_of
            .get(p)
            .map(|l| l.to_string())
            .unwrap_or_else(|| homeless(p))
    };

    // Frameworks: what each installed framework expects.
    for f in &snap.frameworks {
        let pl = py_label(&f.python);
        let ent = format!("frameworks[{pl}:{}]", f.name);
        let scope_py = format!("pythons[{pl}]");
        let sc = if label_of.contains_key(f.python.as_str()) {
            Some(scope_py.as_str())
        } else {
            None
        };
        o.push_full(
            S::Frameworks,
            format!("{ent}.version"),
            f.version.clone(),
            true,
            ValueKind::Pep440,
            sc,
            None,
        );
        o.dotted(
            S::Frameworks,
            sc,
            format!("{ent}.cuda_version"),
            &f.cuda_version,
        );
        o.dotted(
            S::Frameworks,
            sc,
            format!("{ent}.cudnn_version"),
            &f.cudnn_version,
        );
        o.opt(
            S::Frameworks,
            true,
            sc,
            format!("{ent}.is_cuda_build"),
            &f.is_cuda_build,
        );
        o.list(
            S::Frameworks,
            true,
            sc,
            format!("{ent}.compute_capabilities"),
            &f.compute_capabilities,
        );
        o.opt(
            S::Frameworks,
            true,
            sc,
            format!("{ent}.installed_by"),
            &f.installed_by,
        );
        let mut wants: Vec<String> = f.wants.iter().map(|w| w.soname.clone()).collect();
        wants.sort();
        wants.dedup();
        o.list(S::Frameworks, true, sc, format!("{ent}.wants"), &wants);
        o.list(
            S::Frameworks,
            true,
            sc,
            format!("{ent}.nvidia_requirements"),
            &f.nvidia_requirements,
        );
    }

    // Libraries: how each wanted soname resolves.
    let mut lib_seen: HashMap<String, usize> = HashMap::new();
    for l in &snap.libraries {
        let who = l
            .python
            .as_deref()
            .map(py_label)
            .unwrap_or_else(|| "machine".into());
        let req = l.requester.rsplit('/').next().unwrap_or(&l.requester);
        let base = format!("libraries[{who}:{}<-{req}]", l.soname);
        let n = lib_seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let ent = if *n == 1 { base } else { format!("{base}#{n}") };
        let sc_py = l
            .python
            .as_deref()
            .filter(|p| label_of.contains_key(p))
            .map(|p| format!("pythons[{}]", py_label(p)));
        let sc = sc_py.as_deref();
        o.text(
            S::Libraries,
            true,
            sc,
            format!("{ent}.resolves"),
            l.resolves.to_string(),
        );
        if let Some(p) = &l.path {
            o.text(S::Libraries, true, sc, format!("{ent}.path"), homeless(p));
        }
        o.opt(
            S::Libraries,
            true,
            sc,
            format!("{ent}.found_via"),
            &l.found_via,
        );
        if let Some(p) = &l.realpath {
            o.text(
                S::Libraries,
                true,
                sc,
                format!("{ent}.realpath"),
                homeless(p),
            );
        }
        o.dotted(
            S::Libraries,
            sc,
            format!("{ent}.file_version"),
            &l.file_version,
        );
        if let Some(ld) = &l.load {
            o.text(
                S::Libraries,
                true,
                sc,
                format!("{ent}.load"),
                ld.status.clone(),
            );
            o.dotted(S::Libraries, sc, format!("{ent}.version"), &ld.version);
        }
        if l.version_mismatch {
            o.text(
                S::Libraries,
                true,
                sc,
                format!("{ent}.version_mismatch"),
                "true".into(),
            );
        }
        o.list(
            S::Libraries,
            true,
            sc,
            format!("{ent}.missing_symbol_versions"),
            &l.missing_symbol_versions,
        );
    }

    // CUDA.
    let c = &snap.cuda;
    for t in &c.toolkits {
        let ent = format!("cuda.toolkits[{}]", homeless(&t.path));
        o.entity(S::Cuda, &ent, None);
        let sc = Some(ent.as_str());
        o.dotted(S::Cuda, sc, format!("{ent}.version"), &t.version);
        o.dotted(
            S::Cuda,
            sc,
            format!("{ent}.cudnn_version"),
            &t.cudnn_version,
        );
        o.text(
            S::Cuda,
            true,
            sc,
            format!("{ent}.has_libdevice"),
            t.has_libdevice.to_string(),
        );
        o.text(
            S::Cuda,
            true,
            sc,
            format!("{ent}.has_ptxas"),
            t.has_ptxas.to_string(),
        );
    }
    if let Some(d) = &c.default_toolkit {
        o.text(
            S::Cuda,
            true,
            None,
            "cuda.default_toolkit".into(),
            homeless(d),
        );
    }
    for h in &c.cudnn {
        o.push_full(
            S::Cuda,
            format!("cuda.cudnn[{}]", homeless(&h.path)),
            h.version.clone(),
            true,
            ValueKind::Dotted,
            None,
            None,
        );
    }
    if let Some(d) = &c.driver {
        o.push_full(
            S::Cuda,
            "cuda.driver.version".into(),
            d.version.clone(),
            true,
            ValueKind::Dotted,
            None,
            None,
        );
        o.dotted(
            S::Cuda,
            None,
            "cuda.driver.kernel_module".into(),
            &d.kernel_module,
        );
        o.dotted(S::Cuda, None, "cuda.driver.libcuda".into(), &d.libcuda);
        if d.mismatch {
            o.text(
                S::Cuda,
                true,
                None,
                "cuda.driver.mismatch".into(),
                "true".into(),
            );
        }
    }
    if let Some(l) = &c.ld_cache {
        o.text(
            S::Cuda,
            true,
            None,
            "cuda.ld_cache.stale".into(),
            l.stale.to_string(),
        );
        if !l.dangling.is_empty() {
            o.text(
                S::Cuda,
                true,
                None,
                "cuda.ld_cache.dangling".into(),
                l.dangling.len().to_string(),
            );
        }
    }

    // NVML and GPUs.
    let n = &snap.nvml;
    o.text(S::Gpus, true, None, "nvml.status".into(), n.status.clone());
    o.dotted(
        S::Gpus,
        None,
        "nvml.driver_version".into(),
        &n.driver_version,
    );
    o.dotted(
        S::Gpus,
        None,
        "nvml.cuda_driver_version".into(),
        &n.cuda_driver_version,
    );
    if let Some(v) = &n.visible_devices {
        o.opt(
            S::Gpus,
            true,
            None,
            "nvml.visible_devices.raw".into(),
            &v.raw,
        );
        let vis: Vec<String> = v.visible.iter().map(|i| i.to_string()).collect();
        o.text(
            S::Gpus,
            true,
            None,
            "nvml.visible_devices.visible".into(),
            vis.join(","),
        );
    }
    if n.status == "ok" || !snap.gpus.is_empty() {
        o.text(
            S::Gpus,
            true,
            None,
            "gpus.count".into(),
            snap.gpus.len().to_string(),
        );
    }
    for g in &snap.gpus {
        let ent = format!("gpus[{}]", g.index);
        o.entity(S::Gpus, &ent, Some(g.name.clone()));
        let sc = Some(ent.as_str());
        o.text(S::Gpus, true, sc, format!("{ent}.name"), g.name.clone());
        o.text(
            S::Gpus,
            true,
            sc,
            format!("{ent}.memory_total_mib"),
            g.memory_total_mib.to_string(),
        );
        o.dotted(
            S::Gpus,
            sc,
            format!("{ent}.compute_capability"),
            &g.compute_capability,
        );
        o.opt(
            S::Gpus,
            true,
            sc,
            format!("{ent}.compute_mode"),
            &g.compute_mode,
        );
        o.opt(
            S::Gpus,
            true,
            sc,
            format!("{ent}.mig_enabled"),
            &g.mig_enabled,
        );
        o.opt(
            S::Gpus,
            true,
            sc,
            format!("{ent}.persistence_mode"),
            &g.persistence_mode,
        );
        o.text(
            S::Gpus,
            true,
            sc,
            format!("{ent}.visible"),
            g.visible.to_string(),
        );
        if all {
            o.text(S::Gpus, false, sc, format!("{ent}.uuid"), g.uuid.clone());
            o.opt(
                S::Gpus,
                false,
                sc,
                format!("{ent}.pci_bus_id"),
                &g.pci_bus_id,
            );
            o.list(
                S::Gpus,
                false,
                sc,
                format!("{ent}.mig_devices"),
                &g.mig_devices,
            );
            let l = &g.live;
            o.text(
                S::Gpus,
                false,
                sc,
                format!("{ent}.live.memory_used_mib"),
                l.memory_used_mib.to_string(),
            );
            o.text(
                S::Gpus,
                false,
                sc,
                format!("{ent}.live.memory_free_mib"),
                l.memory_free_mib.to_string(),
            );
            o.opt(
                S::Gpus,
                false,
                sc,
                format!("{ent}.live.utilization_percent"),
                &l.utilization_percent,
            );
            o.text(
                S::Gpus,
                false,
                sc,
                format!("{ent}.live.processes"),
                l.processes.len().to_string(),
            );
            let pids: Vec<String> = l.processes.iter().map(|p| p.pid.to_string()).collect();
            o.list(S::Gpus, false, sc, format!("{ent}.live.pids"), &pids);
            o.text(
                S::Gpus,
                false,
                sc,
                format!("{ent}.live.foreign_processes"),
                l.foreign_processes.to_string(),
            );
        }
    }

    // Checkpoints: who wrote them.
    for ck in &snap.checkpoints {
        let ent = format!("checkpoints[{}]", homeless(&ck.path));
        o.entity(S::Checkpoints, &ent, None);
        let sc = Some(ent.as_str());
        o.text(
            S::Checkpoints,
            true,
            sc,
            format!("{ent}.format"),
            ck.format.clone(),
        );
        o.opt(
            S::Checkpoints,
            true,
            sc,
            format!("{ent}.producer"),
            &ck.producer,
        );
        if let Some(v) = &ck.producer_version {
            o.push_full(
                S::Checkpoints,
                format!("{ent}.producer_version"),
                v.clone(),
                true,
                ValueKind::Pep440,
                sc,
                None,
            );
        }
        o.opt(S::Checkpoints, true, sc, format!("{ent}.error"), &ck.error);
        // What each reader found inside, walked from the snapshot's own JSON so that a field
        // added to a reader is compared without code here.
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(ck) {
            for (k, v) in m {
                if !matches!(
                    k.as_str(),
                    "path" | "format" | "producer" | "producer_version" | "error"
                ) {
                    checkpoint_contents(&mut o, sc, &format!("{ent}.{k}"), &v);
                }
            }
        }
    }

    // Running jobs are volatile (pids).
    if all {
        for j in &snap.jobs {
            o.list(
                S::Jobs,
                true,
                None,
                format!("jobs[{}].loaded", j.pid),
                &j.loaded,
            );
        }
    }

    // Probe errors.
    let mut pe_seen: HashMap<String, usize> = HashMap::new();
    for e in &snap.probe_errors {
        let base = format!(
            "probe_errors[{}{}]",
            e.probe,
            e.path
                .as_deref()
                .map(|p| format!(" {}", homeless(p)))
                .unwrap_or_default()
        );
        let n = pe_seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let key = if *n == 1 { base } else { format!("{base}#{n}") };
        o.text(S::ProbeErrors, false, None, key, homeless(&e.message));
    }
    Flat {
        facts: o.facts,
        entities: o.entities,
    }
}

fn kind_name(k: crate::snapshot::python::PythonKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn source_name(k: crate::snapshot::python::SourceKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A checkpoint reader's facts under `key`: scalars as text, lists of scalars as lists, lists
/// of records (tensors, opsets) as their count and a digest, so that one changed tensor shape
/// shows without listing thousands of tensors.
fn checkpoint_contents(o: &mut Out, sc: Option<&str>, key: &str, v: &serde_json::Value) {
    use serde_json::Value;
    use Section as S;
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, x) in m {
                checkpoint_contents(o, sc, &format!("{key}.{k}"), x);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            o.list(S::Checkpoints, true, sc, key.to_string(), &items);
        }
        Value::Array(a) => {
            let text = v.to_string();
            let digest = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
            o.text(
                S::Checkpoints,
                true,
                sc,
                key.to_string(),
                format!("{} entries (digest {digest:016x})", a.len()),
            );
        }
        Value::String(s) => o.text(S::Checkpoints, true, sc, key.to_string(), s.clone()),
        other => o.text(S::Checkpoints, true, sc, key.to_string(), other.to_string()),
    }
}
