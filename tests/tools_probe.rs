//! Issue 25 item 6: the CUDA compiler tools frameworks run (`pythons[].cuda_tools`).
//!
//! Quick tier: fake machines whose tools are small `cc`-built executables carrying the
//! `Cuda compilation tools, release X.Y, VX.Y.Z` string in `.rodata`, as the real ones do: XLA
//! taking an older CUDA's ptxas from PATH before TensorFlow's wheel, Triton's old bundled ptxas
//! on an sm_89 GPU (fake NVML), torch's nvcc of another CUDA major; each with its healthy twin.
//! PyPI tier: the real `nvidia-cuda-nvcc` 12.9 and 13.5 wheels' `ptxas`, `nvcc`, `nvlink`,
//! `fatbinary` and Triton's bundled ptxas: the version read from the file equals what the real
//! binary prints for `--version` (the marker format is the real one), and the clean framework
//! venvs stay quiet.

use crate::common::cc;
use crate::common::machine::{findings_of, Machine};
use crate::common::pypi;
use crate::fake_nvml;

use serde_json::Value;
use std::path::Path;

const SITE: &str = "/venv/lib/python3.11/site-packages";

/// An executable at machine path `at` whose `--version` text (in `.rodata`) is CUDA `full`.
fn tool(m: &Machine, at: &str, full: &str) {
    let short: String = full.split('.').take(2).collect::<Vec<_>>().join(".");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(
        &src,
        format!(
            "__attribute__((used)) static const char fmt[] = \"Cuda compilation tools, release %d.%d, V%s\";\n\
             __attribute__((used)) static const char v[] = \"Cuda compilation tools, release {short}, V{full}\";\n\
             int main(void) {{ return 0; }}\n"
        ),
    )
    .unwrap();
    let out = m.path(at);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let st = std::process::Command::new("cc")
        .arg("-O0")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
}

/// A venv at /venv with `packages` (name, version, Requires-Dist lines).
fn machine(packages: &[(&str, &str, &[&str])]) -> Machine {
    let mut m = Machine::new();
    let names: Vec<(&str, &str)> = packages.iter().map(|(n, v, _)| (*n, *v)).collect();
    m.venv("3.11", "/venv", &names);
    for (name, version, requires) in packages {
        let mut meta = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
        for r in *requires {
            meta.push_str(&format!("Requires-Dist: {r}\n"));
        }
        m.write(
            &format!(
                "{SITE}/{}-{version}.dist-info/METADATA",
                name.replace('-', "_")
            ),
            &meta,
        );
    }
    m.env("VIRTUAL_ENV", "/venv");
    m
}

