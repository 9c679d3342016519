//! The `locality` command-line tool.
fn main() {}
