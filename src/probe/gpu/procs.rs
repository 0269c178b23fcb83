//! Who holds a GPU: NVML's pids attributed to processes through `/proc` (read via the
//! [`Root`]): name, owner, PID namespace and container.
//!
//! NVML reports pids as the host's initial PID namespace numbers them. When envdoctor runs in
//! that namespace (`/proc/self/ns/pid` is `pid:[4026531836]`, the kernel's fixed
//! `PROC_PID_INIT_INO`), a pid names the same process here. When it runs in another namespace
//! (a container), a host pid that happens to exist here is a different process, so every pid
//! is reported as outside this namespace and nothing is attributed to the look-alike. A pid
//! that exists here but whose namespace link differs from ours (a container's process seen from
//! the host) is also outside, yet keeps its name, owner and container.

use crate::probe::host::container_from_cgroup;
use crate::root::Root;
use crate::snapshot::gpu::GpuProcess;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The inode of the initial PID namespace (`PROC_PID_INIT_INO` in the kernel).
pub const INIT_PID_NS: &str = "pid:[4026531836]";

/// What is known about the process running envdoctor, read once.
#[derive(Clone, Debug, Default)]
pub struct Viewer {
    /// Our `/proc/self/ns/pid` link text.
    pub pid_ns: Option<String>,
    /// Our real uid.
    pub uid: Option<u32>,
    /// uid → user name from `/etc/passwd`.
    users: BTreeMap<u32, String>,
    /// `/proc` is known to show every process: `/proc/self/mountinfo` was read and its
    /// `/proc` mount has no `hidepid=`/`subset=` option. Only then does a missing pid mean
    /// the process is gone.
    pub sees_every_pid: bool,
}

impl Viewer {
    /// Read our namespace, uid and the user table through `root`.
    pub fn read(root: &Root) -> Viewer {
        let pid_ns = link_text(root, Path::new("/proc/self/ns/pid"));
        let uid = root
            .read_to_string_lossy(Path::new("/proc/self/status"))
            .ok()
            .and_then(|s| status_uid(&s));
        let users = root
            .read_to_string_lossy(Path::new("/etc/passwd"))
            .map(|s| parse_passwd(&s))
            .unwrap_or_default();
        let sees_every_pid = root
            .read_to_string_lossy(Path::new("/proc/self/mountinfo"))
            .is_ok_and(|m| proc_shows_every_pid(&m));
        Viewer {
            pid_ns,
            uid,
            users,
            sees_every_pid,
        }
    }

    /// True when NVML's host pids are our pids.
    pub fn in_init_pid_ns(&self) -> bool {
        self.pid_ns.as_deref() == Some(INIT_PID_NS)
    }
}

fn link_text(root: &Root, p: &Path) -> Option<String> {
    root.read_link(p)
        .ok()
        .map(|t| t.to_string_lossy().into_owned())
}

/// The real uid from a `/proc/PID/status` text (`Uid:\t1000\t1000\t1000\t1000`).
pub fn status_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// True when a `/proc/self/mountinfo` text mounts `/proc` without options that hide other
/// users' processes (`hidepid=1|2|noaccess|invisible`, `subset=pid`).
pub fn proc_shows_every_pid(mountinfo: &str) -> bool {
    let Some(line) = mountinfo
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/proc"))
    else {
        return false;
    };
    !line.split([' ', ',']).any(|o| {
        o.strip_prefix("hidepid=")
            .is_some_and(|v| !matches!(v, "0" | "off"))
            || o.starts_with("subset=")
    })
}

/// `zombie` for a `State:\tZ (zombie)` line of a `/proc/PID/status` text.
pub fn status_state(status: &str) -> Option<String> {
    let s = status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))?
        .trim();
    s.starts_with('Z').then(|| "zombie".to_string())
}

/// The `Name:` of a `/proc/PID/status` text.
pub fn status_name(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Name:"))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
}

fn parse_passwd(text: &str) -> BTreeMap<u32, String> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid = f.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

/// A short description of the container a `/proc/PID/cgroup` text places a process in:
/// `docker:4f1c2d3e4b5a` when a container runtime is recognised, else the cgroup path.
pub fn container_of(cgroup: &str) -> Option<String> {
    if let Some(kind) = container_from_cgroup(cgroup) {
        let id = long_hex_run(cgroup)
            .map(|h| h[..12].to_string())
            .unwrap_or_default();
        return Some(if id.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}:{id}")
        });
    }
    // cgroup v2 (`0::/path`) or the first v1 line's path; `/` says nothing.
    let path = cgroup
        .lines()
        .find(|l| l.starts_with("0::"))
        .or_else(|| cgroup.lines().next())
        .and_then(|l| l.splitn(3, ':').nth(2))?;
    (path != "/" && !path.is_empty()).then(|| path.to_string())
}

/// The first run of at least 32 hex digits (a container id).
fn long_hex_run(s: &str) -> Option<&str> {
    let bytes = s.as_bytes();
    let mut start = None;
    for (i, b) in bytes.iter().chain(std::iter::once(&b' ')).enumerate() {
        if b.is_ascii_hexdigit() {
            start.get_or_insert(i);
        } else if let Some(st) = start.take() {
            if i - st >= 32 {
                return Some(&s[st..i]);
            }
        }
    }
    None
}

