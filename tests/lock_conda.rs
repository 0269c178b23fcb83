//! Lock-file drift for conda environments, end to end through `check --project`: a pixi
//! project (`pixi.lock` v6 as pixi wrote it, `.pixi/envs/default`), a conda-lock project
//! (`conda-lock.yml` as conda-lock wrote it, the active conda env) and an `environment.yml`.
//! pixi, conda and conda-lock cannot run here (their channels are unreachable), so the
//! environments are laid out as they lay them out: a `conda-meta/<name>-<version>-<build>.json`
//! record (conda's PrefixRecord) for each conda package of the lock, a `.dist-info` for each
//! PyPI one. Each rule fires on drift made by hand and is quiet on the synced twin.

use crate::common::machine::{self, repo, Machine};
use serde_json::Value;

/// The lock findings of a report: (rule, message).
fn lock_findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap_or("").starts_with("lock-"))
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn lock_entry<'a>(report: &'a Value, file: &str) -> &'a Value {
    report["snapshot"]["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with(file))
        .unwrap_or_else(|| panic!("no {file} in {:#}", report["snapshot"]["locks"]))
}

/// A conda prefix at `prefix` with interpreter `python<xy>` (a stand-in, never run).
fn conda_prefix(m: &Machine, prefix: &str, xy: &str) {
    m.write(&format!("{prefix}/conda-meta/history"), "");
    m.write(
        &format!("{prefix}/bin/python{xy}"),
        &format!("#!/bin/sh\ntouch {}\n", m.path("/executed").display()),
    );
    std::os::unix::fs::symlink(
        format!("python{xy}"),
        m.path(&format!("{prefix}/bin/python")),
    )
    .unwrap();
    m.write(&format!("{prefix}/lib/python{xy}/os.py"), "");
    m.write(&format!("{prefix}/lib/python{xy}/site-packages/.keep"), "");
}

/// A conda-meta record as conda writes it (the repodata fields, then `files`).
fn record(m: &Machine, prefix: &str, url: &str) {
    let file = url.rsplit('/').next().unwrap();
    let stem = file
        .strip_suffix(".conda")
        .or_else(|| file.strip_suffix(".tar.bz2"))
        .unwrap();
    let mut it = stem.rsplitn(3, '-');
    let (build, version, name) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    let channel = url.rsplit_once('/').unwrap().0;
    m.write(
        &format!("{prefix}/conda-meta/{stem}.json"),
        &serde_json::json!({
            "build": build, "build_number": 0, "channel": channel, "depends": [],
            "fn": file, "name": name, "subdir": channel.rsplit('/').next().unwrap(),
            "url": url, "version": version, "files": [], "requested_spec": "",
        })
        .to_string(),
    );
}

fn dist_info(m: &Machine, site: &str, name: &str, version: &str, installer: &str) {
    let dir = format!("{site}/{}-{version}.dist-info", name.replace('-', "_"));
    m.write(
        &format!("{dir}/METADATA"),
        &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
    );
    m.write(&format!("{dir}/INSTALLER"), &format!("{installer}\n"));
    m.write(&format!("{dir}/RECORD"), "");
}

/// The `- conda:`/`- pypi:` URLs a pixi.lock lists for linux-64.
fn pixi_refs(lock: &str) -> (Vec<String>, Vec<String>) {
    let (mut conda, mut pypi) = (Vec::new(), Vec::new());
    for l in lock.lines().take_while(|l| *l != "packages:") {
        if let Some(u) = l.trim().strip_prefix("- conda: ") {
            conda.push(u.to_string());
        } else if let Some(u) = l.trim().strip_prefix("- pypi: ") {
            pypi.push(u.to_string());
        }
    }
    (conda, pypi)
}

