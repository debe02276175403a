//! The PIN check in front of every route that changes a page: bounded guessing per
//! client and per page, argon2 off the executor, and logs that show only the
//! hashed client key.

use super::error::ApiError;
use crate::budget::store::CountMode;
use crate::budget::WindowCount;
use crate::client_ip::ClientIp;
use crate::domain::PageSlug;
use crate::metrics::PinFailure;
use crate::page_store::PinRecord;
use crate::pin;
use crate::state::AppState;

/// The request header that carries a page's PIN.
pub const PIN_HEADER: &str = "X-Page-Pin";

/// Lets `client` change the page `slug` if `given` (its `X-Page-Pin` header as
/// sent, or the MCP tool's `pin`) is the page's PIN; returns the page id.
///
/// In order: a client (SPEC §5 gate 2) whose PIN-failure budget
/// (`state.budgets.pin_failures`, 10 an hour) is used up gets
/// [`ApiError::TooManyPinFailures`] before anything is looked at; an
/// unknown slug is [`ApiError::NotFound`], and so is a gone (archived or claimed)
/// page without `X-Page-Pin`, or with a wrong one (counted as a failure): a gone
/// page is 404 to all but its PIN holder, as on every read; a page without a PIN is
/// [`ApiError::PageLocked`]; no header is [`ApiError::PinRequired`]; a header that is
/// not UTF-8 is [`ApiError::Validation`]; a page whose own failure budget
/// (`state.budgets.pin_page_failures`, from all clients, 20 an hour by default) is
/// used up is [`ApiError::PageTooManyPinFailures`] for everyone, the right PIN
/// included (404 for a gone page, which must not show that it exists); a wrong PIN
/// is counted against the client and the page and is [`ApiError::WrongPin`]. Only
/// the last costs an argon2 verification.
///
/// Both counts are read under turns (the client's, then the page's), so neither
/// bound is overrun by guesses sent at once. Every `Retry-After` is the store's
/// seconds left of the full window.
pub async fn authorize(
    state: &AppState,
    client: &ClientIp,
    slug: &PageSlug,
    given: Option<&[u8]>,
) -> Result<i64, ApiError> {
    let budgets = &state.budgets;
    let keys = budgets.pin_failures.keys(client);
    let bucket = keys.log_prefix().to_owned();
    let _turn = state.api.pin_turns.turn(&keys.0[0]).lock().await;

    if let Some(full) = full_window(state, &budgets.pin_failures, &keys).await? {
        tracing::warn!(
            client = &bucket[..],
            failures = full.count,
            "PIN check refused: too many failures"
        );
        state.metrics.count_pin_failure(PinFailure::ClientRefused);
        return Err(ApiError::TooManyPinFailures {
            retry_after: full.reset,
        });
    }

    let page = pin_record(state, slug).await?;
    // A gone (archived or claimed) page is 404 to anyone who cannot show its PIN,
    // as it is on every read: without one, before anything is checked.
    if page.gone && (given.is_none() || page.pin_hash.is_none()) {
        return Err(ApiError::no_page(slug.as_str()));
    }
    let phc = page.pin_hash.ok_or(ApiError::PageLocked)?;
    let Some(given) = given else {
        state.metrics.count_pin_failure(PinFailure::Missing);
        return Err(ApiError::PinRequired);
    };
    let given = std::str::from_utf8(given)
        .map_err(|_| ApiError::validation(PIN_HEADER, "X-Page-Pin must be UTF-8 text"))?
        .to_owned();

    let page_keys = budgets.pin_page_failures.keys_of(&page.id.to_string());
    let _page_turn = state.api.page_pin_turns.turn(&page_keys.0[0]).lock().await;
    if let Some(full) = full_window(state, &budgets.pin_page_failures, &page_keys).await? {
        tracing::warn!(
            slug = slug.as_str(),
            failures = full.count,
            "PIN check refused: too many failures against this page"
        );
        state.metrics.count_pin_failure(PinFailure::PageRefused);
        return Err(if page.gone {
            ApiError::no_page(slug.as_str())
        } else {
            ApiError::PageTooManyPinFailures {
                retry_after: full.reset,
            }
        });
    }

    if pin::verify_off_thread(&state.api.hash_slots, given, phc).await? {
        return Ok(page.id);
    }
    let now = state.clock.now();
    let page_failures = budgets
        .store
        .counts(
            &budgets.pin_page_failures,
            page_keys,
            now,
            CountMode::Record,
        )
        .await?;
    let failures = budgets
        .store
        .counts(&budgets.pin_failures, keys, now, CountMode::Record)
        .await?;
    tracing::warn!(
        client = &bucket[..],
        slug = slug.as_str(),
        failures = failures.first().map(|w| w.count),
        page_failures = page_failures.first().map(|w| w.count),
        "wrong page PIN"
    );
    state.metrics.count_pin_failure(PinFailure::Wrong);
    // Counted like any wrong PIN, so a gone page's PIN cannot be guessed either.
    Err(if page.gone {
        ApiError::no_page(slug.as_str())
    } else {
        ApiError::WrongPin
    })
}

/// The PIN record of the page `slug` (its id, PIN hash and whether it is gone); an
/// unknown slug is 404.
pub(super) async fn pin_record(state: &AppState, slug: &PageSlug) -> Result<PinRecord, ApiError> {
    let record = state.pages.store.pin_record(slug.as_str()).await?;
    record.ok_or_else(|| ApiError::no_page(slug.as_str()))
}

/// The first window of `budget` that `keys` has filled, read from the store now
/// (its count, and its seconds left by the store's clock), or `None`.
async fn full_window(
    state: &AppState,
    budget: &std::sync::Arc<crate::budget::Budget>,
    keys: &crate::budget::BucketKeys,
) -> Result<Option<WindowCount>, ApiError> {
    let counts = state
        .budgets
        .store
        .counts(budget, keys.clone(), state.clock.now(), CountMode::Peek)
        .await?;
    Ok(budget
        .windows
        .iter()
        .zip(counts)
        .find(|(w, c)| c.count >= i64::from(w.limit))
        .map(|(_, c)| c))
}
