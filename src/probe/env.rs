//! The `env` probe: the environment variables that change how a training job behaves.
//!
//! Only an allowlist is recorded (CUDA, loader, Python, framework (vLLM's included), NCCL,
//! threading, distributed launch variables); the rest of the environment is never written. A variable whose *name*
//! looks secret (`*TOKEN*`, `*KEY*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `*AUTH*`, ...) is
//! recorded as [`REDACTED`] even when allowlisted (`HF_TOKEN`, `WANDB_API_KEY`), and a value
//! that carries a secret by its shape has that part replaced ([`redact_value`]: credentials in
//! URLs, `user:password@host` without a scheme, long random tokens). Values that
//! are not UTF-8 are written with replacement characters and a probe error names the variable.

use super::{Apply, Context};
use crate::root::Env;
use crate::snapshot::ProbeError;
use std::collections::BTreeMap;

/// What a secret-looking variable's value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Variables recorded by exact name.
const EXACT: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LD_BIND_NOW",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "UV_PROJECT_ENVIRONMENT",
    "PIP_REQUIRE_VIRTUALENV",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    "TOKENIZERS_PARALLELISM",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "KUBERNETES_SERVICE_HOST",
];

/// Variables recorded by prefix.
const PREFIXES: &[&str] = &[
    "CUDA_",
    "NVIDIA_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "NCCL_",
    "CONDA_",
    "PYENV_",
    "TF_",
    "XLA_",
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "JAX_",
    "KERAS_",
    "MKL_",
    "KMP_",
    "OMP_",
    "TRITON_",
    "ACCELERATE_",
    "WANDB_",
    "KINETO_",
    "VLLM_",
];

/// Name fragments that mark a variable as secret (compared upper-case).
const SECRET_MARKERS: &[&str] = &[
    "TOKEN",
    "KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
];

/// Allowlisted names that contain a secret marker but hold no secret.
const NOT_SECRET: &[&str] = &["TOKENIZERS_PARALLELISM"];

/// True when `name` is one of the variables envdoctor records.
pub fn allowlisted(name: &str) -> bool {
    EXACT.contains(&name)
        || PREFIXES
            .iter()
            .any(|p| name.starts_with(p) && name.len() > p.len())
}

/// True when `name` looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    if NOT_SECRET.contains(&name) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// Replace the password of `scheme://user:password@host` URLs inside `value`, and (by shape)
/// `user:password@host` without a scheme and long random tokens: see [`redact_value`].
pub fn scrub_url_passwords(value: &str) -> String {
    redact_value(value)
}

/// Characters that end a URL or a word inside a variable's value.
fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'')
}

/// Secrets by shape, whatever the variable is called:
/// - URL credentials: `scheme://user:password@host` keeps `user`, a lone `scheme://token@host`
///   loses it all; the userinfo ends at the last `@` whose prefix is userinfo-like (no `/`, or
///   a `:` before the first `/`), so a password with an unescaped `/` or `@` is covered;
/// - `user:password@host` without a scheme (a word that starts after a separator);
/// - long random tokens: 32+ characters of `[A-Za-z0-9_-]` mixing upper case, lower case and
///   digits, or a known token prefix (`ghp_`, `hf_`, `sk-`, ...) followed by 16+ such characters.
pub fn redact_value(value: &str) -> String {
    let urls = redact_url_credentials(value);
    let bare = redact_bare_userinfo(&urls);
    redact_tokens(&bare)
}

fn userinfo_like(prefix: &str) -> bool {
    match prefix.find('/') {
        None => true,
        Some(slash) => prefix[..slash].contains(':'),
    }
}

