//! Message and fix templates: literal text with `{{path}}` holes filled from the facts a rule
//! matched.

use super::path::Path;
use serde_json::Value;

/// A parsed template.
#[derive(Clone, Debug)]
pub struct Template {
    parts: Vec<Part>,
    raw: String,
}

#[derive(Clone, Debug)]
enum Part {
    Lit(String),
    Hole(Path),
}

impl Template {
    /// Parse `text`; an unclosed `{{` or a bad path is an error.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Lit(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| format!("unclosed `{{{{` in `{text}`"))?;
            parts.push(Part::Hole(Path::parse(&after[..end])?));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Ok(Template {
            parts,
            raw: text.to_string(),
        })
    }

    /// The paths it names.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.parts.iter().filter_map(|p| match p {
            Part::Hole(p) => Some(p),
            Part::Lit(_) => None,
        })
    }

    /// The template as written.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The template for a person reading a rule (`explain`): each hole as `hole` writes it
    /// (`<library.soname>`), never the raw `{{…}}`.
    pub fn with_holes(&self, hole: &dyn Fn(&Path) -> String) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Hole(path) => out.push_str(&hole(path)),
            }
        }
        out.trim().to_string()
    }

    /// Fill the holes; `lookup` gives a path's value (None renders as `?`).
    pub fn render(&self, lookup: &dyn Fn(&Path) -> Option<Value>) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Hole(path) => match lookup(path) {
                    Some(v) => out.push_str(&display_value(&v)),
                    None => out.push('?'),
                },
            }
        }
        out.trim().to_string()
    }

    /// [`Template::render`] for Markdown: the literal text is the author's Markdown, each fact
    /// escaped for where it lands ([`crate::report::escape::md_template`]).
    pub fn render_markdown(&self, lookup: &dyn Fn(&Path) -> Option<Value>) -> String {
        let parts: Vec<(bool, String)> = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Lit(s) => (true, s.clone()),
                Part::Hole(path) => (
                    false,
                    lookup(path).map_or("?".into(), |v| display_value(&v)),
                ),
            })
            .collect();
        let borrowed: Vec<(bool, &str)> = parts.iter().map(|(l, s)| (*l, s.as_str())).collect();
        crate::report::escape::md_template(&borrowed)
            .trim()
            .to_string()
    }
}

/// A fact as a person reads it: strings bare, lists joined with `, `, numbers without `.0`.
pub fn display_value(v: &Value) -> String {
    match v {
        Value::Null => "(none)".into(),
        // Facts come from the machine: no control character reaches a message.
        Value::String(s) => crate::report::escape::one_line(s).into_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Value::Array(items) if items.is_empty() => "(none)".into(),
        Value::Array(items) => items
            .iter()
            .map(display_value)
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_holes_and_marks_unknowns() {
        let t = Template::parse("{{a.b}} needs {{c}}; list: {{d}}.").unwrap();
        assert_eq!(t.paths().count(), 3);
        let out = t.render(&|p| match p.text.as_str() {
            "a.b" => Some(json!("torch 2.6.0")),
            "d" => Some(json!(["x", 1, 2.5])),
            _ => None,
        });
        assert_eq!(out, "torch 2.6.0 needs ?; list: x, 1, 2.5.");
    }

    #[test]
    fn rejects_unclosed_holes() {
        assert!(Template::parse("a {{b").is_err());
        assert!(Template::parse("a {{ }}").is_err());
        assert_eq!(Template::parse("plain").unwrap().paths().count(), 0);
    }
}
