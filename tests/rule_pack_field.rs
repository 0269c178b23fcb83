//! The rules grown from public reports (rules/memory.yaml, distributed.yaml, compat.yaml,
//! extensions.yaml, modelfiles.yaml) run end to end through `envdoctor check`, on machines built
//! from real files: venvs installed by pip from PyPI (checked on this host, with the prediction
//! compared against a real import or a real model load where the failure can happen here),
//! fake machines under `--root` with `.dist-info` directories, the real checkpoint fixtures
//! written by the frameworks, and the fake NVML for GPU state. Each case has a healthy twin that
//! must not get that finding.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::machine;
use machine::*;

use crate::common::pypi;

use crate::fake_nvml;

/// `envdoctor check --format json --no-load` on this host with exactly PATH (`bins` first, then
/// /usr/bin:/bin), a fresh HOME and `env`: (exit code, report).
fn check_host(bins: &[&Path], env: &[(&str, &str)], extra: &[&str]) -> (i32, Value) {
    let home = tempfile::tempdir().unwrap();
    let mut path: Vec<String> = bins.iter().map(|b| b.display().to_string()).collect();
    path.push("/usr/bin:/bin".into());
    let mut cmd = assert_cmd::Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .env("PATH", path.join(":"))
        .env("HOME", home.path())
        .args(["check", "--format", "json", "--no-load"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), report)
}

/// The findings of `rule` whose message mentions `needle` (an interpreter or file path).
fn about<'a>(report: &'a Value, rule: &str, needle: &str) -> Vec<&'a Value> {
    findings_of(report, rule)
        .into_iter()
        .filter(|f| f["message"].as_str().unwrap_or("").contains(needle))
        .collect()
}

/// Assert `rule` fired about `needle` and return that finding's message.
fn fired_about(report: &Value, rule: &str, needle: &str) -> String {
    let f = about(report, rule, needle);
    assert!(
        !f.is_empty(),
        "{rule} did not fire about {needle}; findings: {:#}\nnvml: {:#}\ngpus: {:#}",
        report["findings"],
        report["snapshot"]["nvml"],
        report["snapshot"]["gpus"]
    );
    f[0]["message"].as_str().unwrap().to_string()
}

/// Whether one of the shipped `rule`'s symptom regexes matches `text`.
fn symptom_matches(rule: &str, text: &str) -> bool {
    let pack = envdoctor::rules::RuleSet::shipped().unwrap();
    let r = pack.get(rule).unwrap_or_else(|| panic!("no rule {rule}"));
    assert!(!r.symptoms.is_empty(), "{rule} lists no symptoms");
    r.symptoms
        .iter()
        .any(|s| regex::Regex::new(s).unwrap().is_match(text))
}

