//! What a Python distribution's name says, in one table: the family of a project published
//! under several names (`tensorflow-gpu`, `tf-nightly`, `intel-tensorflow` are all
//! `tensorflow`), whether drift in it is an ML matter (ranked first by `compare`, a warning in
//! IDE drift), and which framework scan the libraries probe gives it (the module directories its
//! loader code lives in). The framework scanners, `packages[].family`, IDE drift and `compare`
//! all read [`PACKAGES`] through [`classify`], so a name added here is a family member, ML and
//! scanned everywhere at once.

/// How a row names its distributions (PEP 503-normalised names).
#[derive(Clone, Copy, Debug)]
pub enum Names {
    /// Exactly these names.
    Exact(&'static [&'static str]),
    /// Every name that starts with this.
    Prefix(&'static str),
    /// Every name that starts with the first and ends with the second.
    Affix(&'static str, &'static str),
}

impl Names {
    fn matches(&self, name: &str) -> bool {
        match *self {
            Names::Exact(names) => names.contains(&name),
            Names::Prefix(p) => name.starts_with(p),
            Names::Affix(p, s) => name.starts_with(p) && name.ends_with(s),
        }
    }
}

/// The framework scan a distribution gets (`probe::libs::frameworks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// The framework it is (`tensorflow`, `torch`, `jax`, `onnxruntime`, `cupy`).
    pub framework: &'static str,
    /// The module directories to look in under its site directory, first found wins.
    pub modules: &'static [&'static str],
}

/// One row of [`PACKAGES`].
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The distributions of the row.
    pub names: Names,
    /// Their family (`packages[].family`), for projects published under several names.
    pub family: Option<&'static str>,
    /// Whether drift in them is an ML matter.
    pub ml: bool,
    /// The framework scan they get, if any.
    pub scan: Option<Scan>,
}

const fn row(names: Names, family: Option<&'static str>, scan: Option<Scan>) -> Row {
    Row {
        names,
        family,
        ml: true,
        scan,
    }
}

const fn ml(names: Names) -> Row {
    row(names, None, None)
}

const TF: Scan = Scan {
    framework: "tensorflow",
    modules: &["tensorflow_core", "tensorflow"],
};