fn pixi_project() -> Machine {
    let m = Machine::new();
    let lock = std::fs::read_to_string(repo("fixtures/locks/pixi/pixi.lock")).unwrap();
    m.write("/proj/pixi.lock", &lock);
    m.write(
        "/proj/pixi.toml",
        &std::fs::read_to_string(repo("fixtures/locks/pixi/pixi.toml")).unwrap(),
    );
    let env = "/proj/.pixi/envs/default";
    conda_prefix(&m, env, "3.14");
    let (conda, pypi) = pixi_refs(&lock);
    for u in &conda {
        record(&m, env, u);
    }
    let site = format!("{env}/lib/python3.14/site-packages");
    for u in &pypi {
        let file = u.rsplit('/').next().unwrap();
        let mut parts = file.split('-');
        let (name, version) = (parts.next().unwrap(), parts.next().unwrap());
        dist_info(&m, &site, name, version, "uv");
    }
    m
}

#[test]
fn pixi_project_synced_is_quiet_and_each_drift_fires() {
    let m = pixi_project();
    let (_, report) = m.check(&["--project", "/proj"]);
    assert_eq!(lock_findings(&report), Vec::<(String, String)>::new());
    let l = lock_entry(&report, "pixi.lock");
    assert_eq!(l["compared"], true, "{l:#}");
    assert_eq!(l["python"], "/proj/.pixi/envs/default/bin/python");
    assert_eq!(l["packages"], 27);
    assert_eq!(l["sync_command"], "pixi install");

    let env = "/proj/.pixi/envs/default";
    let site = format!("{env}/lib/python3.14/site-packages");
    // A PyPI package changed by hand (`pip install cffi==1.17.1` in the env).
    std::fs::remove_dir_all(m.path(&format!("{site}/cffi-2.0.0.dist-info"))).unwrap();
    dist_info(&m, &site, "cffi", "1.17.1", "pip");
    // A conda package removed, another built for another variant, one from another channel,
    // and a framework conda installed that the lock lacks.
    std::fs::remove_file(m.path(&format!("{env}/conda-meta/libffi-3.5.2-h9ec8514_0.json")))
        .unwrap();
    std::fs::remove_file(m.path(&format!("{env}/conda-meta/zstd-1.5.7-hb78ec9c_6.json"))).unwrap();
    record(
        &m,
        env,
        "https://conda.anaconda.org/conda-forge/linux-64/zstd-1.5.7-h0000000_0.conda",
    );
    std::fs::remove_file(m.path(&format!(
        "{env}/conda-meta/tk-8.6.13-noxft_ha0e22de_103.json"
    )))
    .unwrap();
    record(
        &m,
        env,
        "https://repo.anaconda.com/pkgs/main/linux-64/tk-8.6.13-noxft_ha0e22de_103.conda",
    );
    record(
        &m,
        env,
        "https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.6.0-cpu_py314_0.conda",
    );
    let (_, report) = m.check(&["--project", "/proj"]);
    let got = lock_findings(&report);
    let rules: Vec<&str> = got.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        rules,
        [
            "lock-framework-not-locked",
            "lock-local-label-drift",
            "lock-package-not-installed",
            "lock-source-drift",
            "lock-version-drift",
        ],
        "{got:#?}"
    );
    let msg = |rule: &str| &got.iter().find(|(r, _)| r == rule).unwrap().1;
    let lock = std::fs::read_to_string(repo("fixtures/locks/pixi/pixi.lock")).unwrap();
    let cffi_line = lock.lines().position(|l| l == "  version: 2.0.0").unwrap() + 1;
    assert!(
        msg("lock-version-drift").contains(&format!("pixi.lock:{cffi_line} pins 2.0.0")),
        "{}",
        msg("lock-version-drift")
    );
    assert!(msg("lock-package-not-installed").contains("libffi 3.5.2"));
    assert!(msg("lock-local-label-drift").contains("1.5.7 h0000000_0"));
    assert!(msg("lock-source-drift").contains("conda channel main"));
    assert!(msg("lock-framework-not-locked").contains("pytorch 2.6.0"));
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["fix"].to_string().contains("pixi install")));
}

