//! The Prometheus text exposition format (version 0.0.4, what node_exporter's textfile
//! collector and every Prometheus server read): `# HELP`, `# TYPE`, then one line per
//! sample. A few dozen lines of escaping rules, so written here rather than pulling in a
//! client library and its registry for a format rdmactl only ever writes.

use std::fmt::Write;

/// What `# TYPE` says: a counter only goes up (resets aside), a gauge is a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    Counter,
    Gauge,
}

/// A sample's value: counters stay exact past 2^53 as integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SampleValue {
    Int(u64),
    Signed(i64),
    Float(f64),
}

/// One metric family: its name, HELP, TYPE and samples (labels, value).
#[derive(Debug, Clone)]
pub struct SeriesFamily {
    pub name: String,
    pub help: String,
    pub kind: SeriesKind,
    pub samples: Vec<(Vec<(&'static str, String)>, SampleValue)>,
}

impl SeriesFamily {
    pub fn new(name: impl Into<String>, kind: SeriesKind, help: impl Into<String>) -> Self {
        SeriesFamily {
            name: name.into(),
            help: help.into(),
            kind,
            samples: Vec::new(),
        }
    }

    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: SampleValue) {
        self.samples.push((labels, value));
    }
}

/// Families in the order given, each one's samples in theirs; a family without samples is
/// left out (its HELP alone would say nothing).
pub fn write(families: &[SeriesFamily]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help));
        let kind = match f.kind {
            SeriesKind::Counter => "counter",
            SeriesKind::Gauge => "gauge",
        };
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for (labels, value) in &f.samples {
            out.push_str(&f.name);
            // An empty label value is the same as no label: left out, so the line is
            // what Prometheus stores.
            let labels: Vec<_> = labels.iter().filter(|(_, v)| !v.is_empty()).collect();
            if !labels.is_empty() {
                out.push('{');
                for (i, (name, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{name}=\"{}\"", escape_label(v));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", format_value(*value));
        }
    }
    out
}

/// A metric name from free text (a counter's file name): lower case, every character
/// outside `[a-z0-9_]` an underscore.
pub fn metric_name_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn format_value(v: SampleValue) -> String {
    match v {
        SampleValue::Int(n) => n.to_string(),
        SampleValue::Signed(n) => n.to_string(),
        SampleValue::Float(f) if f.is_nan() => "NaN".to_string(),
        SampleValue::Float(f) if f.is_infinite() => {
            if f > 0.0 { "+Inf" } else { "-Inf" }.to_string()
        }
        SampleValue::Float(f) => f.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_help_and_labels_and_drops_empty_labels_and_families() {
        let mut f = SeriesFamily::new("x_total", SeriesKind::Counter, "a\\b\nc");
        f.push(
            vec![("device", "q\"\\\n".to_string()), ("port", String::new())],
            SampleValue::Int(u64::MAX),
        );
        let empty = SeriesFamily::new("y", SeriesKind::Gauge, "none");
        let mut g = SeriesFamily::new("z", SeriesKind::Gauge, "levels");
        g.push(vec![], SampleValue::Float(f64::INFINITY));
        g.push(vec![], SampleValue::Float(12.5e9));
        g.push(vec![], SampleValue::Signed(-1));
        assert_eq!(
            write(&[f, empty, g]),
            "# HELP x_total a\\\\b\\nc\n# TYPE x_total counter\n\
             x_total{device=\"q\\\"\\\\\\n\"} 18446744073709551615\n\
             # HELP z levels\n# TYPE z gauge\nz +Inf\nz 12500000000\nz -1\n"
        );
    }

    #[test]
    fn names_from_counter_files() {
        assert_eq!(metric_name_part("VL15_dropped"), "vl15_dropped");
        assert_eq!(metric_name_part("rx-ecn.marked"), "rx_ecn_marked");
    }
}
