//! Issue 25's later rules, end to end: the facts each needs, read by the real probes from files
//! written as the tools write them (dist-info, RECORD, DeepSpeed's build record, extension
//! modules compiled with `cc`), then `check` on the machine root. Each has its twin that must
//! stay quiet.

use crate::common::cc;
use crate::common::machine::{findings_of, Machine};
use serde_json::Value;

const SITE: &str = "/venv/lib/python3.11/site-packages";

fn dist(m: &Machine, name: &str, version: &str, files: &[&str]) {
    let di = format!("{SITE}/{}-{version}.dist-info", name.replace('-', "_"));
    m.write(
        &format!("{di}/METADATA"),
        &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
    );
    let record: String = files.iter().map(|f| format!("{f},,\n")).collect();
    m.write(&format!("{di}/RECORD"), &record);
}

fn fires(report: &Value, rule: &str) -> bool {
    !findings_of(report, rule).is_empty()
}

fn python(report: &Value) -> &Value {
    report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/venv/bin/python")
        .unwrap()
}

#[test]
fn jaxlib_cudnn_label_against_the_cudnn_wheel() {
    for (cudnn, fire) in [("8.6.0.163", true), ("8.9.7.29", false)] {
        let mut m = Machine::new();
        m.active_venv("3.11", "/venv", &[]);
        dist(&m, "jax", "0.4.23", &[]);
        dist(&m, "jaxlib", "0.4.23+cuda12.cudnn89", &[]);
        dist(&m, "nvidia-cudnn-cu12", cudnn, &[]);
        let (_, r) = m.check(&[]);
        let jaxlib = python(&r)["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "jaxlib")
            .unwrap()
            .clone();
        assert_eq!(jaxlib["built_for_cudnn"], "8.9");
        assert_eq!(
            fires(&r, "cudnn-wheel-older-than-labelled-build"),
            fire,
            "{cudnn}: {}",
            r["findings"]
        );
    }
}

/// DeepSpeed 0.14 with its fused Adam op pre-built (`DS_BUILD_FUSED_ADAM=1`): the module and
/// the build record its setup.py writes.
fn deepspeed(torch: &str, prebuilt: bool) -> Option<Machine> {
    if !cc::have_cc() {
        eprintln!("SKIPPED: needs cc");
        return None;
    }
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    dist(&m, "torch", torch, &[]);
    let module = "deepspeed/ops/adam/fused_adam_op.cpython-311-x86_64-linux-gnu.so";
    cc::Lib::without_soname().build(&m.path(&format!("{SITE}/{module}")));
    dist(&m, "deepspeed", "0.14.0", &[module]);
    let ops = if prebuilt { "True" } else { "False" };
    m.write(
        &format!("{SITE}/deepspeed/git_version_info_installed.py"),
        &format!(
            "version='0.14.0'\ngit_hash='ce78a632'\ngit_branch='master'\n\
             installed_ops={{'async_io': False, 'fused_adam': {ops}, 'cpu_adam': False}}\n\
             accelerator_name='cuda'\n\
             torch_info={{'version': '2.2', 'bf16_support': True, 'cuda_version': '12.1', 'nccl_version': '2.19', 'hip_version': '0.0'}}\n"
        ),
    );
    Some(m)
}

#[test]
fn deepspeed_prebuilt_ops_against_the_installed_torch() {
    let cases = [
        ("2.1.0+cu121", true, true),
        ("2.2.1+cu121", true, false),
        ("2.1.0+cu121", false, false),
    ];
    for (torch, prebuilt, fire) in cases {
        let Some(m) = deepspeed(torch, prebuilt) else {
            return;
        };
        let (_, r) = m.check(&[]);
        let native = python(&r)["native"].as_array().cloned().unwrap_or_default();
        let ds = native.iter().find(|n| n["package"] == "deepspeed").unwrap();
        assert_eq!(ds["modules"], 1, "{ds}");
        if prebuilt {
            assert_eq!(ds["built_for_torch"], "2.2");
            assert_eq!(ds["built_for_cuda"], "12.1");
        } else {
            assert!(ds["build_record"].is_null(), "{ds}");
        }
        assert_eq!(
            fires(&r, "deepspeed-ops-built-for-other-torch"),
            fire,
            "{torch} {prebuilt}: {}",
            r["findings"]
        );
    }
}

#[test]
fn an_extension_module_for_another_python_is_not_importable() {
    if !cc::have_cc() {
        eprintln!("SKIPPED: needs cc");
        return;
    }
    for (twin, fire) in [
        (None, true),
        (Some("_cffi_backend.cpython-311-x86_64-linux-gnu.so"), false),
        (Some("_cffi_backend.abi3.so"), false),
    ] {
        let mut m = Machine::new();
        m.active_venv("3.11", "/venv", &[]);
        let mut files = vec!["_cffi_backend.cpython-310-x86_64-linux-gnu.so"];
        files.extend(twin);
        for f in &files {
            cc::Lib::without_soname().build(&m.path(&format!("{SITE}/{f}")));
        }
        dist(&m, "cffi", "1.15.0", &files);
        let (_, r) = m.check(&[]);
        assert_eq!(
            fires(&r, "extension-built-for-other-python"),
            fire,
            "{twin:?}: {}",
            r["findings"]
        );
        if fire {
            let f = &findings_of(&r, "extension-built-for-other-python")[0];
            assert!(
                f["message"]
                    .as_str()
                    .unwrap()
                    .contains("_cffi_backend.cpython-310"),
                "{f}"
            );
        }
    }
}

#[test]
fn vllm_flashinfer_backend_without_flashinfer() {
    for (flashinfer, backend, fire) in [
        (false, "FLASHINFER", true),
        (true, "FLASHINFER", false),
        (false, "FLASH_ATTN", false),
    ] {
        let mut m = Machine::new();
        m.active_venv("3.11", "/venv", &[("vllm", "0.7.3"), ("torch", "2.5.1")]);
        if flashinfer {
            dist(&m, "flashinfer-python", "0.2.2", &[]);
        }
        m.env("VLLM_ATTENTION_BACKEND", backend);
        let (_, r) = m.check(&[]);
        assert_eq!(
            fires(&r, "vllm-attention-backend-not-installed"),
            fire,
            "{flashinfer} {backend}: {}",
            r["findings"]
        );
    }
}

#[test]
fn a_gptq_model_directory_needs_its_backend() {
    for (backend, fire) in [(false, true), (true, false)] {
        let mut m = Machine::new();
        m.active_venv(
            "3.11",
            "/venv",
            &[("transformers", "4.49.0"), ("torch", "2.5.1")],
        );
        if backend {
            dist(&m, "optimum", "1.24.0", &[]);
            dist(&m, "gptqmodel", "1.9.0", &[]);
        }
        // config.json as transformers writes it for a GPTQ model (abridged to the keys read).
        m.write(
            "/models/q/config.json",
            r#"{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "torch_dtype": "float16", "transformers_version": "4.39.3", "quantization_config": {"bits": 8, "group_size": 128, "damp_percent": 0.01, "desc_act": false, "sym": true, "true_sequential": true, "model_name_or_path": null, "model_file_base_name": "model", "quant_method": "gptq"}}"#,
        );
        m.write("/models/q/model.safetensors", "");
        let (_, r) = m.check(&["--checkpoint", "/models/q"]);
        assert_eq!(
            fires(&r, "hf-gptq-model-without-gptq-backend"),
            fire,
            "{backend}: {}",
            r["findings"]
        );
    }
}