/// A conda env as `conda-lock install` makes it from the public conda-lock.yml, active.
fn conda_lock_machine() -> Machine {
    let mut m = Machine::new();
    let text = std::fs::read_to_string(repo("fixtures/locks/conda-lock/conda-lock.yml")).unwrap();
    m.write("/proj/conda-lock.yml", &text);
    let prefix = "/opt/conda/envs/locked";
    conda_prefix(&m, prefix, "3.12");
    let site = format!("{prefix}/lib/python3.12/site-packages");
    // What `conda-lock install` puts there for linux-64: each conda package's record, each pip
    // package's dist-info.
    let mut block: Vec<&str> = Vec::new();
    for l in text.lines().chain(std::iter::once("- end")) {
        if l.starts_with("- ") && !block.is_empty() {
            let field = |k: &str| {
                block
                    .iter()
                    .find_map(|b| b.trim_start_matches("- ").trim().strip_prefix(k))
                    .map(|v| v.trim().trim_matches('\''))
                    .unwrap()
            };
            if field("platform:") == "linux-64" {
                match field("manager:") {
                    "conda" => record(&m, prefix, field("url:")),
                    _ => dist_info(&m, &site, field("name:"), field("version:"), "pip"),
                }
            }
            block.clear();
        }
        if l.starts_with("- ") || (!block.is_empty() && l.starts_with("  ")) {
            block.push(l);
        }
    }
    dist_info(&m, &site, "idna", "3.4", "conda");
    m.env("CONDA_PREFIX", prefix);
    m.env("PATH", &format!("{prefix}/bin:/usr/bin:/bin"));
    m
}

#[test]
fn conda_lock_in_the_active_env() {
    let m = conda_lock_machine();
    let prefix = "/opt/conda/envs/locked";
    let site = format!("{prefix}/lib/python3.12/site-packages");
    let (_, report) = m.check(&["--project", "/proj"]);
    assert_eq!(lock_findings(&report), Vec::<(String, String)>::new());
    let l = lock_entry(&report, "conda-lock.yml");
    assert_eq!(l["compared"], true, "{l:#}");
    assert_eq!(l["sync_command"], "conda-lock install conda-lock.yml");

    // `pip install urllib3==1.26.20` and `conda remove --force idna` by hand.
    std::fs::remove_dir_all(m.path(&format!("{site}/urllib3-2.0.7.dist-info"))).unwrap();
    dist_info(&m, &site, "urllib3", "1.26.20", "pip");
    std::fs::remove_file(m.path(&format!("{prefix}/conda-meta/idna-3.4-pyhd8ed1ab_0.json")))
        .unwrap();
    let (_, report) = m.check(&["--project", "/proj"]);
    let got = lock_findings(&report);
    let rules: Vec<&str> = got.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        rules,
        ["lock-package-not-installed", "lock-version-drift"],
        "{got:#?}"
    );
    assert!(got[1].1.contains("urllib3 1.26.20") && got[1].1.contains("conda-lock.yml:"));
}