/// Every name whose family, ML-ness or scan is known, first matching row wins. A name no row
/// matches is its own project, not ML, and gets no framework scan.
pub const PACKAGES: &[Row] = &[
    row(
        Names::Exact(&[
            "tensorflow",
            "tensorflow-gpu",
            "tensorflow-cpu",
            "tensorflow-intel",
            "tensorflow-macos",
            "tensorflow-aarch64",
            "tensorflow-cpu-aws",
            "tensorflow-rocm",
            "tensorflow-directml",
            "intel-tensorflow",
            "intel-tensorflow-avx512",
            "tf-nightly",
            "tf-nightly-gpu",
            "tf-nightly-cpu",
            "tf-nightly-intel",
            "tf-nightly-macos",
        ]),
        Some("tensorflow"),
        Some(TF),
    ),
    // Nightly variants not listed by name (`tf-nightly-rocm`).
    row(Names::Prefix("tf-nightly-"), Some("tensorflow"), Some(TF)),
    row(
        Names::Exact(&["keras", "keras-nightly"]),
        Some("keras"),
        None,
    ),
    row(
        Names::Exact(&["torch"]),
        Some("torch"),
        Some(Scan {
            framework: "torch",
            modules: &["torch"],
        }),
    ),
    row(
        Names::Exact(&["pytorch", "torch-nightly"]),
        Some("torch"),
        None,
    ),
    row(Names::Exact(&["jax", "jax-nightly"]), Some("jax"), None),
    row(
        Names::Exact(&["jaxlib"]),
        Some("jaxlib"),
        Some(Scan {
            framework: "jax",
            modules: &["jaxlib"],
        }),
    ),
    row(Names::Exact(&["jaxlib-nightly"]), Some("jaxlib"), None),
    row(
        Names::Exact(&["onnxruntime-gpu"]),
        Some("onnxruntime"),
        Some(Scan {
            framework: "onnxruntime",
            modules: &["onnxruntime"],
        }),
    ),
    row(
        Names::Exact(&[
            "onnxruntime",
            "onnxruntime-directml",
            "onnxruntime-openvino",
            "onnxruntime-training",
            "ort-nightly",
            "ort-nightly-gpu",
        ]),
        Some("onnxruntime"),
        None,
    ),
    row(
        Names::Exact(&[
            "opencv-python",
            "opencv-python-headless",
            "opencv-contrib-python",
            "opencv-contrib-python-headless",
        ]),
        Some("opencv"),
        None,
    ),
    row(
        Names::Exact(&["cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x"]),
        Some("cupy"),
        Some(CUPY),
    ),
    row(Names::Exact(&["cupy"]), Some("cupy"), None),
    // Older per-CUDA CuPy wheels (`cupy-cuda110`, `cupy-cuda102`): no family, scanned.
    row(Names::Prefix("cupy-cuda"), None, Some(CUPY)),
    row(
        Names::Affix("jax-cuda", "-plugin"),
        None,
        Some(Scan {
            framework: "jax",
            modules: &[
                "jax_cuda12_plugin",
                "jax_cuda11_plugin",
                "jax_cuda13_plugin",
            ],
        }),
    ),
    row(
        Names::Affix("jax-cuda", "-pjrt"),
        None,
        Some(Scan {
            framework: "jax",
            modules: &[
                "jax_plugins/xla_cuda12",
                "jax_plugins/xla_cuda11",
                "jax_plugins/xla_cuda13",
            ],
        }),
    ),
    // NVIDIA's library wheels: their family comes from the name (`family::nvidia_family`).
    ml(Names::Prefix("nvidia-")),
    // ML by name, beyond the families.
    ml(Names::Exact(&[
        "numpy",
        "protobuf",
        "h5py",
        "tf-keras",
        "ml-dtypes",
        "scipy",
        "scikit-learn",
        "pandas",
        "triton",
        "xformers",
        "flash-attn",
        "apex",
        "deepspeed",
        "bitsandbytes",
        "transformers",
        "accelerate",
        "lightning",
        "bert4keras",
        "safetensors",
        "tensorboard",
        "opt-einsum",
        "flax",
        "optax",
        "datasets",
        "tokenizers",
        "xgboost",
        "lightgbm",
        "mxnet",
        "paddlepaddle",
        "paddlepaddle-gpu",
        "nccl",
        "cuda-python",
    ])),
    ml(Names::Prefix("torch")),
    ml(Names::Prefix("pytorch-")),
    ml(Names::Prefix("tensorflow")),
    ml(Names::Prefix("tf-")),
    ml(Names::Prefix("jax-")),
    ml(Names::Prefix("cupy")),
    ml(Names::Prefix("onnx")),
    ml(Names::Prefix("tensorrt")),
    ml(Names::Prefix("cuda-")),
];

const CUPY: Scan = Scan {
    framework: "cupy",
    modules: &["cupy", "cupy_backends"],
};

/// The row of a (normalised) distribution name, if any.
pub fn classify(name: &str) -> Option<&'static Row> {
    PACKAGES.iter().find(|r| r.names.matches(name))
}

/// The family of a name from the table: `tensorflow-gpu` → `tensorflow`.
pub fn family(name: &str) -> Option<&'static str> {
    classify(name).and_then(|r| r.family)
}

/// Whether drift in this package is an ML matter.
pub fn is_ml(name: &str) -> bool {
    classify(name).is_some_and(|r| r.ml)
}

/// The framework scan a distribution gets.
pub fn scan(name: &str) -> Option<Scan> {
    classify(name).and_then(|r| r.scan)
}

/// The family of an NVIDIA library wheel, from NVIDIA's naming scheme `nvidia-<library>-cu<N>`
/// (`nvidia-nccl-cu12` → `nvidia-nccl`): the same library built for each CUDA major.
pub fn nvidia_family(name: &str) -> Option<String> {
    match nvidia_wheel(name)? {
        (lib, Some(_)) => Some(format!("nvidia-{lib}")),
        (_, None) => None,
    }
}

