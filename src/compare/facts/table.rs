//! What `compare` makes of each snapshot field, as data: one [`Rule`] per schema path
//! (`pythons[].packages`, `host.os_name`), in the order the facts are emitted.
//!
//! A field no rule names is compared as it is (scalars as text, lists of scalars joined, lists
//! of records as a count and a digest) under its parent's section, rank and scope; a field that
//! must not be compared is named with [`ignore`] and the reason. `tests/compare_coverage.rs`
//! checks that every field of the schema is either reached by the walk or ignored here.

use super::walk::{How, Id, List, NoteFn, Rule};
use crate::compare::packages::ValueKind;
use crate::compare::Section;

/// A rule of the given kind, everything else inherited.
const fn rule(path: &'static str, how: How) -> Rule {
    Rule {
        path,
        how,
        section: None,
        ml: None,
        kind: ValueKind::Text,
        volatile: false,
        homeless: false,
        rename: None,
        when: None,
    }
}

/// A value compared as it is.
const fn val(path: &'static str) -> Rule {
    rule(path, How::Value)
}

/// A field not compared, with the reason.
const fn ignore(path: &'static str, why: &'static str) -> Rule {
    rule(path, How::Ignore(why))
}

/// A field read by the rule above it.
const fn used(path: &'static str) -> Rule {
    rule(path, How::Used)
}

/// A record with rules for its fields.
const fn obj(path: &'static str) -> Rule {
    rule(path, How::Object { inline: false })
}

/// A list of records named by `id`.
const fn list(path: &'static str, id: Id) -> Rule {
    rule(
        path,
        How::List(List {
            id,
            dedup: false,
            entity: false,
            note: None,
            one: None,
        }),
    )
}

impl Rule {
    /// In this section.
    const fn sec(self, section: Section) -> Self {
        Rule {
            section: Some(section),
            ..self
        }
    }
    /// ML-relevant (or not).
    const fn ml(self, ml: bool) -> Self {
        Rule {
            ml: Some(ml),
            ..self
        }
    }
    /// A PEP 440 version.
    const fn pep440(self) -> Self {
        Rule {
            kind: ValueKind::Pep440,
            ..self
        }
    }
    /// A dotted numeric version.
    const fn dotted(self) -> Self {
        Rule {
            kind: ValueKind::Dotted,
            ..self
        }
    }
    /// Only with `--all`.
    const fn volatile(self) -> Self {
        Rule {
            volatile: true,
            ..self
        }
    }
    /// Home directories written `~`.
    const fn homeless(self) -> Self {
        Rule {
            homeless: true,
            ..self
        }
    }
    /// Keyed `name` instead of the field's name.
    const fn rename(self, name: &'static str) -> Self {
        Rule {
            rename: Some(name),
            ..self
        }
    }
    /// Only when the sibling `field` is `value`.
    const fn when(self, field: &'static str, value: &'static str) -> Self {
        Rule {
            when: Some((field, value)),
            ..self
        }
    }
    /// A record whose fields' keys hang off the parent's key.
    const fn inline(self) -> Self {
        Rule {
            how: How::Object { inline: true },
            ..self
        }
    }
    /// Each record an entity, with its display note.
    const fn entity(self, note: Option<NoteFn>) -> Self {
        match self.how {
            How::List(l) => Rule {
                how: How::List(List {
                    entity: true,
                    note,
                    ..l
                }),
                ..self
            },
            _ => self,
        }
    }
    /// Repeated names numbered.
    const fn dedup(self) -> Self {
        match self.how {
            How::List(l) => Rule {
                how: How::List(List { dedup: true, ..l }),
                ..self
            },
            _ => self,
        }
    }
    /// Each record one fact: the value of `field`.
    const fn one(self, field: &'static str) -> Self {
        match self.how {
            How::List(l) => Rule {
                how: How::List(List {
                    one: Some(field),
                    ..l
                }),
                ..self
            },
            _ => self,
        }
    }
}

use super::walk as w;
use How::{Count, Custom as Code, IfTrue, Joined, Pluck};
use Section as S;

