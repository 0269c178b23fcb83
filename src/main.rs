//! The `envdoctor` binary: parse arguments, call the library, exit with its code.

use clap::FromArgMatches;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = envdoctor::cli::command_for(&args).get_matches_from(args);
    let cli = envdoctor::cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let code = match envdoctor::cli::run(cli) {
        Ok(exit) => exit.code(),
        Err(err) => {
            eprintln!("envdoctor: error: {err}");
            err.exit().code()
        }
    };
    // `exit` rather than returning: a probe thread stuck in a blocking syscall must not keep the
    // process alive.
    std::process::exit(code);
}
