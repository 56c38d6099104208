//! `subnet --baseline`: a previous `subnet -j` (JSON) or an ibnetdiscover topology file,
//! read back as the nodes and links to compare the walk with.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::topology::{self, End, Link, TopologyBaseline};

/// What a refused baseline should have been: the next step of every refusal.
const EXPECTED: &str = "give the saved output of `rdmactl subnet -j` or of `ibnetdiscover`";

/// A baseline is a previous `subnet -j` (JSON) or an ibnetdiscover topology file. Anything
/// else is refused (exit 2) naming the file and the line that failed: read as an empty
/// topology it would report every node as added.
pub fn read(path: &Path) -> Result<TopologyBaseline> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&bytes)
        .map_err(|why| Error::Usage(format!("--baseline {}: {why}; {EXPECTED}", path.display())))
}

/// The file's contents judged: JSON when it starts with `{` (or is a JSON array), else
/// ibnetdiscover's format.
fn parse(bytes: &[u8]) -> std::result::Result<TopologyBaseline, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("line {line}: not text (a byte that is not UTF-8)")
    })?;
    if text.trim().is_empty() {
        return Err("the file is empty".into());
    }
    let json_like = text.trim_start().starts_with('{');
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => baseline_from_json(&v),
        Err(e) if json_like => {
            // A file cut short ends at its last line, not the empty one after its newline.
            let (no, line) = text
                .lines()
                .enumerate()
                .take(e.line().max(1))
                .filter(|(_, l)| !l.trim().is_empty())
                .last()
                .unwrap_or((0, ""));
            Err(format!(
                "line {}: not JSON ({}): {}",
                no + 1,
                match e.classify() {
                    serde_json::error::Category::Eof => "it ends early, truncated",
                    _ => "a syntax error",
                },
                topology::shorten(line)
            ))
        }
        Err(_) => topology::parse_ibnetdiscover(text).map_err(|e| e.to_string()),
    }
}

fn baseline_from_json(v: &serde_json::Value) -> std::result::Result<TopologyBaseline, String> {
    let guid = |x: &serde_json::Value| -> Option<u64> {
        u64::from_str_radix(x.as_str()?.trim_start_matches("0x"), 16).ok()
    };
    let mut b = TopologyBaseline::default();
    let not_report = || {
        let keys: Vec<&str> = v
            .as_object()
            .map(|o| o.keys().map(String::as_str).take(8).collect())
            .unwrap_or_default();
        format!(
            "JSON without the \"nodes\" and \"links\" arrays of a `subnet -j` report (its \
             top-level keys: {})",
            if keys.is_empty() {
                "none, not an object".to_string()
            } else {
                keys.join(", ")
            }
        )
    };
    let (Some(nodes), Some(links)) = (v["nodes"].as_array(), v["links"].as_array()) else {
        return Err(not_report());
    };
    for (i, n) in nodes.iter().enumerate() {
        let g = guid(&n["guid"])
            .ok_or_else(|| format!("nodes[{i}] has no hex \"guid\": {}", short_json(n)))?;
        b.nodes.insert(
            g,
            (
                n["type"] == "switch",
                n["description"].as_str().unwrap_or("").to_string(),
                n["lid"].as_u64().unwrap_or(0) as u16,
            ),
        );
    }
    for (i, l) in links.iter().enumerate() {
        let end = |e: &serde_json::Value| -> Option<End> {
            Some(End {
                guid: guid(&e["guid"])?,
                port: u8::try_from(e["port"].as_u64()?).ok()?,
            })
        };
        let (Some(a), Some(bb)) = (end(&l["a"]), end(&l["b"])) else {
            return Err(format!(
                "links[{i}] lacks a.guid, a.port, b.guid or b.port: {}",
                short_json(l)
            ));
        };
        b.links.push(Link::new(a, bb));
    }
    if b.nodes.is_empty() {
        return Err("a `subnet -j` report with no nodes: nothing to compare with".into());
    }
    b.links.sort();
    Ok(b)
}

/// A JSON value as one shortened line, for an error.
fn short_json(v: &serde_json::Value) -> String {
    topology::shorten(&v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subnet_json_baseline_reads_back_its_nodes_and_links() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"nodes": [{"guid": "0x0000000000200000", "type": "switch", "description": "Switch1", "lid": 1},
                          {"guid": "0x0000000000100000", "type": "ca", "description": "Hca1", "lid": 2}],
                "links": [{"a": {"guid": "0x0000000000100000", "port": 1}, "b": {"guid": "0x0000000000200000", "port": 1}}]}"#,
        )
        .unwrap();
        let b = baseline_from_json(&v).unwrap();
        assert_eq!(b.nodes[&0x200000], (true, "Switch1".to_string(), 1));
        assert_eq!(b.links.len(), 1);
        assert!(baseline_from_json(&serde_json::json!({"links": []})).is_err());
    }

    fn refused(bytes: &[u8]) -> String {
        parse(bytes).expect_err("refused")
    }

    #[test]
    fn an_empty_file_or_one_of_blanks_is_refused() {
        assert_eq!(refused(b""), "the file is empty");
        assert_eq!(refused(b"\n  \n\t\n"), "the file is empty");
    }

    #[test]
    fn garbage_and_prose_are_refused_with_the_line() {
        let err = refused(b"\x7fELF\x02\x01\x01\x00\xff\xfe\n");
        assert_eq!(err, "line 1: not text (a byte that is not UTF-8)");
        let err = refused(b"# saved\nThe fabric was fine on Monday.\n");
        assert!(err.starts_with("line 2: neither ibnetdiscover"), "{err}");
        assert!(err.ends_with("\"The fabric was fine on Monday.\""), "{err}");
    }

    #[test]
    fn truncated_json_is_refused_with_its_last_line() {
        let text = "{\n  \"nodes\": [\n    {\"guid\": \"0x1\",\n";
        let err = refused(text.as_bytes());
        assert!(
            err.starts_with("line 3: not JSON (it ends early, truncated)"),
            "{err}"
        );
        assert!(err.contains("{\\\"guid\\\": \\\"0x1\\\","), "{err}");
        let err = refused(b"{\"nodes\": [}\n");
        assert!(
            err.starts_with("line 1: not JSON (a syntax error)"),
            "{err}"
        );
    }

    #[test]
    fn json_that_is_not_a_subnet_report_is_refused_naming_its_keys() {
        let err = refused(br#"{"devices": [], "ok": 1}"#);
        assert!(err.contains("top-level keys: devices, ok"), "{err}");
        let err = refused(b"[{\"device\": \"rxe0\", \"port\": 1}]");
        assert!(err.contains("none, not an object"), "{err}");
        let err = refused(br#"{"nodes": [{"type": "ca"}], "links": []}"#);
        assert!(err.starts_with("nodes[0] has no hex \"guid\""), "{err}");
        let err = refused(br#"{"nodes": [], "links": []}"#);
        assert!(err.contains("no nodes"), "{err}");
    }

    /// The path and the next step go with every refusal, and it is bad input: exit 2.
    #[test]
    fn a_refusal_names_the_file_and_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "hello\n").unwrap();
        let err = read(&path).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::USAGE);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("--baseline {}: line 1: ", path.display())),
            "{text}"
        );
        assert!(text.ends_with(EXPECTED), "{text}");
    }
}