#[test]
fn environment_file_specs_and_its_pip_section() {
    let mut m = Machine::new();
    m.write(
        "/proj/environment.yml",
        &std::fs::read_to_string(repo("fixtures/locks/conda/environment.yml")).unwrap(),
    );
    let prefix = "/opt/conda/envs/ml";
    conda_prefix(&m, prefix, "3.11");
    m.write("/opt/conda/conda-meta/history", "");
    let site = format!("{prefix}/lib/python3.11/site-packages");
    let forge = "https://conda.anaconda.org/conda-forge/linux-64";
    for u in [
        format!("{forge}/python-3.11.7-hab00c5b_0_cpython.conda"),
        format!("{forge}/numpy-1.26.4-py311h64a7726_0.conda"),
        "https://conda.anaconda.org/pytorch/linux-64/pytorch-2.6.0-py3.11_cuda12.4_cudnn9.1.0_0.tar.bz2".into(),
        format!("{forge}/pip-24.0-pyhd8ed1ab_0.conda"),
        format!("{forge}/zlib-1.3.1-hb9d3cd8_2.conda"),
    ] {
        record(&m, prefix, &u);
    }
    dist_info(&m, &site, "six", "1.17.0", "pip");
    dist_info(&m, &site, "urllib3", "2.5.0", "pip");
    m.env("CONDA_PREFIX", prefix);
    m.env("PATH", &format!("{prefix}/bin:/usr/bin:/bin"));
    let (_, report) = m.check(&["--project", "/proj"]);
    // zlib is not named and not reported: an environment file is not a lock.
    assert_eq!(lock_findings(&report), Vec::<(String, String)>::new());
    assert_eq!(lock_entry(&report, "environment.yml")["compared"], true);

    // numpy 2 from conda, urllib3 1.x from pip: both outside what the file asks for.
    std::fs::remove_file(m.path(&format!(
        "{prefix}/conda-meta/numpy-1.26.4-py311h64a7726_0.json"
    )))
    .unwrap();
    record(
        &m,
        prefix,
        &format!("{forge}/numpy-2.2.3-py311h0000000_0.conda"),
    );
    std::fs::remove_dir_all(m.path(&format!("{site}/urllib3-2.5.0.dist-info"))).unwrap();
    dist_info(&m, &site, "urllib3", "1.26.20", "pip");
    let (_, report) = m.check(&["--project", "/proj"]);
    let got = lock_findings(&report);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(got.iter().all(|(r, _)| r == "lock-version-drift"));
    assert!(got
        .iter()
        .any(|(_, m)| m.contains("numpy 2.2.3") && m.contains("environment.yml:7")));
    assert!(got
        .iter()
        .any(|(_, m)| m.contains("urllib3 1.26.20") && m.contains("environment.yml:12")));
}

#[test]
fn a_lock_is_not_compared_with_an_interpreter_its_tool_does_not_install_into() {
    // A uv project whose .venv was never made, on a Debian system Python (EXTERNALLY-MANAGED):
    // `uv sync` would make .venv; nothing is compared, the reason is recorded.
    let m = Machine::new();
    machine::debian_python(m.root(), "3.11", &[("six", "1.15.0")]);
    std::os::unix::fs::symlink("python3.11", m.path("/usr/bin/python3")).unwrap();
    m.write(
        "/usr/lib/python3.11/EXTERNALLY-MANAGED",
        "[externally-managed]\n",
    );
    m.write(
        "/proj/uv.lock",
        &std::fs::read_to_string(repo("fixtures/locks/uv/uv.lock")).unwrap(),
    );
    m.write("/proj/requirements.txt", "six==1.17.0\n");
    let (_, report) = m.check(&["--project", "/proj"]);
    assert_eq!(lock_findings(&report), Vec::<(String, String)>::new());
    let uv = lock_entry(&report, "uv.lock");
    assert_eq!(uv["compared"], false);
    assert!(
        uv["not_compared"]
            .as_str()
            .unwrap()
            .contains("not a virtual environment"),
        "{uv:#}"
    );
    let req = lock_entry(&report, "requirements.txt");
    assert!(
        req["not_compared"]
            .as_str()
            .unwrap()
            .contains("externally managed"),
        "{req:#}"
    );

    // The same requirements in a Docker-style image: /usr/local/bin/python, not externally
    // managed, where `pip install -r requirements.txt` installs: compared.
    std::fs::remove_file(m.path("/usr/lib/python3.11/EXTERNALLY-MANAGED")).unwrap();
    std::fs::remove_file(m.path("/proj/uv.lock")).unwrap();
    let (_, report) = m.check(&["--project", "/proj"]);
    let got = lock_findings(&report);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].0, "lock-version-drift");
}

