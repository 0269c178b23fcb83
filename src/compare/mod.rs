//! `envdoctor compare`: the semantic drift between two snapshots, or across a fleet.
//!
//! This module owns the public API (`compare`, `load`, [`Verdict`], the report types whose
//! JSON Schema is checked in at `schema/compare.schema.json`) and the two-way diff. The work
//! is split as follows:
//! - [`matching`]: lines interpreters up across machines by role (PATH python, `VIRTUAL_ENV`,
//!   project venv, IDE, conda env by name, pyenv version), not by absolute path;
//! - [`facts`]: flattens a snapshot into stable, machine-independent `(key, value)` facts
//!   (volatile `live` facts and machine identity only with `--all`);
//! - [`packages`]: PEP 440 / dotted version changes (direction and size, local tags);
//! - [`fleet`]: three or more snapshots: the majority value of each fact and who differs;
//! - [`render`]: text (aligned, coloured only on a terminal), Markdown; JSON is the serde form
//!   of [`CompareReport`].
//!
//! Ranking: first the drift in rule verdicts (a finding that fires on B and not on A is *new*,
//! "B will hit …"; the reverse is *fixed*), then ML- and CUDA-relevant facts (torch, tensorflow,
//! jax, numpy, protobuf, h5py, keras, nvidia-*, the interpreter version, frameworks, libraries,
//! CUDA, driver, GPUs, CUDA/NCCL/XLA/TF/TORCH variables, checkpoints), then the rest. Verdicts
//! come from a pluggable function (`verdicts` of [`compare`]): the CLI (`cli.rs`) passes the rule
//! pack, and this module does not depend on the rule engine.

pub mod facts;
pub mod fleet;
pub mod lock;
pub mod matching;
pub mod packages;

use crate::{Error, Snapshot};
use facts::{Fact, Flat, FlattenOptions};
pub use matching::InterpreterGroup;
pub use packages::{Direction, Size};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Version of the `compare` JSON format ([`CompareReport::format_version`]).
pub const FORMAT_VERSION: u32 = 1;

/// One rule finding on one snapshot, as a rule engine reports it. A finding's identity is
/// `rule_id` + `subject` (what it was evaluated for, home directories written `~`), so a finding
/// that fires on both sides with other numbers in its message is not drift in verdicts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// The rule's id (`tf-cusolver-soname`).
    pub rule_id: String,
    /// `error`, `warning` or `info`.
    pub severity: String,
    /// The rule's title.
    pub title: String,
    /// The finding's message (facts filled in).
    pub message: String,
    /// What it was evaluated for (`pythons[/venv/bin/python]`); None for machine-wide rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// The rule engine hook: the verdicts of the rules on one snapshot.
/// It is called from several threads at once (one per core), each on its own snapshots.
pub type VerdictFn<'a> = dyn Fn(&Snapshot) -> Vec<Verdict> + Sync + 'a;

/// The parts of a snapshot that can be compared (`--only`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// Rule verdicts: the rule pack's findings on each snapshot (absent with `--no-rules`).
    Verdicts,
    /// Interpreters: which exist, their version, kind, path and roles.
    Pythons,
    /// Installed distributions of each interpreter.
    Packages,
    /// What each ML framework expects (CUDA, cuDNN, sonames).
    Frameworks,
    /// How each wanted shared library resolves.
    Libraries,
    /// CUDA toolkits, cuDNN, the driver, the loader cache.
    Cuda,
    /// NVML and the GPUs.
    Gpus,
    /// Checkpoints and their producers.
    Checkpoints,
    /// The project's lock files: which there are, their digests, how the job's environment
    /// compared with the one it was compared with.
    Locks,
    /// Allowlisted environment variables.
    Env,
    /// OS, kernel, CPU, memory, container.
    Host,
    /// Probes that failed.
    ProbeErrors,
    /// Running jobs (`--pid`; volatile, only with `--all`).
    Jobs,
    /// `collected_at`, envdoctor version, probe root (only with `--all`).
    Meta,
}

/// What to compare.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// Also compare volatile facts (`collected_at`, `live`, pids) and machine identity
    /// (hostname, GPU UUIDs).
    pub all: bool,
    /// Only these sections (empty: all).
    pub only: Vec<Section>,
}

/// Where a change ranks.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Rank {
    /// A rule verdict changed.
    Verdict,
    /// An ML- or CUDA-relevant fact.
    Ml,
    /// Anything else.
    Other,
}

