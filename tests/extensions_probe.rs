//! The extensions probe (issue 25) on real files: every extension module loaded as `ld.so`
//! would load it into its interpreter (`pythons[].native_failures`), what it was compiled
//! against (`pythons[].native`), who owns each distribution (`pythons[].owners`).
//!
//! - modules and libraries compiled with `cc` (a fake torch whose `libc10.so` lacks a symbol a
//!   module was linked against; a library lacking a symbol version): the prediction is checked
//!   against the real loader (the module loaded with `ctypes` in a child python);
//! - the real torch 2.15.0 venv from PyPI: its own extensions load, nothing is reported;
//! - real pandas 2.0.3 / 2.2.3 and numexpr 2.8.4 wheels: the NumPy C-API marker of both eras;
//! - a conda environment laid out as conda lays it out (`conda-meta/*.json` records with
//!   `files`), pip's numpy over conda's.

use crate::common::cc;
use crate::common::fw;
use crate::common::machine::{self, dist, Machine};
use crate::common::pypi;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SITE: &str = "/venv/lib/python3.11/site-packages";

fn python<'a>(report: &'a Value, path: &str) -> &'a Value {
    report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in {:#}", report["snapshot"]["pythons"]))
}

fn failures(py: &Value) -> Vec<Value> {
    py["native_failures"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// What the real loader says: load each of `first` (as a framework's process would have), then
/// `module`, with ctypes in a child python; `Err(dlerror)` when `module` does not load.
fn real_load(first: &[PathBuf], module: &Path) -> Result<(), String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys\nfor p in sys.argv[1:-1]: ctypes.CDLL(p)\ntry:\n    ctypes.CDLL(sys.argv[-1], mode=2)\nexcept OSError as e:\n    print('ERR', e)\n",
        ])
        .args(first)
        .arg(module)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    match text.lines().find_map(|l| l.strip_prefix("ERR ")) {
        Some(e) => Err(e.to_string()),
        None => Ok(()),
    }
}

/// The C++ symbol torch_scatter's wheel for torch 2.4 needs and torch 2.5.1's libc10 lacks
/// (pytorch_scatter#476), written as a C identifier.
const NEW: &str = "_ZN3c1017RegisterOperatorsD1Ev";

/// A venv with torch 2.5.1 (its `torch/lib/libc10.so` defining `c10_old`, and [`NEW`] too
/// when `runtime_has_new`) and torch-scatter 2.1.2+pt24cu124, whose `_version_cuda.so` was
/// linked against a libc10 that defines both and uses both.
fn torch_extension_machine(runtime_has_new: bool) -> (Machine, PathBuf, PathBuf) {
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("torch", "2.5.1")]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libc10.so")
        .returns("c10_old", 1)
        .returns(NEW, 2)
        .build(&build.path().join("libc10.so"));
    let mut runtime = cc::Lib::new("libc10.so").returns("c10_old", 1);
    if runtime_has_new {
        runtime = runtime.returns(NEW, 2);
    }
    let c10 = runtime.build(&m.path(&format!("{SITE}/torch/lib/libc10.so")));
    let module = cc::Lib::new("_version_cuda.so")
        .c(&format!(
            "int c10_old(void); int {NEW}(void); int scatter(void) {{ return c10_old() + {NEW}(); }}"
        ))
        .needs(build.path(), "c10")
        .build(&m.path(&format!("{SITE}/torch_scatter/_version_cuda.so")));
    dist(
        &m,
        SITE,
        "torch-scatter",
        "2.1.2+pt24cu124",
        &[],
        &[
            "torch_scatter/__init__.py",
            "torch_scatter/_version_cuda.so",
        ],
    );
    (m, c10, module)
}

