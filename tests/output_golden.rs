//! Golden outputs of `check` (text at 80 and 120 columns and piped, Markdown) and of `report`,
//! on fake machines probed with the real probes: a GPU box (the fake NVML: two GPUs, one held by
//! another container's process), a laptop without a GPU, a machine with a broken venv, and a
//! machine where one rule fires five times (grouped, first 3 shown).
//!
//! The expected outputs are insta snapshots under `tests/golden/output/`;
//! `INSTA_UPDATE=always cargo test --test integration golden` rewrites them (read `git diff`
//! before committing).

use crate::common::{cli, machine};
use crate::fake_nvml;

use machine::{repo, Machine};
use std::path::Path;

/// Run envdoctor on `root` with exactly `env` (+ `ENVDOCTOR_WIDTH` when given): (code, stdout).
fn run(
    root: &Path,
    env: &[(String, String)],
    width: Option<usize>,
    args: &[&str],
) -> (i32, String) {
    let mut cmd = cli::empty();
    cmd.args(args).arg("--root").arg(root);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(w) = width {
        cmd.env("ENVDOCTOR_WIDTH", w.to_string());
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap_or(-1), stdout)
}

/// Check `actual` against the snapshot `tests/golden/output/NAME.snap`. insta compares without
/// trailing whitespace, so how the output ends is checked here: a report ends in a blank line,
/// everything else in one newline.
fn golden(name: &str, actual: &str) {
    let ending = if name.ends_with(".report.md") {
        "\n\n"
    } else {
        "\n"
    };
    assert_eq!(
        &actual[actual.trim_end().len()..],
        ending,
        "how {name} ends"
    );
    insta::with_settings!({
        snapshot_path => "golden/output",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, actual);
    });
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Text at 80 and 120 columns and piped, checked against the goldens and the width.
fn text_goldens(stem: &str, root: &Path, env: &[(String, String)], args: &[&str]) -> i32 {
    let mut code = -1;
    for (width, suffix) in [(Some(80), "80"), (Some(120), "120"), (None, "piped")] {
        let (c, out) = run(root, env, width, args);
        code = c;
        if let Some(w) = width {
            for l in out.lines() {
                assert!(l.chars().count() <= w, "line over {w} columns: {l:?}");
            }
        }
        golden(&format!("{stem}.{suffix}.txt"), &out);
    }
    code
}

fn gpu_env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), "/home/ana".into()),
        ("FAKE_NVML_SCENARIO".into(), "two-gpus".into()),
        ("FAKE_NVML_OWN_PID".into(), "4242".into()),
        ("FAKE_NVML_FOREIGN_PID".into(), "3100".into()),
    ]
}

/// The gpu-host-view fixture machine (its `/proc` lists the GPU processes), with an active venv
/// holding a CUDA 12.4 build of torch.
fn gpu_box() -> Machine {
    let mut m = Machine::new();
    machine::copy_tree(&repo("fixtures/machines/gpu-host-view"), m.root());
    m.active_venv(
        "3.11",
        "/home/ana/proj/.venv",
        &[("torch", "2.5.1+cu124"), ("numpy", "1.26.4")],
    );
    m.write(
        "/home/ana/proj/.venv/lib/python3.11/site-packages/torch/version.py",
        "__version__ = '2.5.1+cu124'\ncuda = '12.4'\n",
    );
    for (k, v) in gpu_env().into_iter().skip(1) {
        m.env(&k, &v);
    }
    m
}