/// What happened to a fact from A to B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// A finding fires on B and not on A ("B will hit …").
    New,
    /// A finding fires on A and not on B.
    Fixed,
    /// The fact exists on B only.
    Added,
    /// The fact exists on A only.
    Removed,
    /// The value differs.
    Changed,
}

/// One difference between A and B.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// Where it ranks.
    pub rank: Rank,
    /// Its section.
    pub section: Section,
    /// The fact's stable key (`pythons[PATH:python3].packages[torch]`).
    pub fact: String,
    /// What happened.
    pub change: ChangeKind,
    /// The value on A (`null` when absent).
    pub a: Option<String>,
    /// The value on B (`null` when absent).
    pub b: Option<String>,
    /// For versions: upgrade, downgrade, or same (equal versions written differently).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// For versions: the most significant part that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
    /// The local version label on A when local labels differ (`cu118`; empty for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_a: Option<String>,
    /// The local version label on B when local labels differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_b: Option<String>,
    /// Context for a person (an interpreter's path, a rule's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One input snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MachineRef {
    /// Its label (the file name as given).
    pub label: String,
    /// The probed host's name, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// When it was collected.
    pub collected_at: String,
    /// Its `schema_version`.
    pub schema_version: u32,
    /// The envdoctor that wrote it.
    pub envdoctor_version: String,
}

/// `pair` (two snapshots) or `fleet` (three or more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// A against B.
    Pair,
    /// Each machine against the majority.
    Fleet,
}

/// The options the comparison ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportOptions {
    /// `--all`: volatile and identity facts included.
    pub all: bool,
    /// `--only`: the sections compared (empty: all).
    pub only: Vec<Section>,
    /// Whether rule verdicts were compared.
    pub verdicts: bool,
}

/// Counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// True when anything compared differs (exit code 1).
    pub drift: bool,
    /// Pair: the number of changes. Fleet: the number of facts with at least one outlier.
    pub differences: usize,
    /// Verdict-ranked differences (pair: new + fixed findings).
    pub verdicts: usize,
    /// Pair: findings that fire on B and not on A.
    pub new_findings: usize,
    /// Pair: findings that fire on A and not on B.
    pub fixed_findings: usize,
    /// ML/CUDA-ranked differences.
    pub ml: usize,
    /// The other differences.
    pub other: usize,
    /// Interpreters missing on at least one machine.
    pub unmatched_interpreters: usize,
}

/// The result of `envdoctor compare` (`--format json` prints exactly this).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareReport {
    /// Version of this format ([`FORMAT_VERSION`]): bumped with every schema change.
    pub format_version: u32,
    /// The envdoctor that compared.
    pub envdoctor_version: String,
    /// `pair` or `fleet`.
    pub mode: Mode,
    /// The inputs, in order (A, B, ...).
    pub machines: Vec<MachineRef>,
    /// Options used.
    pub options: ReportOptions,
    /// How interpreters were matched across machines (`members[i]` is machine i's path).
    pub interpreters: Vec<InterpreterGroup>,
    /// Pair mode: the changes, ranked (verdicts, then ML/CUDA, then the rest). Empty for a fleet.
    pub changes: Vec<Change>,
    /// Fleet mode: majority values and outliers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<fleet::FleetReport>,
    /// Counts.
    pub summary: Summary,
}

impl CompareReport {
    /// The exit code as `diff`: 0 no drift, 1 drift.
    pub fn exit(&self) -> crate::exit::Exit {
        crate::exit::Exit::found_if(self.summary.drift)
    }
}

