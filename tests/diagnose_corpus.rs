//! `envdoctor diagnose` on the log corpus of `fixtures/logs/` (produced by the real frameworks
//! with `fixtures/logs/make_logs.sh`, or quoted from public issues in `fixtures/logs/quoted/`):
//! for each log, a fake machine where the right rule is confirmed first, and a twin where the
//! same rule is ruled out by a named fact. Then the same logs inside 5,000 lines of ordinary
//! training output.

use crate::common::machine;

use machine::{copy_tree, repo, Machine};
use serde_json::Value;
use std::path::Path;

/// `envdoctor diagnose LOG --format json --no-load --root ROOT EXTRA...` with `env`.
fn diagnose(log: &Path, root: &Path, env: &[(String, String)], extra: &[&str]) -> (i32, Value) {
    machine::json_on_root(&["diagnose".as_ref(), log.as_os_str()], root, env, extra)
}

fn diagnosis<'a>(r: &'a Value, rule: &str) -> &'a Value {
    r["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == rule)
        .unwrap_or_else(|| panic!("{rule} is not a candidate: {r:#}"))
}

/// The right rule confirmed first (exit 0), with matched lines from the log.
fn assert_confirmed_first(r: &Value, code: i32, rule: &str) {
    let top = &r["diagnoses"][0];
    assert_eq!(top["rule"], rule, "{r:#}");
    assert_eq!(top["verdict"], "confirmed", "{r:#}");
    assert!(!top["evidence"].as_array().unwrap().is_empty(), "{top:#}");
    assert!(!top["matched_lines"].as_array().unwrap().is_empty());
    assert_eq!(code, 0);
}

/// The rule ruled out, naming a fact whose path contains `fact`; exit 1 unless something else
/// is confirmed.
fn assert_ruled_out(r: &Value, rule: &str, fact: &str) {
    let d = diagnosis(r, rule);
    assert_eq!(d["verdict"], "ruled-out", "{d:#}");
    assert!(
        d["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"].as_str().unwrap().contains(fact)),
        "no evidence on {fact}: {d:#}"
    );
    assert!(d["message"].as_str().unwrap().contains(fact), "{d:#}");
}

fn log(name: &str) -> std::path::PathBuf {
    repo("fixtures/logs").join(name)
}

struct Case {
    log: &'static str,
    rule: &'static str,
    /// The fact the twin contradicts.
    fact: &'static str,
    /// (machine, extra args) where it happens, and the twin.
    build: fn(bool) -> (Machine, Vec<String>),
}