#[test]
fn a_gpu_box_summary_names_the_free_gpu_and_the_foreign_process() {
    let m = gpu_box();
    let (root, env) = (m.root(), &m.env);
    let lib = fake_nvml::library();
    let lib = lib.to_str().unwrap();
    let args = ["check", "--project", "/home/ana/proj", "--nvml-lib", lib];
    let code = text_goldens("gpu-box", root, env, &args);
    assert_eq!(code, 1, "GPU 0 is held by another container's process");
    let (_, md) = run(
        root,
        env,
        None,
        &["check", "--format", "markdown", "--nvml-lib", lib],
    );
    golden("gpu-box.md", &md);
    let (code, rep) = run(root, env, None, &["report", "--nvml-lib", lib]);
    assert_eq!(code, 0, "report is a document, not a gate");
    golden("gpu-box.report.md", &rep);
    // Issue 30, 10a: `check` names the other user's process; the report, a document meant to
    // be shared, names neither the user nor the process (it did, twice, before).
    assert!(md.contains("user bob"), "{md}");
    assert!(!rep.contains("bob"), "{rep}");
    assert!(!rep.contains("pid 3100 (python3"), "{rep}");
    // The fix names the GPU that is free, as a command.
    let (_, json) = run(
        root,
        env,
        None,
        &["check", "--format", "json", "--nvml-lib", lib],
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let held = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "gpu-memory-held-by-other-process")
        .expect("the held GPU is found");
    let free: Vec<u64> = v["snapshot"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["live"]["processes"].as_array().unwrap().is_empty())
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    match free.first() {
        Some(i) => assert_eq!(
            held["fix"]["command"],
            format!("export CUDA_VISIBLE_DEVICES={i}")
        ),
        None => assert!(held["fix"]["text"]
            .as_str()
            .unwrap()
            .contains("No other GPU here is free")),
    }
}

/// A laptop: a project venv with numpy, no NVIDIA driver.
fn laptop() -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.11", "/home/u/proj/.venv", &[("numpy", "1.26.4")]);
    m.env("HOME", "/home/u");
    m
}

#[test]
fn a_laptop_without_a_gpu_is_ok_and_says_what_it_assumed() {
    let m = laptop();
    let args = [
        "check",
        "--nvml-lib",
        "/nonexistent/libnvidia-ml.so.1",
        "--project",
        "/home/u/proj",
    ];
    let code = text_goldens("laptop", m.root(), &m.env, &args);
    assert_eq!(code, 0);
    let (_, out) = run(m.root(), &m.env, None, &args);
    let first: Vec<&str> = out.lines().take(4).collect();
    assert_eq!(first[0], "Summary");
    // The project in full once; paths under it relative to it from then on.
    assert_eq!(first[1], "    Project      /home/u/proj");
    assert!(
        first[2].starts_with("  ✓ Python       ./.venv/bin/python 3.11.9"),
        "{out}"
    );
    assert!(first[2].contains("VIRTUAL_ENV"), "{out}");
    assert!(out.contains("✓ Driver       no NVIDIA driver"), "{out}");
    assert!(
        out.trim_end()
            .ends_with("(checked 2 interpreters, 0 GPUs, 0 libraries, 0 checkpoints)"),
        "{out}"
    );
}

#[test]
fn a_broken_venv_is_marked_in_the_summary() {
    let root = repo("fixtures/machines/py-broken");
    let env = vec![
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("HOME".to_string(), "/home/u".to_string()),
    ];
    let args = [
        "check",
        "--no-load",
        "--project",
        "/home/u/proj",
        "--verbose",
    ];
    text_goldens("broken-venv", &root, &env, &args);
}

