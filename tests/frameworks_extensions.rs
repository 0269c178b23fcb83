//! `cuda-extension`: native modules of any package that link CUDA-family libraries become a
//! framework entry with their CUDA major and wants, resolved from the module (its RPATH).
//!
//! - a `cc`-compiled extension in a fake package (real DT_NEEDED, real RPATH): the prediction
//!   is checked against the real loader (the module loaded with `ctypes` in a child python);
//! - the real bitsandbytes 0.45.5 wheel from PyPI (its per-CUDA variants
//!   `libbitsandbytes_cuda118.so` / `_cuda121.so` unzipped into a fake machine): only the
//!   variant of the runtime's CUDA (torch's) counts, none when no runtime says.

use crate::common::cc;
use crate::common::machine;
use crate::common::pypi;

use machine::Machine;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SITE: &str = "/venv/lib/python3.11/site-packages";

fn record(m: &Machine, dist: &str, files: &[&str]) {
    let text: String = files.iter().map(|f| format!("{f},,\n")).collect();
    m.write(&format!("{SITE}/{dist}/RECORD"), &text);
}

fn extensions(report: &Value) -> Vec<&Value> {
    report["snapshot"]["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == "cuda-extension")
        .collect()
}

fn library<'a>(report: &'a Value, soname: &str) -> &'a Value {
    report["snapshot"]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == soname)
        .unwrap_or_else(|| panic!("no {soname}"))
}

/// What the real loader says when `python3` loads `module` with ctypes: Ok(mapped CUDA files)
/// or Err(dlerror).
fn real_load(module: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys\ntry:\n    ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n    print('ERR', e); sys.exit(0)\nfor l in open('/proc/self/maps'):\n    p = l.split(None, 5)\n    if len(p) == 6 and 'libcu' in p[5]: print('MAP', p[5].strip())\n",
        ])
        .arg(module)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(e) = text.lines().find_map(|l| l.strip_prefix("ERR ")) {
        return Err(e.to_string());
    }
    let mut v: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.strip_prefix("MAP "))
        .map(PathBuf::from)
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

#[test]
fn a_compiled_extension_is_resolved_from_its_own_rpath() {
    if !cc::have_cc() {
        return;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("myext", "1.0")]);
    let rt_dir = m.path(&format!("{SITE}/nvidia/cuda_runtime/lib"));
    let rt = cc::Lib::new("libcudart.so.12")
        .c("int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }")
        .build(&rt_dir.join("libcudart.so.12"));
    cc::symlink("libcudart.so.12", rt_dir.join("libcudart.so"));
    // cuBLAS is linked against a copy that is not installed beside it.
    let build = tempfile::tempdir().unwrap();
    cc::Lib::new("libcublas.so.12").build(&build.path().join("libcublas.so.12"));
    cc::symlink("libcublas.so.12", build.path().join("libcublas.so"));
    let ext = cc::Lib::new("_C.cpython-311-x86_64-linux-gnu.so")
        .needs(&rt_dir, "cudart")
        .needs(build.path(), "cublas")
        .rpath("$ORIGIN/../nvidia/cuda_runtime/lib")
        .build(&m.path(&format!("{SITE}/myext/_C.cpython-311-x86_64-linux-gnu.so")));
    record(
        &m,
        "myext-1.0.dist-info",
        &[
            "myext/__init__.py",
            "myext/_C.cpython-311-x86_64-linux-gnu.so",
        ],
    );
    let (_, report) = m.check(&[]);
    let ext_fw = extensions(&report);
    assert_eq!(ext_fw.len(), 1, "{:#}", report["snapshot"]["frameworks"]);
    let e = ext_fw[0];
    assert_eq!(e["version"], "1.0");
    assert_eq!(e["cuda_major"], 12);
    let machine_ext = format!("{SITE}/myext/_C.cpython-311-x86_64-linux-gnu.so");
    assert_eq!(e["entry_points"][0], machine_ext.as_str());
    let cudart = library(&report, "libcudart.so.12");
    assert_eq!(cudart["requester"], machine_ext.as_str());
    assert_eq!(cudart["resolves"], true);
    assert_eq!(cudart["found_via"], "rpath");
    assert_eq!(
        cudart["path"],
        format!("{SITE}/myext/../nvidia/cuda_runtime/lib/libcudart.so.12").as_str()
    );
    let cublas = library(&report, "libcublas.so.12");
    assert_eq!(cublas["resolves"], false);
    assert!(cublas["wanted_by"][0]
        .as_str()
        .unwrap()
        .starts_with("cuda-extension"));
    // The real loader agrees: cuBLAS is missing.
    let err = real_load(&ext).unwrap_err();
    assert!(err.contains("libcublas.so.12"), "{err}");
    // Installed beside cudart, both resolve, at the files the real loader maps.
    let blas = cc::Lib::new("libcublas.so.12").build(&rt_dir.join("libcublas.so.12"));
    let (_, report) = m.check(&[]);
    assert_eq!(library(&report, "libcublas.so.12")["resolves"], true);
    let mapped = real_load(&ext).unwrap();
    assert_eq!(mapped, vec![blas, rt]);
}