/// Attribute one NVML process.
pub fn attribute(
    root: &Root,
    viewer: &Viewer,
    pid: u32,
    kind: &str,
    used_mib: Option<u64>,
) -> GpuProcess {
    let mut p = GpuProcess {
        pid,
        kind: kind.to_string(),
        used_memory_mib: used_mib,
        ..Default::default()
    };
    if viewer.pid_ns.is_some() && !viewer.in_init_pid_ns() {
        // A container: host pids do not name our processes.
        return p;
    }
    let dir = PathBuf::from(format!("/proc/{pid}"));
    let Ok(status) = root.read_to_string_lossy(&dir.join("status")) else {
        // Gone, or never ours to see (another user's, under hidepid).
        if viewer.in_init_pid_ns() && viewer.sees_every_pid {
            p.state = Some("exited".into());
        }
        return p;
    };
    p.state = status_state(&status);
    p.in_our_pid_namespace = match (&viewer.pid_ns, link_text(root, &dir.join("ns/pid"))) {
        (Some(ours), Some(theirs)) => *ours == theirs,
        // Visible in our /proc but its namespace is unreadable (another user's process):
        // it is ours to see, so count it as ours.
        _ => true,
    };
    p.name = status_name(&status);
    p.uid = status_uid(&status);
    p.user = p.uid.and_then(|u| viewer.users.get(&u).cloned());
    p.same_user = match (p.uid, viewer.uid) {
        (Some(a), Some(b)) => Some(a == b),
        _ => None,
    };
    p.container = root
        .read_to_string_lossy(&dir.join("cgroup"))
        .ok()
        .and_then(|c| container_of(&c));
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn machine(our_ns: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        fs::create_dir_all(p.join("proc/100/ns")).unwrap();
        fs::create_dir_all(p.join("proc/200/ns")).unwrap();
        fs::create_dir_all(p.join("etc")).unwrap();
        symlink("100", p.join("proc/self")).unwrap();
        symlink(our_ns, p.join("proc/100/ns/pid")).unwrap();
        fs::write(
            p.join("proc/100/status"),
            "Name:\tenvdoctor\nUid:\t1000\t1000\t1000\t1000\n",
        )
        .unwrap();
        fs::write(
            p.join("proc/200/status"),
            "Name:\tpython3\nUid:\t0\t0\t0\t0\n",
        )
        .unwrap();
        fs::write(
            p.join("proc/200/cgroup"),
            "0::/system.slice/docker-4f1c2d3e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff.scope\n",
        )
        .unwrap();
        symlink("pid:[4026532999]", p.join("proc/200/ns/pid")).unwrap();
        fs::write(
            p.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/bash\nana:x:1000:1000::/home/ana:/bin/sh\n",
        )
        .unwrap();
        t
    }

    #[test]
    fn from_the_host_namespace() {
        let t = machine(INIT_PID_NS);
        let root = Root::new(t.path());
        let v = Viewer::read(&root);
        assert!(v.in_init_pid_ns());
        assert_eq!(v.uid, Some(1000));
        let me = attribute(&root, &v, 100, "compute", Some(512));
        assert!(me.in_our_pid_namespace);
        assert_eq!(me.name.as_deref(), Some("envdoctor"));
        assert_eq!(me.user.as_deref(), Some("ana"));
        assert_eq!(me.same_user, Some(true));
        assert_eq!(me.container, None);
        // A container's process seen from the host: outside our namespace, still attributed.
        let other = attribute(&root, &v, 200, "compute", Some(70000));
        assert!(!other.in_our_pid_namespace);
        assert_eq!(other.name.as_deref(), Some("python3"));
        assert_eq!(other.user.as_deref(), Some("root"));
        assert_eq!(other.same_user, Some(false));
        assert_eq!(other.container.as_deref(), Some("docker:4f1c2d3e4b5a"));
        let gone = attribute(&root, &v, 999_999, "graphics", None);
        assert!(!gone.in_our_pid_namespace);
        assert_eq!(gone.name, None);
    }

    #[test]
    fn inside_a_container_host_pids_are_never_attributed_to_look_alikes() {
        let t = machine("pid:[4026532123]");
        let root = Root::new(t.path());
        let v = Viewer::read(&root);
        assert!(!v.in_init_pid_ns());
        // pid 100 exists here, but NVML's 100 is the host's 100: another process.
        let p = attribute(&root, &v, 100, "compute", Some(1));
        assert!(!p.in_our_pid_namespace);
        assert_eq!(p.name, None);
    }

    #[test]
    fn zombies_and_hidden_pids() {
        assert_eq!(
            status_state("Name:\tpython\nState:\tZ (zombie)\n").as_deref(),
            Some("zombie")
        );
        assert_eq!(status_state("State:\tS (sleeping)\n"), None);
        let plain = "22 27 0:21 / /proc rw,relatime - proc proc rw\n";
        assert!(proc_shows_every_pid(plain));
        let hidden = "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=invisible\n";
        assert!(!proc_shows_every_pid(hidden));
        let off = "22 27 0:21 / /proc rw - proc proc rw,hidepid=0\n";
        assert!(proc_shows_every_pid(off));
        assert!(!proc_shows_every_pid("1 0 0:1 / / rw - ext4 /dev/sda rw\n"));
    }

    #[test]
    fn container_descriptions() {
        assert_eq!(
            container_of("12:memory:/kubepods/burstable/pod1/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n").as_deref(),
            Some("kubernetes:0123456789ab")
        );
        assert_eq!(container_of("0::/\n"), None);
        assert_eq!(
            container_of("0::/user.slice/user-1000.slice/session-3.scope\n").as_deref(),
            Some("/user.slice/user-1000.slice/session-3.scope")
        );
    }
}
