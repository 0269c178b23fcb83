//! The Python wheel (`envdoctor-ml`, maturin `bindings = "bin"`, manylinux2014 built with zig),
//! built and used as a user would: `auditwheel show` accepts it as manylinux_2_17, no symbol of
//! its binary needs a glibc newer than 2.17 (read from the ELF's version needs), and `pip
//! install` of it into a fresh venv gives an `envdoctor` that checks a project with real torch
//! and real CUDA libraries (PyPI's `nvidia-*` wheels) and loads them in its load child, which
//! re-executes the wheel's binary, with the same results as the cargo-built binary.
//!
//! The README's install commands, as far as they run without a release: the wheel installed from
//! its file with pip, with `uv tool install` and with `pipx install`, and by the Action's
//! install script (`action/install.sh`) from a path and from a release directory.
//!
//! The PyPI tier (maturin, ziglang, auditwheel, uv, pipx, torch): skipped unless
//! `ENVDOCTOR_PYPI=1` (CI sets it, and `ENVDOCTOR_REQUIRE_PYPI`). The `dist`-profile build goes to
//! `<PyPI cache>/wheel-target` and zig's cache to `~/.cache/zig`, so only the first run pays for
//! a cold build.

use crate::common::pypi;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const BUILD_TOOLS: &[&str] = &["maturin==1.16.0", "ziglang==0.17.1", "auditwheel==6.8.2"];

/// The build venv and the wheel for this machine, built once per test process.
fn wheel() -> Result<(PathBuf, PathBuf), String> {
    static WHEEL: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    WHEEL.get_or_init(|| build_wheel(None)).clone()
}

/// Build the wheel (for `target`, else this machine) with maturin and zig: (build venv, wheel).
fn build_wheel(target: Option<&str>) -> Result<(PathBuf, PathBuf), String> {
    let tools = pypi::cached_venv(BUILD_TOOLS)?;
    // One directory per test process and target; those of runs over two hours old go.
    let dists = pypi::cache_dir().join("wheel-dist");
    for old in std::fs::read_dir(&dists).into_iter().flatten().flatten() {
        let age = old.metadata().and_then(|m| m.modified()).ok();
        if age
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a.as_secs() > 2 * 3600)
        {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    let dist = dists.join(format!(
        "{}-{}",
        std::process::id(),
        target.unwrap_or("native")
    ));
    let _ = std::fs::remove_dir_all(&dist);
    let path = format!(
        "{}:{}",
        tools.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = std::time::Instant::now();
    let mut cmd = Command::new(tools.join("bin/maturin"));
    cmd.args([
        "build",
        "--profile",
        "dist",
        "--zig",
        "--compatibility",
        "manylinux2014",
    ])
    .arg("--manifest-path")
    .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
    .arg("--out")
    .arg(&dist)
    .env("PATH", path)
    .env("CARGO_TARGET_DIR", pypi::cache_dir().join("wheel-target"));
    if let Some(t) = target {
        cmd.args(["--target", t]);
    }
    pypi::run(&mut cmd)?;
    eprintln!("wheel built in {:?}", started.elapsed());
    let whl = std::fs::read_dir(&dist)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin wrote no wheel")?;
    Ok((tools, whl))
}

/// The `envdoctor` binary inside the wheel (`<name>.data/scripts/envdoctor`).
fn binary_in(whl: &Path) -> Vec<u8> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(whl).unwrap()).unwrap();
    let name = zip
        .file_names()
        .filter_map(Result::ok)
        .find(|n| n.ends_with(".data/scripts/envdoctor"))
        .expect("the wheel has data/scripts/envdoctor")
        .into_owned();
    let mut f = zip.by_name(&name).unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
    bytes
}

/// One GLIBC version an ELF file needs: (major, minor, patch), its name (`GLIBC_2.17`), and the
/// undefined dynamic symbols bound to it.
type Need = ((u32, u32, u32), String, Vec<String>);

/// Every GLIBC version an ELF file needs (from `.gnu.version_r` and `.gnu.version`).
fn glibc_needs(bytes: &[u8]) -> Vec<Need> {
    let elf = goblin::elf::Elf::parse(bytes).expect("an ELF file");
    let mut versions = Vec::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            for aux in need.iter() {
                let name = elf.dynstrtab.get_at(aux.vna_name).unwrap_or("").to_string();
                if let Some(v) = name.strip_prefix("GLIBC_") {
                    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                    let key = (
                        parts.next().unwrap_or(0),
                        parts.next().unwrap_or(0),
                        parts.next().unwrap_or(0),
                    );
                    versions.push((key, name, aux.vna_other));
                }
            }
        }
    }
    versions
        .into_iter()
        .map(|(key, name, index)| {
            let symbols = elf
                .dynsyms
                .iter()
                .enumerate()
                .filter(|(i, s)| {
                    s.st_shndx == 0
                        && elf
                            .versym
                            .as_ref()
                            .and_then(|vs| vs.get_at(*i))
                            .is_some_and(|v| v.version() == index)
                })
                .map(|(_, s)| elf.dynstrtab.get_at(s.st_name).unwrap_or("").to_string())
                .collect();
            (key, name, symbols)
        })
        .collect()
}

