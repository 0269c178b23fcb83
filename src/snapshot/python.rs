//! `pythons[]`: each interpreter, who named it, its import path and installed distributions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One Python interpreter (deduplicated on its canonical path).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Python {
    /// The interpreter as first named (e.g. `/home/u/proj/.venv/bin/python`): not canonicalised,
    /// because a venv's `bin/python` is a link to its base and `pyvenv.cfg` sits beside the link.
    pub path: String,
    /// The file it resolves to (all links followed), or `None` when it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_path: Option<String>,
    /// False when something names this interpreter but it is not there (a deleted venv).
    pub exists: bool,
    /// `3.11.7`, or `3.11` when only the layout tells the minor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// venv, conda, pyenv, system, ...
    pub kind: PythonKind,
    /// `sys.prefix` as Python would compute it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// For a venv: the base interpreter (`home` in `pyvenv.cfg` + executable name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_executable: Option<String>,
    /// For a conda env: its name (`base` for the root env).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conda_env: Option<String>,
    /// For a venv: `include-system-site-packages` from `pyvenv.cfg`.
    #[serde(default)]
    pub include_system_site_packages: bool,
    /// Everything that named this interpreter, in discovery order.
    pub sources: Vec<Source>,
    /// The import path in the order Python builds it.
    #[serde(default)]
    pub sys_path: Vec<SysPathEntry>,
    /// Installed distributions, one per (name, location), sorted by name.
    #[serde(default, skip_serializing_if = "skip_packages")]
    pub packages: Vec<Package>,
    /// Distributions present in two or more places on the import path.
    #[serde(default)]
    pub shadowed: Vec<Shadowed>,
    /// `Requires-Dist` entries of the installed distributions that this interpreter does not
    /// satisfy: a static `pip check` (markers evaluated for this interpreter, requirements that
    /// apply only under an extra skipped), sorted by package then required name.
    /// At most 256 per interpreter (`UNMET_REQUIREMENTS_KEPT`; version conflicts before missing
    /// distributions), so a broken environment cannot blow up the snapshot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmet_requirements: Vec<UnmetRequirement>,
    /// Derived: what this interpreter is to the person at the machine (`job`, `shell`, `ide`,
    /// `pip-target`), from its sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<PythonRole>,
    /// Derived, for an IDE interpreter that is not the shell's: how its packages differ from
    /// the shell interpreter's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ide_drift: Option<IdeDrift>,
    /// How many more unmet requirements there were beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmet_requirements_omitted: usize,
    /// Distributions with native extension modules: the ABIs they were built for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native: Vec<super::extensions::NativeDist>,
    /// Extension modules the loader would refuse (missing library, version or symbol).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_failures: Vec<super::extensions::NativeFailure>,
    /// Distributions that two installers claim (pip over conda) or whose conda record
    /// disagrees with the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<super::extensions::OwnerConflict>,
    /// The CUDA compiler tools its frameworks run (ptxas for XLA and Triton, nvcc for torch's
    /// extension builds), found as each framework looks them up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_tools: Vec<super::tools::ToolUse>,
}

/// The most unmet requirements a snapshot lists per interpreter (the rest are counted in
/// `unmet_requirements_omitted`).
pub const UNMET_REQUIREMENTS_KEPT: usize = 256;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What an interpreter is to the person at the machine (derived from its sources).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PythonRole {
    /// The one a job started here runs: the active `VIRTUAL_ENV`/`CONDA_PREFIX`, else the
    /// project's environment, else the shell's `python` (at most one interpreter).
    Job,
    /// The one `python` (else `python3`) on PATH runs (at most one).
    Shell,
    /// Named by an IDE setting or a Jupyter kernelspec.
    Ide,
    /// The one the first `pip` (else `pip3`) on PATH installs into (at most one).
    PipTarget,
}

/// How an IDE interpreter's packages differ from the shell interpreter's. Only packages the
/// shell's interpreter has count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdeDrift {
    /// The shell's interpreter (`pythons[].path`).
    pub shell: String,
    /// The source that makes it the shell's (`python (PATH entry 0: /v/bin)`).
    #[serde(default)]
    pub shell_source: String,
    /// ML packages (framework families, numpy, h5py, protobuf, ...) at another version here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ml_changed: Vec<PackageDrift>,
    /// ML packages the shell's interpreter has and this one lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ml_missing: Vec<PackageDrift>,
    /// How many other packages differ or are missing here.
    #[serde(default)]
    pub other_count: usize,
    /// The first few of those names, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_first: Vec<String>,
}