/// Run `python -c CODE` in a venv with `env`: (success, stderr).
fn python(venv: &Path, code: &str, env: &[(&str, &str)]) -> (bool, String) {
    let out = Std::new(venv.join("bin/python"))
        .args(["-c", code])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn venv(reqs: &[&str]) -> Option<PathBuf> {
    pypi::need(
        &format!("a venv with {}", reqs.join(" ")),
        pypi::cached_venv(reqs),
    )
}

// NumPy 2 with pandas 2.0.3 and h5py 3.10 (wheels built against NumPy 1; pip installs the set):
// reported as `numpy.dtype size changed` (CcgAlberta/pygeostat#65, h5py/h5py#2420). The prediction
// is checked by importing them; the twin (pandas 2.2.2, h5py 3.11) imports fine and is quiet.
#[test]
fn numpy2_with_pandas_and_h5py_built_for_numpy1() {
    let Some(bad) = venv(&["numpy==2.0.2", "pandas==2.0.3", "h5py==3.10.0"]) else {
        return;
    };
    let Some(good) = venv(&["numpy==2.0.2", "pandas==2.2.2", "h5py==3.11.0"]) else {
        return;
    };
    let bad_py = bad.join("bin/python").display().to_string();
    let (_, report) = check_host(&[&bad.join("bin")], &[], &[]);
    let msg = fired_about(&report, "numpy2-with-numpy1-built-extension", &bad_py);
    assert!(msg.contains("numpy 2.0.2"), "{msg}");
    for module in ["pandas", "h5py"] {
        let (ok, err) = python(&bad, &format!("import {module}"), &[]);
        assert!(
            !ok,
            "import {module} worked under numpy 2: the rule would be wrong"
        );
        assert!(
            symptom_matches("numpy2-with-numpy1-built-extension", &err),
            "{module}: {err}"
        );
    }

    let good_py = good.join("bin/python").display().to_string();
    let (_, report) = check_host(&[&good.join("bin")], &[], &[]);
    assert!(about(&report, "numpy2-with-numpy1-built-extension", &good_py).is_empty());
    let (ok, err) = python(&good, "import pandas, h5py", &[]);
    assert!(ok, "{err}");
}

// An ONNX model stamped with a newer IR than onnxruntime 1.17.1 reads (microsoft/onnxruntime
// #20559): the real `tiny.onnx` fixture (IR 14, written by onnx 1.23) fails to load in a real
// onnxruntime 1.17.1 venv with the rule's symptom; the same model re-saved by onnx at IR 9 loads
// and is quiet.
#[test]
fn onnx_ir_version_newer_than_onnxruntime() {
    let Some(v) = venv(&["numpy<2", "onnxruntime==1.17.1", "onnx==1.16.0"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.onnx");
    let old = dir.path().join("old.onnx");
    std::fs::copy(repo("fixtures/checkpoints/tiny.onnx"), &new).unwrap();
    let (ok, err) = python(
        &v,
        &format!(
            "import onnx; m = onnx.load({:?}); m.ir_version = 9; onnx.save(m, {:?})",
            new.display().to_string(),
            old.display().to_string()
        ),
        &[],
    );
    assert!(ok, "{err}");
    let load = |p: &Path| {
        python(
            &v,
            &format!(
                "import onnxruntime as ort; ort.InferenceSession({:?}, providers=['CPUExecutionProvider'])",
                p.display().to_string()
            ),
            &[],
        )
    };

    let new_s = new.display().to_string();
    let (_, report) = check_host(&[&v.join("bin")], &[], &["--checkpoint", &new_s]);
    let msg = fired_about(&report, "onnx-ir-newer-than-onnxruntime", &new_s);
    assert!(
        msg.contains("IR version 14") && msg.contains("onnxruntime 1.17.1"),
        "{msg}"
    );
    let (ok, err) = load(&new);
    assert!(!ok, "onnxruntime 1.17.1 loaded an IR 14 model");
    assert!(
        symptom_matches("onnx-ir-newer-than-onnxruntime", &err),
        "{err}"
    );

    let old_s = old.display().to_string();
    let (_, report) = check_host(&[&v.join("bin")], &[], &["--checkpoint", &old_s]);
    assert!(about(&report, "onnx-ir-newer-than-onnxruntime", &old_s).is_empty());
    let (ok, err) = load(&old);
    assert!(ok, "{err}");
}

// KERAS_BACKEND=jax where Keras 3 has no jax (keras-team/keras#18425): the real
// `tensorflow[and-cuda]==2.21.0` venv (Keras 3, no JAX). `import keras` fails as predicted; with
// KERAS_BACKEND=tensorflow the rule is quiet and the import works.
#[test]
fn keras_backend_names_a_framework_that_is_not_installed() {
    let Some(v) = venv(&["tensorflow[and-cuda]==2.21.0"]) else {
        return;
    };
    let py = v.join("bin/python").display().to_string();
    let (_, report) = check_host(&[&v.join("bin")], &[("KERAS_BACKEND", "jax")], &[]);
    let msg = fired_about(&report, "keras-backend-not-installed", &py);
    assert!(msg.contains("KERAS_BACKEND=jax"), "{msg}");
    let (ok, err) = python(&v, "import keras", &[("KERAS_BACKEND", "jax")]);
    assert!(!ok, "keras imported with a jax backend and no jax");
    assert!(
        symptom_matches("keras-backend-not-installed", &err),
        "{err}"
    );

    let (_, report) = check_host(&[&v.join("bin")], &[("KERAS_BACKEND", "tensorflow")], &[]);
    assert!(about(&report, "keras-backend-not-installed", &py).is_empty());
    let (ok, err) = python(
        &v,
        "import keras; assert keras.backend.backend() == 'tensorflow'",
        &[
            ("KERAS_BACKEND", "tensorflow"),
            ("CUDA_VISIBLE_DEVICES", ""),
        ],
    );
    assert!(ok, "{err}");
}

// jaxlib newer than jax (jax-ml/jax#17638) and a CUDA plugin of another release than jaxlib
// (jax-ml/jax#24901): fake machines with those dist-infos; the twin is the real `jax[cuda13]`
// venv that pip resolved (all four packages at one version).
#[test]
fn jax_jaxlib_and_cuda_plugin_versions() {
    let mut m = Machine::new();
    m.venv(
        "3.11",
        "/opt/old",
        &[("jax", "0.4.20"), ("jaxlib", "0.4.31")],
    );
    m.venv(
        "3.11",
        "/opt/plug",
        &[
            ("jax", "0.9.0.1"),
            ("jaxlib", "0.9.0.1"),
            ("jax-cuda12-plugin", "0.9.2"),
            ("jax-cuda12-pjrt", "0.9.2"),
        ],
    );
    m.env("PATH", "/opt/old/bin:/opt/plug/bin:/usr/bin:/bin");
    // GPU jobs expected: the plugin matters only where a GPU starts.
    let (code, report) = m.check(&["--expect-gpu"]);
    assert_eq!(code, 1, "{:#}", report["findings"]);
    let msg = fired_about(&report, "jaxlib-newer-than-jax", "/opt/old/bin/python");
    assert!(
        msg.contains("jaxlib 0.4.31") && msg.contains("jax 0.4.20"),
        "{msg}"
    );
    let msg = fired_about(
        &report,
        "jax-cuda-plugin-version-differs",
        "/opt/plug/bin/python",
    );
    assert!(
        msg.contains("0.9.2") && msg.contains("jaxlib 0.9.0.1"),
        "{msg}"
    );
    assert!(about(&report, "jaxlib-newer-than-jax", "/opt/plug/bin/python").is_empty());

    let Some(v) = venv(&["jax[cuda13]==0.10.2"]) else {
        return;
    };
    let py = v.join("bin/python").display().to_string();
    let (_, report) = check_host(&[&v.join("bin")], &[], &[]);
    let names: Vec<&str> = report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == py.as_str())
        .expect("the jax venv was probed")["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"jax-cuda13-plugin") && names.contains(&"jaxlib"),
        "{names:?}"
    );
    assert!(about(&report, "jax-cuda-plugin-version-differs", &py).is_empty());
    assert!(about(&report, "jaxlib-newer-than-jax", &py).is_empty());
}

/// `envdoctor check --root` of `m` with the fake NVML in `scenario` (loading allowed: NVML is a
/// shared library, so `--no-load` would skip it).
fn check_with_gpus(m: &Machine, scenario: &str) -> (i32, Value) {
    let mut cmd = assert_cmd::Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_OWN_PID", "4242")
        .env("FAKE_NVML_FOREIGN_PID", "3100")
        .args(["check", "--format", "json", "--root"])
        .arg(m.root())
        .arg("--nvml-lib")
        .arg(fake_nvml::library());
    for (k, v) in &m.env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(
        !m.root().join("executed").exists(),
        "envdoctor executed a stand-in interpreter"
    );
    (out.status.code().unwrap_or(-1), report)
}

// JAX preallocating a GPU another process already uses (jax-ml/jax#4310): the fake NVML's GPU 0
// is held by a foreign process; in the idle scenario (and with XLA_PYTHON_CLIENT_PREALLOCATE=false)
// the rule is quiet.
#[test]
fn jax_preallocation_on_a_shared_gpu() {
    let mut m = Machine::new();
    m.active_venv(
        "3.11",
        "/opt/venv",
        &[
            ("jax", "0.6.1"),
            ("jaxlib", "0.6.1"),
            ("jax-cuda12-plugin", "0.6.1"),
            ("jax-cuda12-pjrt", "0.6.1"),
        ],
    );
    let (_, report) = check_with_gpus(&m, "two-gpus");
    let msg = fired_about(
        &report,
        "jax-preallocates-shared-gpu",
        "/opt/venv/bin/python",
    );
    assert!(msg.contains("pid 3100") && msg.contains("H100"), "{msg}");

    let (_, report) = check_with_gpus(&m, "idle");
    assert!(findings_of(&report, "jax-preallocates-shared-gpu").is_empty());
    m.env("XLA_PYTHON_CLIENT_PREALLOCATE", "false");
    let (_, report) = check_with_gpus(&m, "two-gpus");
    assert!(findings_of(&report, "jax-preallocates-shared-gpu").is_empty());
}

// A CPU-only torch on a machine whose GPUs NVML sees (X-PLUG/MobileAgent#60): torch's own
// `version.py` says `cuda = None`; the twin's says a CUDA release.
#[test]
fn cpu_torch_build_on_a_gpu_machine() {
    let version_py = |cuda: &str| {
        format!(
            "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n\
             __version__ = '2.4.0'\ndebug = False\ncuda: Optional[str] = {cuda}\n\
             git_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'\nhip: Optional[str] = None\n"
        )
    };
    let mut m = Machine::new();
    m.active_venv("3.11", "/opt/venv", &[("torch", "2.4.0+cpu")]);
    m.write(
        "/opt/venv/lib/python3.11/site-packages/torch/version.py",
        &version_py("None"),
    );
    let (_, report) = check_with_gpus(&m, "idle");
    let msg = fired_about(
        &report,
        "torch-cpu-build-on-gpu-machine",
        "/opt/venv/bin/python",
    );
    assert!(msg.contains("2.4.0+cpu"), "{msg}");

    let mut twin = Machine::new();
    twin.active_venv("3.11", "/opt/venv", &[("torch", "2.4.0")]);
    twin.write(
        "/opt/venv/lib/python3.11/site-packages/torch/version.py",
        &version_py("'12.1'"),
    );
    let (_, report) = check_with_gpus(&twin, "idle");
    assert!(findings_of(&report, "torch-cpu-build-on-gpu-machine").is_empty());
    // No GPU at all: a CPU build is what the machine needs.
    let (_, report) = check_with_gpus(&m, "no-devices");
    assert!(findings_of(&report, "torch-cpu-build-on-gpu-machine").is_empty());
}

// CTranslate2 4 (CUDA 12 cuBLAS) where torch cu118 brought only nvidia-cublas-cu11
// (dmMaze/BallonsTranslator#404), on a GPU machine; the twin has the cu12 cuBLAS wheel.
#[test]
fn ctranslate2_4_without_cuda12_cublas() {
    let mut m = Machine::new();
    m.active_venv(
        "3.11",
        "/opt/venv",
        &[
            ("ctranslate2", "4.3.1"),
            ("nvidia-cublas-cu11", "11.11.3.6"),
        ],
    );
    let (_, report) = check_with_gpus(&m, "idle");
    let msg = fired_about(
        &report,
        "ctranslate2-4-without-cuda12-cublas",
        "/opt/venv/bin/python",
    );
    assert!(msg.contains("ctranslate2 4.3.1"), "{msg}");

    let mut twin = Machine::new();
    twin.active_venv(
        "3.11",
        "/opt/venv",
        &[("ctranslate2", "4.3.1"), ("nvidia-cublas-cu12", "12.4.5.8")],
    );
    let (_, report) = check_with_gpus(&twin, "idle");
    assert!(findings_of(&report, "ctranslate2-4-without-cuda12-cublas").is_empty());
}

// transformers silently disabling an old torch (XiaoxinHe/G-Retriever#48; minimum read from the
// wheels), torchvision of another torch (pytorch/vision#1405), tensorflow-text of another TF
// minor (keras-team/keras-hub#2159), both onnxruntime wheels (microsoft/onnxruntime#26996),
// TensorFlow Addons under Keras 3 (tensorflow/addons#2865), the Trainer without accelerate
// (huggingface/blog#1445): one fake machine with six broken venvs, one with their healthy twins.
#[test]
fn framework_companion_versions() {
    let mut m = Machine::new();
    m.venv(
        "3.11",
        "/opt/hf",
        &[("transformers", "4.57.1"), ("torch", "2.0.1")],
    );
    m.venv(
        "3.11",
        "/opt/tv",
        &[("torch", "2.5.1"), ("torchvision", "0.21.0")],
    );
    m.venv(
        "3.11",
        "/opt/tft",
        &[("tensorflow", "2.19.0"), ("tensorflow-text", "2.18.1")],
    );
    m.venv(
        "3.11",
        "/opt/ort",
        &[("onnxruntime", "1.16.1"), ("onnxruntime-gpu", "1.16.1")],
    );
    m.venv(
        "3.11",
        "/opt/tfa",
        &[
            ("tensorflow", "2.18.0"),
            ("keras", "3.8.0"),
            ("tensorflow-addons", "0.23.0"),
        ],
    );
    m.venv(
        "3.11",
        "/opt/trn",
        &[("transformers", "4.33.2"), ("torch", "2.0.1")],
    );
    m.env(
        "PATH",
        "/opt/hf/bin:/opt/tv/bin:/opt/tft/bin:/opt/ort/bin:/opt/tfa/bin:/opt/trn/bin:/usr/bin:/bin",
    );
    let (code, report) = m.check(&[]);
    assert_eq!(code, 1);
    let msg = fired_about(
        &report,
        "transformers-disables-old-torch",
        "/opt/hf/bin/python",
    );
    assert!(msg.contains("torch 2.0.1"), "{msg}");
    let msg = fired_about(
        &report,
        "torchvision-built-for-other-torch",
        "/opt/tv/bin/python",
    );
    assert!(msg.contains("torchvision 0.21.0"), "{msg}");
    let msg = fired_about(
        &report,
        "tensorflow-text-other-tensorflow-minor",
        "/opt/tft/bin/python",
    );
    assert!(msg.contains("tensorflow 2.19.0"), "{msg}");
    fired_about(
        &report,
        "onnxruntime-cpu-and-gpu-wheels-both",
        "/opt/ort/bin/python",
    );

    let mut twin = Machine::new();
    twin.venv(
        "3.11",
        "/opt/hf",
        &[("transformers", "4.57.1"), ("torch", "2.1.2")],
    );
    twin.venv(
        "3.11",
        "/opt/tv",
        &[("torch", "2.5.1"), ("torchvision", "0.20.1")],
    );
    twin.venv(
        "3.11",
        "/opt/tft",
        &[("tensorflow", "2.19.0"), ("tensorflow-text", "2.19.0")],
    );
    twin.venv("3.11", "/opt/ort", &[("onnxruntime-gpu", "1.16.1")]);
    twin.venv(
        "3.11",
        "/opt/tfa",
        &[
            ("tensorflow", "2.15.1"),
            ("keras", "2.15.0"),
            ("tensorflow-addons", "0.23.0"),
        ],
    );
    twin.venv(
        "3.11",
        "/opt/trn",
        &[
            ("transformers", "4.33.2"),
            ("torch", "2.0.1"),
            ("accelerate", "0.24.1"),
        ],
    );
    twin.env(
        "PATH",
        "/opt/hf/bin:/opt/tv/bin:/opt/tft/bin:/opt/ort/bin:/opt/tfa/bin:/opt/trn/bin:/usr/bin:/bin",
    );
    let (_, report) = twin.check(&[]);
    for rule in [
        "transformers-disables-old-torch",
        "torchvision-built-for-other-torch",
        "tensorflow-text-other-tensorflow-minor",
        "onnxruntime-cpu-and-gpu-wheels-both",
        "tensorflow-addons-with-keras3",
    ] {
        assert!(findings_of(&report, rule).is_empty(), "{rule}");
    }
    assert!(about(
        &report,
        "transformers-trainer-without-accelerate",
        "/opt/trn/bin/python"
    )
    .is_empty());
}

// torch.compile on Python 3.12 with torch 2.3 (pytorch/pytorch#120233): the venv's pyvenv.cfg
// says 3.12; the twin has torch 2.4.
#[test]
fn torch_compile_on_python_312() {
    let mut m = Machine::new();
    m.active_venv("3.12", "/opt/venv", &[("torch", "2.3.1")]);
    let (_, report) = m.check(&[]);
    let msg = fired_about(
        &report,
        "torch-compile-unsupported-python",
        "/opt/venv/bin/python",
    );
    assert!(msg.contains("Python 3.12"), "{msg}");

    let mut twin = Machine::new();
    twin.active_venv("3.12", "/opt/venv", &[("torch", "2.4.0")]);
    let (_, report) = twin.check(&[]);
    assert!(findings_of(&report, "torch-compile-unsupported-python").is_empty());
}

// expandable_segments asked of torch 2.0.1 (ZhengPeng7/BiRefNet#179) on a fake machine; the twin
// is the real `torch==2.15.0` venv with the same variable. The renamed NCCL variable
// (NVIDIA/physicsnemo#568) fires on that real venv and is quiet under its TORCH_NCCL_ name.
#[test]
fn torch_allocator_and_process_group_variables() {
    let mut m = Machine::new();
    m.active_venv("3.11", "/opt/venv", &[("torch", "2.0.1")]);
    m.env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
    let (code, report) = m.check(&[]);
    assert_eq!(code, 1);
    fired_about(
        &report,
        "torch-alloc-conf-expandable-segments-old-torch",
        "/opt/venv/bin/python",
    );

    let Some(v) = venv(&["torch==2.15.0"]) else {
        return;
    };
    let py = v.join("bin/python").display().to_string();
    let (_, report) = check_host(
        &[&v.join("bin")],
        &[
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
            ("NCCL_ASYNC_ERROR_HANDLING", "1"),
        ],
        &[],
    );
    assert!(about(
        &report,
        "torch-alloc-conf-expandable-segments-old-torch",
        &py
    )
    .is_empty());
    let msg = fired_about(&report, "torch-nccl-env-renamed", &py);
    assert!(msg.contains("torch 2.15.0"), "{msg}");

    let (_, report) = check_host(
        &[&v.join("bin")],
        &[("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")],
        &[],
    );
    assert!(about(&report, "torch-nccl-env-renamed", &py).is_empty());
}

// A Hugging Face model directory written by transformers 5.23 (the real `hf_bert_tiny` fixture)
// read by transformers 4.57 (city96/ComfyUI_ExtraModels#114), and TRANSFORMERS_CACHE, which
// transformers 5 no longer reads (llm-d/llm-d#255; checked in the wheels): real dist-infos from
// pip (`--no-deps`), twins with the other transformers.
#[test]
fn transformers_versions_against_model_files_and_cache_variables() {
    let Some(old) = venv(&["--no-deps", "transformers==4.57.1"]) else {
        return;
    };
    let Some(new) = venv(&["--no-deps", "transformers==5.23.0"]) else {
        return;
    };
    let model = repo("fixtures/checkpoints/hf_bert_tiny")
        .display()
        .to_string();
    let cache = [("TRANSFORMERS_CACHE", "/scratch/hf")];
    let old_py = old.join("bin/python").display().to_string();
    let new_py = new.join("bin/python").display().to_string();

    let (_, report) = check_host(&[&old.join("bin")], &cache, &["--checkpoint", &model]);
    let msg = fired_about(&report, "hf-model-from-newer-transformers", &old_py);
    assert!(
        msg.contains("transformers 5.23.0") && msg.contains("transformers 4.57.1"),
        "{msg}"
    );
    assert!(about(&report, "transformers-cache-variable-ignored-v5", &old_py).is_empty());

    let (_, report) = check_host(&[&new.join("bin")], &cache, &["--checkpoint", &model]);
    assert!(about(&report, "hf-model-from-newer-transformers", &new_py).is_empty());
    let msg = fired_about(&report, "transformers-cache-variable-ignored-v5", &new_py);
    assert!(msg.contains("/scratch/hf"), "{msg}");
    let (_, report) = check_host(
        &[&new.join("bin")],
        &[
            ("TRANSFORMERS_CACHE", "/scratch/hf"),
            ("HF_HOME", "/scratch"),
        ],
        &[],
    );
    assert!(about(&report, "transformers-cache-variable-ignored-v5", &new_py).is_empty());
}
