//! The issue-25 measurement: public failure reports from 2024–2026 about native extension
//! ABIs, NumPy's C API, pip over conda and site directories, none cited by a rule, each rebuilt
//! as a fake machine from the reporter's stated facts (modules compiled with `cc` carrying the
//! reporter's exact undefined symbol, real wheels' modules, conda records as conda writes them),
//! then `check` is run and the outcome classified:
//! - hit: a rule that names the maintainers' root cause fired;
//! - partial: only a rule that points at the right package but not the cause fired;
//! - miss: neither.
//!
//! The table with references and the reason class of each miss is `bench/mechanism_reports.md`.
//! `ENVDOCTOR_BENCH_BIN=/path/to/envdoctor` runs the same machines with another build (the
//! "before" figure: the binary of the commit this work started from); the table is printed
//! either way, and with the default binary each outcome must match the recorded one.

use crate::common::bench;
use crate::common::cc;
use crate::common::machine::{dist, Machine};
use crate::common::pypi;

use std::path::Path;

const SITE: &str = "/venv/lib/python3.11/site-packages";

/// One rebuilt report.
struct Case {
    id: &'static str,
    /// Rules that name the root cause.
    cause: &'static [&'static str],
    /// Rules that point at the right package, not at the cause.
    partial: &'static [&'static str],
    /// The outcome recorded for this branch's build.
    expect: &'static str,
    build: fn() -> Option<Machine>,
}

const TORCH_CAUSE: &[&str] = &[
    "extension-undefined-symbol",
    "extension-undefined-symbol-torch-build",
    "torchvision-built-for-other-torch",
];
/// When the package pins torch, the static `pip check` names the cause too.
const TORCH_PIN_CAUSE: &[&str] = &[
    "extension-undefined-symbol",
    "extension-undefined-symbol-torch-build",
    "torchvision-built-for-other-torch",
    "requirement-version-conflict",
];
const TORCH_PARTIAL: &[&str] = &["requirement-version-conflict", "requirement-not-installed"];
const NUMPY_CAUSE: &[&str] = &[
    "extension-built-against-numpy1",
    "numpy2-with-numpy1-build",
    "numpy2-with-numpy1-built-extension",
];

/// A venv with torch `torch` whose `torch/lib/libc10.so` does not define `symbol`, and
/// `pkg` `version` (with `requires`) whose module `module` (site-relative) was linked against a
/// libc10 that did and calls it.
fn torch_ext(
    torch: &str,
    pkg: &str,
    version: &str,
    requires: &[&str],
    module: &str,
    symbol: &str,
) -> Option<Machine> {
    if !cc::have_cc() {
        return None;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("torch", torch)]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libc10.so")
        .returns(symbol, 1)
        .build(&build.path().join("libc10.so"));
    cc::Lib::new("libc10.so")
        .returns("_ZN3c1019UndefinedTensorImpl10_singletonE", 1)
        .build(&m.path(&format!("{SITE}/torch/lib/libc10.so")));
    cc::Lib::new(module.rsplit('/').next().unwrap())
        .c(&format!(
            "int {symbol}(void); int ext_entry(void) {{ return {symbol}(); }}"
        ))
        .needs(build.path(), "c10")
        .build(&m.path(&format!("{SITE}/{module}")));
    dist(&m, SITE, pkg, version, requires, &[module]);
    Some(m)
}

/// A module compiled against NumPy 1's headers: the name its `import_array()` imports.
fn numpy1_module(m: &Machine, path: &str) {
    cc::Lib::new(path.rsplit('/').next().unwrap())
        .c("const char *envdoctor_numpy_core = \"numpy.core._multiarray_umath\";")
        .build(&m.path(path));
}

/// Unzip a real wheel's modules under `prefix` into the venv, with its METADATA and a RECORD.
fn real_wheel(m: &Machine, spec: &str, file: &str, prefix: &str) -> Option<()> {
    let dir = pypi::cache_dir().join("wheels");
    let whl = dir.join(file);
    if !whl.is_file() {
        std::fs::create_dir_all(&dir).ok()?;
        let got = pypi::run(
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
        );
        pypi::need(spec, got)?;
    }
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&whl).ok()?).ok()?;
    let mut files = Vec::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).ok()?;
        let n = f.name().ok()?.to_string();
        let module =
            n.starts_with(prefix) && n.ends_with(".so") && !n[prefix.len()..].contains('/');
        if !module && !n.ends_with(".dist-info/METADATA") {
            continue;
        }
        let out = m.path(&format!("{SITE}/{n}"));
        std::fs::create_dir_all(out.parent()?).ok()?;
        std::io::copy(&mut f, &mut std::fs::File::create(out).ok()?).ok()?;
        files.push(n);
    }
    let di = files
        .iter()
        .find(|f| f.ends_with("METADATA"))?
        .trim_end_matches("/METADATA")
        .to_string();
    let record: String = files.iter().map(|f| format!("{f},,\n")).collect();
    m.write(&format!("{SITE}/{di}/RECORD"), &record);
    Some(())
}