/// `check --root` with the fake NVML (`scenario`) and the machine's environment plus `path`.
fn check(m: &Machine, scenario: &str, env: &[(&str, &str)]) -> Value {
    let mut c = crate::common::cli::empty();
    c.args(["check", "--format", "json", "--root"])
        .arg(m.root())
        .arg("--nvml-lib")
        .arg(fake_nvml::library())
        .env("FAKE_NVML_SCENARIO", scenario);
    for (k, v) in &m.env {
        c.env(k, v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn uses(r: &Value, user: &str) -> Vec<Value> {
    r["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["cuda_tools"].as_array().cloned().unwrap_or_default())
        .filter(|t| t["user"] == user)
        .collect()
}

#[test]
fn xla_takes_an_older_path_ptxas_before_tensorflows_wheel() {
    if !cc::have_cc() {
        return;
    }
    let m = machine(&[(
        "tensorflow",
        "2.21.0",
        &["nvidia-cuda-nvcc-cu12<13.0,>=12.5.82; extra == \"and-cuda\""],
    )]);
    tool(&m, &format!("{SITE}/nvidia/cuda_nvcc/bin/ptxas"), "12.9.86");
    tool(&m, "/usr/local/cuda-12.1/bin/ptxas", "12.1.66");
    tool(&m, "/usr/local/cuda-11.4/bin/ptxas", "11.4.48");
    let path = "/venv/bin:/usr/local/cuda-11.4/bin:/usr/local/cuda-12.1/bin:/usr/bin:/bin";
    let r = check(&m, "idle", &[("PATH", path)]);
    let u = uses(&r, "xla");
    assert_eq!(u.len(), 1, "{:#}", r["snapshot"]["pythons"]);
    assert_eq!(u[0]["path"], "/usr/local/cuda-12.1/bin/ptxas");
    assert_eq!(u[0]["version"], "12.1.66");
    assert_eq!(u[0]["via"], "PATH");
    assert_eq!(u[0]["needs"], "12.5.82");
    assert_eq!(u[0]["own_version"], "12.9.86");
    // 11.4 is below XLA's floor: passed over, as XLA does.
    assert!(u[0]["passed_over"][0]
        .as_str()
        .unwrap()
        .contains("/usr/local/cuda-11.4/bin/ptxas 11.4.48"));
    let f = findings_of(&r, "xla-ptxas-older-than-framework-needs");
    assert_eq!(f.len(), 1, "{:#}", r["findings"]);

    // Twin: no older CUDA on PATH, the wheel's ptxas is found after /usr/local/cuda.
    let r = check(&m, "idle", &[("PATH", "/venv/bin:/usr/bin:/bin")]);
    let u = uses(&r, "xla");
    assert_eq!(u[0]["via"], "nvidia-wheel");
    assert_eq!(u[0]["version"], "12.9.86");
    assert!(findings_of(&r, "xla-ptxas-older-than-framework-needs").is_empty());
}

#[test]
fn jax_prefers_its_wheel_over_path() {
    if !cc::have_cc() {
        return;
    }
    let m = machine(&[
        ("jax", "0.10.2", &[]),
        (
            "jax-cuda13-plugin",
            "0.10.2",
            &["nvidia-cuda-nvcc>=13.0.48; sys_platform == \"linux\" and extra == \"with-cuda\""],
        ),
    ]);
    m.write(
        &format!("{SITE}/jax/_src/compiler.py"),
        "  if lib.cuda_path is not None:\n    debug_options.xla_gpu_cuda_data_dir = lib.cuda_path\n",
    );
    tool(&m, &format!("{SITE}/nvidia/cu13/bin/ptxas"), "13.5.37");
    tool(&m, "/usr/local/cuda-12.1/bin/ptxas", "12.1.66");
    let path = "/usr/local/cuda-12.1/bin:/usr/bin:/bin";
    let r = check(&m, "idle", &[("PATH", path)]);
    let u = uses(&r, "xla");
    assert_eq!(u[0]["via"], "nvidia-wheel", "{u:?}");
    assert_eq!(u[0]["version"], "13.5.37");
    assert!(findings_of(&r, "xla-ptxas-older-than-framework-needs").is_empty());
    // CUDA_ROOT names the old toolkit: JAX hands it to XLA first.
    let r = check(
        &m,
        "idle",
        &[("PATH", path), ("CUDA_ROOT", "/usr/local/cuda-12.1")],
    );
    assert_eq!(uses(&r, "xla")[0]["via"], "CUDA_ROOT");
    assert_eq!(
        findings_of(&r, "xla-ptxas-older-than-framework-needs").len(),
        1
    );
}

#[test]
fn tritons_old_ptxas_on_an_sm_89_gpu() {
    if !cc::have_cc() {
        return;
    }
    let m = machine(&[("triton", "2.0.0", &[])]);
    tool(
        &m,
        &format!("{SITE}/triton/third_party/cuda/bin/ptxas"),
        "11.7.99",
    );
    tool(&m, "/usr/local/cuda-12.1/bin/ptxas", "12.1.66");
    let r = check(&m, "geforce", &[]);
    let u = uses(&r, "triton");
    assert_eq!(u[0]["via"], "bundled", "{u:?}");
    let f = findings_of(&r, "triton-ptxas-does-not-know-gpu");
    assert_eq!(f.len(), 1, "{:#}", r["findings"]);
    assert!(f[0]["message"].as_str().unwrap().contains("8.9"));
    // Twin: Triton pointed at CUDA 12.1's ptxas, as the fix says.
    let r = check(
        &m,
        "geforce",
        &[("TRITON_PTXAS_PATH", "/usr/local/cuda-12.1/bin/ptxas")],
    );
    assert_eq!(uses(&r, "triton")[0]["via"], "TRITON_PTXAS_PATH");
    assert!(findings_of(&r, "triton-ptxas-does-not-know-gpu").is_empty());
}

#[test]
fn torch_extension_nvcc_of_another_cuda_major() {
    if !cc::have_cc() {
        return;
    }
    let m = machine(&[("torch", "2.6.0+cu124", &[])]);
    m.write(
        &format!("{SITE}/torch/version.py"),
        "__version__ = '2.6.0+cu124'\ncuda: Optional[str] = '12.4'\n",
    );
    tool(&m, "/usr/local/cuda-11.8/bin/nvcc", "11.8.89");
    tool(&m, "/usr/local/cuda-12.6/bin/nvcc", "12.6.85");
    let path = "/venv/bin:/usr/local/cuda-11.8/bin:/usr/bin:/bin";
    let r = check(&m, "idle", &[("PATH", path)]);
    let u = uses(&r, "torch-cpp-extension");
    assert_eq!(u[0]["version"], "11.8.89", "{u:?}");
    assert_eq!(u[0]["same_major"], false);
    assert_eq!(
        findings_of(&r, "torch-extension-nvcc-major-mismatch").len(),
        1
    );
    let r = check(
        &m,
        "idle",
        &[("PATH", path), ("CUDA_HOME", "/usr/local/cuda-12.6")],
    );
    assert_eq!(uses(&r, "torch-cpp-extension")[0]["via"], "CUDA_HOME");
    assert!(findings_of(&r, "torch-extension-nvcc-major-mismatch").is_empty());
}

/// What the real binary prints: `release X.Y, VX.Y.Z` → `X.Y.Z`.
fn real_version(bin: &Path) -> String {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.split(", V").nth(1).unwrap_or_else(|| panic!("{text}"));
    v.chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect()
}

#[test]
fn real_wheels_versions_match_what_the_binaries_print() {
    let venvs = [
        pypi::cached_venv(&["jax[cuda13]==0.10.2"]),
        pypi::cached_venv(&["tensorflow[and-cuda]==2.21.0"]),
        pypi::cached_venv(&["torch==2.15.0"]),
        pypi::cached_venv(&["torch==2.6.0"]),
    ];
    let mut venvs_ok = Vec::new();
    for v in venvs {
        match v {
            Ok(v) => venvs_ok.push(v),
            Err(e) if !pypi::require_pypi() => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let mut path = venvs_ok
        .iter()
        .map(|v| v.join("bin").display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    path.push_str(":/usr/bin:/bin");
    let home = tempfile::tempdir().unwrap();
    let out = crate::common::cli::empty()
        .args(["check", "--format", "json", "--no-load"])
        .env("PATH", &path)
        .env("HOME", home.path())
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut checked = 0;
    for p in r["snapshot"]["pythons"].as_array().unwrap() {
        for t in p["cuda_tools"].as_array().cloned().unwrap_or_default() {
            let bin = Path::new(t["path"].as_str().unwrap());
            assert_eq!(t["version"], real_version(bin), "{t}");
            checked += 1;
        }
    }
    // jax (cu13 wheel), tensorflow (cuda_nvcc wheel), triton 3.9 (two), triton 3.2.
    assert_eq!(checked, 5, "{:#}", r["snapshot"]["pythons"]);
    // nvcc, nvlink and fatbinary of the cu13 wheel carry the same marker as its ptxas.
    let jax = &venvs_ok[0];
    let bin = jax.join("lib/python3.11/site-packages/nvidia/cu13/bin");
    for name in ["ptxas", "nvcc", "nvlink", "fatbinary"] {
        let got =
            envdoctor::probe::tools::tool_version(&envdoctor::root::Root::host(), &bin.join(name));
        assert_eq!(got.as_deref(), Some(real_version(&bin.join(name)).as_str()));
    }
    for rule in [
        "xla-ptxas-older-than-framework-needs",
        "triton-ptxas-does-not-know-gpu",
        "torch-extension-nvcc-major-mismatch",
    ] {
        assert!(
            findings_of(&r, rule).is_empty(),
            "{rule}: {:#}",
            r["findings"]
        );
    }
}
