//! Accent folding applied on top of the match copy, inside the index only.
//!
//! The match copy (`normalize`) keeps combining marks because some scripts need them
//! (a Devanagari vowel sign changes the word). For Latin and Greek letters, however,
//! a searcher expects `cafe` to find `Café`, so marks that sit on a Latin or Greek
//! base letter are dropped here, and both titles and queries go through this fold.
//! Marks on any other base (Devanagari, Thai, Hebrew points, ...) are kept, and the
//! result is recomposed (NFC) so those scripts compare exactly as in the match copy.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Folds a match copy (already NFKC, case folded, words separated by single spaces)
/// for indexing and lookup. ASCII input is returned unchanged without decomposition.
/// The result's words are separated by one or more spaces.
pub(crate) fn fold(match_copy: &str) -> String {
    if match_copy.is_ascii() {
        return match_copy.to_owned();
    }
    let mut out = String::with_capacity(match_copy.len());
    // Whether the marks that follow belong to a base whose accents are decorative.
    let mut strip_marks = false;
    for c in match_copy.nfd() {
        if is_combining_mark(c) {
            if !strip_marks {
                out.push(c);
            }
            continue;
        }
        strip_marks = is_accent_folded_base(c);
        match c {
            // Latin letters with a built-in stroke have no decomposition; a searcher
            // typing on an ASCII keyboard still expects them to match.
            'ø' => out.push('o'),
            'ł' => out.push('l'),
            'đ' => out.push('d'),
            'ħ' => out.push('h'),
            'æ' => out.push_str("ae"),
            'œ' => out.push_str("oe"),
            _ => out.push(c),
        }
    }
    let composed: String = out.nfc().collect();
    split_unspaced_scripts(composed)
}

/// Chinese and Japanese are written without spaces, so a "word" of the match copy
/// can be a whole sentence and a query of two ideographs would only match it as a
/// prefix. Each Han, Hiragana or Katakana char becomes a word of its own instead;
/// the ranking's proximity credit then rewards them found side by side, in order.
/// (Runs after NFC, so a kana and its voicing mark stay one char.)
fn split_unspaced_scripts(s: String) -> String {
    if !s.chars().any(is_unspaced_script) {
        return s;
    }
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if is_unspaced_script(c) {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

fn is_unspaced_script(c: char) -> bool {
    matches!(
        c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
            | 0x31F0..=0x31FF // Katakana phonetic extensions
            | 0x3400..=0x4DBF // CJK extension A
            | 0x4E00..=0x9FFF // CJK unified ideographs
            | 0xF900..=0xFAFF // CJK compatibility ideographs
            | 0x20000..=0x3134F // CJK extensions B–G
    )
}

/// Latin and Greek base letters (the blocks where accents are optional to a typist).
fn is_accent_folded_base(c: char) -> bool {
    matches!(
        c as u32,
        0x41..=0x5A
            | 0x61..=0x7A
            | 0xC0..=0x24F
            | 0x370..=0x3FF
            | 0x1E00..=0x1EFF
            | 0x1F00..=0x1FFF
            | 0x2C60..=0x2C7F
            | 0xA720..=0xA7FF
            | 0xAB30..=0xAB6F
    )
}

#[cfg(test)]
mod tests {
    use super::fold;
    use crate::search::normalize::normalize;

    #[test]
    fn latin_accents_are_dropped() {
        assert_eq!(
            fold(&normalize("Café Crème Ångström")),
            "cafe creme angstrom"
        );
        assert_eq!(fold(&normalize("Łódź Øresund")), "lodz oresund");
    }

    #[test]
    fn greek_tonos_is_dropped() {
        assert_eq!(fold(&normalize("Ελλάδα")), fold(&normalize("ΕΛΛΑΔΑ")));
    }

    #[test]
    fn chinese_and_japanese_chars_become_words() {
        let words = |s: &str| {
            fold(&normalize(s))
                .split(' ')
                .filter(|w| !w.is_empty())
                .count()
        };
        assert_eq!(words("データベース管理"), 8);
        assert_eq!(words("数据库 tools"), 4);
        // A voiced kana (が, which NFD splits into か + U+3099) stays one word.
        assert_eq!(fold("が"), " が ");
    }

    #[test]
    fn devanagari_marks_are_kept() {
        assert_eq!(fold(&normalize("हिन्दी")), "हिन्दी");
        assert_ne!(fold("हिन्दी"), fold("हनद"));
    }
}