/// An NVIDIA wheel name split as NVIDIA names them: (`<library>`, the CUDA major of a
/// `-cu<N>` suffix): `nvidia-nccl-cu12` → (`nccl`, `12`), CUDA 13's `nvidia-cublas` →
/// (`cublas`, none).
pub fn nvidia_wheel(name: &str) -> Option<(&str, Option<&str>)> {
    let stem = name.strip_prefix("nvidia-")?;
    let split = stem.rsplit_once("-cu").filter(|(lib, major)| {
        !lib.is_empty() && !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())
    });
    Some(match split {
        Some((lib, major)) => (lib, Some(major)),
        None => (stem, None),
    })
}

/// A distribution's family (`packages[].family`): a listed project published under several
/// names, or an NVIDIA library wheel's (see [`nvidia_family`]).
pub fn family_of(name: &str) -> Option<String> {
    family(name)
        .map(str::to_string)
        .or_else(|| nvidia_family(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tensorflow_name_is_one_family_ml_and_scanned_as_tensorflow() {
        for n in [
            "tensorflow",
            "tensorflow-gpu",
            "tensorflow-cpu",
            "tf-nightly",
            "tensorflow-macos",
            "intel-tensorflow",
            "intel-tensorflow-avx512",
            "tensorflow-intel",
            "tf-nightly-gpu",
            "tf-nightly-rocm",
        ] {
            assert_eq!(family(n), Some("tensorflow"), "{n}");
            assert!(is_ml(n), "{n}");
            assert_eq!(scan(n).map(|s| s.framework), Some("tensorflow"), "{n}");
        }
    }

    #[test]
    fn families_ml_and_scans_of_the_other_names() {
        assert_eq!(family("torch"), Some("torch"));
        assert_eq!(family("keras-nightly"), Some("keras"));
        assert_eq!(family("tf-keras"), None);
        assert_eq!(family("tensorflow-probability"), None);
        assert_eq!(family("tensorboard"), None);
        assert_eq!(family("tensorflow-serving-api-gpu"), None);
        assert_eq!(family_of("tensorflow-gpu").as_deref(), Some("tensorflow"));
        for n in [
            "tf-keras",
            "nvidia-cudnn-cu12",
            "opencv-python",
            "pandas",
            "torchvision",
            "deepspeed",
            "jax-cuda12-plugin",
            "tensorflow-probability",
        ] {
            assert!(is_ml(n), "{n}");
        }
        for n in ["requests", "six", "idna"] {
            assert!(!is_ml(n), "{n}");
        }
        assert_eq!(
            scan("onnxruntime-gpu").map(|s| s.framework),
            Some("onnxruntime")
        );
        assert_eq!(scan("onnxruntime"), None);
        assert_eq!(scan("cupy-cuda110").map(|s| s.framework), Some("cupy"));
        assert_eq!(scan("cupy"), None);
        assert_eq!(
            scan("jax-cuda12-pjrt").map(|s| s.modules[0]),
            Some("jax_plugins/xla_cuda12")
        );
        assert_eq!(scan("jax"), None);
        assert_eq!(scan("torchvision"), None);
    }

    #[test]
    fn nvidia_wheels_of_one_library_share_a_family_across_cuda_majors() {
        assert_eq!(
            nvidia_family("nvidia-nccl-cu12").as_deref(),
            Some("nvidia-nccl")
        );
        assert_eq!(
            nvidia_family("nvidia-nccl-cu13").as_deref(),
            Some("nvidia-nccl")
        );
        assert_eq!(
            nvidia_family("nvidia-cuda-runtime-cu11").as_deref(),
            Some("nvidia-cuda-runtime")
        );
        // Not the scheme: no CUDA major, or not NVIDIA's library wheels.
        assert_eq!(nvidia_family("nvidia-ml-py"), None);
        assert_eq!(nvidia_family("nvidia-cutlass-dsl"), None);
        assert_eq!(nvidia_family("nvidia-cudnn-cu"), None);
        assert_eq!(nvidia_family("cupy-cuda12x"), None);
    }
}
