//! The result record's published JSON Schema (`docs/record.schema.json`) and its field
//! reference (`docs/record.md`), both generated from the record types in [`crate::record`] and
//! their doc comments, so that a tool outside schedlab can validate a record or read one without
//! the Rust code.
//!
//! The schema comes from schemars' derive: it reads the same serde attributes the record is
//! written and read with (`default`, `skip_serializing_if`, `rename_all`, `try_from`), so the
//! schema follows the JSON the types produce instead of a copy kept by hand, and each field's
//! doc comment becomes its `description`. It is the schema of what schedlab *reads* as a record
//! of this [`SCHEMA_VERSION`]: a field added with a default is optional, so older records of
//! the same version still validate; unknown keys are allowed (readers skip them).
//!
//! A test (`tests/record_schema.rs`) fails when the checked-in files differ from what the types
//! generate; `SCHEDLAB_UPDATE_SCHEMA=1 cargo test --release -p schedlab-workload --test
//! record_schema` rewrites them.

use crate::record::{RunRecord, SCHEMA_VERSION};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, VecDeque};
use std::fmt::Write as _;

/// The record's JSON Schema (draft 2020-12): [`RunRecord`] at the root, every other type under
/// `$defs`, the `schema` field fixed to [`SCHEMA_VERSION`], and the descriptions freed of
/// rustdoc's link brackets.
pub fn json_schema() -> Value {
    let mut schema = schemars::schema_for!(RunRecord).to_value();
    let root = schema.as_object_mut().expect("a schema is an object");
    root.insert(
        "title".into(),
        format!("schedlab result record, schema {SCHEMA_VERSION}").into(),
    );
    if let Some(field) = root
        .get_mut("properties")
        .and_then(|p| p.get_mut("schema"))
        .and_then(Value::as_object_mut)
    {
        // A record of another version is refused by every reader, so the schema says so.
        field.insert("const".into(), SCHEMA_VERSION.into());
    }
    clean_descriptions(&mut schema);
    schema
}

/// [`json_schema`] as the checked-in file holds it: pretty JSON with a final newline.
pub fn json_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema()).expect("a schema serializes");
    text.push('\n');
    text
}

/// Every `description` in `v` with rustdoc's intra-doc links (`` [`Counters::wakeups`] ``)
/// turned into plain code (`` `wakeups` ``): the brackets mean nothing outside rustdoc.
fn clean_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                match x {
                    Value::String(s) if k == "description" || k == "title" => *s = unlink(s),
                    _ => clean_descriptions(x),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean_descriptions),
        _ => {}
    }
}

