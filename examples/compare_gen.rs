//! Writes the synthetic snapshots `bench/compare.sh` times `envdoctor compare` on.
//!
//! `cargo run --release --example compare_gen -- DIR [PAIR_DISTS] [FLEET_N]` writes
//! - `DIR/pair/a.json`, `DIR/pair/b.json`: one machine with a venv of PAIR_DISTS (default
//!   20,000) distributions, and the same machine later: 2% of versions changed (upgrades,
//!   downgrades, local tags), 100 removed, 100 added, the driver upgraded, live state changed;
//! - `DIR/fleet/node-NNNN.json`: FLEET_N (default 1,000) machines of a realistic size (a system
//!   python with 60 distributions, a venv with 400, 8 GPUs, 40 resolved libraries, a toolkit,
//!   12 env vars), each user under their own home; 1% have another torch, 0.5% lack a GPU,
//!   every one has its own hostname, UUIDs and live state.
//!
//! Everything is built from the `Snapshot` types, so the files are valid snapshots; a fixed
//! seed makes them the same on every run.

#![allow(clippy::too_many_lines)] // the 80-line limit is for src/; examples are tools

use envdoctor::snapshot::cuda::{Driver, Toolkit};
use envdoctor::snapshot::gpu::{Gpu, GpuLive};
use envdoctor::snapshot::libs::{Framework, Library, Wanted};
use envdoctor::snapshot::python::{Package, Python, PythonKind, Source, SourceKind};
use envdoctor::Snapshot;
use std::path::Path;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn package(name: &str, version: &str, site: &str) -> Package {
    let local = version.split_once('+').map(|(_, l)| l.to_string());
    Package {
        name: name.to_string(),
        version: version.to_string(),
        local,
        version_valid: true,
        location: site.to_string(),
        metadata: format!("{site}/{}-{version}.dist-info", name.replace('-', "_")),
        installer: Some("pip".into()),
        requires: vec![
            "numpy>=1.21".into(),
            "typing-extensions; python_version < \"3.11\"".into(),
        ],
        requires_python: Some(">=3.8".into()),
        editable: None,
        family: None,
        built_for_cudnn: None,
    }
}

fn python(path: &str, kind: PythonKind, sources: Vec<Source>, pkgs: Vec<Package>) -> Python {
    Python {
        path: path.into(),
        canonical_path: Some(path.into()),
        exists: true,
        version: Some("3.11.7".into()),
        kind,
        sources,
        packages: pkgs,
        ..Default::default()
    }
}

fn src(kind: SourceKind, detail: &str) -> Source {
    let mut s = Source {
        kind,
        detail: detail.into(),
        ..Default::default()
    };
    // PATH sources carry their command and entry, as the probe writes them.
    s.derive_path_fields();
    s
}

fn machine(
    home: &str,
    host: &str,
    rng: &mut Rng,
    venv_pkgs: Vec<Package>,
    torch: &str,
    gpus: u32,
) -> Snapshot {
    let mut s = Snapshot::empty();
    s.collected_at = format!("2026-11-22T09:{:02}:{:02}Z", rng.below(60), rng.below(60));
    s.host.hostname = Some(host.into());
    s.host.os_name = Some("Ubuntu".into());
    s.host.os_version = Some("22.04".into());
    s.host.kernel = Some("5.15.0-105-generic".into());
    s.host.cpu_model = Some("AMD EPYC 7763 64-Core Processor".into());
    s.host.cpu_flags = vec!["avx".into(), "avx2".into(), "fma".into()];
    s.host.memory_total_mib = Some(1_031_891);
    s.host.live.memory_available_mib = Some(rng.below(1_000_000));
    for (k, v) in [
        (
            "PATH",
            format!("{home}/proj/.venv/bin:/usr/local/cuda/bin:/usr/bin:/bin"),
        ),
        ("VIRTUAL_ENV", format!("{home}/proj/.venv")),
        ("CUDA_HOME", "/usr/local/cuda".into()),
        ("NCCL_DEBUG", "WARN".into()),
        ("LD_LIBRARY_PATH", "/usr/local/cuda/lib64".into()),
        ("HF_HOME", format!("{home}/.cache/huggingface")),
        ("TORCH_CUDA_ARCH_LIST", "8.0;9.0".into()),
        ("OMP_NUM_THREADS", "8".into()),
        ("PYTHONPATH", format!("{home}/proj/src")),
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7".into()),
        ("NCCL_IB_DISABLE", "0".into()),
        (
            "XLA_FLAGS",
            "--xla_gpu_cuda_data_dir=/usr/local/cuda".into(),
        ),
    ] {
        s.env.insert(k.into(), v);
    }
    let sys_site = "/usr/lib/python3/dist-packages";
    let sys_pkgs = (0..60)
        .map(|i| package(&format!("sys-pkg-{i:02}"), &format!("1.{i}.0"), sys_site))
        .collect();
    s.pythons.push(python(
        "/usr/bin/python3",
        PythonKind::System,
        vec![src(SourceKind::System, "/usr/bin/python3")],
        sys_pkgs,
    ));
    let venv = format!("{home}/proj/.venv/bin/python");
    s.pythons.push(python(
        &venv,
        PythonKind::Venv,
        vec![
            src(
                SourceKind::Path,
                &format!("python3 (PATH entry 0: {home}/proj/.venv/bin)"),
            ),
            src(SourceKind::VirtualEnv, &format!("{home}/proj/.venv")),
            src(SourceKind::ProjectVenv, &format!("{home}/proj/.venv")),
        ],
        venv_pkgs,
    ));
    s.frameworks.push(Framework {
        python: venv.clone(),
        name: "torch".into(),
        version: torch.into(),
        location: format!("{home}/proj/.venv/lib/python3.11/site-packages/torch"),
        cuda_version: Some("12.1".into()),
        cudnn_version: Some("8.9".into()),
        is_cuda_build: Some(true),
        wants: vec![Wanted {
            soname: "libcudnn.so.8".into(),
            evidence: "DT_NEEDED".into(),
            ..Default::default()
        }],
        ..Default::default()
    });
    for i in 0..40 {
        s.libraries.push(Library {
            soname: format!("libcuda-family-{i}.so.12"),
            family: Some("cublas".into()),
            python: Some(venv.clone()),
            requester: format!("{home}/proj/.venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"),
            resolves: true,
            path: Some(format!("{home}/proj/.venv/lib/python3.11/site-packages/nvidia/x/lib/libcuda-family-{i}.so.12")),
            found_via: Some("runpath".into()),
            ..Default::default()
        });
    }
    s.cuda.toolkits.push(Toolkit {
        path: "/usr/local/cuda-12.1".into(),
        version: Some("12.1.1".into()),
        source: "/usr/local/cuda-*".into(),
        cudnn_version: Some("8.9.2".into()),
        has_libdevice: true,
        has_ptxas: true,
        ..Default::default()
    });
    s.cuda.driver = Some(Driver {
        version: "535.104.05".into(),
        source: "/proc/driver/nvidia/version".into(),
        ..Default::default()
    });
    s.nvml.status = "ok".into();
    s.nvml.driver_version = Some("535.104.05".into());
    for g in 0..gpus {
        s.gpus.push(Gpu {
            index: g,
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: format!("GPU-{:016x}", rng.next()),
            pci_bus_id: Some(format!("00000000:{:02X}:00.0", g + 0x18)),
            compute_capability: Some("9.0".into()),
            memory_total_mib: 81559,
            visible: true,
            live: GpuLive {
                memory_used_mib: rng.below(80000),
                utilization_percent: Some(rng.below(100) as u32),
                ..Default::default()
            },
            ..Default::default()
        });
    }
    s.normalize();
    s
}