#[test]
fn wheel_binary_needs_no_glibc_newer_than_2_17() {
    let Some((_, whl)) = pypi::need("building the wheel", wheel()) else {
        return;
    };
    let needs = glibc_needs(&binary_in(&whl));
    assert!(!needs.is_empty(), "the binary links glibc dynamically");
    let too_new: Vec<_> = needs.iter().filter(|(k, _, _)| *k > (2, 17, 0)).collect();
    assert!(
        too_new.is_empty(),
        "needs newer than GLIBC_2.17: {too_new:?}"
    );
    let highest = needs.iter().map(|(k, n, _)| (k, n)).max().unwrap();
    eprintln!("highest glibc version needed: {}", highest.1);
    // The same reading of the cargo-built binary, linked against this machine's glibc, finds
    // the newer versions it needs (so the check above can fail), when this glibc is new enough
    // to have moved __libc_start_main to GLIBC_2.34.
    let host = std::fs::read(assert_cmd::cargo::cargo_bin("envdoctor")).unwrap();
    let host_needs = glibc_needs(&host);
    let host_glibc = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) }
        .to_string_lossy()
        .into_owned();
    let mut v = host_glibc.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    if (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (2, 34) {
        assert!(
            host_needs
                .iter()
                .any(|(k, _, syms)| *k >= (2, 34, 0)
                    && syms.iter().any(|s| s == "__libc_start_main")),
            "glibc {host_glibc}: {host_needs:?}"
        );
    }
}

#[test]
fn auditwheel_accepts_the_wheel_as_manylinux2014() {
    let Some((tools, whl)) = pypi::need("building the wheel", wheel()) else {
        return;
    };
    let arch = std::env::consts::ARCH;
    let name = whl.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains(&format!(
            "-py3-none-manylinux2014_{arch}.manylinux_2_17_{arch}.whl"
        )),
        "{name}"
    );
    assert!(name.contains("envdoctor_ml-"), "{name}");
    let out = pypi::run(
        Command::new(tools.join("bin/auditwheel"))
            .arg("show")
            .arg(&whl),
    )
    .unwrap();
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "is consistent with the following platform tag: \"manylinux_2_17_{arch}\""
        )),
        "{out}"
    );
    let size = std::fs::metadata(&whl).unwrap().len();
    eprintln!("wheel {name}: {size} bytes");
}