/// One package that differs between an IDE interpreter and the shell's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageDrift {
    /// Normalised name.
    pub name: String,
    /// Its family (`tensorflow` for `tensorflow-gpu`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Its version in the IDE's interpreter; absent when missing there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ide_version: Option<String>,
    /// Its version in the shell's interpreter.
    pub shell_version: String,
}

/// One requirement of an installed distribution that the interpreter does not meet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnmetRequirement {
    /// The distribution that requires it (normalised name, the copy `import` sees).
    pub package: String,
    /// That distribution's version.
    pub version: String,
    /// The `Requires-Dist` line, verbatim (`numpy<2.0.0,>=1.23.5; python_version >= "3.9"`).
    pub requirement: String,
    /// The required distribution (normalised name: `nvidia-cudnn-cu12`).
    pub required: String,
    /// The version specifier (`<2.0.0,>=1.23.5`), absent for a bare name or a URL requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specifier: Option<String>,
    /// The installed version of `required`, or `None` when it is not installed at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    /// For an NVIDIA CUDA wheel (`nvidia-cusolver-cu12`): when the process first needs the
    /// libraries of its family (`libraries[].needed_at`: `import`, `first-use`, `run-time`),
    /// so a wheel whose libraries only a lazily loaded object asks for does not fail the
    /// import. Absent when no library of that family is asked for, or the wheel is no CUDA
    /// library wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_at: Option<String>,
}

/// How an interpreter was installed.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PythonKind {
    /// A `python -m venv` / virtualenv environment (`pyvenv.cfg` beside `bin/`).
    Venv,
    /// A conda environment (`conda-meta/` in the prefix).
    Conda,
    /// An interpreter under `$PYENV_ROOT/versions`.
    Pyenv,
    /// The OS's interpreter (`/usr/bin`, `/usr/local/bin`).
    System,
    /// Exists but none of the above.
    #[default]
    Unknown,
}

/// Something that named an interpreter.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// What kind of reference it was.
    pub kind: SourceKind,
    /// The reference itself: the PATH entry, the settings file, the kernelspec, the variable.
    pub detail: String,
    /// For a reference found on PATH (`path`, `pyenv-shim`, `pip-shebang`): the command's name
    /// there (`python3`, `pip`). None for a dangling link, which runs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// For a reference found on PATH: the position (from 0) of the PATH entry holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_entry: Option<usize>,
}

impl Source {
    /// A reference found on PATH: `command` in PATH entry `entry`, described by `detail`.
    pub fn on_path(kind: SourceKind, command: &str, entry: usize, detail: String) -> Source {
        Source {
            kind,
            detail,
            command: Some(command.to_string()),
            path_entry: Some(entry),
        }
    }

    /// A source as an older snapshot records it: its kind and detail, with `command` and
    /// `path_entry` read back from the detail (tests and hand-written snapshots).
    pub fn from_detail(kind: SourceKind, detail: &str) -> Source {
        let mut s = Source {
            kind,
            detail: detail.to_string(),
            ..Default::default()
        };
        s.derive_path_fields();
        s
    }

    /// Fill `command` and `path_entry` of a snapshot written before they existed, from the
    /// detail envdoctor wrote then (`python3 (PATH entry 2: /usr/bin)`).
    pub fn derive_path_fields(&mut self) {
        let on_path = matches!(
            self.kind,
            SourceKind::Path | SourceKind::PyenvShim | SourceKind::PipShebang
        );
        if !on_path || self.path_entry.is_some() || self.detail.contains("dangling symlink") {
            return;
        }
        let Some((name, rest)) = self.detail.split_once(" (PATH entry ") else {
            return;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            self.command = Some(name.to_string());
            self.path_entry = Some(n);
        }
    }
}

/// The kinds of reference that name an interpreter. `compare` matches interpreters by these.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// `python`, `python3` or `pythonX.Y` found on PATH (detail: the name and PATH position).
    Path,
    /// A pyenv shim on PATH, resolved statically (detail: how the version was chosen).
    PyenvShim,
    /// The interpreter in the shebang of `pip`/`pip3` on PATH.
    PipShebang,
    /// `$VIRTUAL_ENV`.
    VirtualEnv,
    /// `$CONDA_PREFIX`.
    CondaPrefix,
    /// A conda env listed in `~/.conda/environments.txt` or under `<conda>/envs/`.
    CondaEnv,
    /// An installed pyenv version under `$PYENV_ROOT/versions`.
    PyenvVersion,
    /// A common system location (`/usr/bin/python3*`, `/usr/local/bin/python3*`).
    System,
    /// The project's `.venv`, `venv` or `env` directory.
    ProjectVenv,
    /// A Poetry virtualenv for the project.
    Poetry,
    /// A Pipenv virtualenv for the project.
    Pipenv,
    /// The project's Pixi environment (`.pixi/envs/default`, what `pixi run` uses).
    Pixi,
    /// The conda env named by the project's `environment.yml`.
    CondaEnvironmentYml,
    /// VS Code `python.defaultInterpreterPath` / `python.pythonPath`.
    Vscode,
    /// The PyCharm project SDK.
    Pycharm,
    /// A Jupyter kernelspec's `argv[0]`.
    JupyterKernel,
    /// Anything else.
    #[default]
    Other,
}

