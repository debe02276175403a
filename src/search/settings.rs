//! The search limits of SPEC §2 other than the budget, as `configuration` reads
//! them and the search state holds them.

/// The search limits of SPEC §2 other than the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    /// Scoring slots, the scorer actors (`SEARCH_CONCURRENCY`).
    pub concurrency: usize,
    /// Entries the result LRU holds at most (`SEARCH_CACHE_ENTRIES`).
    pub cache_entries: usize,
    /// Bytes the cache's entries may keep alive (`SEARCH_CACHE_MAX_BYTES`).
    pub cache_max_bytes: usize,
    /// Rows one search keeps, over all its pages (`SEARCH_RESULT_LIMIT`).
    pub result_limit: usize,
    /// Valid searches between gate 1 and their response (`SEARCH_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            concurrency: 2,
            cache_entries: 256,
            cache_max_bytes: 64 << 20,
            result_limit: 50,
            max_in_flight: 64,
        }
    }
}