#[test]
fn a_module_built_for_another_torch_cannot_load_and_the_real_loader_agrees() {
    if !cc::have_cc() {
        return;
    }
    let (m, c10, module) = torch_extension_machine(false);
    let (_, report) = m.check(&[]);
    let py = python(&report, "/venv/bin/python");
    let f = failures(py);
    assert_eq!(f.len(), 1, "{:#}", py["native_failures"]);
    assert_eq!(f[0]["package"], "torch-scatter");
    assert_eq!(f[0]["kind"], "undefined-symbol");
    assert_eq!(f[0]["missing"], serde_json::json!([NEW]));
    assert_eq!(f[0]["built_for_torch"], "2.4");
    // Its DT_NEEDED libc10.so is the copy torch's process already loaded.
    assert_eq!(
        f[0]["searched"][0],
        format!("{SITE}/torch/lib/libc10.so").as_str()
    );
    let finding = machine::fired(&report, "extension-undefined-symbol-torch-build");
    let msg = finding["message"].as_str().unwrap();
    assert!(
        msg.contains("built for torch 2.4; torch 2.5.1 is installed"),
        "{msg}"
    );
    assert!(machine::findings_of(&report, "extension-undefined-symbol").is_empty());
    // The real loader: the same module, after torch's libc10 is loaded, refuses.
    let err = real_load(&[c10], &module).unwrap_err();
    assert!(err.contains(&format!("undefined symbol: {NEW}")), "{err}");
}

#[test]
fn a_module_whose_symbols_all_bind_is_quiet_and_loads() {
    if !cc::have_cc() {
        return;
    }
    let (m, c10, module) = torch_extension_machine(true);
    let (_, report) = m.check(&[]);
    let py = python(&report, "/venv/bin/python");
    assert!(failures(py).is_empty(), "{:#}", py["native_failures"]);
    let native = &py["native"][0];
    assert_eq!(native["package"], "torch-scatter");
    assert_eq!(native["modules"], 1);
    assert_eq!(native["host"], "torch");
    assert!(machine::findings_of(&report, "extension-undefined-symbol-torch-build").is_empty());
    real_load(&[c10], &module).unwrap();
}

#[test]
fn a_missing_symbol_version_is_the_loaders_version_error() {
    if !cc::have_cc() {
        return;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libfoo.so.1")
        .defines_versions(&["FOO_1.0", "FOO_2.0"])
        .build(&build.path().join("libfoo.so.1"));
    cc::symlink("libfoo.so.1", build.path().join("libfoo.so"));
    // The copy the module finds (its RPATH) is older: it defines FOO_1.0 only.
    let old = cc::Lib::new("libfoo.so.1")
        .defines_versions(&["FOO_1.0"])
        .build(&m.path(&format!("{SITE}/fooext/lib/libfoo.so.1")));
    let module = cc::Lib::new("_foo.cpython-311-x86_64-linux-gnu.so")
        .c("int envdoctor_v1(void); int call(void) { return envdoctor_v1(); }")
        .needs(build.path(), "foo")
        .rpath("$ORIGIN/lib")
        .build(&m.path(&format!(
            "{SITE}/fooext/_foo.cpython-311-x86_64-linux-gnu.so"
        )));
    dist(
        &m,
        SITE,
        "fooext",
        "1.0",
        &[],
        &[
            "fooext/_foo.cpython-311-x86_64-linux-gnu.so",
            "fooext/lib/libfoo.so.1",
        ],
    );
    let (_, report) = m.check(&[]);
    let f = failures(python(&report, "/venv/bin/python"));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["kind"], "missing-version");
    let what = f[0]["missing"][0].as_str().unwrap();
    assert!(what.starts_with("FOO_2.0 (libfoo.so.1 at "), "{what}");
    machine::fired(&report, "extension-symbol-version-not-found");
    let err = real_load(&[], &module).unwrap_err();
    assert!(err.contains("version `FOO_2.0' not found"), "{err}");
    // With the new copy in place it loads and nothing is said.
    std::fs::copy(build.path().join("libfoo.so.1"), &old).unwrap();
    let (_, report) = m.check(&[]);
    assert!(failures(python(&report, "/venv/bin/python")).is_empty());
    real_load(&[], &module).unwrap();
}