const C10_ERROR: &str =
    "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE";
const PARSE_SCHEMA: &str = "_ZN5torch3jit17parseSchemaOrNameERKSsb";
const FA2: &str = "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so";

fn cases() -> Vec<Case> {
    vec![
        Case {
            id: "flash-attention#1518",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || torch_ext("2.1.2", "flash-attn", "2.5.6", &["torch"], FA2, C10_ERROR),
        },
        Case {
            id: "flash-attention#1691",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.5.1",
                    "flash-attn",
                    "2.7.4.post1",
                    &["torch"],
                    FA2,
                    C10_ERROR,
                )
            },
        },
        Case {
            id: "flash-attention#784",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.2.0a0+81ea7a4",
                    "flash-attn",
                    "2.5.0",
                    &["torch"],
                    FA2,
                    "_ZN2at4_ops15sum_IntList_out4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbSt8optionalINS5_10ScalarTypeEERS2_",
                )
            },
        },
        Case {
            id: "flash-attention#940",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || torch_ext("2.3.0", "flash-attn", "2.5.8", &["torch"], FA2, C10_ERROR),
        },
        Case {
            id: "sglang#851",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.3.1",
                    "flash-attn",
                    "2.6.1",
                    &["torch"],
                    FA2,
                    "_ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEENS2_8optionalINS2_10ScalarTypeEEENS6_INS2_6LayoutEEENS6_INS2_6DeviceEEENS6_IbEE",
                )
            },
        },
        Case {
            id: "pytorch_scatter#462",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.4.0a0+07cecf4168",
                    "torch-scatter",
                    "2.1.2+pt24cu124",
                    &[],
                    "torch_scatter/_version_cuda.so",
                    PARSE_SCHEMA,
                )
            },
        },
        Case {
            id: "pytorch_scatter#470",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.4.0",
                    "torch-scatter",
                    "2.1.2+pt24cu118",
                    &[],
                    "torch_scatter/_version_cuda.so",
                    PARSE_SCHEMA,
                )
            },
        },
        Case {
            id: "vllm#5501",
            cause: TORCH_PIN_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.1.2",
                    "vllm",
                    "0.5.0",
                    &["torch==2.3.0"],
                    "vllm/_C.abi3.so",
                    "_ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj",
                )
            },
        },
        Case {
            id: "vllm#13608",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || editable_vllm("2.7.0.dev20250301+cu128"),
        },
        Case {
            id: "HunyuanImage-3.0#56",
            cause: TORCH_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || editable_vllm("2.8.0+cu128"),
        },
        Case {
            id: "vision#9174",
            cause: TORCH_PIN_CAUSE,
            partial: TORCH_PARTIAL,
            expect: "hit",
            build: || {
                torch_ext(
                    "2.6.0",
                    "torchvision",
                    "0.23.0",
                    &["torch==2.8.0"],
                    "torchvision/_C.so",
                    "_ZN3c1017RegisterOperatorsD1Ev",
                )
            },
        },
        Case {
            id: "pyfda#253",
            cause: NUMPY_CAUSE,
            partial: &[],
            expect: "hit",
            build: || {
                let mut m = Machine::new();
                m.active_venv("3.11", "/venv", &[("numpy", "2.0.0")]);
                real_wheel(
                    &m,
                    "numexpr==2.8.4",
                    "numexpr-2.8.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "numexpr/",
                )?;
                Some(m)
            },
        },
        Case {
            id: "cfspopcon#120",
            cause: NUMPY_CAUSE,
            partial: &[],
            expect: "hit",
            build: || {
                let mut m = Machine::new();
                m.active_venv(
                    "3.11",
                    "/venv",
                    &[("numpy", "2.2.3"), ("xarray", "2024.1.0")],
                );
                real_wheel(
                    &m,
                    "pandas==2.0.3",
                    "pandas-2.0.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "pandas/_libs/",
                )?;
                Some(m)
            },
        },
        Case {
            id: "afterglowpy#8",
            cause: NUMPY_CAUSE,
            partial: &[],
            expect: "hit",
            build: || {
                if !cc::have_cc() {
                    return None;
                }
                let mut m = Machine::new();
                m.active_venv("3.11", "/venv", &[("numpy", "2.2.3")]);
                let module = "afterglowpy/shock.cpython-311-x86_64-linux-gnu.so";
                numpy1_module(&m, &format!("{SITE}/{module}"));
                dist(&m, SITE, "afterglowpy", "0.8.0", &["numpy"], &[module]);
                Some(m)
            },
        },
        Case {
            id: "imagewmark#18",
            cause: NUMPY_CAUSE,
            partial: &["requirement-version-conflict"],
            expect: "hit",
            build: debian_scipy,
        },
        Case {
            id: "conda#13746",
            cause: &["package-shadowed-by-user-site"],
            partial: &[],
            expect: "hit",
            build: user_site_over_conda,
        },
        Case {
            id: "spyder#25516",
            cause: &["pip-over-conda"],
            partial: NUMPY_CAUSE,
            expect: "hit",
            build: pip_numpy_in_anaconda,
        },
        Case {
            id: "keops#423",
            cause: &["extension-symbol-version-not-found"],
            partial: &[],
            expect: "miss",
            build: keops_jit_cache,
        },
    ]
}

