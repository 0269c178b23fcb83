//! `envdoctor explain ID`: a rule's documentation in fixed sections, as ruff and clippy print
//! theirs (what it looks like, why it happens, what envdoctor checks, how to fix it, references).

use crate::rules::compile::{CmpOp, Cond, Op, Operand, Quant, Rule};
use crate::rules::template::display_value;

/// The explanation of one rule, as plain text.
pub fn render(r: &Rule) -> String {
    let mut s = format!(
        "{} ({}, scope: {})\n{}\n\n",
        r.id,
        r.severity.as_str(),
        r.scope.as_str(),
        r.title
    );
    s.push_str("## What it looks like\n");
    match &r.explain.looks_like {
        Some(t) => s.push_str(&format!("{}\n", t.trim())),
        None if r.symptoms.is_empty() => s.push_str("(no error text recorded)\n"),
        None => {}
    }
    if !r.symptoms.is_empty() {
        s.push_str("Error text that points here (regexes):\n");
        for sym in &r.symptoms {
            s.push_str(&format!("  {sym}\n"));
        }
    }
    s.push_str("\n## Why it happens\n");
    s.push_str(&format!(
        "{}\n",
        r.explain
            .why
            .as_deref()
            .map(str::trim)
            .unwrap_or("See the references.")
    ));
    s.push_str("\n## What envdoctor checks\n");
    if let Some(c) = &r.explain.checks {
        s.push_str(&format!("{}\n", c.trim()));
    }
    if let Some((section, var)) = r.scope.binding() {
        s.push_str(&format!("For each `{var}` in `{section}`:\n"));
    }
    describe(&r.when, 1, &mut s);
    if !r.params.is_empty() {
        s.push_str("Parameters (override with --param ID.NAME=VALUE):\n");
        for (k, v) in &r.params {
            s.push_str(&format!("  {k} = {}\n", display_value(v)));
        }
    }
    s.push_str("\n## How to fix it\n");
    s.push_str(&format!(
        "{}\n",
        r.fix.with_holes(&|p| format!("<{}>", p.text))
    ));
    s.push_str("\n## References\n");
    if r.references.is_empty() {
        s.push_str("(none)\n");
    }
    for u in &r.references {
        s.push_str(&format!("- {u}\n"));
    }
    s.push_str(&format!(
        "\nDefined in {}:{}{}\n",
        r.origin.file,
        r.origin.line,
        if r.origin.shipped { " (shipped)" } else { "" }
    ));
    s
}

fn operand(o: &Operand) -> String {
    match o {
        Operand::Lit(v) => display_value(v),
        Operand::Fact(p) => format!("`{}`", p.text),
        Operand::Param(p) => format!("parameter {p}"),
    }
}

fn describe(c: &Cond, depth: usize, s: &mut String) {
    let pad = "  ".repeat(depth);
    match c {
        Cond::All(items) | Cond::Any(items) => {
            let word = if matches!(c, Cond::All(_)) {
                "all of"
            } else {
                "any of"
            };
            s.push_str(&format!("{pad}- {word}:\n"));
            for i in items {
                describe(i, depth + 1, s);
            }
        }
        Cond::Not(inner) => {
            s.push_str(&format!("{pad}- not:\n"));
            describe(inner, depth + 1, s);
        }
        Cond::Quant {
            kind,
            list,
            var,
            body,
        } => {
            let word = match kind {
                Quant::Any => "some",
                Quant::All => "every",
                Quant::None => "no",
            };
            s.push_str(&format!(
                "{pad}- {word} `{var}` in `{}` such that:\n",
                list.text
            ));
            describe(body, depth + 1, s);
        }
        Cond::Test { fact, cast, op } => {
            let subject = match cast {
                Some(c) => format!("`{}` ({c:?})", fact.text).replace("MajorMinor", "major.minor"),
                None => format!("`{}`", fact.text),
            };
            let test = match op {
                Op::Exists(true) => "is present".to_string(),
                Op::Exists(false) => "is absent".to_string(),
                Op::Empty(true) => "is empty".to_string(),
                Op::Empty(false) => "is not empty".to_string(),
                Op::Equals(o) => format!("= {}", operand(o)),
                Op::NotEquals(o) => format!("≠ {}", operand(o)),
                Op::In(l) => format!(
                    "is one of {}",
                    l.iter().map(operand).collect::<Vec<_>>().join(", ")
                ),
                Op::NotIn(l) => format!(
                    "is none of {}",
                    l.iter().map(operand).collect::<Vec<_>>().join(", ")
                ),
                Op::Cmp(c, o) => {
                    let sym = match c {
                        CmpOp::Lt => "<",
                        CmpOp::Lte => "<=",
                        CmpOp::Gt => ">",
                        CmpOp::Gte => ">=",
                    };
                    format!("{sym} {}", operand(o))
                }
                Op::Pep440(_, spec) => format!("matches PEP 440 `{spec}`"),
                Op::Matches(re) => format!("matches /{}/", re.as_str()),
                Op::Contains(o) => format!("contains {}", operand(o)),
            };
            s.push_str(&format!("{pad}- {subject} {test}\n"));
        }
    }
}