#[test]
fn per_cuda_variants_follow_the_runtime() {
    let whl = pypi::need(
        "bitsandbytes==0.45.5 wheel",
        download(
            "bitsandbytes==0.45.5",
            "bitsandbytes-0.45.5-py3-none-manylinux_2_24_x86_64.whl",
        ),
    );
    let Some(whl) = whl else { return };
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&whl).unwrap()).unwrap();
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("bitsandbytes", "0.45.5")]);
    let files = [
        "bitsandbytes/libbitsandbytes_cuda118.so",
        "bitsandbytes/libbitsandbytes_cuda121.so",
        "bitsandbytes/libbitsandbytes_cpu.so",
    ];
    for f in files {
        let mut src = zip.by_name(f).unwrap();
        let out = m.path(&format!("{SITE}/{f}"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(&mut src, &mut std::fs::File::create(out).unwrap()).unwrap();
    }
    record(&m, "bitsandbytes-0.45.5.dist-info", &files);
    // No runtime says which variant loads: none is counted (and none is reported missing).
    let (_, report) = m.check(&[]);
    let e = extensions(&report);
    assert_eq!(e.len(), 1);
    assert!(e[0]["wants"].as_array().unwrap().is_empty(), "{:#}", e[0]);
    assert!(e[0]["evidence"][0]
        .as_str()
        .unwrap()
        .contains("CUDA 11, 12"));
    // torch built for CUDA 12.1 beside it: the cuda121 variant's DT_NEEDED are the wants.
    m.write(
        &format!("{SITE}/torch/version.py"),
        "__version__ = '2.5.1+cu121'\ncuda: Optional[str] = '12.1'\n",
    );
    m.write(
        &format!("{SITE}/torch-2.5.1+cu121.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu121\n",
    );
    let (_, report) = m.check(&[]);
    let e = extensions(&report);
    let wants: Vec<&str> = e[0]["wants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["soname"].as_str().unwrap())
        .collect();
    assert_eq!(
        wants,
        [
            "libcublas.so.12",
            "libcublasLt.so.12",
            "libcudart.so.12",
            "libcusparse.so.12"
        ]
    );
    assert_eq!(e[0]["cuda_major"], 12);
    assert!(e[0]["wants"][0]["requester"]
        .as_str()
        .unwrap()
        .ends_with("libbitsandbytes_cuda121.so"));
}

/// `pip download` one wheel into the PyPI cache (`cache_dir()/wheels`), once.
fn download(spec: &str, file: &str) -> Result<PathBuf, String> {
    let dir = pypi::cache_dir().join("wheels");
    let whl = dir.join(file);
    if whl.is_file() {
        return Ok(whl);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    pypi::run(
        pypi::pip(Path::new("python3"))
            .args(["download", "--no-deps", "--only-binary=:all:", "-d"])
            .arg(&dir)
            .arg(spec),
    )?;
    whl.is_file()
        .then_some(whl)
        .ok_or_else(|| format!("{file} not downloaded"))
}