#[test]
fn hostile_conda_and_pixi_files_are_named_and_the_rest_is_kept() {
    let m = pixi_project();
    m.write("/proj/pixi.lock", &"- [".repeat(100_000));
    m.write("/proj/environment.yml", "dependencies: {pip: 3}\n");
    let (_, report) = m.check(&["--project", "/proj"]);
    let errors = report["snapshot"]["probe_errors"].as_array().unwrap();
    let lock_errors: Vec<&str> = errors
        .iter()
        .filter(|e| e["probe"] == "lock")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert!(
        lock_errors
            .iter()
            .any(|e| e.contains("pixi.lock") && e.contains("not a valid pixi.lock")),
        "{lock_errors:#?}"
    );
    // The other facts are kept: both files recorded with their digests, the interpreter's
    // packages read.
    assert_eq!(
        lock_entry(&report, "pixi.lock")["digest"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(lock_entry(&report, "environment.yml")["digest"].is_string());
    assert!(report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| {
            p["path"] == "/proj/.pixi/envs/default/bin/python"
                && !p["packages"].as_array().unwrap().is_empty()
        }));
    // Another schema version is refused by name.
    m.write(
        "/proj/pixi.lock",
        "version: 99\nenvironments: {}\npackages: []\n",
    );
    let (_, report) = m.check(&["--project", "/proj"]);
    let errors = report["snapshot"]["probe_errors"].to_string();
    assert!(
        errors.contains("version 99 is not one envdoctor reads"),
        "{errors}"
    );
}

/// `envdoctor snapshot --project /proj` of the machine, written to `out` (a host path).
pub fn snapshot(m: &Machine, out: &std::path::Path) {
    let mut c = assert_cmd::Command::cargo_bin("envdoctor").unwrap();
    c.env_clear()
        .args(["snapshot", "--no-load", "--project", "/proj", "--root"]);
    c.arg(m.root()).arg("-o").arg(out);
    for (k, v) in &m.env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `envdoctor compare LOCK SNAPSHOT --format json`: (exit code, the package changes as
/// `name a b`).
pub fn compare(lock: &std::path::Path, snap: &std::path::Path) -> (i32, Vec<String>) {
    let o = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .arg("compare")
        .arg(lock)
        .arg(snap)
        .args(["--format", "json", "--no-rules"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let changes = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["section"] == "packages")
        .map(|c| {
            let f = c["fact"].as_str().unwrap();
            let name = f.rsplit_once("packages[").unwrap().1.trim_end_matches(']');
            format!(
                "{name} {} {}",
                c["a"].as_str().unwrap_or("-"),
                c["b"].as_str().unwrap_or("-")
            )
        })
        .collect();
    (o.status.code().unwrap(), changes)
}

#[test]
fn compare_pixi_lock_and_conda_lock_with_a_snapshot() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("s.json");
    let m = pixi_project();
    snapshot(&m, &snap);
    let lock = m.path("/proj/pixi.lock");
    assert_eq!(compare(&lock, &snap), (0, vec![]));
    let site = "/proj/.pixi/envs/default/lib/python3.14/site-packages";
    std::fs::remove_dir_all(m.path(&format!("{site}/cffi-2.0.0.dist-info"))).unwrap();
    dist_info(&m, site, "cffi", "1.17.1", "pip");
    snapshot(&m, &snap);
    assert_eq!(
        compare(&lock, &snap),
        (1, vec!["cffi 2.0.0 1.17.1".to_string()])
    );
    // Either order.
    let (code, changes) = compare(&snap, &lock);
    assert_eq!((code, changes), (1, vec!["cffi 1.17.1 2.0.0".to_string()]));

    let m = conda_lock_machine();
    snapshot(&m, &snap);
    let lock = m.path("/proj/conda-lock.yml");
    assert_eq!(compare(&lock, &snap), (0, vec![]));
    let site = "/opt/conda/envs/locked/lib/python3.12/site-packages";
    std::fs::remove_dir_all(m.path(&format!("{site}/urllib3-2.0.7.dist-info"))).unwrap();
    dist_info(&m, site, "urllib3", "1.26.20", "pip");
    snapshot(&m, &snap);
    assert_eq!(
        compare(&lock, &snap),
        (1, vec!["urllib3 2.0.7 1.26.20".to_string()])
    );

    // environment.yml: what it asks for, against the same environment.
    m.write(
        "/proj/environment.yml",
        "dependencies:\n  - python=3.12\n  - pip:\n    - urllib3>=2\n",
    );
    let (code, changes) = compare(&m.path("/proj/environment.yml"), &snap);
    assert_eq!(code, 1);
    assert!(
        changes.contains(&"urllib3 >=2 1.26.20".to_string()),
        "{changes:?}"
    );
}
