//! The one text normalization shared by queries and titles (SPEC §5 "Normalization").
//!
//! `normalize(s)` is the *match copy*: Unicode NFKC, then full case folding (Unicode
//! `CaseFolding.txt`, so `Straße` and `STRASSE` agree), then every char that is not a
//! letter, number or combining mark becomes a space, runs of spaces collapse and the
//! ends are trimmed. Lengths elsewhere count Unicode scalar values of this string.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Returns the match copy of `s` (see the module docs). Never allocates more than
/// one output string plus the NFKC/fold intermediates; the result holds only
/// letters, numbers, combining marks and single ASCII spaces between words.
pub fn normalize(s: &str) -> String {
    if s.is_ascii() {
        return normalize_ascii(s);
    }
    normalize_unicode(s)
}

/// [`normalize`] of ASCII text, which NFKC leaves as it is and case folding only
/// lowercases: the same string without the Unicode tables (every search query
/// typed on a US keyboard and most titles take this path).
fn normalize_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    }
    out
}

fn normalize_unicode(s: &str) -> String {
    let nfkc: String = s.nfkc().collect();
    let folded = caseless::default_case_fold_str(&nfkc);
    let mut out = String::with_capacity(folded.len());
    let mut pending_space = false;
    for c in folded.chars() {
        if is_word_char(c) {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        } else {
            pending_space = true;
        }
    }
    out
}

/// A letter, a number or a combining mark: the chars a match copy keeps.
pub fn is_word_char(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric() || is_combining_mark(c)
}

/// Length in Unicode scalar values, the unit of every length rule in SPEC §5.
pub fn char_len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_case_folding_makes_sharp_s_match_double_s() {
        assert_eq!(normalize("Straße"), normalize("STRASSE"));
        assert_eq!(normalize("Straße"), "strasse");
    }

    #[test]
    fn punctuation_becomes_single_spaces_and_ends_are_trimmed() {
        assert_eq!(normalize("  -a-  b!!c  "), "a b c");
        assert_eq!(normalize("!!"), "");
        assert_eq!(normalize("Real-time (data files)"), "real time data files");
    }

    #[test]
    fn nfkc_expands_compatibility_characters() {
        // U+FB01 LATIN SMALL LIGATURE FI becomes two letters.
        assert_eq!(normalize("\u{FB01}le"), "file");
        // U+2460 CIRCLED DIGIT ONE is a number after NFKC.
        assert_eq!(normalize("\u{2460}"), "1");
        // U+FDFA expands to 18 chars (with spaces) under NFKC.
        assert!(char_len(&normalize("\u{FDFA}")) > 10);
    }

    #[test]
    fn the_ascii_path_agrees_with_the_unicode_path_on_every_ascii_char() {
        let all: String = (0u8..128).map(char::from).collect();
        let mut samples: Vec<String> = (0u8..128).map(|b| format!("a{}B", char::from(b))).collect();
        samples.push(all.clone());
        samples.push(all.chars().rev().collect());
        samples.push("  Kubernetes--CLI (v1.2)\t_tool_ ".to_owned());
        samples.push(String::new());
        for s in &samples {
            assert_eq!(normalize_ascii(s), normalize_unicode(s), "{s:?}");
        }
        assert_eq!(normalize("  Kubernetes--CLI (v1.2)"), "kubernetes cli v1 2");
    }

    #[test]
    fn combining_marks_are_kept() {
        // Devanagari vowel signs are combining marks and must survive.
        assert_eq!(normalize("हिन्दी"), "हिन्दी");
        // A decomposed accent survives NFKC as the composed letter.
        assert_eq!(normalize("e\u{301}"), "é");
    }
}