fn venv_with(packages: &[(&str, &str)]) -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.11", "/home/u/venv", packages);
    m
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            log: "torch_weights_only.log",
            rule: "ckpt-torch-needs-weights-only-false",
            fact: "packages[torch].version",
            build: |real| {
                let m = venv_with(&[("torch", if real { "2.6.0" } else { "2.4.1" })]);
                m.checkpoint("torch_custom_object.pt", "/home/u/last.pt");
                (m, vec!["--checkpoint".into(), "/home/u/last.pt".into()])
            },
        },
        Case {
            log: "keras3_reads_keras2_h5.log",
            rule: "ckpt-keras2-h5-with-keras3",
            fact: "packages[tf-keras].version",
            build: |real| {
                let mut pk = vec![("keras", "3.15.1"), ("tensorflow", "2.21.0")];
                if !real {
                    pk.push(("tf-keras", "2.21.0"));
                }
                let m = venv_with(&pk);
                m.checkpoint("tf_keras_2.h5", "/home/u/model.h5");
                (m, vec!["--checkpoint".into(), "/home/u/model.h5".into()])
            },
        },
        Case {
            log: "keras3_reads_keras2_keras.log",
            rule: "ckpt-keras2-keras-file-with-keras3",
            fact: "packages[keras].version",
            build: |real| {
                let m = venv_with(&[("keras", if real { "3.15.1" } else { "2.15.0" })]);
                m.checkpoint("tf_keras_2.keras", "/home/u/model.keras");
                (m, vec!["--checkpoint".into(), "/home/u/model.keras".into()])
            },
        },
        Case {
            log: "tf_name_based_restore.log",
            rule: "ckpt-tf1-name-based-with-tf2",
            fact: "version",
            build: |real| {
                let m = venv_with(&[("tensorflow", if real { "2.21.0" } else { "1.15.5" })]);
                m.checkpoint("tf1_rnn_weights_biases", "/home/u/ck");
                (m, vec!["--checkpoint".into(), "/home/u/ck".into()])
            },
        },
        Case {
            log: "tf_missing_shard.log",
            rule: "ckpt-tf-shards-missing",
            fact: "missing_shards",
            build: |real| {
                let m = venv_with(&[("tensorflow", "2.21.0")]);
                m.checkpoint("tf2_object_based", "/home/u/ck");
                if real {
                    std::fs::remove_file(m.path("/home/u/ck/ckpt-1.data-00000-of-00001")).unwrap();
                }
                (m, vec!["--checkpoint".into(), "/home/u/ck".into()])
            },
        },
        Case {
            log: "numpy2_with_tf215.log",
            rule: "numpy2-with-numpy1-build",
            fact: "packages[numpy].version",
            build: |real| {
                let m = venv_with(&[
                    ("tensorflow-cpu", "2.15.1"),
                    ("numpy", if real { "2.1.3" } else { "1.26.4" }),
                ]);
                (m, vec![])
            },
        },
        Case {
            log: "quoted/h5py3_old_keras.log",
            rule: "h5py3-with-old-keras",
            fact: "packages[h5py].version",
            build: |real| {
                let m = venv_with(&[
                    ("tensorflow", "2.3.0"),
                    ("h5py", if real { "3.1.0" } else { "2.10.0" }),
                ]);
                (m, vec![])
            },
        },
        Case {
            log: "quoted/tf24_cusolver.log",
            rule: "tf24-cusolver-10-on-cuda-11-1",
            fact: "wanted_by",
            build: |real| {
                let m = Machine::new();
                copy_tree(
                    &repo("fixtures/machines/lib-cuda111-cusolver"),
                    &m.path("/"),
                );
                if !real {
                    // The same machine with TensorFlow 2.5 (built for CUDA 11.2, still asking
                    // for libcusolver.so.10 through the same headers, but not 2.4).
                    let site = m.path("/usr/local/lib/python3.8/dist-packages");
                    let meta = site.join("tensorflow_gpu-2.4.0.dist-info/METADATA");
                    let text = std::fs::read_to_string(&meta).unwrap();
                    std::fs::write(&meta, text.replace("Version: 2.4.0", "Version: 2.5.0"))
                        .unwrap();
                    std::fs::rename(
                        site.join("tensorflow_gpu-2.4.0.dist-info"),
                        site.join("tensorflow_gpu-2.5.0.dist-info"),
                    )
                    .unwrap();
                }
                (m, vec![])
            },
        },
    ]
}

#[test]
fn each_log_confirms_its_rule_on_its_machine_and_is_ruled_out_on_the_twin() {
    for c in cases() {
        let (m, extra) = (c.build)(true);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (code, r) = diagnose(&log(c.log), m.root(), &m.env, &extra);
        assert_confirmed_first(&r, code, c.rule);
        let (twin, extra) = (c.build)(false);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (_, r) = diagnose(&log(c.log), twin.root(), &twin.env, &extra);
        assert_ruled_out(&r, c.rule, c.fact);
        eprintln!("ok: {} -> {}", c.log, c.rule);
    }
}

/// 5,000 lines of ordinary training output: timestamps, absl prefixes, ANSI colour, `\r`
/// progress bars, benign warnings.
fn training_noise(lines: usize, seed: usize) -> String {
    let mut s = String::new();
    for i in 0..lines {
        let n = i + seed;
        match n % 7 {
            0 => s.push_str(&format!(
                "2026-11-23 10:{:02}:{:02}.{:06}: I tensorflow/core/common_runtime/executor.cc:1197] step {n} done\n",
                (n / 60) % 60, n % 60, n
            )),
            1 => s.push_str(&format!(
                "Epoch {}/50\r  10/500 [>....] - ETA: 1:02 - loss: 0.{n:04}\r 250/500 [==>..] - loss: 0.{n:04}\r 500/500 [=====] - 12s 24ms/step - loss: 0.{n:04} - accuracy: 0.91\n",
                n % 50
            )),
            2 => s.push_str(&format!(
                "\x1b[32mINFO\x1b[0m:root:saving checkpoint to runs/exp1/ckpt-{n}\n"
            )),
            3 => s.push_str(&format!(
                "[rank0]: iteration {n}: lr 3.0e-4, grad norm 1.{n:03}, tokens/s 41{n:03}\n"
            )),
            4 => s.push_str("/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total.\n"),
            5 => s.push_str(&format!("W1123 10:00:{:02}.123456  4242 logging.cc:42] slow batch {n}\n", n % 60)),
            _ => s.push_str(&format!("{{\"step\": {n}, \"loss\": 0.{n:04}, \"eval/accuracy\": 0.88}}\n")),
        }
    }
    s
}

