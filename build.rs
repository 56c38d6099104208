//! The diagnostic codes as Rust constants: one `model::codes` constant per code that
//! docs/failures.md names in a `### ` heading, so a rule that emits an undocumented code
//! does not compile. No dependencies: the headings are plain lines.

use std::fmt::Write;

fn main() {
    println!("cargo:rerun-if-changed=docs/failures.md");
    println!("cargo:rerun-if-changed=build.rs");
    let page = std::fs::read_to_string("docs/failures.md").expect("docs/failures.md");
    let mut codes: Vec<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .flat_map(|h| h.split(','))
        .filter_map(|c| c.trim().strip_prefix('`')?.strip_suffix('`'))
        .collect();
    codes.sort_unstable();
    // A code may have an entry in two groups (a failure and a finding of the same name).
    codes.dedup();
    let mut out = String::new();
    for code in &codes {
        assert!(
            code.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "docs/failures.md: {code:?} is not a kebab-case code"
        );
        let name = code.to_ascii_uppercase().replace('-', "_");
        writeln!(out, "pub const {name}: Code = Code::catalogued({code:?});").unwrap();
    }
    let names: Vec<String> = codes.iter().map(|c| format!("{c:?}")).collect();
    writeln!(out, "/// Every catalogued code, sorted.\n#[cfg(test)]").unwrap();
    writeln!(out, "pub const ALL: &[&str] = &[{}];", names.join(", ")).unwrap();
    let dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(format!("{dir}/codes.rs"), out).expect("codes.rs");
}
