//! Page PINs: 6–64 chars, stored only as argon2id PHC strings. The argon2 parameters
//! live here and nowhere else.

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::{Algorithm, Argon2, Params, Version};

/// Shortest and longest PIN, in Unicode scalar values.
pub const PIN_MIN: usize = 6;
pub const PIN_MAX: usize = 64;

/// Why a PIN was refused, or could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("pin must be 6 to 64 characters")]
    Length,
    #[error("hashing the pin: {0}")]
    Hash(String),
}

fn argon2() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).expect("static argon2 parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes `pin` to an argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`).
///
/// Errors: [`PinError::Length`] outside 6–64 chars.
pub fn hash(pin: &str) -> Result<String, PinError> {
    let n = pin.chars().count();
    if !(PIN_MIN..=PIN_MAX).contains(&n) {
        return Err(PinError::Length);
    }
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(pin.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PinError::Hash(e.to_string()))
}

/// True when `pin` matches the stored PHC string; a malformed hash never matches.
pub fn verify(pin: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| argon2().verify_password(pin.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashed_pin_verifies_and_a_wrong_one_does_not() {
        let h = hash("123456").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("123456", &h));
        assert!(!verify("654321", &h));
        assert!(!verify("123456", "not a hash"));
    }

    #[test]
    fn pins_outside_6_to_64_chars_are_refused() {
        assert!(matches!(hash("12345"), Err(PinError::Length)));
        assert!(matches!(hash(&"x".repeat(65)), Err(PinError::Length)));
    }
}
