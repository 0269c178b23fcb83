//! Fixes a person can paste: a finding's fix text, the complete command in it (`fix.command` in
//! JSON), and the facts of this machine that make "another GPU" concrete.

use crate::rules::Finding;
use crate::Snapshot;
use serde::Serialize;

/// A finding's fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Fix {
    /// What to do, for a person.
    pub text: String,
    /// The first complete shell command in it, ready to paste (absent when the fix is advice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Words a shell command in a fix may start with (besides an absolute path).
const COMMANDS: &[&str] = &[
    "pip",
    "python",
    "python3",
    "sudo",
    "export",
    "conda",
    "apt-get",
    "apt",
    "apt-file",
    "ldd",
    "nvidia-smi",
    "docker",
    "ln",
    "unset",
    "ldconfig",
    "mamba",
];

/// Whether a backticked snippet is a complete shell command (not Python code, not a fragment).
pub fn is_command(s: &str) -> bool {
    let mut words = s.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let starts = first.starts_with('/') || COMMANDS.contains(&first);
    let complete = !(s.ends_with(" install") || s.ends_with(" uninstall") || s.ends_with("..."));
    starts && complete && quoted_ok(s)
}

/// `<` and `>` only inside single quotes (a specifier like `'numpy<2'`), never bare.
fn quoted_ok(s: &str) -> bool {
    let mut inside = false;
    for c in s.chars() {
        match c {
            '\'' => inside = !inside,
            '<' | '>' | '(' | ')' if !inside => return false,
            _ => {}
        }
    }
    !inside
}

/// The GPU indices a finding is about (from its evidence paths `gpus[N]…`).
fn gpus_of(f: &Finding) -> Vec<u32> {
    let mut v: Vec<u32> = f
        .evidence
        .iter()
        .filter_map(|e| e.path.strip_prefix("gpus["))
        .filter_map(|r| r.split(']').next()?.parse().ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A visible GPU with no process on it and almost no memory in use, other than `busy`.
pub fn free_gpu(snap: &Snapshot, busy: &[u32]) -> Option<(u32, u64)> {
    snap.gpus
        .iter()
        .filter(|g| g.visible && !busy.contains(&g.index))
        .filter(|g| g.live.processes.is_empty() && g.live.memory_used_percent < 10.0)
        .max_by_key(|g| (g.live.memory_free_mib, std::cmp::Reverse(g.index)))
        .map(|g| (g.index, g.live.memory_free_mib))
}

/// The fix of `f` on this machine.
pub fn fix_of(f: &Finding, snap: &Snapshot) -> Fix {
    let mut text = f.fix.clone();
    let mut command = text
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|s| is_command(s))
        .map(str::to_string);
    if text.contains("free GPU") || text.contains("another GPU") {
        let busy = gpus_of(f);
        match free_gpu(snap, &busy) {
            Some((i, free)) => {
                let cmd = format!("export CUDA_VISIBLE_DEVICES={i}");
                text.push_str(&format!(
                    " GPU {i} is free here ({:.1} GiB): `{cmd}`.",
                    free as f64 / 1024.0
                ));
                command = Some(cmd);
            }
            None if !snap.gpus.is_empty() => {
                text.push_str(" No other GPU here is free now.");
            }
            None => {}
        }
    }
    Fix { text, command }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Evidence, Severity};
    use crate::snapshot::gpu::Gpu;

    #[test]
    fn commands_are_complete_and_quoted() {
        assert!(is_command(
            "/usr/bin/python3 -m pip install 'charset-normalizer<4,>=2'"
        ));
        assert!(!is_command(
            "/usr/bin/python3 -m pip install charset-normalizer<4,>=2"
        ));
        assert!(!is_command("/usr/bin/python3 -m pip install"));
        assert!(!is_command("torch.load(path, weights_only=False)"));
        assert!(is_command("export TF_FORCE_GPU_ALLOW_GROWTH=true"));
        assert!(is_command("sudo nvidia-smi -i 0 -c 0"));
    }

    fn gpu(index: u32, used: f64, procs: usize) -> Gpu {
        let mut g = Gpu {
            index,
            visible: true,
            memory_total_mib: 40960,
            ..Default::default()
        };
        g.live.memory_used_percent = used;
        g.live.memory_free_mib = ((100.0 - used) * 409.6) as u64;
        g.live.processes = vec![Default::default(); procs];
        g
    }

    #[test]
    fn another_gpu_names_the_free_one() {
        let mut snap = Snapshot::empty();
        snap.gpus = vec![gpu(0, 91.0, 1), gpu(1, 0.5, 0), gpu(2, 50.0, 1)];
        let f = Finding {
            rule: "gpu-memory-held-by-other-process".into(),
            severity: Severity::Error,
            title: "t".into(),
            subject: None,
            message: "m".into(),
            message_md: String::new(),
            evidence: vec![Evidence {
                path: "gpus[0].live.memory_used_percent".into(),
                value: serde_json::json!(91.0),
            }],
            fix: "Stop it, or move the job to a free GPU with CUDA_VISIBLE_DEVICES.".into(),
            references: vec![],
            rule_source: String::new(),
        };
        let fix = fix_of(&f, &snap);
        assert_eq!(
            fix.command.as_deref(),
            Some("export CUDA_VISIBLE_DEVICES=1")
        );
        assert!(
            fix.text
                .ends_with("GPU 1 is free here (39.8 GiB): `export CUDA_VISIBLE_DEVICES=1`."),
            "{}",
            fix.text
        );
        snap.gpus[1] = gpu(1, 60.0, 2);
        let fix = fix_of(&f, &snap);
        assert_eq!(fix.command, None);
        assert!(fix.text.ends_with("No other GPU here is free now."));
    }
}
