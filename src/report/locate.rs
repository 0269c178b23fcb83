//! Where a finding points: the file behind a finding's subject, for the formats that annotate
//! files (SARIF locations, GitHub `file=`, JUnit `file`).
//!
//! A scoped finding names its subject the way the rule engine labels it (`pythons[/usr/bin/python3]`,
//! `libraries[libcudnn.so.9 @ /venv/bin/python]`, `checkpoints[/runs/exp1/model.pt]`); this
//! module looks that subject up in the snapshot and returns the machine path of the file it is
//! about. Subjects that are not files (GPUs, the machine) have none.

use crate::Snapshot;

/// The machine path of the file `subject` is about, when it is a file: an interpreter, a
/// checkpoint, a library (the file the loader opens, its real file, or else the object that
/// asks for it), a framework (its install directory).
pub fn subject_file(snap: &Snapshot, subject: &str) -> Option<String> {
    let (section, key) = split(subject)?;
    match section {
        "pythons" => snap
            .pythons
            .iter()
            .find(|p| p.path == key)
            .map(|p| p.path.clone()),
        "checkpoints" => snap
            .checkpoints
            .iter()
            .find(|c| c.path == key)
            .map(|c| c.path.clone()),
        "libraries" => {
            let (soname, python) = match key.split_once(" @ ") {
                Some((s, p)) => (s, Some(p)),
                None => (key, None),
            };
            let lib = snap
                .libraries
                .iter()
                .find(|l| l.soname == soname && l.python.as_deref() == python)?;
            lib.path
                .clone()
                .or_else(|| lib.realpath.clone())
                .or_else(|| Some(lib.requester.clone()).filter(|r| r.starts_with('/')))
        }
        "lock_drift" => {
            let (name, python) = key.split_once(" @ ")?;
            let d = snap
                .lock_drift
                .iter()
                .find(|d| d.name == name && d.python == python)?;
            let pinned = d.pinned_at.as_deref().unwrap_or(&d.lock);
            Some(
                pinned
                    .rsplit_once(':')
                    .map_or(pinned, |(f, _)| f)
                    .to_string(),
            )
        }
        "frameworks" => {
            let (name, python) = key.split_once(" @ ")?;
            snap.frameworks
                .iter()
                .find(|f| f.name == name && f.python == python)
                .map(|f| f.location.clone())
        }
        _ => None,
    }
}

/// `section[key]` into its parts.
fn split(subject: &str) -> Option<(&str, &str)> {
    let (section, rest) = subject.split_once('[')?;
    Some((section, rest.strip_suffix(']')?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Checkpoint, Library, Python};

    fn snap() -> Snapshot {
        let mut s = Snapshot::empty();
        s.pythons.push(Python {
            path: "/v/bin/python".into(),
            ..Default::default()
        });
        s.checkpoints.push(Checkpoint {
            path: "/runs/m.pt".into(),
            ..Default::default()
        });
        s.libraries.push(Library {
            soname: "libcudnn.so.9".into(),
            python: Some("/v/bin/python".into()),
            requester: "/v/lib/torch/lib/libtorch_cuda.so".into(),
            ..Default::default()
        });
        s.libraries.push(Library {
            soname: "libcudnn.so.9".into(),
            path: Some("/usr/lib/libcudnn.so.9".into()),
            ..Default::default()
        });
        s
    }

    #[test]
    fn files_behind_subjects() {
        let s = snap();
        assert_eq!(
            subject_file(&s, "pythons[/v/bin/python]").as_deref(),
            Some("/v/bin/python")
        );
        assert_eq!(
            subject_file(&s, "checkpoints[/runs/m.pt]").as_deref(),
            Some("/runs/m.pt")
        );
        // Unresolved: the object that asks is where it fails.
        assert_eq!(
            subject_file(&s, "libraries[libcudnn.so.9 @ /v/bin/python]").as_deref(),
            Some("/v/lib/torch/lib/libtorch_cuda.so")
        );
        // Machine-wide: the file the loader opens.
        assert_eq!(
            subject_file(&s, "libraries[libcudnn.so.9]").as_deref(),
            Some("/usr/lib/libcudnn.so.9")
        );
        assert_eq!(subject_file(&s, "gpus[0]"), None);
        assert_eq!(subject_file(&s, "pythons[/other/python]"), None);
        assert_eq!(subject_file(&s, "nonsense"), None);
    }
}
