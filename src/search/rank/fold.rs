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
    out.nfc().collect()
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
    fn devanagari_marks_are_kept() {
        assert_eq!(fold(&normalize("हिन्दी")), "हिन्दी");
        assert_ne!(fold("हिन्दी"), fold("हनद"));
    }
}
