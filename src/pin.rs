//! Page PINs: 6–64 chars, stored only as argon2id PHC strings. The argon2 parameters
//! live here and nowhere else, beside the two per-process bounds on checking PINs:
//! [`HashSlots`] (argon2 computations at once) and [`PinTurns`] (one check at a
//! time per client).

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::{Mutex, Semaphore};

/// Shortest and longest PIN, in Unicode scalar values.
pub const PIN_MIN: usize = 6;
pub const PIN_MAX: usize = 64;

/// argon2 computations running at once in the process. Each holds 19 MiB for tens
/// of milliseconds, so a burst of PIN checks must queue rather than exhaust memory.
pub const CONCURRENT_HASHES: usize = 4;

/// The process's argon2 slots: [`CONCURRENT_HASHES`] permits, held in the app
/// state (one per process, never a global shared by every test in a binary).
#[derive(Debug, Clone)]
pub struct HashSlots(std::sync::Arc<Semaphore>);

impl Default for HashSlots {
    fn default() -> Self {
        Self(std::sync::Arc::new(Semaphore::new(CONCURRENT_HASHES)))
    }
}

/// Per-client turns, striped by bucket key. One client's checks run one at a time,
/// so each reads a failure count that includes all of its earlier attempts: the
/// limit holds however many requests a client sends at once. Clients that share a
/// stripe only wait for each other. One per process, in the app state.
#[derive(Debug, Clone)]
pub struct PinTurns(std::sync::Arc<[Mutex<()>; 64]>);

impl Default for PinTurns {
    fn default() -> Self {
        Self(std::sync::Arc::new([const { Mutex::const_new(()) }; 64]))
    }
}

impl PinTurns {
    /// The turn of the client whose first bucket key is `bucket` (hex, at least
    /// 4 chars): lock it for the whole check.
    pub fn turn(&self, bucket: &str) -> &Mutex<()> {
        let n = usize::from_str_radix(&bucket[..4], 16).expect("hex bucket key");
        &self.0[n % self.0.len()]
    }
}

/// Why a PIN was refused, or could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("pin must be 6 to 64 characters")]
    Length,
    #[error("pin must not start or end with whitespace or hold control characters: it is sent back in the X-Page-Pin header, which cannot carry them")]
    Unsendable,
    #[error("hashing the pin: {0}")]
    Hash(String),
}

/// Whether `pin` can be a page's PIN.
///
/// Errors: [`PinError::Length`] unless it has 6–64 Unicode scalar values;
/// [`PinError::Unsendable`] when HTTP could not carry it back in a header (a PIN that
/// starts or ends with whitespace, or holds a control character, would lock its page
/// for good).
pub fn check(pin: &str) -> Result<(), PinError> {
    if !(PIN_MIN..=PIN_MAX).contains(&pin.chars().count()) {
        Err(PinError::Length)
    } else if pin.trim() != pin || pin.chars().any(char::is_control) {
        Err(PinError::Unsendable)
    } else {
        Ok(())
    }
}

fn argon2() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).expect("static argon2 parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes `pin` to an argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`).
///
/// Errors: as [`check`].
pub fn hash(pin: &str) -> Result<String, PinError> {
    check(pin)?;
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

/// [`hash`] on a blocking thread, for async callers: argon2 must never run on the
/// executor. Waits for one of [`CONCURRENT_HASHES`] slots first.
pub async fn hash_off_thread(slots: &HashSlots, pin: String) -> Result<String, PinError> {
    check(&pin)?;
    let _slot = slots
        .0
        .acquire()
        .await
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || hash(&pin))
        .await
        .map_err(|e| PinError::Hash(e.to_string()))?
}

/// [`verify`] on a blocking thread, for async callers; waits for a slot as
/// [`hash_off_thread`] does. Errors only when the worker thread failed.
pub async fn verify_off_thread(
    slots: &HashSlots,
    pin: String,
    phc: String,
) -> Result<bool, PinError> {
    let _slot = slots
        .0
        .acquire()
        .await
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || verify(&pin, &phc))
        .await
        .map_err(|e| PinError::Hash(e.to_string()))
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

    #[test]
    fn pins_a_header_cannot_carry_are_refused() {
        for bad in [" 123456", "123456 ", "123\n456", "123\t456", "12\u{7f}3456"] {
            assert!(matches!(check(bad), Err(PinError::Unsendable)), "{bad:?}");
        }
        for ok in ["correct horse", "ünïcødé", "12-34-56"] {
            assert!(check(ok).is_ok(), "{ok:?}");
        }
    }
}
