//! Generated C as a C99 compiler's first phases see it: code, comments
//! and decoded string literals, apart. Tests compare a project generated
//! from hostile names with one generated from plain names: the code must
//! be the same token for token, and every string literal must decode to
//! the plain one with each plain name replaced by its hostile original.

/// One C source split into its parts.
#[derive(Debug, Default)]
pub struct Lexed {
    /// The code with every comment replaced by a space and every string
    /// or character literal by `"S"` / `'C'`.
    pub code: Vec<u8>,
    pub comments: Vec<String>,
    /// Each string literal, decoded to the bytes the program holds.
    pub strings: Vec<Vec<u8>>,
}

/// Split `src`. Text that a C99 compiler would read differently from this
/// plain lexer is an error: a trigraph (`??`) or a line splice
/// (backslash-newline) anywhere, `/*` inside a comment, an unterminated
/// comment or literal, a line break inside a literal, an unknown escape.
pub fn lex(src: &[u8]) -> Result<Lexed, String> {
    if let Some(i) = find(src, b"??") {
        return Err(format!("a '??' (trigraph) at byte {i}"));
    }
    if let Some(i) = find(src, b"\\\n").or_else(|| find(src, b"\\\r")) {
        return Err(format!("a line splice (backslash-newline) at byte {i}"));
    }
    let mut out = Lexed::default();
    let mut i = 0;
    while i < src.len() {
        let rest = &src[i..];
        if rest.starts_with(b"/*") {
            let end = find(&rest[2..], b"*/").ok_or(format!("unterminated comment at byte {i}"))?;
            let body = &rest[2..2 + end];
            if find(body, b"/*").is_some() {
                return Err(format!("'/*' inside the comment at byte {i}"));
            }
            out.comments.push(String::from_utf8_lossy(body).into_owned());
            out.code.push(b' ');
            i += 4 + end;
        } else if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            out.comments.push(String::from_utf8_lossy(&rest[2..end]).into_owned());
            out.code.push(b' ');
            i += end;
        } else if rest[0] == b'"' || rest[0] == b'\'' {
            let (value, len) = literal(rest).map_err(|e| format!("{e} in the literal at byte {i}"))?;
            if rest[0] == b'"' {
                out.strings.push(value);
                out.code.extend_from_slice(b"\"S\"");
            } else {
                out.code.extend_from_slice(b"'C'");
            }
            i += len;
        } else {
            out.code.push(rest[0]);
            i += 1;
        }
    }
    Ok(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while let Some(p) = hay[from..].iter().position(|&b| b == first) {
        let at = from + p;
        if hay[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// A string or character literal at the start of `s`: its decoded bytes
/// and its length in the source.
fn literal(s: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let quote = s[0];
    let mut v = vec![];
    let mut i = 1;
    loop {
        let Some(&c) = s.get(i) else { return Err("no closing quote".into()) };
        match c {
            b'\n' | b'\r' => return Err("a line break".into()),
            c if c == quote => return Ok((v, i + 1)),
            b'\\' => {
                let (byte, len) = escape(&s[i + 1..])?;
                v.push(byte);
                i += 1 + len;
            }
            c => {
                v.push(c);
                i += 1;
            }
        }
    }
}

/// One escape sequence after its backslash: the byte and its length.
fn escape(s: &[u8]) -> Result<(u8, usize), String> {
    let simple = |c: u8| -> Option<u8> {
        Some(match c {
            b'\\' | b'"' | b'\'' | b'?' => c,
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 11,
            _ => return None,
        })
    };
    let Some(&c) = s.first() else { return Err("a lone backslash".into()) };
    if let Some(b) = simple(c) {
        return Ok((b, 1));
    }
    if (b'0'..=b'7').contains(&c) {
        let n = s.iter().take(3).take_while(|d| (b'0'..=b'7').contains(*d)).count();
        let v = s[..n].iter().fold(0u32, |a, d| a * 8 + (d - b'0') as u32);
        return u8::try_from(v).map(|b| (b, n)).map_err(|_| format!("octal escape {v} out of range"));
    }
    Err(format!("unknown escape '\\{}'", c as char))
}

/// Replace every plain name in `text` by its hostile original, in one
/// left-to-right pass (hostile text is never scanned again).
pub fn substitute(text: &[u8], names: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![];
    let mut i = 0;
    'scan: while i < text.len() {
        for (plain, hostile) in names {
            if text[i..].starts_with(plain.as_bytes()) {
                out.extend_from_slice(hostile);
                i += plain.len();
                continue 'scan;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// `hostile` is `plain` with only names changed, and only where names may
/// be: the same code, no comment that opens or escapes, and every string
/// literal the plain one with its names replaced. `names` maps each plain
/// name to its hostile original.
pub fn same_but_names(file: &str, plain: &[u8], hostile: &[u8], names: &[(String, Vec<u8>)]) -> Result<(), String> {
    let p = lex(plain).map_err(|e| format!("{file} (plain names): {e}"))?;
    let h = lex(hostile).map_err(|e| format!("{file}: {e}"))?;
    if p.code != h.code {
        let at = p.code.iter().zip(&h.code).take_while(|(a, b)| a == b).count();
        let show = |s: &[u8]| String::from_utf8_lossy(&s[at.saturating_sub(80)..(at + 80).min(s.len())]).into_owned();
        return Err(format!(
            "{file}: the code differs at byte {at}:\n  plain:   {:?}\n  hostile: {:?}",
            show(&p.code),
            show(&h.code)
        ));
    }
    if p.strings.len() != h.strings.len() {
        return Err(format!("{file}: {} string literals, plain {}", h.strings.len(), p.strings.len()));
    }
    // A name the running program prints in its result lines is held as
    // its harness label (one line, `]` and controls escaped).
    let labels: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|(p, h)| (p.clone(), deploygen::escape::harness_label(&String::from_utf8_lossy(h)).into_bytes()))
        .collect();
    for (ps, hs) in p.strings.iter().zip(&h.strings) {
        let want = substitute(ps, names);
        if *hs != want && *hs != substitute(ps, &labels) {
            return Err(format!(
                "{file}: a string literal reads {:?}, expected {:?}",
                String::from_utf8_lossy(hs),
                String::from_utf8_lossy(&want)
            ));
        }
    }
    Ok(())
}
