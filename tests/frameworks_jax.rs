//! JAX's model against a real backend initialisation, for `jax[cuda13]==0.10.2` from PyPI: a
//! child interpreter runs `jax.devices()` (the CUDA plugin initialises, loads its libraries,
//! then falls back to the CPU on this GPU-less machine) and every CUDA-family library it
//! mapped must be predicted at the same file, with the CUDA build and the plugin's requester.
//! Needs PyPI (cached venv): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::fw;
use crate::common::pypi;

const INIT: &str = "import jax\ntry:\n    jax.devices()\nexcept Exception:\n    pass";

#[test]
fn prediction_equals_the_real_backend_initialisation() {
    let Some(venv) = pypi::need(
        "jax[cuda13]==0.10.2",
        pypi::cached_venv(&["jax[cuda13]==0.10.2"]),
    ) else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let mapped = fw::mapped_after(&venv, cwd.path(), INIT, &[]).unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let predicted = fw::predicted(&snap, &venv);
    let bad = fw::mismatches(&mapped, &predicted);
    eprintln!(
        "jax[cuda13] 0.10.2: backend initialisation maps {} CUDA-family libraries; envdoctor resolves {} ({} of the mapped at the same file)",
        mapped.len(),
        predicted.len(),
        mapped.len() - bad.len()
    );
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(mapped.len() >= 10, "{mapped:#?}");
    let jax = fw::frameworks(&snap, &venv, "jax");
    let pjrt = jax
        .iter()
        .find(|f| {
            f["location"]
                .as_str()
                .unwrap()
                .ends_with("jax_plugins/xla_cuda13")
        })
        .unwrap();
    assert_eq!(pjrt["cuda_major"], 13);
    assert_eq!(pjrt["is_cuda_build"], true);
    let plugin = format!("{}/xla_cuda_plugin.so", pjrt["location"].as_str().unwrap());
    let libs = fw::libraries(&snap, &venv);
    let cudart = libs
        .iter()
        .find(|l| l["soname"] == "libcudart.so.13")
        .unwrap();
    assert_eq!(cudart["reason"], "wanted");
    assert_eq!(cudart["requester"], plugin.as_str());
    assert_eq!(cudart["found_via"], "preloaded-by-framework");
    // The cu12 names of the plugin's shared _load list are not this build's wants.
    assert!(!libs.iter().any(|l| l["soname"] == "libcudart.so.12"));
}

use crate::common::cc;
/// The CUDA 12 PJRT plugin from its real wheel (`jax-cuda12-pjrt==0.10.2`, unzipped into a
/// fake machine): its shared `_load` list asks only for CUDA 12's sonames, from
/// `xla_cuda_plugin.so`, and a cudart wheel's file is preloaded from `nvidia/cuda_runtime`.
use crate::common::machine;

#[test]
fn cuda12_plugin_from_its_wheel() {
    let file = "jax_cuda12_pjrt-0.10.2-py3-none-manylinux_2_27_x86_64.whl";
    let whl = pypi::cache_dir().join("wheels").join(file);
    let got = if whl.is_file() {
        Ok(whl.clone())
    } else {
        std::fs::create_dir_all(whl.parent().unwrap()).unwrap();
        pypi::run(
            pypi::pip(std::path::Path::new("python3"))
                .args(["download", "--no-deps", "--only-binary=:all:", "-d"])
                .arg(whl.parent().unwrap())
                .arg("jax-cuda12-pjrt==0.10.2"),
        )
        .map(|_| whl.clone())
    };
    let Some(whl) = pypi::need("jax-cuda12-pjrt==0.10.2 wheel", got) else {
        return;
    };
    if !cc::have_cc() {
        return;
    }
    let site = "/venv/lib/python3.11/site-packages";
    let mut m = machine::Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&whl).unwrap()).unwrap();
    for f in [
        "jax_plugins/xla_cuda12/__init__.py",
        "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        "jax_cuda12_pjrt-0.10.2.dist-info/METADATA",
    ] {
        let out = m.path(&format!("{site}/{f}"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(
            &mut zip.by_name(f).unwrap(),
            &mut std::fs::File::create(out).unwrap(),
        )
        .unwrap();
    }
    cc::Lib::new("libcudart.so.12")
        .build(&m.path(&format!("{site}/nvidia/cuda_runtime/lib/libcudart.so.12")));
    let (_, report) = m.check(&[]);
    let snap = &report["snapshot"];
    let pjrt = snap["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "jax")
        .unwrap();
    assert_eq!(pjrt["cuda_major"], 12);
    let mut wants: Vec<&str> = pjrt["wants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["soname"].as_str().unwrap())
        .collect();
    wants.sort();
    assert_eq!(
        wants,
        [
            "libcublas.so.12",
            "libcublasLt.so.12",
            "libcudart.so.12",
            "libcudnn.so.9",
            "libcufft.so.11",
            "libcupti.so.12",
            "libcusolver.so.11",
            "libcusparse.so.12",
            "libnccl.so.2",
            "libnvrtc.so.12",
            "libnvshmem_host.so.3"
        ]
    );
    let plugin = format!("{site}/jax_plugins/xla_cuda12/xla_cuda_plugin.so");
    assert!(pjrt["wants"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["requester"] == plugin.as_str()));
    let libs = snap["libraries"].as_array().unwrap();
    let cudart = libs
        .iter()
        .find(|l| l["soname"] == "libcudart.so.12")
        .unwrap();
    assert_eq!(cudart["found_via"], "preloaded-by-framework");
    assert_eq!(
        cudart["path"],
        format!("{site}/nvidia/cuda_runtime/lib/libcudart.so.12").as_str()
    );
    let cublas = libs
        .iter()
        .find(|l| l["soname"] == "libcublas.so.12")
        .unwrap();
    assert_eq!(cublas["resolves"], false);
}
