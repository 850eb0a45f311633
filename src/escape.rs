//! The one way text from a model (tensor, weight, node and output names,
//! npz keys, the model folder's name) reaches a generated file: one
//! function per context. Nothing else formats model text into output.
//!
//! - C identifiers are generated from a fixed prefix and a number, never
//!   from a name ([`c_ident`]).
//! - C string literals carry a name's bytes exactly ([`c_string`]).
//! - C block comments carry a readable form that can neither close nor
//!   open a comment, form a trigraph or break the line ([`c_comment`]).
//! - Make and CMake files get only the sanitised project name
//!   ([`ProjectName`]).
//!
//! The other outputs that show names: XML text and attributes (the SVG
//! memory map, [`xml_text`]), Graphviz strings (`inspect --dot`,
//! [`dot_string`]) and the terminal (messages, reports, [`terminal`]).

use std::fmt;

/// A generated C identifier: `prefix` followed by `n` (`dg_w3`,
/// `testRef_0`). `prefix` is the generator's own text.
pub fn c_ident(prefix: &'static str, n: impl fmt::Display) -> String {
    debug_assert!(prefix.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
    debug_assert!(prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    format!("{prefix}{n}")
}

/// The body (without quotes) of a C string literal holding exactly the
/// bytes of `text`. Printable ASCII stays as it is, except `\`, `"` and
/// `?` (a `??` would be a trigraph); every other byte is a three-digit
/// octal escape, which can never absorb the character after it.
pub fn c_string(text: impl AsRef<[u8]>) -> String {
    let mut s = String::new();
    for &b in text.as_ref() {
        match b {
            b'\\' | b'"' | b'?' => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s
}

/// Text for inside a C block comment: printable ASCII as it is, every
/// other byte (and the backslash) as `\xNN`; a space is put between two
/// characters that would make `/*`, `*/` or `??`. The result is one line
/// that never ends in a backslash.
pub fn c_comment(text: &str) -> String {
    let mut s = String::new();
    for &b in text.as_bytes() {
        if !(0x20..=0x7e).contains(&b) || b == b'\\' {
            s.push_str(&format!("\\x{b:02x}"));
            continue;
        }
        let c = b as char;
        if matches!((s.chars().last(), c), (Some('/'), '*') | (Some('*'), '/') | (Some('?'), '?')) {
            s.push(' ');
        }
        s.push(c);
    }
    s
}

/// The project name build files use (`APP = …`, `set(TARGET_NAME "…")`,
/// the first line of `Makefile.host`): only `[A-Za-z0-9_]`, never starting
/// with a digit, so it is the same text in Make, CMake and C. A name that
/// had to change gets a short hash of the original bytes, so two folders
/// that sanitise alike stay apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectName(String);

impl ProjectName {
    pub fn new(raw: &[u8]) -> ProjectName {
        let mut s: String =
            raw.iter().map(|&b| if b.is_ascii_alphanumeric() || b == b'_' { b as char } else { '_' }).collect();
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
            s.insert_str(0, "m_");
        }
        if s.as_bytes() != raw {
            s.push_str(&format!("_{:08x}", fnv1a32(raw)));
        }
        ProjectName(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Text for XML character data or a quoted attribute value: well-formed
/// XML 1.0 whatever `s` holds. The markup characters as entities; the
/// characters XML 1.0 does not allow (the C0 controls, U+FFFE, U+FFFF)
/// and those that would change the text unseen (line breaks and tabs,
/// which an attribute value turns into blanks, DEL, the C1 and the
/// bidirectional controls) as visible `\u{..}` escapes.
pub fn xml_text(s: &str) -> String {
    let hidden = |c: char| c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}') || is_bidi_control(c);
    let s = if s.chars().any(hidden) { unicode_escaped(s, hidden) } else { s.to_string() };
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A name (tensor, node, operator, npz key, file) in a line of text
/// output: control characters, line breaks and tabs included, and the
/// bidirectional controls as `\u{..}` escapes, so a name stays on its
/// line and cannot forge another.
pub fn name(s: &str) -> std::borrow::Cow<'_, str> {
    let hostile = |c: char| c.is_control() || is_bidi_control(c);
    if !s.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(unicode_escaped(s, hostile))
}

/// The body of a Graphviz double-quoted string.
pub fn dot_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Text for a terminal: control characters other than line feed and tab
/// (ESC starts a terminal command, CR overwrites the line) and the Unicode
/// bidirectional controls, which reorder what is shown, as `\u{..}`
/// escapes. Messages and reports carry names from the model; a name must
/// not drive the user's terminal.
pub fn terminal(s: &str) -> std::borrow::Cow<'_, str> {
    let hostile = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c);
    if !s.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(unicode_escaped(s, hostile))
}

/// JSON (as serde_json writes it) safe for a terminal, and still JSON by
/// its own rules: the characters serde_json leaves as they are but a
/// terminal acts on — DEL, the C1 controls, the bidirectional controls —
/// as JSON `\uXXXX` escapes. They can only be inside strings (JSON's
/// structure is ASCII), where the escape means the same character.
pub fn json_for_terminal(s: &str) -> std::borrow::Cow<'_, str> {
    let hostile = |c: char| matches!(c, '\u{7f}'..='\u{9f}') || is_bidi_control(c);
    if !s.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars().map(|c| if hostile(c) { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect(),
    )
}

/// A name as the harness prints it in its result lines (`[check NAME]
/// errors E out of N`, `mismatch NAME[i] …`): one line whose `]` closes
/// the label. Control characters (line breaks included), `]`, `\` and the
/// bidirectional controls become `\u{..}` escapes; the rest stays.
pub fn harness_label(s: &str) -> String {
    unicode_escaped(s, |c| c.is_control() || matches!(c, ']' | '\\') || is_bidi_control(c))
}

/// The Unicode bidirectional embedding, override and isolate controls.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every character `hostile` picks written as `\u{hex}`.
fn unicode_escaped(s: &str, hostile: impl Fn(char) -> bool) -> String {
    s.chars().map(|c| if hostile(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect()
}

fn fnv1a32(data: &[u8]) -> u32 {
    data.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_labels_are_one_line_closed_by_their_bracket() {
        assert_eq!(harness_label("fc.weight_updated"), "fc.weight_updated");
        assert_eq!(harness_label("p\nx] errors 0 out of 0\\"), "p\\u{a}x\\u{5d} errors 0 out of 0\\u{5c}");
    }

    #[test]
    fn xml_text_is_well_formed_and_shows_controls() {
        assert_eq!(xml_text("a<b>&\"c"), "a&lt;b&gt;&amp;&quot;c");
        assert_eq!(xml_text("x\u{0}\u{1b}\ny\u{fffe}\u{202e}"), "x\\u{0}\\u{1b}\\u{a}y\\u{fffe}\\u{202e}");
    }

    #[test]
    fn names_stay_on_their_line() {
        assert!(matches!(name("fc.weight"), std::borrow::Cow::Borrowed("fc.weight")));
        assert_eq!(name("y\nmodel        forged\t\r"), "y\\u{a}model        forged\\u{9}\\u{d}");
    }

    #[test]
    fn terminal_text_keeps_lines_and_shows_controls() {
        assert!(matches!(terminal("a b\n\tc"), std::borrow::Cow::Borrowed("a b\n\tc")));
        assert_eq!(terminal("x\u{1b}[1m\r\u{9b}\u{2067}y"), "x\\u{1b}[1m\\u{d}\\u{9b}\\u{2067}y");
    }

    #[test]
    fn strings_escape_quotes_backslashes_question_marks_and_other_bytes() {
        assert_eq!(c_string("a\"b\\c??/"), "a\\\"b\\\\c\\?\\?/");
        assert_eq!(c_string("\n1é"), "\\0121\\303\\251");
        assert_eq!(c_string([0u8, b'7']), "\\0007");
    }

    #[test]
    fn comments_cannot_close_open_or_form_trigraphs() {
        assert_eq!(c_comment("a*/b/*c"), "a* /b/ *c");
        assert_eq!(c_comment("??/"), "? ?/");
        assert_eq!(c_comment("x\ny\\"), "x\\x0ay\\x5c");
        assert_eq!(c_comment("*//**/"), "* // ** /");
    }

    #[test]
    fn project_names_are_identifiers() {
        assert_eq!(ProjectName::new(b"simple_mlp").as_str(), "simple_mlp");
        assert_eq!(ProjectName::new(b"a-b").as_str(), format!("a_b_{:08x}", fnv1a32(b"a-b")));
        assert!(ProjectName::new(b"9lives").as_str().starts_with("m_9lives_"));
        assert!(ProjectName::new(b"").as_str().starts_with("m__"));
        assert_ne!(ProjectName::new(b"a-b"), ProjectName::new(b"a.b"));
    }
}