#[test]
fn a_library_found_nowhere_and_the_driver_are_told_apart() {
    if !cc::have_cc() {
        return;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libcudart.so.11.0").build(&build.path().join("libcudart.so"));
    cc::Lib::new("libcuda.so.1").build(&build.path().join("libcuda.so"));
    cc::Lib::new("_rt.abi3.so")
        .needs(build.path(), "cudart")
        .build(&m.path(&format!("{SITE}/gpuext/_rt.abi3.so")));
    cc::Lib::new("_drv.abi3.so")
        .needs(build.path(), "cuda")
        .build(&m.path(&format!("{SITE}/gpuext/_drv.abi3.so")));
    dist(
        &m,
        SITE,
        "gpuext",
        "0.3",
        &[],
        &["gpuext/_rt.abi3.so", "gpuext/_drv.abi3.so"],
    );
    let (_, report) = m.check(&[]);
    let f = failures(python(&report, "/venv/bin/python"));
    let kinds: Vec<(&str, &str)> = f
        .iter()
        .map(|x| (x["file"].as_str().unwrap(), x["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("_drv.abi3.so", "missing-driver"),
            ("_rt.abi3.so", "missing-library")
        ]
    );
    machine::fired(&report, "extension-library-not-found");
    // No GPU and none expected: the driver library is not reported.
    assert!(machine::findings_of(&report, "extension-needs-nvidia-driver").is_empty());
    let (_, report) = m.check(&["--expect-gpu"]);
    machine::fired(&report, "extension-needs-nvidia-driver");
}

/// torch 2.6.0's `functorch/_C` needs `std::string`'s empty-rep storage at `GLIBCXX_3.4`, which
/// libstdc++ defines as an `STB_GNU_UNIQUE` object: it binds like a global.
#[test]
fn clean_torch_venvs_load_their_own_extensions() {
    for (spec, cuda) in [("torch==2.15.0", 13), ("torch==2.6.0", 12)] {
        let Some(venv) = pypi::need(&format!("{spec} venv"), pypi::cached_venv(&[spec])) else {
            return;
        };
        let cwd = tempfile::tempdir().unwrap();
        let report = fw::check(&venv, cwd.path(), &[], &[]);
        let py = report["snapshot"]["pythons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["path"]
                    .as_str()
                    .is_some_and(|s| s.starts_with(venv.to_str().unwrap()))
            })
            .unwrap();
        let torch = py["native"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["package"] == "torch")
            .unwrap();
        assert!(torch["modules"].as_u64().unwrap() >= 1, "{spec}: {torch:#}");
        assert_eq!(torch["host"], "torch", "{spec}");
        assert_eq!(torch["cuda_majors"], serde_json::json!([cuda]), "{spec}");
        assert!(
            failures(py).is_empty(),
            "{spec}: {:#}",
            py["native_failures"]
        );
        let ids = fw::finding_ids(&report);
        assert!(
            !ids.iter().any(|i| i.starts_with("extension-")),
            "{spec}: {ids:?}"
        );
    }
}

/// `pip download` one wheel for CPython 3.11 into the PyPI cache, once.
fn wheel(spec: &str, file: &str) -> Option<PathBuf> {
    let dir = pypi::cache_dir().join("wheels");
    let whl = dir.join(file);
    if whl.is_file() {
        return Some(whl);
    }
    let got = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|_| {
            pypi::run(
                pypi::pip(Path::new("python3"))
                    .args(["download", "--no-deps", "--only-binary=:all:"])
                    .args([
                        "--python-version",
                        "3.11",
                        "--platform",
                        "manylinux2014_x86_64",
                    ])
                    .arg("-d")
                    .arg(&dir)
                    .arg(spec),
            )
        })
        .and_then(|_| {
            whl.is_file()
                .then_some(whl)
                .ok_or_else(|| format!("{file} not downloaded"))
        });
    pypi::need(spec, got)
}

