//! `expect`: what the person running `check` says this machine is for, so that rules can say
//! what *will* break rather than what breaks on the machine as it is. A CI runner without a GPU
//! that checks a GPU image (`--expect-gpu`, `ENVDOCTOR_EXPECT_GPU=1`) wants a missing CUDA
//! library as an error; a training job without profiling does not care that the profiler's
//! CUPTI is not on the loader path, one with profiling configured does.
//!
//! Filled by `check` from its options and from the snapshot's `env` (profiling variables), never
//! by the probes: it is intent, not a fact of the machine. A saved snapshot has none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Expectations that calibrate severities.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Jobs here are meant to use a GPU (`--expect-gpu`, `--expect gpu`,
    /// `ENVDOCTOR_EXPECT_GPU=1`): a GPU library that is missing is an error even when this
    /// machine has no GPU.
    #[serde(default)]
    pub gpu: bool,
    /// Profiling is meant to work (`--expect profiler`, or a profiler variable in the
    /// environment: `TF_PROFILER*`, `KINETO_USE_DAEMON`, `KINETO_CONFIG`, `TORCH_PROFILER*`):
    /// profiler-only libraries (CUPTI) that are missing matter.
    #[serde(default)]
    pub profiler: bool,
    /// Where each expectation came from (`--expect-gpu`, `env KINETO_USE_DAEMON`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Environment variables (exact names) that switch a profiler on.
const PROFILER_VARS: &[&str] = &["KINETO_USE_DAEMON", "KINETO_CONFIG"];
/// Environment variable prefixes that configure a profiler.
const PROFILER_PREFIXES: &[&str] = &["TF_PROFILER", "TORCH_PROFILER"];

impl Expect {
    /// True when nothing is expected (the default; not written).
    pub fn is_default(&self) -> bool {
        *self == Expect::default()
    }

    /// Add what the environment says (profiler variables that are set and not `0`/`false`).
    pub fn from_env(&mut self, env: &BTreeMap<String, String>) {
        for (k, v) in env {
            let named = PROFILER_VARS.contains(&k.as_str())
                || PROFILER_PREFIXES.iter().any(|p| k.starts_with(p));
            let off = matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "" | "0" | "false" | "no" | "off"
            );
            if named && !off {
                self.profiler = true;
                self.reasons.push(format!("env {k}"));
            }
        }
    }

    /// Record an expectation given on the command line (or its environment equivalent).
    pub fn given(&mut self, gpu: bool, profiler: bool, why: &str) {
        if gpu {
            self.gpu = true;
        }
        if profiler {
            self.profiler = true;
        }
        if gpu || profiler {
            self.reasons.push(why.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_variables_switch_the_profiler_expectation_on() {
        let env: BTreeMap<String, String> = [
            ("KINETO_USE_DAEMON", "1"),
            ("TF_PROFILER_OFF", "0"),
            ("TF_CPP_MIN_LOG_LEVEL", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut e = Expect::default();
        e.from_env(&env);
        assert!(e.profiler && !e.gpu);
        assert_eq!(e.reasons, vec!["env KINETO_USE_DAEMON".to_string()]);
        let mut quiet = Expect::default();
        quiet.from_env(&BTreeMap::from([(
            "TF_CPP_MIN_LOG_LEVEL".into(),
            "2".into(),
        )]));
        assert!(quiet.is_default());
        quiet.given(true, false, "--expect-gpu");
        assert!(quiet.gpu && !quiet.profiler);
    }
}