/// vLLM built from a source tree and installed editable: `_C.abi3.so` sits in the tree, and
/// the RECORD of an editable install lists only the `.pth` hook.
fn editable_vllm(torch: &str) -> Option<Machine> {
    if !cc::have_cc() {
        return None;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("torch", torch)]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libc10.so")
        .returns(PARSE_SCHEMA, 1)
        .build(&build.path().join("libc10.so"));
    cc::Lib::new("libc10.so")
        .returns("c10_other", 1)
        .build(&m.path(&format!("{SITE}/torch/lib/libc10.so")));
    cc::Lib::new("_C.abi3.so")
        .c(&format!(
            "int {PARSE_SCHEMA}(void); int ext_entry(void) {{ return {PARSE_SCHEMA}(); }}"
        ))
        .needs(build.path(), "c10")
        .build(&m.path("/workspace/vllm/vllm/_C.abi3.so"));
    m.write("/workspace/vllm/vllm/__init__.py", "");
    m.write(
        &format!("{SITE}/__editable__.vllm-0.7.4.dev0.pth"),
        "/workspace/vllm\n",
    );
    dist(
        &m,
        SITE,
        "vllm",
        "0.7.4.dev0",
        &["torch"],
        &["__editable__.vllm-0.7.4.dev0.pth"],
    );
    m.write(
        &format!("{SITE}/vllm-0.7.4.dev0.dist-info/direct_url.json"),
        r#"{"url": "file:///workspace/vllm", "dir_info": {"editable": true}}"#,
    );
    Some(m)
}

/// Debian's python3-scipy (an `.egg-info`, no RECORD) in dist-packages and numpy 2.4.6 from
/// pip in /usr/local.
fn debian_scipy() -> Option<Machine> {
    if !cc::have_cc() {
        return None;
    }
    let root = Machine::new();
    crate::common::machine::debian_python(root.root(), "3.11", &[]);
    let mut m = root;
    let dist_packages = "/usr/lib/python3/dist-packages";
    numpy1_module(
        &m,
        &format!("{dist_packages}/scipy/signal/_sigtools.cpython-311-x86_64-linux-gnu.so"),
    );
    m.write(&format!("{dist_packages}/scipy/__init__.py"), "");
    m.write(
        &format!("{dist_packages}/scipy-1.10.1.egg-info/PKG-INFO"),
        "Metadata-Version: 2.1\nName: scipy\nVersion: 1.10.1\nRequires-Dist: numpy<1.27.0,>=1.19.5\n",
    );
    m.write(
        &format!("{dist_packages}/scipy-1.10.1.egg-info/top_level.txt"),
        "scipy\n",
    );
    let local = "/usr/local/lib/python3.11/dist-packages";
    dist(&m, local, "numpy", "2.4.6", &[], &["numpy/__init__.py"]);
    m.env("PATH", "/usr/bin:/bin");
    Some(m)
}