/// Every rule, in emission order: a record's fields are walked in this order, then the fields
/// no rule names in the snapshot's order.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    ignore("schema_version", "the format of the file: a snapshot of another is refused, not compared"),
    val("collected_at").sec(S::Meta).ml(false).volatile(),
    val("envdoctor_version").sec(S::Meta).ml(false).volatile(),
    val("root").sec(S::Meta).ml(false).volatile(),
    // Host.
    obj("host").sec(S::Host).ml(false),
    val("host.hostname").volatile(),
    val("host.os_name"),
    val("host.os_version"),
    val("host.kernel"),
    val("host.arch"),
    val("host.glibc_version"),
    val("host.cpu_model"),
    val("host.cpu_cores"),
    val("host.cpu_threads"),
    val("host.cpu_flags"),
    val("host.memory_total_mib"),
    val("host.memory_limit_mib"),
    val("host.swap_total_mib"),
    val("host.shm_total_mib").ml(true),
    obj("host.container").inline(),
    val("host.container.kind").rename("container"),
    ignore("host.container.evidence", "how the container was detected; the container kind is compared"),
    rule("host.wsl", IfTrue),
    obj("host.live").volatile(),
    // Environment.
    rule("env", Code(w::env)).sec(S::Env).ml(false),
    // Interpreters and their packages.
    list("pythons", Id::Label).sec(S::Pythons).ml(false).entity(Some(w::python_note)),
    val("pythons[].path").homeless(),
    val("pythons[].version").ml(true).pep440(),
    val("pythons[].kind"),
    val("pythons[].exists"),
    val("pythons[].conda_env"),
    val("pythons[].base_executable").homeless(),
    val("pythons[].include_system_site_packages").when("kind", "venv"),
    rule("pythons[].sources", Pluck { field: "kind", sorted: true }),
    used("pythons[].sources[].kind"),
    ignore("pythons[].sources[].detail", "how the interpreter was found"),
    ignore(
        "pythons[].sources[].command",
        "how the interpreter was found (the PATH command of the detail)",
    ),
    ignore(
        "pythons[].sources[].path_entry",
        "how the interpreter was found (the PATH position of the detail)",
    ),
    rule("pythons[].packages", Code(w::packages)).sec(S::Packages),
    used("pythons[].packages[].name"),
    used("pythons[].packages[].version"),
    used("pythons[].packages[].version_valid"),
    used("pythons[].packages[].location"),
    ignore("pythons[].packages[].editable", "how it was installed; its version is compared"),
    ignore("pythons[].packages[].installer", "which tool installed it (pip, uv, conda); its version is compared"),
    ignore("pythons[].packages[].metadata", "a path; the version is compared"),
    ignore("pythons[].packages[].local", "the local label, part of the version, which is compared"),
    ignore("pythons[].packages[].family", "derived from the name"),
    ignore("pythons[].packages[].built_for_cudnn", "derived from the version's local label"),
    ignore("pythons[].packages[].requires", "what it requires: the versions of what is installed are compared, check reports unmet ones"),
    ignore("pythons[].packages[].requires_python", "a bound on the interpreter, whose version is compared"),
    rule("pythons[].shadowed", Code(w::shadowed)).sec(S::Packages),
    used("pythons[].shadowed[].name"),
    used("pythons[].shadowed[].winner.version"),
    used("pythons[].shadowed[].winner.location"),
    used("pythons[].shadowed[].hidden[].version"),
    ignore("pythons[].shadowed[].hidden[].location", "where a losing copy is; the versions are compared"),
    ignore("pythons[].shadowed[].hidden[].origin", "where a losing copy is; the versions are compared"),
    ignore("pythons[].shadowed[].winner.origin", "where the winning copy lives; its version is compared"),
    ignore("pythons[].canonical_path", "a path: interpreters are matched by role across home directories"),
    ignore("pythons[].prefix", "a path: interpreters are matched by role across home directories"),
    ignore("pythons[].roles", "the key interpreters are matched by"),
    ignore("pythons[].sys_path", "the search path: what it yields (packages, their versions) is compared"),
    ignore("pythons[].unmet_requirements", "pip check's verdict, derived from the compared versions; check reports it"),
    ignore("pythons[].unmet_requirements_omitted", "a count of the above"),
    ignore("pythons[].ide_drift", "the IDE's interpreter against the shell's: both interpreters' packages are compared"),
    ignore("pythons[].native", "what each distribution's modules were built against: derived from the compared package versions; check reports mismatches"),
    ignore("pythons[].native_failures", "the loader's verdict on each extension module, derived from the compared versions; check reports it"),
    ignore("pythons[].owners", "which installer owns each distribution: check reports conflicts; the versions are compared"),
    // Frameworks: what each installed framework expects.
    list("frameworks", Id::Custom(w::framework_id)).sec(S::Frameworks).ml(true),
    used("frameworks[].python"),
    used("frameworks[].name"),
    val("frameworks[].version").pep440(),
    val("frameworks[].cuda_version").dotted(),
    val("frameworks[].cudnn_version").dotted(),
    val("frameworks[].is_cuda_build"),
    val("frameworks[].compute_capabilities"),
    val("frameworks[].installed_by"),
    rule("frameworks[].wants", Pluck { field: "soname", sorted: true }),
    used("frameworks[].wants[].soname"),
    ignore("frameworks[].wants[].evidence", "where a wanted soname was read; the sonames are compared"),
    ignore("frameworks[].wants[].requester", "which object asks; the sonames and how each resolves are compared"),
    ignore("frameworks[].wants[].lazy", "when its requester is loaded; each library's needed_at is compared"),
    val("frameworks[].nvidia_requirements"),
    ignore("frameworks[].location", "a path: frameworks are matched by interpreter and name"),
    ignore("frameworks[].cuda_major", "derived from cuda_version, which is compared"),
    ignore("frameworks[].cudnn_major", "derived from cudnn_version, which is compared"),
    ignore("frameworks[].uses_pip_nvidia", "derived from nvidia_requirements and RPATHs; the requirements are compared"),
    ignore("frameworks[].evidence", "where each fact was read; the facts are compared"),
    ignore("frameworks[].entry_points", "the framework's plugins, found on the interpreter's path; their packages are compared"),
    ignore("frameworks[].local_version", "the local label, part of the version, which is compared"),
    ignore("frameworks[].nvidia_installed", "the nvidia-* wheels installed, compared as packages"),
    ignore("frameworks[].preloads", "what the framework loads first, read from its own files; the libraries' resolution is compared"),
    // Libraries: how each wanted soname resolves.
    list("libraries", Id::Custom(w::library_id)).sec(S::Libraries).ml(true).dedup(),
    used("libraries[].python"),
    used("libraries[].soname"),
    used("libraries[].requester"),
    val("libraries[].resolves"),
    val("libraries[].path").homeless(),
    val("libraries[].found_via"),
    val("libraries[].realpath").homeless(),
    val("libraries[].file_version").dotted(),
    obj("libraries[].load").inline(),
    val("libraries[].load.status").rename("load"),
    val("libraries[].load.version").dotted(),
    ignore("libraries[].load.raw_version", "the text the version was read from; the version is compared"),
    ignore("libraries[].load.version_call", "how the version was asked; the version is compared"),
    ignore("libraries[].load.error", "the loader's message; the load status is compared"),
    ignore("libraries[].load.version_error", "why no version was read; the load status is compared"),
    ignore("libraries[].load.version_source", "where the version was read; the version is compared"),
    ignore("libraries[].load.signal", "how a load crashed; the load status is compared"),
    ignore("libraries[].load.from_cache", "whether the load was run or remembered"),
    rule("libraries[].version_mismatch", IfTrue),
    val("libraries[].missing_symbol_versions"),
    ignore("libraries[].family", "derived from the soname, which is the key"),
    ignore("libraries[].major", "derived from the soname, which is the key"),
    ignore("libraries[].name_version", "derived from the soname, which is the key"),
    ignore("libraries[].reason", "why the library was resolved (wanted, transitive); the soname and requester are the key"),
    ignore("libraries[].wanted_by", "the frameworks asking, compared as frameworks[]"),
    ignore("libraries[].shadows_framework_copy", "follows from which copy wins, and the winner is compared"),
    ignore("libraries[].candidates", "the copies the loader passed over; the one it takes is compared"),
    ignore("libraries[].chain", "the symlinks on the way; the real path is compared"),
    ignore("libraries[].elf", "the file's ELF headers; its path and version are compared"),
    ignore("libraries[].error", "why it could not be read; whether it resolves is compared"),
    ignore("libraries[].missing_symbols", "the symbols behind missing_symbol_versions, which is compared"),
    ignore("libraries[].package", "the wheel it comes from, compared as packages"),
    ignore("libraries[].package_version", "the wheel's version, compared as packages"),
    ignore("libraries[].shadowed_path", "the copy the winner hides; the winner is compared"),
    // CUDA.
    obj("cuda").sec(S::Cuda).ml(true),
    list("cuda.toolkits", Id::Field("path", true)).entity(None),
    used("cuda.toolkits[].path"),
    val("cuda.toolkits[].version").dotted(),
    val("cuda.toolkits[].cudnn_version").dotted(),
    val("cuda.toolkits[].has_libdevice"),
    val("cuda.toolkits[].has_ptxas"),
    ignore("cuda.toolkits[].aliases", "how the toolkit was reached (/usr/local/cuda links); its path and version are compared"),
    ignore("cuda.toolkits[].source", "how the toolkit was found; its path and version are compared"),
    ignore("cuda.toolkits[].version_source", "where the version was read; the version is compared"),
    ignore("cuda.toolkits[].libraries", "the toolkit's file list; its version is compared and the libraries' resolution is in libraries[]"),
    val("cuda.default_toolkit").homeless(),
    list("cuda.cudnn", Id::Field("path", true)).one("version").dotted(),
    used("cuda.cudnn[].path"),
    used("cuda.cudnn[].version"),
    obj("cuda.driver"),
    val("cuda.driver.version").dotted(),
    val("cuda.driver.kernel_module").dotted(),
    val("cuda.driver.libcuda").dotted(),
    rule("cuda.driver.mismatch", IfTrue),
    ignore("cuda.driver.source", "where the driver version was read, not the driver: the version is compared"),
    ignore("cuda.driver.libcuda_path", "a path; libcuda's version is compared"),
    obj("cuda.ld_cache"),
    val("cuda.ld_cache.stale"),
    rule("cuda.ld_cache.dangling", Count { always: false }),
    ignore("cuda.ld_cache.path", "where the cache is; what it holds is compared"),
    ignore("cuda.ld_cache.format", "the cache file's format"),
    ignore("cuda.ld_cache.entries", "the cache's size, which follows from what is installed"),
    ignore("cuda.ld_cache.stale_files", "the files behind stale, which is compared"),
    ignore("cuda.ld_cache.conf_dirs", "the directories behind the cache; what it holds is compared"),
    ignore("cuda.inventory", "every CUDA library file on the machine; the ones frameworks want are compared in libraries[]"),
    // NVML and GPUs.
    obj("nvml").sec(S::Gpus).ml(true),
    val("nvml.status"),
    val("nvml.driver_version").dotted(),
    val("nvml.cuda_driver_version").dotted(),
    obj("nvml.visible_devices"),
    val("nvml.visible_devices.raw"),
    rule("nvml.visible_devices.visible", Joined(",")),
    ignore("nvml.visible_devices.unmatched", "entries of CUDA_VISIBLE_DEVICES that name no GPU; the raw value and the visible GPUs are compared"),
    ignore("nvml.visible_devices.ignored", "entries after an invalid one; the raw value and the visible GPUs are compared"),
    ignore("nvml.visible_devices.order_uncertain", "a caveat on the visible order, which is compared"),
    ignore("nvml.reason", "the message behind nvml.status, which is compared"),
    ignore("nvml.library", "where NVML was loaded from; the driver version is compared"),
    ignore("nvml.nvml_version", "NVML's own version, which follows the driver version, which is compared"),
    rule("gpus", Code(w::gpu_count)).sec(S::Gpus).ml(true),
    list("gpus", Id::Field("index", false)).sec(S::Gpus).ml(true).entity(Some(w::gpu_note)),
    used("gpus[].index"),
    val("gpus[].name"),
    val("gpus[].memory_total_mib"),
    val("gpus[].compute_capability").dotted(),
    val("gpus[].compute_mode"),
    val("gpus[].mig_enabled"),
    val("gpus[].persistence_mode"),
    val("gpus[].visible"),
    val("gpus[].ecc.uncorrected_volatile").volatile(),
    val("gpus[].uuid").ml(false).volatile(),
    val("gpus[].pci_bus_id").ml(false).volatile(),
    val("gpus[].mig_devices").ml(false).volatile(),
    obj("gpus[].live").ml(false).volatile(),
    val("gpus[].live.memory_used_mib"),
    val("gpus[].live.memory_free_mib"),
    val("gpus[].live.utilization_percent"),
    rule("gpus[].live.processes", Count { always: true }),
    rule("gpus[].live.processes", Pluck { field: "pid", sorted: false }).rename("pids"),
    used("gpus[].live.processes[].pid"),
    ignore("gpus[].live.processes[].kind", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].used_memory_mib", "live usage, minute to minute"),
    ignore("gpus[].live.processes[].name", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].user", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].uid", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].same_user", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].in_our_pid_namespace", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].container", "live usage: the processes are compared by pid"),
    ignore("gpus[].live.processes[].state", "live usage: the processes are compared by pid; a zombie or a vanished pid is what check reports"),
    val("gpus[].live.foreign_processes"),
    ignore("gpus[].live.foreign_memory_mib", "live usage, minute to minute: the processes holding memory are compared with --all"),
    ignore("gpus[].live.memory_used_percent", "live usage, minute to minute"),
    // Checkpoints: who wrote them, and what each reader found inside (the fields no rule
    // names, walked as they are).
    list("checkpoints", Id::Field("path", true)).sec(S::Checkpoints).ml(true).entity(None),
    used("checkpoints[].path"),
    val("checkpoints[].format"),
    val("checkpoints[].producer"),
    val("checkpoints[].producer_version").pep440(),
    val("checkpoints[].error"),
    // What a serialized file names, and what the job's interpreter lacks of it.
    val("checkpoints[].references.globals"),
    val("checkpoints[].references.sklearn_version").pep440(),
    val("checkpoints[].references.numpy_core"),
    val("checkpoints[].references.unresolved"),
    ignore("checkpoints[].references.checked_with", "the job's interpreter, matched by role in pythons[]"),
    // Lock files: two machines built from different locks differ in a digest.
    list("locks", Id::Field("path", true)).sec(S::Locks).ml(true).entity(None),
    used("locks[].path"),
    val("locks[].format"),
    val("locks[].digest"),
    val("locks[].compared"),
    val("locks[].packages"),
    val("locks[].stale"),
    val("locks[].unlocked_count"),
    ignore("locks[].sync_command", "follows from the format, which is compared"),
    ignore("locks[].python", "the job's interpreter, matched by role in pythons[]"),
    ignore("locks[].unlocked_first", "the names behind unlocked_count; the packages themselves are compared"),
    ignore("lock_drift", "the lock against the installed packages, whose versions are compared as packages; check reports each drift"),
    // Running jobs are volatile (pids).
    list("jobs", Id::Field("pid", false)).sec(S::Jobs).ml(true).volatile(),
    used("jobs[].pid"),
    val("jobs[].loaded"),
    ignore("jobs[].exe", "the job's executable; the libraries it loaded are compared"),
    ignore("jobs[].readable", "whether its maps could be read; what was read is compared"),
    ignore("jobs[].python", "the job's interpreter; the libraries it loaded are compared"),
    ignore("jobs[].compared", "the loaded libraries against the predicted ones, a verdict of check; the loaded ones are compared"),
    // Probe errors.
    list("probe_errors", Id::Custom(w::probe_error_id)).sec(S::ProbeErrors).ml(false).dedup().one("message").homeless(),
    used("probe_errors[].probe"),
    used("probe_errors[].path"),
    used("probe_errors[].message"),
    ignore("expect", "what the run was told to expect (--expect-gpu), not a fact of the machine"),
];
