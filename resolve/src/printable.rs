//! Text that came from outside (flow records, object keys, subnet zones, AWS error messages,
//! file names), made safe to print: one function for every place that prints it.
//!
//! A character is escaped when its Unicode general category is Cc (controls: ESC, BEL, CR,
//! NEL U+0085, ...), Cf (format: the bidirectional marks and overrides U+061C, U+200E/F,
//! U+202A–E, U+2066–9, zero-width characters, U+FEFF), Zl (U+2028) or Zp (U+2029). Such a
//! character could move a terminal's cursor, set its title, forge a line or reorder one; shown as
//! `\u{1b}`, `\n` or `\u{202e}` it cannot. The backslash itself is written `\\` wherever
//! text is escaped, so that an escaped ESC (`\u{1b}`) is never mistaken for the six
//! characters `\u{1b}` that a value held.

use unicode_general_category::{get_general_category, GeneralCategory};

/// Whether `c` is escaped by [`printable`]: general category Cc, Cf, Zl or Zp.
#[must_use]
pub fn is_unsafe(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// `value` with every [`is_unsafe`] character escaped as Rust writes it (`\n`, `\u{1b}`,
/// `\u{202e}`): one line, whatever it held.
#[must_use]
pub fn printable(value: &str) -> String {
    escaped(value, |_| false, true)
}

/// Text already made of [`printable`] values (a name, then a sentence around it), checked once
/// more: every [`is_unsafe`] character escaped, `\n` included, but backslashes left as they are
/// (they are [`printable`]'s own escapes, which a second [`printable`] would double).
#[must_use]
pub fn recheck(value: &str) -> String {
    escaped(value, |_| false, false)
}

/// [`printable`] of at most `max_chars` characters of `value`, with `...` when it was longer.
#[must_use]
pub fn printable_cut(value: &str, max_chars: usize) -> String {
    let mut chars = value.char_indices();
    match chars.nth(max_chars) {
        Some((at, _)) => format!("{}...", printable(&value[..at])),
        None => printable(value),
    }
}

/// Text made of lines (a report, an error of several lines): every [`is_unsafe`] character
/// escaped but `\n`, which keeps ending lines. The last pass over what is printed; a field from
/// outside goes through [`printable`] first, so that a newline of its own cannot forge a line
/// (and its backslashes are doubled there: this pass leaves backslashes as they are, so that it
/// does not double them again).
#[must_use]
pub fn printable_lines(text: &str) -> String {
    escaped(text, |c| c == '\n', false)
}

/// JSON text with every [`is_unsafe`] character but the layout's `\n` written as a `\uXXXX`
/// escape (a UTF-16 pair past the BMP). The value read back is the same; the text shows none of
/// them raw. (serde_json escapes U+0000–U+001F in strings, but not DEL, the C1 controls, the
/// format characters or the separators.)
#[must_use]
pub fn json_text(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c != '\n' && is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn escaped(value: &str, keep: impl Fn(char) -> bool, backslash: bool) -> String {
    if !value
        .chars()
        .any(|c| (backslash && c == '\\') || (is_unsafe(c) && !keep(c)))
    {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        if backslash && c == '\\' {
            out.push_str("\\\\");
        } else if is_unsafe(c) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue's characters, each by its category, and what stays as it is.
    #[test]
    fn every_control_format_and_separator_character_is_escaped() {
        for (c, shown) in [
            ('\u{1b}', "\\u{1b}"),
            ('\u{7}', "\\u{7}"),
            ('\n', "\\n"),
            ('\r', "\\r"),
            ('\u{85}', "\\u{85}"),
            ('\u{9b}', "\\u{9b}"),
            ('\u{61c}', "\\u{61c}"),
            ('\u{200e}', "\\u{200e}"),
            ('\u{202e}', "\\u{202e}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{e0001}', "\\u{e0001}"),
        ] {
            assert!(is_unsafe(c), "{c:?}");
            assert_eq!(printable(&format!("a{c}b")), format!("a{shown}b"));
        }
        for kept in ["ap-northeast-1a", "東京 ゾーン", "naïve café", "\u{a0}x"] {
            assert_eq!(printable(kept), kept);
        }
        // A literal backslash is doubled: the six characters `\u{1b}` and an escaped ESC differ.
        assert_eq!(printable("zone\\u{1b}"), "zone\\\\u{1b}");
        assert_ne!(printable("zone\\u{1b}"), printable("zone\u{1b}"));
        assert_eq!(printable_lines("a\\b\n"), "a\\b\n");
        assert_eq!(
            printable_lines("a\u{1b}]0;t\u{7}\nb\u{2028}"),
            "a\\u{1b}]0;t\\u{7}\nb\\u{2028}"
        );
        assert_eq!(printable_cut("ééé\u{1b}x", 4), "ééé\\u{1b}...");
        assert_eq!(printable_cut("ab", 2), "ab");
    }

    /// The JSON text holds none raw, and reads back to the same value.
    #[test]
    fn json_text_reads_back_the_same() {
        let value = serde_json::json!({"zone": "a\u{85}\u{202e}\u{2028}\u{7f}\u{e0001}\n\u{1b}", "n": 1});
        let text = json_text(&value);
        assert!(!text.chars().any(is_unsafe), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
    }
}
