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