#[test]
fn the_same_logs_inside_5000_lines_of_training_output_give_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    for c in cases() {
        let body = std::fs::read_to_string(log(c.log)).unwrap();
        let text = format!(
            "{}{}{}",
            training_noise(2500, 0),
            body,
            training_noise(2500, 7)
        );
        let noisy = dir.path().join(c.log.replace('/', "_"));
        std::fs::write(&noisy, text).unwrap();
        let (m, extra) = (c.build)(true);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (code, r) = diagnose(&noisy, m.root(), &m.env, &extra);
        assert_confirmed_first(&r, code, c.rule);
        // The matched lines are the excerpt's, numbered in the noisy file.
        let first = r["diagnoses"][0]["matched_lines"][0]["line"]
            .as_u64()
            .unwrap();
        assert!(
            first > 2500,
            "{c:?} matched noise at line {first}",
            c = c.log
        );
        // The noise alone matches nothing.
    }
    let quiet = dir.path().join("noise.log");
    std::fs::write(&quiet, training_noise(5000, 3)).unwrap();
    let m = Machine::new();
    let (code, r) = diagnose(&quiet, m.root(), &m.env, &[]);
    assert_eq!(r["diagnoses"], serde_json::json!([]), "{r:#}");
    assert_eq!(code, 1);
}

#[test]
fn a_gpu_log_on_a_machine_without_its_facts_is_plausible_and_names_the_missing_fact() {
    let m = venv_with(&[("torch", "2.5.1")]);
    let (code, r) = diagnose(
        &log("quoted/torch_nvjitlink_symbol.log"),
        m.root(),
        &m.env,
        &[],
    );
    let top = &r["diagnoses"][0];
    assert_eq!(top["verdict"], "plausible", "{r:#}");
    assert_eq!(top["rule"], "library-missing-cuda-symbols", "{r:#}");
    let missing = &top["missing_facts"][0];
    assert!(
        missing["fact"].as_str().unwrap().contains("libraries"),
        "{top:#}"
    );
    assert!(
        missing["how"].as_str().unwrap().contains("--from"),
        "{top:#}"
    );
    assert_eq!(code, 1);
    // The events name the library and the symbol.
    let ev = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["symbol"] == "__nvJitLinkComplete_12_4")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(ev["library"], "libcusparse.so.12");
    assert_eq!(ev["exception"], "ImportError");
}

#[test]
fn the_interpreter_the_traceback_names_is_the_one_judged() {
    // The real log's frames name /tmp/tmp.zeajX82rIg/tf215/lib/python3.11/site-packages.
    let logged = "/tmp/tmp.zeajX82rIg/tf215";
    let bad = [("tensorflow-cpu", "2.15.1"), ("numpy", "2.1.3")];
    let good = [("tensorflow-cpu", "2.15.1"), ("numpy", "1.26.4")];
    let two = |logged_pk: &[(&str, &str)], other_pk: &[(&str, &str)]| {
        let mut m = Machine::new();
        m.venv("3.11", logged, logged_pk);
        m.venv("3.11", "/home/u/venv", other_pk);
        m.env(
            "PATH",
            &format!("{logged}/bin:/home/u/venv/bin:/usr/bin:/bin"),
        );
        m
    };
    let log = log("numpy2_with_tf215.log");
    // The interpreter that ran has numpy 2: confirmed for it, not for the other.
    let m = two(&bad, &good);
    let (code, r) = diagnose(&log, m.root(), &m.env, &[]);
    assert_confirmed_first(&r, code, "numpy2-with-numpy1-build");
    assert!(
        r["diagnoses"][0]["subject"]
            .as_str()
            .unwrap()
            .contains("tf215"),
        "{r:#}"
    );
    // Only another interpreter has numpy 2: the one that ran is fine, so it is ruled out.
    let m = two(&good, &bad);
    let (code, r) = diagnose(&log, m.root(), &m.env, &[]);
    let d = diagnosis(&r, "numpy2-with-numpy1-build");
    assert_eq!(d["verdict"], "ruled-out", "{d:#}");
    let msg = d["message"].as_str().unwrap();
    assert!(
        msg.contains("tf215") && msg.contains("/home/u/venv"),
        "{msg}"
    );
    assert_eq!(code, 1);
}
