//! Processes the robustness tests watch (`robust_children`, `robust_run`): whether one still
//! runs, and waiting a bounded time for some to be gone.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Whether process `pid` still runs: a zombie (`Z`) or a dead task (`X`) is gone for this
/// purpose, as /proc/PID/stat's state says.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Wait up to `limit` for every pid in `pids` to be gone; the ones still alive then.
pub fn survivors(pids: &[i32], limit: Duration) -> Vec<i32> {
    let until = Instant::now() + limit;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