/// `` [`A::b`] `` → `` `b` ``, `` [`A`] `` → `` `A` ``.
fn unlink(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("[`") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find("`]") {
            Some(j) if !after[..j].contains('`') => {
                let path = &after[..j];
                let last = path.rsplit("::").next().unwrap_or(path);
                let _ = write!(out, "`{last}`");
                rest = &after[j + 2..];
            }
            _ => {
                out.push_str("[`");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The field reference: one Markdown section per type, the record first and then each type in
/// the order the record reaches it, each field with its JSON type, whether it is required, and
/// its description. `schema` is [`json_schema`]'s.
pub fn field_reference(schema: &Value) -> String {
    let empty = Map::new();
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut out = String::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<(String, &Value)> = VecDeque::from([("RunRecord".into(), schema)]);
    seen.insert("RunRecord".into());
    while let Some((name, def)) = queue.pop_front() {
        let _ = writeln!(out, "### {name}\n");
        let about = describe(def);
        if !about.is_empty() {
            let _ = writeln!(out, "{about}\n");
        }
        let Some(props) = def.get("properties").and_then(Value::as_object) else {
            let _ = writeln!(out, "JSON: {}.\n", type_of(def));
            push_refs(def, defs, &mut seen, &mut queue);
            continue;
        };
        let required: BTreeSet<&str> = def
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str("| field | JSON | required | meaning |\n| --- | --- | --- | --- |\n");
        for (field, p) in props {
            let mut meaning = describe(p);
            if let Some(d) = p.get("default") {
                let _ = write!(meaning, " Default when absent: `{d}`.");
            }
            let _ = writeln!(
                out,
                "| `{field}` | {} | {} | {} |",
                type_of(p),
                if required.contains(field.as_str()) {
                    "yes"
                } else {
                    "no"
                },
                cell(meaning.trim())
            );
            push_refs(p, defs, &mut seen, &mut queue);
        }
        out.push('\n');
    }
    out
}

/// Queue the definitions `v` refers to that are not yet seen, in the order it names them.
fn push_refs<'a>(
    v: &'a Value,
    defs: &'a Map<String, Value>,
    seen: &mut BTreeSet<String>,
    queue: &mut VecDeque<(String, &'a Value)>,
) {
    match v {
        Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(def_name) {
                if let Some(def) = defs.get(name) {
                    if seen.insert(name.to_string()) {
                        queue.push_back((name.to_string(), def));
                    }
                }
            }
            for x in map.values() {
                push_refs(x, defs, seen, queue);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| push_refs(x, defs, seen, queue)),
        _ => {}
    }
}

/// `X` of `#/$defs/X`.
fn def_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/$defs/")
}

/// A schema's title and description as one paragraph.
fn describe(v: &Value) -> String {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").trim();
    let joined = match (text("title"), text("description")) {
        ("", d) => d.to_string(),
        (t, "") => t.to_string(),
        (t, d) => format!("{t}. {d}"),
    };
    // Paragraph breaks of a doc comment become one space: a table cell is one line.
    joined.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` safe in a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A schema's JSON type in words: `integer ≥ 0`, `string or null`, `array of [Repetition]`,
/// `map of string to [Counters]`, `` one of `higher`, `lower` ``.
fn type_of(v: &Value) -> String {
    if let Some(name) = v.get("$ref").and_then(Value::as_str).and_then(def_name) {
        return format!("[{name}](#{})", name.to_lowercase());
    }
    if let Some(c) = v.get("const") {
        return format!("always `{c}`");
    }
    if let Some(values) = v.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values.iter().map(|x| format!("`{}`", plain(x))).collect();
        return format!("one of {}", names.join(", "));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = v.get(key).and_then(Value::as_array) {
            // A documented enum: each variant a `const` with its description.
            if alts.iter().all(|a| a.get("const").is_some()) {
                let names: Vec<String> = alts
                    .iter()
                    .map(|a| {
                        let d = describe(a);
                        let c = plain(&a["const"]);
                        if d.is_empty() {
                            format!("`{c}`")
                        } else {
                            format!("`{c}` ({d})")
                        }
                    })
                    .collect();
                return format!("one of {}", names.join(", "));
            }
            let names: Vec<String> = alts.iter().map(type_of).collect();
            return names.join(" or ");
        }
    }
    let types: Vec<String> = match v.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().map(plain).collect(),
        _ => return "any".into(),
    };
    let words: Vec<String> = types.iter().map(|t| one_type(t, v)).collect();
    words.join(" or ")
}

/// One of a schema's `type`s in words, with what the rest of the schema says of it.
fn one_type(t: &str, v: &Value) -> String {
    match t {
        "integer" => {
            let min = v.get("minimum").and_then(Value::as_f64);
            let max = v.get("maximum").and_then(Value::as_f64);
            match (min, max) {
                (Some(a), Some(b)) => format!("integer {a}..={b}"),
                (Some(a), None) => format!("integer ≥ {a}"),
                _ => "integer".into(),
            }
        }
        "string" => match v.get("pattern").and_then(Value::as_str) {
            Some(p) => format!("string matching `{}`", cell(p)),
            None => "string".into(),
        },
        "array" => {
            let unique = if v.get("uniqueItems") == Some(&Value::Bool(true)) {
                " (distinct)"
            } else {
                ""
            };
            match v.get("items") {
                Some(items) => format!("array{unique} of {}", type_of(items)),
                None => format!("array{unique}"),
            }
        }
        "object" => match v.get("additionalProperties") {
            Some(Value::Bool(_)) | None => "object".into(),
            Some(x) => format!("map of string to {}", type_of(x)),
        },
        other => other.to_string(),
    }
}

/// A JSON scalar as text: a string without its quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_become_code() {
        assert_eq!(
            unlink("Of [`Counters::wakeup_preemptions`], those; see [`SCHEMA_VERSION`]."),
            "Of `wakeup_preemptions`, those; see `SCHEMA_VERSION`."
        );
        assert_eq!(unlink("a [`b c"), "a [`b c");
    }

    #[test]
    fn types_read_as_words() {
        let t = |v: serde_json::Value| type_of(&v);
        assert_eq!(
            t(serde_json::json!({"type": ["integer", "null"], "minimum": 0})),
            "integer ≥ 0 or null"
        );
        assert_eq!(
            t(
                serde_json::json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/Counters"}})
            ),
            "map of string to [Counters](#counters)"
        );
        assert_eq!(
            t(serde_json::json!({"type": "array", "items": {"type": "number"}})),
            "array of number"
        );
        assert_eq!(
            t(
                serde_json::json!({"oneOf": [{"const": "higher", "description": "Up."}, {"const": "lower"}]})
            ),
            "one of `higher` (Up.), `lower`"
        );
    }

    #[test]
    fn the_reference_names_every_field_of_every_type_the_record_reaches() {
        let schema = json_schema();
        let page = field_reference(&schema);
        let defs = schema["$defs"].as_object().unwrap();
        for (name, def) in defs {
            assert!(page.contains(&format!("### {name}\n")), "{name} missing");
            for field in def
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(f, _)| f)
            {
                assert!(page.contains(&format!("| `{field}` |")), "{name}.{field}");
            }
        }
        // The record's own fields, and the version fixed.
        assert!(page.starts_with("### RunRecord\n"));
        assert!(page.contains(&format!("| `schema` | always `{SCHEMA_VERSION}` | yes |")));
        assert!(page.contains("| `configs` | array of [ConfigResult](#configresult) | yes |"));
    }
}
