//! The integration tests, one binary (ripgrep's layout): each file in `tests/` is a module of
//! it. Add a test file by adding its `mod` line here. Shared helpers live in `common/` (running
//! envdoctor in `common/cli.rs`), the fake NVML in `fake_nvml/`.

#![allow(clippy::unwrap_used)] // tests: an unwrap that fails is the failure message
#![allow(clippy::too_many_lines)] // the 80-line limit is for src/

mod common;
mod fake_nvml;

mod calibration;
mod check_cli;
mod checkpoint_corrupt;
mod checkpoint_discovery;
mod checkpoint_fixtures;
mod checkpoint_mutations;
mod cli_basics;
mod compare_cli;
mod compare_coverage;
mod compare_golden;
mod compare_pip;
mod config_cli;
mod contracts;
mod cuda_fixtures;
mod deploy;
mod diagnose_cli;
mod diagnose_corpus;
mod diagnose_public_corpus;
mod diagnose_reality;
mod env_secrets;
mod extensions_probe;
mod field_reports;
mod formats;
mod frameworks_conda;
mod frameworks_extensions;
mod frameworks_gpu_box;
mod frameworks_jax;
mod frameworks_old_eras;
mod frameworks_tensorflow;
mod frameworks_torch;
mod gpu_fixture_machines;
mod gpu_nvml;
mod gpu_real;
mod gpu_state;
mod host_facts;
mod libs_probe;
mod loader_ldcache;
mod loader_resolve;
mod loader_symver;
mod lock_compare;
mod lock_conda;
mod lock_drift;
mod lock_resync;
mod measure_bench;
mod mechanism_bench;
mod mechanism_rules;
mod module_graph;
mod output_cli;
mod output_golden;
mod output_pypi;
mod platlib_layout;
mod python_discovery;
mod python_packages;
mod python_requires;
mod reality_matrix;
mod robust_children;
mod robust_cli;
mod robust_escape;
mod robust_fuzz;
mod robust_inputs;
mod robust_run;
mod rule_pack_field;
mod rule_pack_machines;
mod serialized_probe;
mod ship_cli;
mod ship_wheel;
mod snapshot_cli;
mod timings_cli;
mod tools_probe;
mod verdict_reality;
