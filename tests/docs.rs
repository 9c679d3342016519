//! `docs/` is generated from the schemas and `examples/`: this test fails when it is stale.
//! Regenerate with `BLESS=1 cargo test --test docs`.

use std::path::Path;

#[test]
fn docs_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = locality::provider::docs::render_all(&root.join("examples")).expect("examples are present");
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for page in &pages {
        let path = root.join("docs").join(&page.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != page.content {
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &page.content).unwrap();
            } else {
                stale.push(page.path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/ is stale for {stale:?}: run `BLESS=1 cargo test --test docs` and commit the result"
    );
}

/// The guide's table of the replica map's fields is generated from its JSON Schema
/// (`schema/replica-map.v1.schema.json`): every field the published map can carry (`nodes` and
/// its items, `configuration_endpoint`, `replication_group_id` included), with the schema's
/// descriptions. Regenerate with `BLESS=1 cargo test --test docs`.
#[test]
fn the_guides_map_table_is_the_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema = std::fs::read_to_string(root.join("schema/replica-map.v1.schema.json")).unwrap();
    let table = locality::provider::docs::replica_map_table(&schema).unwrap();
    for field in [
        "`version`",
        "`fallback`",
        "`nodes`",
        "`nodes[].endpoint`",
        "`nodes[].role`",
        "`configuration_endpoint`",
        "`replication_group_id`",
        "`uncovered_zones`",
    ] {
        assert!(table.contains(&format!("| {field} |")), "{field} in:\n{table}");
    }
    let path = root.join("docs/guides/consuming-the-replica-map.md");
    let guide = std::fs::read_to_string(&path).unwrap();
    let expected = locality::provider::docs::with_map_table(&guide, &table).unwrap();
    if guide != expected {
        if std::env::var("BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, &expected).unwrap();
        } else {
            panic!("the guide's table of the map's fields is stale: run `BLESS=1 cargo test --test docs` and commit the result");
        }
    }
}
