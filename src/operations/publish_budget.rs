//! The publish budget (SPEC §9): every page write through the API (create, update,
//! archive, claim) spends one request from the client's two windows
//! (`PUBLISH_RATE_PER_MINUTE`, `PUBLISH_RATE_PER_HOUR`), both-or-neither, with the
//! same client identity as search. A refusal is 429 `/problems/publish-rate-limited`
//! with `Retry-After` and `RateLimit` headers.

use actix_web::http::header::HeaderValue;

use super::error::ApiError;
use crate::budget::error::BudgetStoreError;
use crate::budget::Decision;
use crate::client_ip::ClientIp;
use crate::state::AppState;

/// The `RateLimit-Policy` and `RateLimit` header values of an admitted write, to
/// put on its answer ([`crate::http::rate_limit_headers::with_spent`]).
#[derive(Debug, Clone)]
pub struct Spent {
    pub policy: HeaderValue,
    pub state: String,
}

/// Spends one page write for `client`.
///
/// Errors: [`ApiError::PublishRateLimited`] when a window is full (nothing counted),
/// [`ApiError::BudgetUnavailable`] when the store does not answer in time,
/// [`ApiError::Internal`] on a store failure.
pub async fn spend(state: &AppState, client: &ClientIp) -> Result<Spent, ApiError> {
    let budget = &state.budgets.publish;
    let keys = budget.keys(client);
    let bucket = keys.log_prefix().to_owned();
    let now = state.clock.now();
    let decision = state
        .budgets
        .store
        .spend(budget, keys, now)
        .await
        .map_err(ApiError::from)?;
    let spent = Spent {
        policy: state.budgets.policies.publish.clone(),
        state: budget.state_header(&decision),
    };
    match decision {
        Decision::Admitted(_) => Ok(spent),
        Decision::Refused {
            window,
            retry_after,
        } => {
            tracing::warn!(
                client = &bucket[..],
                window = &*budget.windows[window].name,
                "page write refused: publish budget spent"
            );
            Err(ApiError::PublishRateLimited {
                window: budget.windows[window].name.to_string(),
                retry_after,
                policy: spent.policy,
                state: spent.state,
            })
        }
    }
}

impl From<BudgetStoreError> for ApiError {
    /// As `crate::faults::TABLE` says for the budget store.
    fn from(e: BudgetStoreError) -> Self {
        use crate::faults::{answer, StorageAnswer, Store};
        match answer(Store::Budget, e.fault()) {
            StorageAnswer::Internal => ApiError::Internal(e.into()),
            // The store logs the incident once (down, and up again), not per request.
            other => other.into(),
        }
    }
}