/// One entry of `sys.path`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SysPathEntry {
    /// The directory (or zip file).
    pub path: String,
    /// Why it is on the path.
    pub origin: SysPathOrigin,
    /// Whether it exists.
    pub exists: bool,
}

/// Why a directory is on `sys.path`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SysPathOrigin {
    /// From `$PYTHONPATH`.
    Pythonpath,
    /// The standard library (`lib/pythonX.Y`, its zip, `lib-dynload`).
    Stdlib,
    /// The environment's own site-packages / dist-packages.
    Site,
    /// The base interpreter's site-packages, seen by a venv with `include-system-site-packages`.
    SystemSite,
    /// `~/.local/lib/pythonX.Y/site-packages`.
    UserSite,
    /// A line of a `.pth` file.
    Pth,
    /// Anything else.
    #[default]
    Other,
}

/// One installed distribution.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Package {
    /// PEP 503 normalised name (`scikit-learn`).
    pub name: String,
    /// The version as written in the metadata (raw string, e.g. `2.11.0+cu130`).
    pub version: String,
    /// The local version label (`cu130`), kept apart because specifiers ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
    /// False when the version is not valid PEP 440 (it is kept raw and compared as a string).
    #[serde(default = "yes")]
    pub version_valid: bool,
    /// The sys.path directory it was found in.
    pub location: String,
    /// The `.dist-info` / `.egg-info` / `.egg-link` it was read from.
    pub metadata: String,
    /// `INSTALLER` (pip, conda, uv, debian, ...), when recorded.
    #[serde(default, skip_serializing_if = "skip_installer")]
    pub installer: Option<String>,
    /// `Requires-Dist` lines, verbatim (markers included).
    #[serde(default, skip_serializing_if = "skip_requires")]
    pub requires: Vec<String>,
    /// `Requires-Python`, when given.
    #[serde(default, skip_serializing_if = "skip_requires_python")]
    pub requires_python: Option<String>,
    /// For an editable install: the source directory or URL it points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editable: Option<String>,
    /// Derived: the project it is a build of when that ships under several names
    /// (`tensorflow` for `tensorflow-gpu`, `tf-nightly`, `intel-tensorflow`; `torch`, `jax`,
    /// `keras`, `onnxruntime`, `opencv`, `cupy`). Rules say `family: tensorflow` instead of
    /// listing the names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Derived: the cuDNN release its local version label says it was built against
    /// (`jaxlib 0.4.23+cuda12.cudnn89` → `8.9`): it needs that major, at that minor or newer,
    /// at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_cudnn: Option<String>,
}

fn yes() -> bool {
    true
}

/// Optional [`Package`] fields that the rule engine's view of a snapshot may leave out when no
/// rule reads them (bit `1 << i` in the mask of [`with_package_fields_skipped`]).
pub const SKIPPABLE_PACKAGE_FIELDS: [&str; 3] = ["installer", "requires", "requires_python"];

thread_local! {
    static SKIP_PACKAGE_FIELDS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Serialise with the [`SKIPPABLE_PACKAGE_FIELDS`] in `mask` left out of every package, on this
/// thread (a cheaper JSON view for the rules: 20,000 packages' `requires` are most of a venv).
pub fn with_package_fields_skipped<T>(mask: u8, f: impl FnOnce() -> T) -> T {
    struct Reset(u8);
    impl Drop for Reset {
        fn drop(&mut self) {
            SKIP_PACKAGE_FIELDS.with(|s| s.set(self.0));
        }
    }
    let _reset = Reset(SKIP_PACKAGE_FIELDS.with(|s| s.replace(mask)));
    f()
}

/// Bit of the [`with_package_fields_skipped`] mask that leaves every interpreter's `packages`
/// out (`compare` reads them from the typed snapshot: their JSON is most of a large one).
pub const SKIP_ALL_PACKAGES: u8 = 1 << 7;

fn skip_packages(_: &[Package]) -> bool {
    skipped(7)
}

fn skipped(bit: u8) -> bool {
    SKIP_PACKAGE_FIELDS.with(|s| s.get() & (1 << bit) != 0)
}

fn skip_installer(v: &Option<String>) -> bool {
    v.is_none() || skipped(0)
}

fn skip_requires(v: &[String]) -> bool {
    v.is_empty() || skipped(1)
}

fn skip_requires_python(v: &Option<String>) -> bool {
    v.is_none() || skipped(2)
}

/// A distribution found in more than one place on the import path.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shadowed {
    /// Normalised name.
    pub name: String,
    /// The copy that `import` finds first.
    pub winner: Copy,
    /// The copies behind it, in sys.path order.
    pub hidden: Vec<Copy>,
}