/// Unzip the wheel's extension modules under `prefix` (`pandas/_libs/*.so`), with its
/// dist-info (METADATA as shipped, RECORD of what was unzipped); the files unzipped.
fn install_modules(m: &Machine, whl: &Path, prefix: &str) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(whl).unwrap()).unwrap();
    let names: Vec<String> = (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().to_string())
        .collect();
    let mut files = Vec::new();
    for n in names {
        let keep =
            (n.starts_with(prefix) && n.ends_with(".so") && !n[prefix.len()..].contains('/'))
                || n.ends_with(".dist-info/METADATA");
        if !keep {
            continue;
        }
        let mut src = zip.by_name(&n).unwrap();
        let out = m.path(&format!("{SITE}/{n}"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(&mut src, &mut std::fs::File::create(&out).unwrap()).unwrap();
        files.push(n);
    }
    let di = files
        .iter()
        .find(|f| f.ends_with("METADATA"))
        .unwrap()
        .trim_end_matches("/METADATA")
        .to_string();
    let record: String = files.iter().map(|f| format!("{f},,\n")).collect();
    m.write(&format!("{SITE}/{di}/RECORD"), &record);
    files
}

#[test]
fn the_numpy_c_api_generation_of_real_wheels() {
    let cases = [
        (
            "pandas==2.0.3",
            "pandas-2.0.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "pandas/_libs/",
            1,
        ),
        (
            "pandas==2.2.3",
            "pandas-2.2.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "pandas/_libs/",
            2,
        ),
        (
            "numexpr==2.8.4",
            "numexpr-2.8.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "numexpr/",
            1,
        ),
    ];
    for (spec, file, prefix, abi) in cases {
        let Some(whl) = wheel(spec, file) else { return };
        let mut m = Machine::new();
        m.active_venv("3.11", "/venv", &[("numpy", "2.1.3")]);
        install_modules(&m, &whl, prefix);
        let (_, report) = m.check(&[]);
        let py = python(&report, "/venv/bin/python");
        let name = spec.split("==").next().unwrap();
        let n = py["native"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["package"] == name)
            .unwrap_or_else(|| panic!("{spec}: {:#}", py["native"]));
        assert_eq!(n["numpy_abi"], abi, "{spec}: {n:#}");
        // The real modules' own symbols are all accounted for (C API, libc, libstdc++).
        assert!(
            failures(py).is_empty(),
            "{spec}: {:#}",
            py["native_failures"]
        );
        let fired = !machine::findings_of(&report, "extension-built-against-numpy1").is_empty();
        assert_eq!(fired, abi == 1, "{spec}");
        // Under NumPy 1 neither era is reported.
        let mut m1 = Machine::new();
        m1.active_venv("3.11", "/venv", &[("numpy", "1.26.4")]);
        install_modules(&m1, &whl, prefix);
        let (_, report) = m1.check(&[]);
        assert!(machine::findings_of(&report, "extension-built-against-numpy1").is_empty());
    }
}

/// A conda env at /opt/conda (active) with a conda-meta record for `numpy 1.26.4` whose files
/// are `files`; the env's site-packages gets what `site` writes.
fn conda_machine(record_files: &[&str]) -> Machine {
    let mut m = Machine::new();
    let site = "/opt/conda/lib/python3.11/site-packages";
    m.write("/opt/conda/conda-meta/history", "");
    m.write("/opt/conda/bin/python3.11", "#!/bin/sh\nexit 1\n");
    std::os::unix::fs::symlink("python3.11", m.path("/opt/conda/bin/python")).unwrap();
    m.write("/opt/conda/lib/python3.11/os.py", "");
    m.write(&format!("{site}/.keep"), "");
    // A record as conda writes it (PrefixRecord: the repodata fields, then `files`).
    let files: Vec<String> = record_files.iter().map(|f| format!("\"{f}\"")).collect();
    m.write(
        "/opt/conda/conda-meta/numpy-1.26.4-py311h24aa872_0.json",
        &format!(
            r#"{{"build": "py311h24aa872_0", "build_number": 0, "channel": "https://repo.anaconda.com/pkgs/main/linux-64", "constrains": [], "depends": ["python >=3.11,<3.12.0a0"], "fn": "numpy-1.26.4-py311h24aa872_0.conda", "license": "BSD-3-Clause", "name": "numpy", "subdir": "linux-64", "version": "1.26.4", "files": [{}], "paths_data": {{"paths": [], "paths_version": 1}}, "requested_spec": "numpy"}}"#,
            files.join(", ")
        ),
    );
    m.write(
        "/opt/conda/conda-meta/python-3.11.7-h955ad1f_0.json",
        r#"{"name": "python", "version": "3.11.7", "build": "h955ad1f_0", "files": ["bin/python3.11"]}"#,
    );
    m.env("CONDA_PREFIX", "/opt/conda");
    m.env("PATH", "/opt/conda/bin:/usr/bin:/bin");
    m
}

const NUMPY_FILES: [&str; 3] = [
    "lib/python3.11/site-packages/numpy-1.26.4.dist-info/INSTALLER",
    "lib/python3.11/site-packages/numpy-1.26.4.dist-info/METADATA",
    "lib/python3.11/site-packages/numpy/__init__.py",
];

#[test]
fn pip_over_conda_and_a_half_removed_conda_package() {
    let site = "/opt/conda/lib/python3.11/site-packages";
    // conda's numpy as conda installed it: quiet.
    let m = conda_machine(&NUMPY_FILES);
    m.write(
        &format!("{site}/numpy-1.26.4.dist-info/INSTALLER"),
        "conda\n",
    );
    m.write(
        &format!("{site}/numpy-1.26.4.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: numpy\nVersion: 1.26.4\n",
    );
    m.write(&format!("{site}/numpy/__init__.py"), "");
    let (_, report) = m.check(&[]);
    let py = python(&report, "/opt/conda/bin/python");
    assert!(py["owners"].is_null(), "{:#}", py["owners"]);
    assert!(machine::findings_of(&report, "pip-over-conda").is_empty());

    // `pip install numpy==2.2.3` over it: pip removed conda's dist-info and wrote its own.
    std::fs::remove_dir_all(m.path(&format!("{site}/numpy-1.26.4.dist-info"))).unwrap();
    m.write(&format!("{site}/numpy-2.2.3.dist-info/INSTALLER"), "pip\n");
    m.write(
        &format!("{site}/numpy-2.2.3.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: numpy\nVersion: 2.2.3\n",
    );
    let (_, report) = m.check(&[]);
    let py = python(&report, "/opt/conda/bin/python");
    let o = &py["owners"][0];
    assert_eq!(o["kind"], "pip-over-conda");
    assert_eq!(o["conda_version"], "1.26.4");
    assert_eq!(o["conda_build"], "py311h24aa872_0 main");
    assert_eq!(o["installed_version"], "2.2.3");
    assert_eq!(o["installer"], "pip");
    let msg = machine::fired(&report, "pip-over-conda")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("`import` sees numpy 2.2.3 installed by pip"),
        "{msg}"
    );

    // `pip uninstall numpy` instead: conda's record names files that are gone.
    std::fs::remove_dir_all(m.path(&format!("{site}/numpy-2.2.3.dist-info"))).unwrap();
    std::fs::remove_dir_all(m.path(&format!("{site}/numpy"))).unwrap();
    let (_, report) = m.check(&[]);
    let py = python(&report, "/opt/conda/bin/python");
    let o = &py["owners"][0];
    assert_eq!(o["kind"], "conda-files-missing");
    assert_eq!(o["missing_count"], 3);
    machine::fired(&report, "conda-record-files-missing");
}
