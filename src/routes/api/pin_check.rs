//! The PIN check in front of every route that changes a page: bounded guessing per
//! client, argon2 off the executor, and logs that show only the hashed client key.

use actix_web::HttpRequest;

use super::error::ApiError;
use crate::budget::store::CountMode;
use crate::domain::PageSlug;
use crate::pin;
use crate::state::AppState;

/// The request header that carries a page's PIN.
pub const PIN_HEADER: &str = "X-Page-Pin";

/// Lets the request change the page `slug` if its `X-Page-Pin` is the page's PIN;
/// returns the page id.
///
/// In order: a client (SPEC §5 gate 2) whose PIN-failure budget
/// (`state.budgets.pin_failures`, 10 an hour) is used up gets
/// [`ApiError::TooManyPinFailures`] before anything is looked at; an
/// unknown slug is [`ApiError::NotFound`], and so is a gone (archived or claimed)
/// page without `X-Page-Pin`, or with a wrong one (counted as a failure): a gone
/// page is 404 to all but its PIN holder, as on every read; a page without a PIN is
/// [`ApiError::PageLocked`]; no header is [`ApiError::PinRequired`]; a header that is
/// not UTF-8 is [`ApiError::Validation`]; a wrong PIN is counted against the client
/// and is [`ApiError::WrongPin`]. Only the last costs an argon2 verification.
pub async fn authorize(
    state: &AppState,
    req: &HttpRequest,
    slug: &PageSlug,
) -> Result<i64, ApiError> {
    let client = crate::routes::client_ip(req, &state.trusted_proxies);
    let budget = &state.budgets.pin_failures;
    let keys = budget.keys(&client);
    let bucket = keys.log_prefix().to_owned();
    let _turn = state.api.pin_turns.turn(&keys.0[0]).lock().await;

    let now = state.clock.now();
    let failures = state
        .budgets
        .store
        .counts(budget, keys.clone(), now, CountMode::Peek)
        .await?;
    if let Some(full) = budget
        .windows
        .iter()
        .zip(&failures)
        .find(|(w, count)| **count >= i64::from(w.limit))
    {
        tracing::warn!(
            client = &bucket[..],
            failures = full.1,
            "PIN check refused: too many failures"
        );
        return Err(ApiError::TooManyPinFailures {
            retry_after: full.0.seconds_left(now),
        });
    }

    let page = state
        .pages
        .store
        .pin_record(slug.as_str())
        .await?
        .ok_or_else(|| ApiError::no_page(slug.as_str()))?;
    let given = req.headers().get(PIN_HEADER);
    // A gone (archived or claimed) page is 404 to anyone who cannot show its PIN,
    // as it is on every read: without one, before anything is checked.
    if page.gone && (given.is_none() || page.pin_hash.is_none()) {
        return Err(ApiError::no_page(slug.as_str()));
    }
    let phc = page.pin_hash.ok_or(ApiError::PageLocked)?;
    let given = given.ok_or(ApiError::PinRequired)?;
    let given = std::str::from_utf8(given.as_bytes())
        .map_err(|_| ApiError::validation(PIN_HEADER, "X-Page-Pin must be UTF-8 text"))?
        .to_owned();

    if pin::verify_off_thread(&state.api.hash_slots, given, phc).await? {
        return Ok(page.id);
    }
    let failures = state
        .budgets
        .store
        .counts(budget, keys, now, CountMode::Record)
        .await?;
    tracing::warn!(
        client = &bucket[..],
        slug = slug.as_str(),
        failures = failures.first().copied(),
        "wrong page PIN"
    );
    // Counted like any wrong PIN, so a gone page's PIN cannot be guessed either.
    Err(if page.gone {
        ApiError::no_page(slug.as_str())
    } else {
        ApiError::WrongPin
    })
}
