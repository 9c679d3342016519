//! Naming rules and spelling help shared by the generator and the provider: Google Cloud
//! resource names and project IDs, and "did you mean" by edit distance. No dependencies on
//! either layer.

pub mod elb;

/// Google's resource-name rule: RFC 1035, 1-63 characters (lowercase letters, digits and
/// hyphens, starting with a letter, not ending with a hyphen).
pub fn is_google_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && !name.ends_with('-')
}

/// Google Cloud project IDs: 6-30 characters of the resource-name alphabet.
pub fn is_project_id(id: &str) -> bool {
    (6..=30).contains(&id.len()) && is_google_name(id)
}

/// Words longer than this get no "did you mean": no name suggested is near that long, and the
/// distance costs time in proportion to the word's length (a 1 MiB value took seconds).
pub const MAX_SUGGESTION_INPUT: usize = 64;

/// Levenshtein distance.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest candidate to a misspelled `word`, if one is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.len() > MAX_SUGGESTION_INPUT {
        return None;
    }
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_suggestions() {
        assert!(is_google_name("web-bs-tokyo"));
        assert!(
            !is_google_name("Web") && !is_google_name("web_") && !is_google_name("web-") && !is_google_name("1web")
        );
        assert!(is_project_id("winticket-prod") && !is_project_id("short"));
        assert_eq!(edit_distance("lcation", "location"), 1);
        assert_eq!(suggest("lcation", ["location", "cloud_run"]), Some("location"));
        assert_eq!(suggest("zzz", ["location"]), None);
        assert_eq!(suggest(&"l".repeat(1 << 20), ["location"]), None);
    }
}
