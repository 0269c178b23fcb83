//! `jobs[]` (`--pid PID`): the CUDA-family libraries a running process really mapped, read from
//! `/proc/PID/maps` through the [`Root`], beside what `libraries[]` predicted for the same
//! soname (the interpreter whose executable the process runs first).

use crate::probe::libs::elf;
use crate::probe::libs::frameworks::family;
use crate::root::Root;
use crate::snapshot::libs::{JobLibrary, Library, RunningJob};
use crate::snapshot::{ProbeError, Python};
use std::path::{Path, PathBuf};

const PROBE: &str = "libs";

/// The file paths mapped in a `/proc/PID/maps` text (` (deleted)` suffixes dropped), in order,
/// without duplicates.
pub fn mapped_files(maps: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode pathname (the path may hold spaces).
        let mut rest = line;
        let mut ok = true;
        for _ in 0..5 {
            rest = rest.trim_start();
            match rest.find(char::is_whitespace) {
                Some(i) => rest = &rest[i..],
                None => {
                    ok = false;
                    break;
                }
            }
        }
        let path = rest.trim();
        if !ok || !path.starts_with('/') {
            continue;
        }
        let path = path.strip_suffix(" (deleted)").unwrap_or(path).to_string();
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Inspect process `pid`.
pub fn inspect(
    root: &Root,
    pid: u32,
    pythons: &[Python],
    libraries: &[Library],
    errors: &mut Vec<ProbeError>,
) -> RunningJob {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let mut job = RunningJob {
        pid,
        exe: root
            .read_link(&proc_dir.join("exe"))
            .ok()
            .map(|p| p.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let maps_path = proc_dir.join("maps");
    let maps = match root.read_to_string_lossy(&maps_path) {
        Ok(t) => t,
        Err(e) => {
            errors.push(ProbeError::at(
                PROBE,
                &maps_path,
                format!("--pid {pid}: cannot read its memory map: {e}"),
            ));
            return job;
        }
    };
    job.readable = true;
    job.python = job.exe.as_ref().and_then(|exe| {
        pythons
            .iter()
            .find(|p| {
                &p.path == exe
                    || p.canonical_path.as_deref() == Some(exe.as_str())
                    || root
                        .canonicalize(Path::new(&p.path))
                        .is_ok_and(|c| c.to_string_lossy() == exe.as_str())
            })
            .map(|p| p.path.clone())
    });
    for file in mapped_files(&maps) {
        let name = Path::new(&file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if family(&name).is_none() {
            continue;
        }
        job.loaded.push(file.clone());
        let soname = elf::read(root, Path::new(&file))
            .ok()
            .and_then(|i| i.soname)
            .unwrap_or(name);
        // Asked for under its own soname, or under a file name whose DT_SONAME it is
        // (auditwheel's `libcudart-80664282.so.10.2` is `libcudart.so.10.2` inside).
        let same_soname = |l: &&Library| {
            l.resolves
                && (l.soname == soname
                    || l.elf.as_ref().and_then(|e| e.soname.as_deref()) == Some(&soname))
        };
        let predicted = libraries
            .iter()
            .filter(same_soname)
            .find(|l| l.python.is_some() && l.python == job.python)
            .or_else(|| libraries.iter().find(same_soname))
            .and_then(|l| l.realpath.clone().or_else(|| l.path.clone()));
        let real = root
            .canonicalize(Path::new(&file))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| file.clone());
        job.compared.push(JobLibrary {
            differs: predicted.as_ref().is_some_and(|p| *p != real),
            soname,
            loaded: file,
            predicted,
        });
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_with_spaces_and_deleted_files() {
        let maps = "\
55d0-55d1 r--p 00000000 08:01 123 /usr/bin/python3.11
7f00-7f01 r-xp 00000000 08:01 456 /opt/my env/lib/libcudnn.so.9
7f01-7f02 r--p 00001000 08:01 456 /opt/my env/lib/libcudnn.so.9
7f02-7f03 rw-p 00000000 00:00 0 
7f03-7f04 r-xp 00000000 08:01 789 /usr/lib/libcuda.so.1 (deleted)
7ffc-7ffd rw-p 00000000 00:00 0 [stack]
";
        assert_eq!(
            mapped_files(maps),
            vec![
                "/usr/bin/python3.11",
                "/opt/my env/lib/libcudnn.so.9",
                "/usr/lib/libcuda.so.1"
            ]
        );
    }
}