/// A conda env (python 3.8) with a conda-installed package and an older copy in ~/.local that
/// `import` finds first.
fn user_site_over_conda() -> Option<Machine> {
    let mut m = Machine::new();
    let prefix = "/home/u/anaconda3/envs/x";
    let site = format!("{prefix}/lib/python3.8/site-packages");
    m.write(&format!("{prefix}/conda-meta/history"), "");
    m.write(&format!("{prefix}/bin/python3.8"), "#!/bin/sh\nexit 1\n");
    std::os::unix::fs::symlink("python3.8", m.path(&format!("{prefix}/bin/python"))).ok()?;
    m.write(&format!("{prefix}/lib/python3.8/os.py"), "");
    dist(
        &m,
        &site,
        "scikit-learn",
        "1.3.2",
        &[],
        &["sklearn/__init__.py"],
    );
    dist(
        &m,
        "/home/u/.local/lib/python3.8/site-packages",
        "scikit-learn",
        "0.24.2",
        &[],
        &["sklearn/__init__.py"],
    );
    m.env("HOME", "/home/u");
    m.env("CONDA_PREFIX", prefix);
    m.env("PATH", &format!("{prefix}/bin:/usr/bin:/bin"));
    Some(m)
}

/// Anaconda's base env: conda's numpy 1.26.4 record, pip's numpy 2.2.6 now in its place.
fn pip_numpy_in_anaconda() -> Option<Machine> {
    let mut m = Machine::new();
    let prefix = "/home/u/anaconda3";
    let site = format!("{prefix}/lib/python3.12/site-packages");
    m.write(&format!("{prefix}/bin/python3.12"), "#!/bin/sh\nexit 1\n");
    std::os::unix::fs::symlink("python3.12", m.path(&format!("{prefix}/bin/python"))).ok()?;
    m.write(&format!("{prefix}/lib/python3.12/os.py"), "");
    m.write(
        &format!("{prefix}/conda-meta/numpy-1.26.4-py312h2809609_0.json"),
        r#"{"build": "py312h2809609_0", "build_number": 0, "channel": "https://repo.anaconda.com/pkgs/main/linux-64", "name": "numpy", "version": "1.26.4", "files": ["lib/python3.12/site-packages/numpy-1.26.4.dist-info/INSTALLER", "lib/python3.12/site-packages/numpy-1.26.4.dist-info/METADATA", "lib/python3.12/site-packages/numpy/__init__.py"], "requested_spec": "numpy"}"#,
    );
    m.write(&format!("{prefix}/conda-meta/history"), "");
    dist(&m, &site, "numpy", "2.2.6", &[], &["numpy/__init__.py"]);
    m.write(&format!("{site}/numpy-2.2.6.dist-info/INSTALLER"), "pip\n");
    m.write(&format!("{site}/numpy/__init__.py"), "");
    m.env("HOME", "/home/u");
    m.env("CONDA_PREFIX", prefix);
    m.env("PATH", &format!("{prefix}/bin:/usr/bin:/bin"));
    Some(m)
}

/// KeOps compiles its module at run time into ~/.cache/keops…: no distribution lists it.
fn keops_jit_cache() -> Option<Machine> {
    if !cc::have_cc() {
        return None;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("pykeops", "2.3"), ("keopscore", "2.3")]);
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libstdc++.so.6")
        .defines_versions(&["GLIBCXX_3.4", "GLIBCXX_3.4.32"])
        .build(&build.path().join("libstdc++.so"));
    cc::Lib::new("keops_nvrtc.cpython-311-x86_64-linux-gnu.so")
        .c("int envdoctor_v1(void); int k(void) { return envdoctor_v1(); }")
        .needs(build.path(), "stdc++")
        .build(
            &m.path("/home/u/.cache/keops2.3/build/keops_nvrtc.cpython-311-x86_64-linux-gnu.so"),
        );
    Some(m)
}

#[test]
fn mechanism_reports() {
    let (bin, other) = bench::binary();
    let mut counts = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    for c in cases() {
        let Some(m) = (c.build)() else {
            eprintln!("{:<24} skipped (no cc or no PyPI)", c.id);
            continue;
        };
        let report = bench::check_json(&bin, &m, &["--no-load"], |_| {});
        let (o, ids) = bench::outcome(&report, c.cause, c.partial);
        eprintln!("{:<24} {:<8} {}", c.id, o, ids.join(" "));
        *counts.entry(o).or_insert(0) += 1;
        if !other && o != c.expect {
            wrong.push(format!("{}: {o}, recorded {}", c.id, c.expect));
        }
    }
    eprintln!("{counts:?}");
    assert!(wrong.is_empty(), "{wrong:#?}");
}