/// Five venvs, each missing what one of its packages requires: one rule, five findings.
fn five_unmet() -> Machine {
    let mut m = Machine::new();
    m.env("HOME", "/home/u");
    for i in 0..5 {
        let venv = format!("/home/u/envs/e{i}");
        m.venv("3.11", &venv, &[("requests", "2.31.0")]);
        m.write(
            &format!("{venv}/lib/python3.11/site-packages/requests-2.31.0.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: requests\nVersion: 2.31.0\nRequires-Dist: charset-normalizer<4,>=2\n",
        );
        m.write(
            "/home/u/.conda/environments.txt",
            &(0..5)
                .map(|i| format!("/home/u/envs/e{i}\n"))
                .collect::<String>(),
        );
    }
    m
}

#[test]
fn a_rule_that_fires_five_times_is_one_entry_with_three_shown() {
    let m = five_unmet();
    let args = ["check", "--no-load"];
    text_goldens("grouped", m.root(), &m.env, &args);
    let (_, out) = run(m.root(), &m.env, Some(80), &args);
    assert_eq!(
        out.matches("[requirement-not-installed]").count(),
        1,
        "{out}"
    );
    assert!(out.contains("[requirement-not-installed] × 5"), "{out}");
    assert!(
        out.contains("… 2 more of this rule (first 3 shown; --all for the rest)"),
        "{out}"
    );
    let (_, all) = run(m.root(), &m.env, Some(80), &["check", "--no-load", "--all"]);
    assert!(!all.contains("more of this rule"), "{all}");
    assert_eq!(
        all.matches("requires `charset-normalizer<4,>=2`").count(),
        5,
        "{all}"
    );
    // The fix is a complete command with the specifier quoted.
    let (_, json) = run(
        m.root(),
        &m.env,
        None,
        &["check", "--no-load", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cmd = v["findings"][0]["fix"]["command"].as_str().unwrap();
    assert!(
        cmd.starts_with("/home/u/envs/e")
            && cmd.ends_with("/bin/python -m pip install 'charset-normalizer<4,>=2'"),
        "{cmd}"
    );
    let (_, rep) = run(m.root(), &m.env, None, &["report", "--no-load"]);
    golden("grouped.report.md", &rep);
    // Secrets never reach the report, whatever the environment holds.
    let mut with_secrets = m.env.clone();
    with_secrets.push(("HF_TOKEN".into(), "hf_sEcReTtOkEnVaLuE1234567890".into()));
    with_secrets.push((
        "WANDB_API_KEY".into(),
        "0123456789abcdef0123456789abcdef01234567".into(),
    ));
    with_secrets.push((
        "PIP_INDEX_URL".into(),
        "https://ana:hunter2pass@pypi.example.com/simple".into(),
    ));
    with_secrets.push(("HOSTNAME".into(), "secret-box-42".into()));
    for format in ["markdown", "json"] {
        let (_, rep) = run(
            m.root(),
            &with_secrets,
            None,
            &["report", "--no-load", "--format", format],
        );
        for secret in [
            "hf_sEcReTtOkEnVaLuE",
            "0123456789abcdef0123",
            "hunter2pass",
            "secret-box-42",
        ] {
            assert!(
                !rep.contains(secret),
                "{format} report leaks {secret}:\n{rep}"
            );
        }
    }
    let (_, rep) = run(
        m.root(),
        &m.env,
        None,
        &["report", "--no-load", "--format", "json"],
    );
    let r: serde_json::Value = serde_json::from_str(&rep).unwrap();
    assert_eq!(r["findings"].as_array().unwrap().len(), 5);
    assert!(r["facts"]["pythons"][0]["packages"].as_array().is_some());
    assert!(widest(&rep) > 0);
}

#[test]
fn a_corrupt_checkpoint_is_told_once() {
    let mut m = Machine::new();
    m.env("HOME", "/home/u");
    let whole = std::fs::read(repo("fixtures/checkpoints/torch_state_dict.pt")).unwrap();
    let cut = m.path("/home/u/proj/runs/last.pt");
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    std::fs::write(&cut, &whole[..300]).unwrap();
    let args = ["check", "--no-load", "--project", "/home/u/proj"];
    let (_, out) = run(m.root(), &m.env, Some(80), &args);
    golden("corrupt-checkpoint.80.txt", &out);
    // The finding tells it; the probe problem behind it and a checkpoint list do not repeat it.
    assert!(out.contains("[ckpt-unreadable]"), "{out}");
    assert!(!out.contains("Probe problems"), "{out}");
    assert_eq!(
        out.matches("Could not find EOCD").count(),
        2,
        "message and evidence: {out}"
    );
    // The project in full once, the file relative to it.
    assert_eq!(out.matches("/home/u/proj").count(), 1, "{out}");
    assert!(out.contains("checkpoints[./runs/last.pt]"), "{out}");
    assert!(
        out.contains("! Checkpoints  1 found, 1 unreadable"),
        "{out}"
    );
}
