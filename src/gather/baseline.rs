//! `subnet --baseline`: a previous `subnet -j` (JSON) or an ibnetdiscover topology file,
//! read back as the nodes and links to compare the walk with.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::topology::{self, End, Link, TopologyBaseline};

/// A baseline is a previous `subnet -j` (JSON) or an ibnetdiscover topology file.
pub fn read(path: &Path) -> Result<TopologyBaseline> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |why: String| Error::Usage(format!("--baseline {}: {why}", path.display()));
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        baseline_from_json(&v).map_err(bad)
    } else {
        topology::parse_ibnetdiscover(&text).map_err(bad)
    }
}

fn baseline_from_json(v: &serde_json::Value) -> std::result::Result<TopologyBaseline, String> {
    let guid = |x: &serde_json::Value| -> Option<u64> {
        u64::from_str_radix(x.as_str()?.trim_start_matches("0x"), 16).ok()
    };
    let mut b = TopologyBaseline::default();
    let nodes = v["nodes"]
        .as_array()
        .ok_or("no \"nodes\" array: not a `subnet -j` output")?;
    for n in nodes {
        let g = guid(&n["guid"]).ok_or("a node without a hex \"guid\"")?;
        b.nodes.insert(
            g,
            (
                n["type"] == "switch",
                n["description"].as_str().unwrap_or("").to_string(),
                n["lid"].as_u64().unwrap_or(0) as u16,
            ),
        );
    }
    for l in v["links"].as_array().ok_or("no \"links\" array")? {
        let end = |e: &serde_json::Value| -> Option<End> {
            Some(End {
                guid: guid(&e["guid"])?,
                port: u8::try_from(e["port"].as_u64()?).ok()?,
            })
        };
        let (Some(a), Some(bb)) = (end(&l["a"]), end(&l["b"])) else {
            return Err("a link without a.guid/a.port/b.guid/b.port".into());
        };
        b.links.push(Link::new(a, bb));
    }
    b.links.sort();
    Ok(b)
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
}
