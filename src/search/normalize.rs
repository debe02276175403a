//! The one text normalization shared by queries and titles (SPEC §5 "Normalization").
//!
//! `normalize(s)` is the *match copy*: default-ignorable chars removed (variation
//! selectors such as the emoji selector U+FE0F, zero-width spaces and joiners, soft
//! hyphens, bidi controls: Unicode's `Default_Ignorable_Code_Point`, which renders as
//! nothing), then Unicode NFKC, then full case folding (Unicode `CaseFolding.txt`, so
//! `Straße` and `STRASSE` agree), then every char that is not a letter, number or
//! combining mark becomes a space, runs of spaces collapse and the ends are trimmed.
//! So an invisible char never makes or splits a word: `❤️❤️` has no words (it
//! matches nothing: U+FE0F is a combining mark, which kept it as a word before),
//! and `Kuber\u{200B}netes` is `kubernetes`. Lengths elsewhere count Unicode scalar
//! values of this string.

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
    // Removed before NFKC too, so an invisible char between a letter and its
    // combining mark does not block their composition (`e\u{FE0F}\u{301}` is `é`).
    let visible: String = s.chars().filter(|&c| !is_default_ignorable(c)).collect();
    let nfkc: String = visible.nfkc().collect();
    let folded = caseless::default_case_fold_str(&nfkc);
    let mut out = String::with_capacity(folded.len());
    let mut pending_space = false;
    for c in folded.chars().filter(|&c| !is_default_ignorable(c)) {
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

/// Unicode's `Default_Ignorable_Code_Point` (DerivedCoreProperties.txt, stable since
/// Unicode 5.2 save unassigned code points reserved for it, which are included):
/// chars a renderer shows as nothing unless it supports them specially.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
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

    #[test]
    fn a_word_of_invisible_chars_or_variation_selectors_is_no_word() {
        for nothing in [
            "❤️❤️",
            "⭐️⭐️",
            "\u{FE0F}\u{FE0F}",
            "\u{FE0E}\u{FE0F}\u{200D}",
            "👨‍👩‍👧 👍🏽",
            "\u{200B}\u{2060}\u{FEFF}\u{00AD}",
            "\u{3164}\u{3164}",
            "\u{E0067}\u{E0062}\u{E007F}",
        ] {
            assert_eq!(normalize(nothing), "", "{nothing:?}");
        }
        assert_eq!(normalize("⭐️ star chart"), "star chart");
        assert_eq!(normalize("❤️ love notes"), "love notes");
        assert_ne!(normalize("❤️❤️"), normalize("⭐️ star chart"));
    }

    #[test]
    fn invisible_chars_inside_a_word_neither_split_nor_change_it() {
        assert_eq!(normalize("Kuber\u{200B}netes"), "kubernetes");
        assert_eq!(normalize("Kuber\u{00AD}netes"), "kubernetes");
        assert_eq!(normalize("e\u{FE0F}\u{301}"), "é");
        // Persian with and without its zero-width non-joiner match.
        assert_eq!(normalize("می\u{200C}خواهم"), normalize("میخواهم"));
        // Letters with a selector keep the letters; visible marks stay marks.
        assert_eq!(normalize("a\u{FE0F}b"), "ab");
        assert_eq!(normalize("\u{301}\u{301}"), "\u{301}\u{301}");
        assert_eq!(normalize("नमस्ते"), "नमस्ते");
    }
}
