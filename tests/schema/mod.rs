//! A small checker for tests/json-schema.txt: each JSON object has exactly the keys of its
//! shape, each of the declared type, and docs/json.md documents every key in the shape's
//! section. Kept tiny on purpose: no schema crate, one format, one page of code. Also
//! compiled into the crate's unit tests (main.rs), which use only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    String,
    Number,
    Bool,
    Null,
    Object,
    Array,
    ArrayOf(Box<Ty>),
    Shape(String),
    Either(Vec<Ty>),
}

#[derive(Debug)]
pub struct Key {
    pub name: String,
    pub optional: bool,
    pub ty: Ty,
}

#[derive(Debug)]
pub struct Shape {
    /// The docs/json.md heading (without `## `) that documents the keys.
    pub section: String,
    pub keys: Vec<Key>,
}

#[derive(Debug)]
pub struct Schema {
    pub shapes: BTreeMap<String, Shape>,
}

/// `A|B` split where no bracket is open, so `[string]|null` is two alternatives.
fn split_union(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '|' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

pub fn parse_type(text: &str) -> Ty {
    let parts = split_union(text);
    if parts.len() > 1 {
        return Ty::Either(parts.into_iter().map(parse_type).collect());
    }
    match text {
        "string" => Ty::String,
        "number" => Ty::Number,
        "bool" => Ty::Bool,
        "null" => Ty::Null,
        "object" => Ty::Object,
        "array" => Ty::Array,
        t if t.starts_with('[') && t.ends_with(']') => {
            Ty::ArrayOf(Box::new(parse_type(&t[1..t.len() - 1])))
        }
        t if t.starts_with('@') => Ty::Shape(t[1..].to_string()),
        t => panic!("json-schema.txt: unknown type {t:?}"),
    }
}

impl Schema {
    pub fn parse(text: &str) -> Schema {
        let mut shapes = BTreeMap::new();
        let mut current: Option<(String, Shape)> = None;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix("shape ") {
                let (name, section) = rest.split_once(' ').expect("shape NAME \"SECTION\"");
                let section = section.trim().trim_matches('"').to_string();
                if let Some((n, s)) = current.take() {
                    shapes.insert(n, s);
                }
                current = Some((
                    name.to_string(),
                    Shape {
                        section,
                        keys: Vec::new(),
                    },
                ));
                continue;
            }
            let mut words = line.split_whitespace();
            let (key, ty) = (words.next().unwrap(), words.next().expect("KEY TYPE"));
            let (name, optional) = match key.strip_suffix('?') {
                Some(k) => (k, true),
                None => (key, false),
            };
            let shape = &mut current.as_mut().expect("a key before any shape").1;
            shape.keys.push(Key {
                name: name.to_string(),
                optional,
                ty: parse_type(ty),
            });
        }
        if let Some((n, s)) = current {
            shapes.insert(n, s);
        }
        let schema = Schema { shapes };
        for shape in schema.shapes.values() {
            for key in &shape.keys {
                schema.known(&key.ty);
            }
        }
        schema
    }

    fn known(&self, ty: &Ty) {
        match ty {
            Ty::Shape(name) => assert!(self.shapes.contains_key(name), "no shape {name}"),
            Ty::ArrayOf(t) => self.known(t),
            Ty::Either(ts) => ts.iter().for_each(|t| self.known(t)),
            _ => {}
        }
    }

    /// Whether `value` is a `ty`; the reasons it is not go to `errors`, each with its path.
    pub fn check(&self, ty: &Ty, value: &Value, path: &str, errors: &mut Vec<String>) -> bool {
        let ok = match (ty, value) {
            (Ty::String, Value::String(_))
            | (Ty::Number, Value::Number(_))
            | (Ty::Bool, Value::Bool(_))
            | (Ty::Null, Value::Null)
            | (Ty::Object, Value::Object(_))
            | (Ty::Array, Value::Array(_)) => true,
            (Ty::ArrayOf(t), Value::Array(items)) => {
                let mut all = true;
                for (i, item) in items.iter().enumerate() {
                    all &= self.check(t, item, &format!("{path}[{i}]"), errors);
                }
                return all;
            }
            (Ty::Shape(name), Value::Object(_)) => {
                return self.check_shape(name, value, path, errors);
            }
            (Ty::Either(ts), v) => {
                // The first alternative of the value's JSON kind decides, so an error
                // inside a nested shape is reported rather than "not any of".
                let mut scratch = Vec::new();
                if ts.iter().any(|t| self.check(t, v, path, &mut scratch)) {
                    return true;
                }
                errors.extend(scratch);
                false
            }
            _ => false,
        };
        if !ok {
            errors.push(format!("{path}: {value} is not {ty:?}"));
        }
        ok
    }

    pub fn check_shape(
        &self,
        name: &str,
        value: &Value,
        path: &str,
        errors: &mut Vec<String>,
    ) -> bool {
        let shape = &self.shapes[name];
        let Value::Object(map) = value else {
            errors.push(format!("{path}: not an object ({name})"));
            return false;
        };
        let before = errors.len();
        for key in &shape.keys {
            match map.get(&key.name) {
                Some(v) => {
                    self.check(&key.ty, v, &format!("{path}.{}", key.name), errors);
                }
                None if key.optional => {}
                None => errors.push(format!("{path}: no `{}` ({name})", key.name)),
            }
        }
        for k in map.keys() {
            if !shape.keys.iter().any(|key| &key.name == k) {
                errors.push(format!("{path}: `{k}` is not in shape {name}"));
            }
        }
        errors.len() == before
    }

    /// Every key of every shape, in backticks, in the docs/json.md section named for its
    /// shape; returns what is missing.
    pub fn undocumented(&self, doc: &str) -> Vec<String> {
        let mut missing = Vec::new();
        for (name, shape) in &self.shapes {
            let heading = format!("## {}\n", shape.section);
            let Some(start) = doc.find(&heading) else {
                missing.push(format!("{name}: no section `{heading}` in docs/json.md"));
                continue;
            };
            let body = &doc[start + heading.len()..];
            let body = &body[..body.find("\n## ").unwrap_or(body.len())];
            for key in &shape.keys {
                if !body.contains(&format!("`{}`", key.name)) {
                    missing.push(format!("{name}.{} in \"{}\"", key.name, shape.section));
                }
            }
        }
        missing
    }
}

pub fn load() -> Schema {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/json-schema.txt");
    Schema::parse(&std::fs::read_to_string(path).expect("tests/json-schema.txt"))
}

/// For unit tests: the reasons `value` is not a `@shape`, empty when it is.
pub fn mismatches(shape: &str, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    load().check_shape(shape, value, "$", &mut errors);
    errors
}