/// `check --format json --project P` with `exe` in `cwd`: the report.
fn check_json(exe: &Path, project: &Path, cwd: &Path) -> Value {
    let out = Command::new(exe)
        .args(["check", "--format", "json", "--project"])
        .arg(project)
        .current_dir(cwd)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{exe:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (soname, load status, version) of each library probed for `python`.
fn loads(report: &Value, python: &str) -> Vec<(String, String, Value)> {
    let mut v: Vec<_> = report["snapshot"]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["python"] == python)
        .map(|l| {
            (
                l["soname"].as_str().unwrap_or("").to_string(),
                l["load"]["status"].as_str().unwrap_or("").to_string(),
                l["load"]["version"].clone(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn pip_install_gives_a_working_envdoctor_whose_load_child_runs() {
    let Some((_, whl)) = pypi::need("building the wheel", wheel()) else {
        return;
    };
    let Some(torch) = pypi::need("torch venv", pypi::cached_venv(&["torch==2.15.0"])) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let venv = t.path().join("tools");
    pypi::run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).unwrap();
    pypi::run(
        pypi::pip(&venv.join("bin/python"))
            .args(["install", "--no-index"])
            .arg(&whl),
    )
    .unwrap();
    let exe = venv.join("bin/envdoctor");
    let version = pypi::run(Command::new(&exe).arg("--version")).unwrap();
    assert!(
        version.starts_with("envdoctor 0.1.0 (rule pack: "),
        "{version}"
    );
    // Installed as the distribution `envdoctor-ml` (what `pip uninstall` and `pipx` see).
    let dist = pypi::run(Command::new(venv.join("bin/python")).args([
        "-c",
        "import importlib.metadata as m; d = m.distribution('envdoctor-ml'); \
         print(d.version, [str(f) for f in d.files if f.name == 'envdoctor'])",
    ]))
    .unwrap();
    assert!(dist.starts_with("0.1.0 ["), "{dist}");
    assert!(dist.contains("bin/envdoctor"), "{dist}");

    // A project whose .venv is a real torch 2.15 install with its nvidia-* CUDA wheels.
    let project = t.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::symlink(&torch, project.join(".venv")).unwrap();
    let from_wheel = check_json(&exe, &project, t.path());
    let python = project.join(".venv/bin/python");
    let python = python.to_str().unwrap();
    let wheel_loads = loads(&from_wheel, python);
    let cudart = wheel_loads
        .iter()
        .find(|(s, _, _)| s.starts_with("libcudart.so."))
        .unwrap_or_else(|| panic!("no libcudart for {python}: {wheel_loads:?}"));
    assert_eq!(cudart.1, "loaded", "{wheel_loads:?}");
    assert!(
        cudart.2.is_string(),
        "cudaRuntimeGetVersion answered: {cudart:?}"
    );
    // The same machine through the cargo-built binary: the same libraries loaded, with the
    // same versions. (A library that hit its time limit in either run is left out: how long a
    // child gets depends on the machine's load; libcupti without a driver is one.)
    let reference = check_json(
        &assert_cmd::cargo::cargo_bin("envdoctor"),
        &project,
        t.path(),
    );
    let ref_loads = loads(&reference, python);
    let timed_out = |s: &str| {
        wheel_loads
            .iter()
            .chain(&ref_loads)
            .any(|(n, st, _)| n == s && st == "timeout")
    };
    let settled = |v: &[(String, String, Value)]| -> Vec<(String, String, Value)> {
        v.iter()
            .filter(|(n, _, _)| !timed_out(n))
            .cloned()
            .collect()
    };
    assert_eq!(settled(&wheel_loads), settled(&ref_loads));
    assert!(
        settled(&wheel_loads)
            .iter()
            .filter(|(_, st, _)| st == "loaded")
            .count()
            >= 5,
        "{wheel_loads:?}"
    );
}

#[test]
#[ignore = "cross-builds a second release binary (about 15 minutes on 2 busy cores): run with \
            --ignored; needs `rustup target add aarch64-unknown-linux-gnu`, and qemu-user with \
            libc6-arm64-cross to run it"]
fn aarch64_wheel_is_manylinux2014_and_runs_under_qemu() {
    let (tools, whl) = build_wheel(Some("aarch64-unknown-linux-gnu")).unwrap();
    let name = whl.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with("-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl"),
        "{name}"
    );
    let out = pypi::run(
        Command::new(tools.join("bin/auditwheel"))
            .arg("show")
            .arg(&whl),
    )
    .unwrap();
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("is consistent with the following platform tag: \"manylinux_2_17_aarch64\""),
        "{out}"
    );
    let bytes = binary_in(&whl);
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    assert_eq!(elf.header.e_machine, goblin::elf::header::EM_AARCH64);
    let needs = glibc_needs(&bytes);
    assert!(!needs.is_empty());
    assert!(needs.iter().all(|(k, _, _)| *k <= (2, 17, 0)), "{needs:?}");
    let sysroot = Path::new("/usr/aarch64-linux-gnu");
    let Some(qemu) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("qemu-aarch64"))
            .find(|f| f.is_file())
    }) else {
        eprintln!("SKIPPED running it: qemu-aarch64 is not installed");
        return;
    };
    if !sysroot.join("lib/ld-linux-aarch64.so.1").exists() {
        eprintln!(
            "SKIPPED running it: no aarch64 glibc under {}",
            sysroot.display()
        );
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let exe = t.path().join("envdoctor");
    std::fs::write(&exe, &bytes).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let v = pypi::run(
        Command::new(&qemu)
            .arg("-L")
            .arg(sysroot)
            .arg(&exe)
            .arg("--version"),
    )
    .unwrap();
    assert!(v.contains("; target aarch64-unknown-linux-gnu)"), "{v}");
    let out = Command::new(&qemu)
        .arg("-L")
        .arg(sysroot)
        .arg(&exe)
        .args(["check", "-q", "--no-load"])
        .current_dir(t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    assert!(text.contains("(checked "), "{text}");
}

/// The README's installers (uv, pipx), in one cached venv.
const INSTALLERS: &[&str] = &["uv==0.13.9", "pipx==1.18.4"];

/// `exe --version` names envdoctor 0.1.0 and its rule pack, and `exe check` runs.
fn runs(exe: &Path) {
    let version = pypi::run(Command::new(exe).arg("--version")).unwrap();
    assert!(
        version.starts_with("envdoctor 0.1.0 (rule pack: "),
        "{exe:?}: {version}"
    );
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(exe)
        .args(["check", "-q", "--no-load"])
        .current_dir(t.path())
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{exe:?}: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(checked "),
        "{out:?}"
    );
}

/// README: `uv tool install dist/envdoctor_ml-*.whl` and `pipx install dist/envdoctor_ml-*.whl`.
#[test]
fn uv_tool_install_and_pipx_install_the_wheel_from_its_file() {
    let Some((_, whl)) = pypi::need("building the wheel", wheel()) else {
        return;
    };
    let Some(tools) = pypi::need("uv and pipx", pypi::cached_venv(INSTALLERS)) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let uv_bin = home.join("uv-bin");
    let out = Command::new(tools.join("bin/uv"))
        .args(["tool", "install", "--offline", "--python", "python3"])
        .arg(&whl)
        .env("UV_TOOL_DIR", home.join("uv-tools"))
        .env("UV_TOOL_BIN_DIR", &uv_bin)
        .env("UV_CACHE_DIR", home.join("uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never")
        .output()
        .unwrap();
    assert!(out.status.success(), "uv tool install: {out:?}");
    runs(&uv_bin.join("envdoctor"));
    let pipx_bin = home.join("pipx-bin");
    let out = Command::new(tools.join("bin/pipx"))
        .arg("install")
        .arg(&whl)
        .env("PIPX_HOME", home.join("pipx"))
        .env("PIPX_BIN_DIR", &pipx_bin)
        .env("PIPX_MAN_DIR", home.join("pipx-man"))
        .env("PIPX_DEFAULT_PYTHON", "python3")
        .output()
        .unwrap();
    assert!(out.status.success(), "pipx install: {out:?}");
    runs(&pipx_bin.join("envdoctor"));
}

/// The Action's install script installs the wheel from a path, and from a release laid out as
/// .github/workflows/release.yml attaches it (`vVERSION/NAME`, read through a file:// URL).
#[test]
fn the_action_installs_the_wheel_by_path_and_by_release_version() {
    let Some((_, whl)) = pypi::need("building the wheel", wheel()) else {
        return;
    };
    let (code, out, venv) =
        crate::deploy::action_install(&[("ENVDOCTOR_WHEEL", whl.to_str().unwrap())]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("envdoctor 0.1.0 (rule pack: "), "{out}");
    runs(&venv.path().join("envdoctor-venv/bin/envdoctor"));
    let releases = tempfile::tempdir().unwrap();
    std::fs::create_dir(releases.path().join("v0.1.0")).unwrap();
    std::fs::copy(
        &whl,
        releases
            .path()
            .join("v0.1.0")
            .join(whl.file_name().unwrap()),
    )
    .unwrap();
    let base = format!("file://{}", releases.path().display());
    let (code, out, venv) = crate::deploy::action_install(&[
        ("ENVDOCTOR_VERSION", "0.1.0"),
        ("ENVDOCTOR_RELEASES", &base),
    ]);
    assert_eq!(code, 0, "{out}");
    runs(&venv.path().join("envdoctor-venv/bin/envdoctor"));
}

/// The release workflow builds what the README and the Action name: manylinux2014 wheels for
/// both architectures with the `dist` profile and zig, and the binary archives.
#[test]
fn the_release_workflow_builds_what_the_readme_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let wf: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(wf["on"]["push"]["tags"][0], "v*");
    let matrix = &wf["jobs"]["build"]["strategy"]["matrix"]["include"];
    let targets: Vec<&str> = matrix
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]
    );
    let steps = wf["jobs"]["build"]["steps"].as_array().unwrap();
    let build = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("maturin build"))
        .unwrap();
    for flag in ["--profile dist", "--zig", "--compatibility manylinux2014"] {
        assert!(build.contains(flag), "{build}");
    }
    // The same tool versions as the wheel test here.
    let tools = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("pip install maturin"))
        .unwrap();
    for t in BUILD_TOOLS {
        assert!(tools.contains(t), "{t}: {tools}");
    }
    assert!(text.contains("envdoctor-${version}-${{ matrix.arch }}-linux-gnu"));
    // The README's release line and the Action name the wheel file the way maturin does.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains(
        "/releases/download/vVERSION/envdoctor_ml-VERSION-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
    ));
    let install = std::fs::read_to_string(root.join("action/install.sh")).unwrap();
    assert!(install
        .contains("envdoctor_ml-$version-py3-none-manylinux2014_$arch.manylinux_2_17_$arch.whl"));
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        cargo.contains("[profile.dist]\ninherits = \"release\""),
        "{cargo}"
    );
}
