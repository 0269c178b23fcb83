//! JAX's model against a real backend initialisation, for `jax[cuda13]==0.10.2` from PyPI: a
//! child interpreter runs `jax.devices()` (the CUDA plugin initialises, loads its libraries,
//! then falls back to the CPU on this GPU-less machine) and every CUDA-family library it
//! mapped must be predicted at the same file, with the CUDA build and the plugin's requester.
//! Needs PyPI (cached venv): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

#[path = "common/fw.rs"]
mod fw;
#[path = "common/pypi.rs"]
mod pypi;

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