fn redact_url_credentials(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        let end = tail.find(is_separator).unwrap_or(tail.len());
        let word = &tail[..end];
        let at = word
            .match_indices('@')
            .map(|(i, _)| i)
            .rev()
            .find(|&i| userinfo_like(&word[..i]));
        match at {
            Some(at) => {
                let userinfo = &word[..at];
                match userinfo.find(':') {
                    Some(colon) if colon > 0 => {
                        out.push_str(&userinfo[..colon]);
                        out.push(':');
                        out.push_str(REDACTED);
                    }
                    // A lone user part of a URL is often a token (`https://ghp_x@github.com`).
                    _ => out.push_str(REDACTED),
                }
                out.push_str(&word[at..]);
            }
            None => out.push_str(word),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `user:password@host` (no scheme) in a word that starts at the value's start or after a
/// separator or `=`: the user is `[A-Za-z0-9._%+-]+` (so paths never match), the host a name.
fn redact_bare_userinfo(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut word_start = true;
    let mut i = 0;
    while i < value.len() {
        let c = value[i..].chars().next().unwrap_or(' ');
        if word_start && !value[i..].starts_with(REDACTED) {
            let word_end = value[i..]
                .find(|c: char| is_separator(c) || c == '=')
                .map_or(value.len(), |e| i + e);
            let word = &value[i..word_end];
            if let Some(red) = bare_userinfo(word) {
                out.push_str(&red);
                i = word_end;
                word_start = false;
                continue;
            }
        }
        out.push(c);
        word_start = is_separator(c) || c == '=';
        i += c.len_utf8();
    }
    out
}

fn bare_userinfo(word: &str) -> Option<String> {
    if word.contains("://") {
        return None;
    }
    let colon = word.find(':')?;
    let user = &word[..colon];
    if user.is_empty()
        || !user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-'))
    {
        return None;
    }
    let at = word.rfind('@')?;
    if at <= colon + 1 {
        return None;
    }
    let host = &word[at + 1..];
    let host_name = host.split([':', '/']).next().unwrap_or("");
    if host_name.is_empty()
        || !host_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
    {
        return None;
    }
    Some(format!("{user}:{REDACTED}@{host}"))
}

/// Prefixes of well-known API tokens.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "hf_",
    "sk-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "nvapi-",
    "pypi-",
];

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

fn looks_like_token(w: &str) -> bool {
    if w == REDACTED.trim_matches(['<', '>']) {
        return false;
    }
    let known = TOKEN_PREFIXES
        .iter()
        .any(|p| w.starts_with(p) && w.len() >= p.len() + 16);
    let random = w.len() >= 32
        && w.chars().any(|c| c.is_ascii_uppercase())
        && w.chars().any(|c| c.is_ascii_lowercase())
        && w.chars().any(|c| c.is_ascii_digit());
    known || random
}

fn redact_tokens(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if looks_like_token(word) {
            out.push_str(REDACTED);
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in value.chars() {
        if token_char(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The allowlisted variables of `env`, secrets redacted, plus errors for non-UTF-8 values.
pub fn collect(env: &Env) -> (BTreeMap<String, String>, Vec<ProbeError>) {
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for (name, value) in env.iter() {
        // A name that is not UTF-8 matches no allowlisted name.
        let Some(name) = name.to_str() else { continue };
        if !allowlisted(name) {
            continue;
        }
        if looks_secret(name) {
            out.insert(name.to_string(), REDACTED.to_string());
            continue;
        }
        let text = match value.to_str() {
            Some(v) => v.to_string(),
            None => {
                errors.push(ProbeError::new(
                    "env",
                    format!(
                        "${name} is not valid UTF-8; recorded with replacement characters \
                         (programs reading it as text may fail)"
                    ),
                ));
                value.to_string_lossy().into_owned()
            }
        };
        out.insert(name.to_string(), redact_value(&text));
    }
    (out, errors)
}

/// The probe entry point (registered as `env`).
pub fn probe(ctx: &Context) -> Apply {
    let (vars, errors) = collect(ctx.env());
    Box::new(move |snap| {
        snap.env.extend(vars);
        snap.probe_errors.extend(errors);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn allowlist_takes_training_variables_and_nothing_else() {
        for yes in [
            "CUDA_VISIBLE_DEVICES",
            "LD_LIBRARY_PATH",
            "PATH",
            "TF_FORCE_GPU_ALLOW_GROWTH",
            "NCCL_DEBUG",
            "PYTORCH_CUDA_ALLOC_CONF",
            "XLA_FLAGS",
            "HF_HOME",
            "CONDA_PREFIX",
            "OMP_NUM_THREADS",
        ] {
            assert!(allowlisted(yes), "{yes}");
        }
        for no in [
            "HOME",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "TF_",
            "PATHEXT",
            "MYPATH",
            "USER",
        ] {
            assert!(!allowlisted(no), "{no}");
        }
    }

    #[test]
    fn secret_names_are_redacted_even_when_allowlisted() {
        let env = Env::from_pairs([
            ("HF_TOKEN", "hf_secret123"),
            ("WANDB_API_KEY", "abcdef"),
            ("HUGGINGFACE_HUB_TOKEN", "hf_other"),
            ("NVIDIA_API_KEY", "nvapi-x"),
            ("TF_PASSWORD_FILE", "/etc/pw"),
            ("TOKENIZERS_PARALLELISM", "false"),
            ("AWS_SECRET_ACCESS_KEY", "aws-x"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
        ]);
        let (vars, errors) = collect(&env);
        assert!(errors.is_empty());
        assert_eq!(vars["HF_TOKEN"], REDACTED);
        assert_eq!(vars["WANDB_API_KEY"], REDACTED);
        assert_eq!(vars["HUGGINGFACE_HUB_TOKEN"], REDACTED);
        assert_eq!(vars["NVIDIA_API_KEY"], REDACTED);
        assert_eq!(vars["TF_PASSWORD_FILE"], REDACTED);
        assert_eq!(vars["TOKENIZERS_PARALLELISM"], "false");
        assert_eq!(vars["CUDA_VISIBLE_DEVICES"], "0,1");
        assert!(!vars.contains_key("AWS_SECRET_ACCESS_KEY"));
        let all: String = vars.values().cloned().collect();
        for secret in ["hf_secret123", "abcdef", "hf_other", "nvapi-x", "aws-x"] {
            assert!(!all.contains(secret), "{secret} leaked");
        }
    }

    #[test]
    fn passwords_in_urls_are_scrubbed() {
        assert_eq!(
            scrub_url_passwords("https://bob:s3cret@mirror.example/simple"),
            "https://bob:<redacted>@mirror.example/simple"
        );
        assert_eq!(
            scrub_url_passwords("https://ghp_abc@github.com/x"),
            "https://<redacted>@github.com/x"
        );
        assert_eq!(
            scrub_url_passwords("http://a.example/ http://u:p@b.example"),
            "http://a.example/ http://u:<redacted>@b.example"
        );
        assert_eq!(scrub_url_passwords("/usr/lib:/opt/x"), "/usr/lib:/opt/x");
        // The audit's two leaks: an unescaped `/` in the password, no scheme at all.
        assert_eq!(
            redact_value("https://bob:pa/ss@mirror.example/simple"),
            "https://bob:<redacted>@mirror.example/simple"
        );
        assert_eq!(
            redact_value("bob:hunter2@db.example:5432"),
            "bob:<redacted>@db.example:5432"
        );
        assert_eq!(
            redact_value("x=1 bob:p/w@10.0.0.1"),
            "x=1 bob:<redacted>@10.0.0.1"
        );
        // Paths and package pins with `@` are not credentials.
        assert_eq!(
            redact_value("https://h.example/pkg@1.0"),
            "https://h.example/pkg@1.0"
        );
        assert_eq!(redact_value("/opt:/home/u@x"), "/opt:/home/u@x");
        // Long random tokens, with or without a known prefix.
        assert_eq!(
            redact_value("Bearer aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"),
            "Bearer <redacted>"
        );
        assert_eq!(
            redact_value("--token=hf_abcdefghijklmnopqrstu"),
            "--token=<redacted>"
        );
        // Ordinary values stay.
        for v in [
            "0,1",
            "/usr/local/cuda-12.4/lib64",
            "max_split_size_mb:128",
            "--xla_gpu_autotune_level=2",
            "expandable_segments:True",
        ] {
            assert_eq!(redact_value(v), v);
        }
        let env = Env::from_pairs([("HF_ENDPOINT", "https://u:pw@hf.example")]);
        assert_eq!(
            collect(&env).0["HF_ENDPOINT"],
            "https://u:<redacted>@hf.example"
        );
    }

    #[test]
    fn non_utf8_values_are_lossy_with_a_note() {
        let mut env = Env::default();
        env.set(
            "LD_LIBRARY_PATH",
            OsString::from_vec(b"/opt/\xffcuda/lib64".to_vec()),
        );
        env.set(OsString::from_vec(b"CUDA_\xff".to_vec()), "x");
        let (vars, errors) = collect(&env);
        assert_eq!(vars["LD_LIBRARY_PATH"], "/opt/\u{fffd}cuda/lib64");
        assert_eq!(vars.len(), 1, "{vars:?}");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("LD_LIBRARY_PATH"));
        assert!(errors[0].message.contains("UTF-8"));
    }
}
