//! The summary against a real framework install: the torch 2.15.0 wheel from PyPI (with the
//! nvidia-* wheels pip brings), checked against what torch itself says about its build and the
//! cuDNN it loads. Skips without PyPI unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::pypi;

use assert_cmd::Command;

#[test]
fn the_torch_line_says_what_torch_itself_says() {
    let Some(venv) = pypi::need("torch 2.15.0", pypi::cached_venv(&["torch==2.15.0"])) else {
        return;
    };
    let py = venv.join("bin/python");
    // Ground truth from torch itself (the test runs it; envdoctor never does).
    let truth = pypi::run(std::process::Command::new(&py).args([
        "-c",
        "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())",
    ]))
    .expect("torch imports");
    let t: Vec<&str> = truth.split_whitespace().collect();
    let (version, cuda, cudnn) = (t[0], t[1], t[2].parse::<u32>().unwrap());
    let cudnn = format!("{}.{}.{}", cudnn / 10000, cudnn / 100 % 100, cudnn % 100);
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .env("HOME", dir.path())
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", format!("{}/bin:/usr/bin:/bin", venv.display()))
        .env("ENVDOCTOR_WIDTH", "0")
        .args(["check", "--deadline", "30", "--project"])
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains(" torch ") && l.contains("built for"))
        .unwrap_or_else(|| panic!("no torch line:\n{text}"));
    let public = version.split('+').next().unwrap();
    assert!(line.contains(&format!("torch        {public}")), "{line}");
    assert!(line.contains(&format!("built for CUDA {cuda}")), "{line}");
    assert!(
        line.contains(&format!("libcudnn.so.9 {cudnn}")),
        "torch loads cuDNN {cudnn}: {line}"
    );
    let major = cuda.split('.').next().unwrap();
    assert!(
        line.contains(&format!("libcudart.so.{major} {cuda}")),
        "{line}"
    );
    // The driver's libraries are the Driver line's business, not torch's.
    assert!(!line.contains("libcuda.so.1"), "{line}");
    assert!(
        text.contains("✓ Python       ") && text.contains("(VIRTUAL_ENV is set;"),
        "{text}"
    );
}
