//! The fuzz corpora and every crash `scripts/fuzz` found, replayed in the default suite (stable
//! Rust, no libFuzzer): each file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! runs through the same target body as the fuzzer (`fuzz/targets.rs`). A short deterministic
//! mutation pass over the corpus follows (`FUZZ_REPLAY_MUTATIONS`, default 300 per target), so
//! the suite also tries input nobody wrote down.

#[path = "../fuzz/targets.rs"]
mod targets;

use std::path::Path;

fn files(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    paths.sort();
    paths.into_iter().map(|p| std::fs::read(p).expect("readable")).collect()
}

/// One random edit: flip, insert or delete bytes, splice in a multi-byte character, or repeat
/// a chunk.
fn mutate(rng: &mut fastrand::Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.usize(1..4) {
        let at = if out.is_empty() { 0 } else { rng.usize(..out.len()) };
        match rng.u8(..5) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.u8(..8),
            1 => out.insert(at, rng.u8(..)),
            2 if !out.is_empty() => {
                out.remove(at);
            }
            3 => {
                let pieces: [&[u8]; 14] = [
                    "東".as_bytes(),
                    "\u{202e}".as_bytes(),
                    "\u{2028}".as_bytes(),
                    "\u{85}".as_bytes(),
                    "\u{61c}".as_bytes(),
                    "\u{feff}".as_bytes(),
                    b"\x1b]0;t\x07",
                    "“".as_bytes(),
                    b"\0",
                    b"\"",
                    b"{",
                    b"}",
                    b"\xc1",
                    b"1e99999",
                ];
                out.splice(at..at, pieces[rng.usize(..pieces.len())].iter().copied());
            }
            _ => {
                let end = (at + rng.usize(..16)).min(out.len());
                let chunk = out[at..end].to_vec();
                out.splice(at..at, chunk);
            }
        }
    }
    out
}

#[test]
fn corpus_and_regressions_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mutations: usize = std::env::var("FUZZ_REPLAY_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    for target in targets::TARGETS {
        let corpus = files(&root.join("corpus").join(target));
        assert!(!corpus.is_empty(), "fuzz/corpus/{target} has seeds");
        for input in corpus.iter().chain(&files(&root.join("regressions").join(target))) {
            targets::run(target, input);
        }
        let mut rng = fastrand::Rng::with_seed(0x10ca1 ^ target.len() as u64);
        for _ in 0..mutations {
            let seed = &corpus[rng.usize(..corpus.len())];
            let input = mutate(&mut rng, seed);
            let outcome = std::panic::catch_unwind(|| targets::run(target, &input));
            if outcome.is_err() {
                let path = std::env::temp_dir().join(format!("locality-fuzz-{target}-{:016x}", rng.u64(..)));
                std::fs::write(&path, &input).expect("write the crashing input");
                panic!("fuzz target {target} panicked; input saved to {}", path.display());
            }
        }
    }
}