/// Rewrite home directories as `~` so the same layout under two users compares equal:
/// `/home/<user>/…`, `/Users/<user>/…` and `/root/…`, wherever a path starts (at the start, or
/// after `:`, a space, `=`, a quote, `(`, `[` or `,`).
pub fn homeless(s: &str) -> String {
    if !s.contains("/home/") && !s.contains("/root") && !s.contains("/Users/") {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let boundary = |i: usize| {
        i == 0
            || matches!(
                b[i - 1],
                b':' | b' ' | b'=' | b'"' | b'\'' | b'(' | b'[' | b','
            )
    };
    while i < s.len() {
        if boundary(i) {
            let rest = &s[i..];
            let user_dir = ["/home/", "/Users/"]
                .iter()
                .find(|p| rest.starts_with(**p) && rest.len() > p.len())
                .map(|p| {
                    let after = &rest[p.len()..];
                    p.len()
                        + after
                            .find(['/', ':', ' ', '"', '\'', ')', ']', ','])
                            .unwrap_or(after.len())
                });
            let root_dir = (rest.starts_with("/root")
                && matches!(
                    rest.as_bytes().get(5),
                    None | Some(b'/' | b':' | b' ' | b'"' | b'\'' | b')' | b',')
                ))
            .then_some(5);
            if let Some(n) = user_dir.or(root_dir) {
                out.push('~');
                i += n;
                continue;
            }
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn rank_of(f: &Fact) -> Rank {
    if f.verdict {
        Rank::Verdict
    } else if f.ml {
        Rank::Ml
    } else {
        Rank::Other
    }
}

fn severity_order(s: Option<&str>) -> u8 {
    match s {
        Some("error") => 0,
        Some("warning") => 1,
        _ => 2,
    }
}

/// Sort changes: rank, then (verdicts) new before fixed and errors first, then section, key.
pub(crate) fn sort_changes(changes: &mut [Change]) {
    changes.sort_by(|x, y| {
        let vx = (
            x.change != ChangeKind::New,
            severity_order(x.b.as_deref().or(x.a.as_deref())),
        );
        let vy = (
            y.change != ChangeKind::New,
            severity_order(y.b.as_deref().or(y.a.as_deref())),
        );
        x.rank
            .cmp(&y.rank)
            .then_with(|| {
                if x.rank == Rank::Verdict {
                    vx.cmp(&vy)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then(x.section.cmp(&y.section))
            .then_with(|| x.fact.cmp(&y.fact))
    });
}

fn in_scope(f: &Fact, a: &Flat, b: &Flat) -> bool {
    f.scope
        .as_ref()
        .is_none_or(|s| a.entities.contains(s) && b.entities.contains(s))
}

/// The two-way diff of flattened snapshots, ranked.
pub fn pair_diff(a: &Flat, b: &Flat) -> Vec<Change> {
    let ia: HashMap<&str, &Fact> = a.facts.iter().map(|f| (f.key.as_str(), f)).collect();
    let ib: HashMap<&str, &Fact> = b.facts.iter().map(|f| (f.key.as_str(), f)).collect();
    let mut out = Vec::new();
    let mk = |f: &Fact, change: ChangeKind, va: Option<&Fact>, vb: Option<&Fact>| Change {
        rank: rank_of(f),
        section: f.section,
        fact: f.key.clone(),
        change,
        a: va.map(|x| x.value.clone()),
        b: vb.map(|x| x.value.clone()),
        direction: None,
        size: None,
        local_a: None,
        local_b: None,
        note: vb
            .and_then(|x| x.note.clone())
            .or_else(|| va.and_then(|x| x.note.clone())),
    };
    for fa in &a.facts {
        if !in_scope(fa, a, b) {
            continue;
        }
        match ib.get(fa.key.as_str()) {
            None => {
                let kind = if fa.verdict {
                    ChangeKind::Fixed
                } else {
                    ChangeKind::Removed
                };
                out.push(mk(fa, kind, Some(fa), None));
            }
            Some(fb) if fb.value != fa.value => {
                let mut c = mk(fa, ChangeKind::Changed, Some(fa), Some(fb));
                let v = packages::classify(fa.kind, &fa.value, &fb.value);
                c.direction = v.direction;
                c.size = v.size;
                if let Some((la, lb)) = v.local {
                    c.local_a = Some(la);
                    c.local_b = Some(lb);
                }
                out.push(c);
            }
            Some(_) => {}
        }
    }
    for fb in &b.facts {
        if !in_scope(fb, a, b) || ia.contains_key(fb.key.as_str()) {
            continue;
        }
        let kind = if fb.verdict {
            ChangeKind::New
        } else {
            ChangeKind::Added
        };
        out.push(mk(fb, kind, None, Some(fb)));
    }
    sort_changes(&mut out);
    out
}

/// Flatten every snapshot (in parallel for a fleet) with matched interpreter labels.
fn flatten_all(
    snaps: &[(String, Snapshot)],
    labels: &[Vec<String>],
    verdicts: &[Option<Vec<Verdict>>],
    fo: &FlattenOptions,
) -> Vec<Flat> {
    let n = snaps.len();
    let threads = std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(1)
        .min(n.div_ceil(16).max(1));
    if threads <= 1 {
        return (0..n)
            .map(|i| facts::flatten(&snaps[i].1, &labels[i], verdicts[i].as_deref(), fo))
            .collect();
    }
    let chunk = n.div_ceil(threads);
    let mut out: Vec<Flat> = Vec::with_capacity(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let end = (start + chunk).min(n);
                s.spawn(move || {
                    (start..end)
                        .map(|i| {
                            facts::flatten(&snaps[i].1, &labels[i], verdicts[i].as_deref(), fo)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            // A panic in a worker is a bug; keep going with what the others produced.
            if let Ok(v) = h.join() {
                out.extend(v);
            }
        }
    });
    out
}

/// Run the rules on every snapshot, the snapshots split over the available cores.
fn verdicts_in_parallel(snaps: &[(String, Snapshot)], f: &VerdictFn) -> Vec<Option<Vec<Verdict>>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = snaps.len().div_ceil(cores.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = snaps
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || part.iter().map(|(_, s)| Some(f(s))).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Compare snapshots: two give a ranked pair diff, three or more a fleet report.
///
/// `snaps` are `(label, snapshot)` in order (A, B, ...). `verdicts`, when given, is called once
/// per snapshot; findings that fire on B and not on A rank first as *new*, the reverse as
/// *fixed* (in a fleet: findings that only some machines have).
pub fn compare(
    snaps: &[(String, Snapshot)],
    opts: &CompareOptions,
    verdicts: Option<&VerdictFn>,
) -> Result<CompareReport, Error> {
    if snaps.len() < 2 {
        return Err(Error::other(
            "compare needs at least two snapshots (A and B, or a fleet of three or more)",
        ));
    }
    let refs: Vec<&Snapshot> = snaps.iter().map(|(_, s)| s).collect();
    let matching = matching::match_interpreters(&refs);
    let vs: Vec<Option<Vec<Verdict>>> = match verdicts {
        None => vec![None; snaps.len()],
        Some(f) => verdicts_in_parallel(snaps, f),
    };
    let mut only = opts.only.clone();
    only.sort();
    only.dedup();
    let fo = FlattenOptions {
        all: opts.all,
        only: &only,
    };
    let flats = flatten_all(snaps, &matching.labels, &vs, &fo);
    let machines = machine_refs(snaps);
    let unmatched = matching
        .groups
        .iter()
        .filter(|g| g.members.iter().any(|m| m.is_none()))
        .count();
    let options = ReportOptions {
        all: opts.all,
        only,
        verdicts: verdicts.is_some(),
    };
    let mut report = CompareReport {
        format_version: FORMAT_VERSION,
        envdoctor_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: Mode::Pair,
        machines,
        options,
        interpreters: matching.groups,
        changes: Vec::new(),
        fleet: None,
        summary: Summary {
            unmatched_interpreters: unmatched,
            ..Default::default()
        },
    };
    if snaps.len() == 2 {
        add_pair_changes(&mut report, &flats[0], &flats[1]);
    } else {
        add_fleet(&mut report, snaps, &flats);
    }
    Ok(report)
}

/// Who each snapshot is: label, host, when and by which envdoctor it was taken.
fn machine_refs(snaps: &[(String, Snapshot)]) -> Vec<MachineRef> {
    snaps
        .iter()
        .map(|(label, s)| MachineRef {
            label: label.clone(),
            hostname: s.host.hostname.clone(),
            collected_at: s.collected_at.clone(),
            schema_version: s.schema_version,
            envdoctor_version: s.envdoctor_version.clone(),
        })
        .collect()
}

/// A pair: the ranked changes from `a` to `b` into `report`, counted in its summary.
fn add_pair_changes(report: &mut CompareReport, a: &Flat, b: &Flat) {
    let changes = pair_diff(a, b);
    let s = &mut report.summary;
    s.differences = changes.len();
    for c in &changes {
        match c.rank {
            Rank::Verdict => s.verdicts += 1,
            Rank::Ml => s.ml += 1,
            Rank::Other => s.other += 1,
        }
        match c.change {
            ChangeKind::New => s.new_findings += 1,
            ChangeKind::Fixed => s.fixed_findings += 1,
            _ => {}
        }
    }
    s.drift = !changes.is_empty();
    report.changes = changes;
}

/// A fleet: the fleet report of `flats` into `report`, counted in its summary.
fn add_fleet(report: &mut CompareReport, snaps: &[(String, Snapshot)], flats: &[Flat]) {
    let labels: Vec<&str> = snaps.iter().map(|(l, _)| l.as_str()).collect();
    let f = fleet::fleet(&labels, flats);
    let s = &mut report.summary;
    s.differences = f.by_fact.len();
    for ff in &f.by_fact {
        match ff.rank {
            Rank::Verdict => s.verdicts += 1,
            Rank::Ml => s.ml += 1,
            Rank::Other => s.other += 1,
        }
    }
    s.drift = !f.by_fact.is_empty();
    report.mode = Mode::Fleet;
    report.fleet = Some(f);
}

/// Read one snapshot file ([`Snapshot::load`]); every error names the file and what is wrong
/// with it.
pub fn load(path: &Path) -> Result<Snapshot, Error> {
    Snapshot::load(path)
}

/// Read snapshot files in parallel, labelled by their path as given (duplicates get `#2`...).
/// The first failing file (in argument order) is the error.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<(String, Snapshot)>, Error> {
    let n = paths.len();
    let threads = std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(1)
        .min(n.max(1));
    let chunk = n.div_ceil(threads).max(1);
    let mut results: Vec<Result<Snapshot, Error>> = Vec::with_capacity(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|p| load(p)).collect::<Vec<_>>()))
            .collect();
        for h in handles {
            match h.join() {
                Ok(v) => results.extend(v),
                Err(_) => results.push(Err(Error::other("a snapshot reader thread panicked"))),
            }
        }
    });
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(n);
    for (p, r) in paths.iter().zip(results) {
        let snap = r?;
        let base = p.display().to_string();
        let k = seen.entry(base.clone()).or_insert(0);
        *k += 1;
        let label = if *k == 1 { base } else { format!("{base}#{k}") };
        out.push((label, snap));
    }
    Ok(out)
}

/// The JSON Schema of [`CompareReport`], as checked in at `schema/compare.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render_output::<CompareReport>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::python::{Package, Python, PythonKind, Source, SourceKind};

    #[test]
    fn checked_in_schema_is_current() {
        crate::schema::assert_current("compare.schema.json", &json_schema());
    }

    #[test]
    fn home_directories_are_written_as_tilde() {
        assert_eq!(homeless("/home/alice/proj/.venv"), "~/proj/.venv");
        assert_eq!(homeless("/root/x:/usr/bin:/home/bob"), "~/x:/usr/bin:~");
        assert_eq!(homeless("/usr/local/cuda"), "/usr/local/cuda");
        assert_eq!(homeless("/rootfs/x"), "/rootfs/x");
        assert_eq!(homeless("torch in /home/bob/p (x)"), "torch in ~/p (x)");
        assert_eq!(homeless("a/home/b"), "a/home/b");
    }

    fn machine(home: &str, torch: &str, extra_cuda_error: bool) -> Snapshot {
        let mut s = Snapshot::empty();
        s.pythons.push(Python {
            path: format!("{home}/proj/.venv/bin/python"),
            exists: true,
            version: Some("3.11.7".into()),
            kind: PythonKind::Venv,
            sources: vec![Source {
                kind: SourceKind::ProjectVenv,
                detail: format!("{home}/proj/.venv"),
                ..Default::default()
            }],
            packages: vec![
                Package {
                    name: "six".into(),
                    version: "1.16.0".into(),
                    version_valid: true,
                    location: format!("{home}/proj/.venv/lib/python3.11/site-packages"),
                    ..Default::default()
                },
                Package {
                    name: "torch".into(),
                    version: torch.into(),
                    version_valid: true,
                    location: format!("{home}/proj/.venv/lib/python3.11/site-packages"),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        s.collected_at = format!("{home} time");
        if extra_cuda_error {
            s.host.kernel = Some("6.1".into());
        }
        s
    }

    /// A stand-in for the rule engine: one rule fires everywhere, one when torch is 2.3 or
    /// later (on the interpreter), one when it is older (on the machine).
    fn torch_rules(s: &Snapshot) -> Vec<Verdict> {
        let torch = s.pythons[0].package("torch").map(|p| p.version.clone());
        let mut v = vec![Verdict {
            rule_id: "always".into(),
            severity: "info".into(),
            title: "fires everywhere".into(),
            message: format!("same rule, other numbers: {}", s.pythons[0].path),
            subject: None,
        }];
        if torch.is_some_and(|t| t.starts_with("2.3")) {
            v.push(Verdict {
                rule_id: "torch-cu121-driver".into(),
                severity: "error".into(),
                title: "torch built for CUDA 12.1 needs driver >= 530".into(),
                message: format!("torch in {} needs a newer driver", s.pythons[0].path),
                subject: Some(format!("pythons[{}]", s.pythons[0].path)),
            });
        } else {
            v.push(Verdict {
                rule_id: "old-torch".into(),
                severity: "warning".into(),
                title: "old torch".into(),
                message: "torch < 2.3".into(),
                subject: None,
            });
        }
        v
    }

    #[test]
    fn verdict_hook_ranks_new_findings_first() {
        let a = machine("/home/alice", "2.1.0+cu118", false);
        let b = machine("/home/bob", "2.3.1+cu121", true);
        let snaps = vec![("a".to_string(), a), ("b".to_string(), b)];
        let r = compare(&snaps, &CompareOptions::default(), Some(&torch_rules)).unwrap();
        let kinds: Vec<(Rank, ChangeKind, &str)> = r
            .changes
            .iter()
            .map(|c| (c.rank, c.change, c.fact.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (
                    Rank::Verdict,
                    ChangeKind::New,
                    "verdicts[torch-cu121-driver] pythons[project-venv:.venv]"
                ),
                (
                    Rank::Verdict,
                    ChangeKind::Fixed,
                    "verdicts[old-torch] machine"
                ),
                (
                    Rank::Ml,
                    ChangeKind::Changed,
                    "pythons[project-venv:.venv].packages[torch]"
                ),
                (Rank::Other, ChangeKind::Added, "host.kernel"),
            ],
            "home dirs differ, collected_at ignored, the path fact equal"
        );
        let torch = &r.changes[2];
        assert_eq!(torch.direction, Some(Direction::Upgrade));
        assert_eq!(torch.size, Some(Size::Minor));
        assert_eq!(
            (torch.local_a.as_deref(), torch.local_b.as_deref()),
            (Some("cu118"), Some("cu121"))
        );
        assert_eq!(r.summary.new_findings, 1);
        assert_eq!(r.summary.fixed_findings, 1);
        assert_eq!(r.exit(), crate::exit::Exit::Found);

        // Without the hook, no verdict section; with --all, collected_at differs too.
        let opts = CompareOptions {
            all: true,
            only: vec![],
        };
        let r = compare(&snaps, &opts, None).unwrap();
        assert!(r.changes.iter().all(|c| c.rank != Rank::Verdict));
        assert!(r.changes.iter().any(|c| c.fact == "collected_at"));
        // --only packages keeps the torch change alone.
        let opts = CompareOptions {
            all: false,
            only: vec![Section::Packages],
        };
        let r = compare(&snaps, &opts, None).unwrap();
        assert_eq!(r.changes.len(), 1, "{:?}", r.changes);
    }

    #[test]
    fn a_finding_is_matched_by_the_role_of_its_interpreter_not_its_path() {
        // The same project venv at two paths that are not under a home directory.
        let a = machine("/srv/ci-1", "2.3.1+cu121", false);
        let b = machine("/data/job-7", "2.3.1+cu121", false);
        let snaps = vec![("a".to_string(), a), ("b".to_string(), b)];
        let r = compare(&snaps, &CompareOptions::default(), Some(&torch_rules)).unwrap();
        assert!(
            r.changes.iter().all(|c| c.rank != Rank::Verdict),
            "{:#?}",
            r.changes
        );
        assert_eq!((r.summary.new_findings, r.summary.fixed_findings), (0, 0));
        let roles = [("/x/.venv/bin/python", "project-venv:.venv")];
        assert_eq!(
            facts::subject_by_role("libraries[libcudnn.so.9 @ /x/.venv/bin/python]", &roles),
            "libraries[libcudnn.so.9 @ project-venv:.venv]"
        );
        // A path that only starts like an interpreter's is left alone.
        assert_eq!(
            facts::subject_by_role("checkpoints[/x/.venv/bin/python.pt]", &roles),
            "checkpoints[/x/.venv/bin/python.pt]"
        );
    }

    #[test]
    fn identical_snapshots_have_no_drift_and_one_is_refused() {
        let a = machine("/home/alice", "2.1.0", false);
        let snaps = vec![("a".to_string(), a.clone()), ("b".to_string(), a)];
        let r = compare(&snaps, &CompareOptions::default(), None).unwrap();
        assert!(r.changes.is_empty());
        assert_eq!(r.exit(), crate::exit::Exit::Success);
        assert!(compare(&snaps[..1], &CompareOptions::default(), None).is_err());
    }
}
