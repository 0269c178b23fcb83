//! Where `check` spends its time on a large snapshot: loading the rule pack, turning the
//! snapshot into JSON, evaluating. `cargo run --release --example rules_timing -- SNAPSHOT.json`

#![allow(clippy::too_many_lines)] // the 80-line limit is for src/; examples are tools
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "a.json".into());
    let t = Instant::now();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let snap = match envdoctor::Snapshot::from_json(&text, &path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let parsed = t.elapsed();
    let t = Instant::now();
    for f in std::fs::read_dir("rules").into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(f.path()).unwrap_or_default();
        let parsed: Result<envdoctor::rules::model::RawFile, _> = serde_saphyr::from_str(&text);
        if parsed.is_err() {
            eprintln!("{}: parse error", f.path().display());
        }
    }
    println!("yaml parse only {:?}", t.elapsed());
    let t = Instant::now();
    let rules = match envdoctor::rules::RuleSet::shipped() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let loaded = t.elapsed();
    let t = Instant::now();
    let value = serde_json::to_value(&snap).unwrap_or_default();
    let to_value = t.elapsed();
    let t = Instant::now();
    let n = rules.check_value(&value).len();
    let eval = t.elapsed();
    let mut per_rule: Vec<(std::time::Duration, String)> = Vec::new();
    for r in rules.rules() {
        let one = envdoctor::rules::RuleSet::from_rules(vec![r.clone()]);
        let t = Instant::now();
        one.check_value(&value);
        per_rule.push((t.elapsed(), r.id.clone()));
    }
    per_rule.sort();
    println!("parse {parsed:?}  load rules {loaded:?}  to_value {to_value:?}  evaluate {eval:?} ({n} findings)");
    for (d, id) in per_rule.iter().rev().take(8) {
        println!("  {d:?}  {id}");
    }
}