fn venv_packages(n: usize, site: &str, torch: &str) -> Vec<Package> {
    let mut v: Vec<Package> = (0..n)
        .map(|i| {
            package(
                &format!("dist-{i:05}"),
                &format!("{}.{}.{}", i % 7, i % 13, i % 5),
                site,
            )
        })
        .collect();
    v.push(package("torch", torch, site));
    v.push(package("numpy", "1.26.4", site));
    v.push(package("nvidia-cudnn-cu12", "8.9.2.26", site));
    v
}

fn write(path: &Path, s: &Snapshot) {
    std::fs::write(path, s.to_json()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(
        args.get(1)
            .map(String::as_str)
            .unwrap_or("/tmp/envdoctor-compare-bench"),
    );
    let pair_n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let fleet_n: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let mut rng = Rng(20261123);

    std::fs::create_dir_all(dir.join("pair")).expect("create DIR/pair");
    let site_a = "/home/alice/proj/.venv/lib/python3.11/site-packages";
    let a = machine(
        "/home/alice",
        "a",
        &mut rng,
        venv_packages(pair_n, site_a, "2.1.0+cu121"),
        "2.1.0+cu121",
        8,
    );
    let mut b = a.clone();
    b.collected_at = "2026-11-23T09:00:00Z".into();
    b.host.live.memory_available_mib = Some(1);
    if let Some(d) = b.cuda.driver.as_mut() {
        d.version = "550.54.15".into();
    }
    let Some(venv) = b.pythons.iter_mut().find(|p| p.kind == PythonKind::Venv) else {
        panic!("the generated machine has a venv");
    };
    venv.packages
        .retain(|p| !p.name.ends_with('7') || !p.name.starts_with("dist-000"));
    for p in venv.packages.iter_mut() {
        if rng.below(50) == 0 {
            let v = p.version.clone();
            p.version = match rng.below(3) {
                0 => format!("{v}.post1"),
                1 => format!("9.{v}"),
                _ => format!("{v}+local"),
            };
        }
    }
    for i in 0..100 {
        venv.packages
            .push(package(&format!("new-dist-{i:03}"), "0.1.0", site_a));
    }
    b.normalize();
    write(&dir.join("pair/a.json"), &a);
    write(&dir.join("pair/b.json"), &b);

    std::fs::create_dir_all(dir.join("fleet")).expect("create DIR/fleet");
    for k in 0..fleet_n {
        let home = format!("/home/user{k}");
        let site = format!("{home}/proj/.venv/lib/python3.11/site-packages");
        let torch = if k % 100 == 37 {
            "2.3.1+cu121"
        } else {
            "2.1.0+cu121"
        };
        let gpus = if k % 200 == 99 { 7 } else { 8 };
        let s = machine(
            &home,
            &format!("node-{k:04}"),
            &mut rng,
            venv_packages(400, &site, torch),
            torch,
            gpus,
        );
        write(&dir.join(format!("fleet/node-{k:04}.json")), &s);
    }
    eprintln!(
        "wrote {} (pair: {} distributions each) and {} fleet snapshots",
        dir.display(),
        pair_n,
        fleet_n
    );
}