/// One copy of a shadowed distribution.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Copy {
    /// Its version.
    pub version: String,
    /// Its sys.path directory.
    pub location: String,
    /// Why that directory is on sys.path.
    pub origin: SysPathOrigin,
}

impl Python {
    /// Sort lists whose order carries no meaning (sys_path and sources keep theirs).
    pub fn normalize(&mut self) {
        self.packages.sort_by(|a, b| {
            (&a.name, &a.location, &a.metadata).cmp(&(&b.name, &b.location, &b.metadata))
        });
        self.shadowed.sort_by(|a, b| a.name.cmp(&b.name));
        self.unmet_requirements
            .sort_by(|a, b| (&a.package, &a.required).cmp(&(&b.package, &b.required)));
        self.sources.dedup();
        self.roles.sort();
        self.roles.dedup();
        self.native.sort_by(|a, b| a.package.cmp(&b.package));
        self.native_failures
            .sort_by(|a, b| (&a.package, &a.module).cmp(&(&b.package, &b.module)));
        self.owners
            .sort_by(|a, b| (&a.package, &a.kind).cmp(&(&b.package, &b.kind)));
        self.cuda_tools
            .sort_by(|a, b| (&a.user, &a.framework).cmp(&(&b.user, &b.framework)));
    }

    /// The first package with this (normalised) name in sys.path order: the one `import` sees.
    pub fn package(&self, name: &str) -> Option<&Package> {
        if let Some(s) = self.shadowed.iter().find(|s| s.name == name) {
            return self
                .packages
                .iter()
                .find(|p| p.name == name && p.location == s.winner.location);
        }
        self.packages.iter().find(|p| p.name == name)
    }

    /// [`Python::package`] for every name at once, by name (a loop asking `package` for each
    /// of an environment's packages is quadratic: 500 packages, 250,000 comparisons).
    pub fn visible_packages(&self) -> std::collections::BTreeMap<&str, &Package> {
        let mut out = std::collections::BTreeMap::new();
        for p in &self.packages {
            out.entry(p.name.as_str()).or_insert(p);
        }
        for s in &self.shadowed {
            let winner = self
                .packages
                .iter()
                .find(|p| p.name == s.name && p.location == s.winner.location);
            match winner {
                Some(w) => {
                    out.insert(w.name.as_str(), w);
                }
                None => {
                    out.remove(s.name.as_str());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `visible_packages` answers what `package` answers for every name: the first copy, the
    /// shadowing winner's copy, none when the winner's copy is not among the packages.
    #[test]
    fn visible_packages_agree_with_package() {
        let pkg = |name: &str, location: &str| Package {
            name: name.into(),
            location: location.into(),
            metadata: format!("{location}/{name}.dist-info"),
            ..Package::default()
        };
        let shadow = |name: &str, location: &str| Shadowed {
            name: name.into(),
            winner: Copy {
                location: location.into(),
                ..Copy::default()
            },
            hidden: Vec::new(),
        };
        let py = Python {
            packages: vec![
                pkg("a", "/one"),
                pkg("a", "/two"),
                pkg("b", "/one"),
                pkg("b", "/two"),
                pkg("c", "/two"),
                pkg("d", "/one"),
            ],
            shadowed: vec![shadow("a", "/two"), shadow("d", "/gone"), shadow("e", "/x")],
            ..Python::default()
        };
        let visible = py.visible_packages();
        for name in ["a", "b", "c", "d", "e", "f"] {
            assert_eq!(visible.get(name).copied(), py.package(name), "{name}");
        }
        assert_eq!(visible["a"].location, "/two");
        assert_eq!(visible["b"].location, "/one");
        assert!(!visible.contains_key("d"));
    }
}
