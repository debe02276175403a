//! One fixed window of a request budget: a name, a length aligned to the Unix epoch,
//! and a limit. The leaf every budget (search, publish, PIN failures) and every
//! store (SQLite, Redis) counts with, so a window's arithmetic lives only here.

use std::borrow::Cow;

/// A fixed window: `seconds` long, starting at every multiple of `seconds` since the
/// Unix epoch, admitting `limit` requests per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedWindow {
    /// The name in `RateLimit` headers, metric labels and messages (`minute`).
    pub name: Cow<'static, str>,
    /// The name inside bucket keys (`min` in `search-ip-min:`, SPEC §5).
    pub tag: Cow<'static, str>,
    /// Length in seconds, at least 1.
    pub seconds: i64,
    /// Requests admitted per key and window.
    pub limit: u32,
}

impl FixedWindow {
    /// A window named `name` (also its key tag) of `seconds` (≥ 1) and `limit`.
    pub fn new(name: impl Into<Cow<'static, str>>, seconds: i64, limit: u32) -> Self {
        let name = name.into();
        assert!(seconds >= 1, "a window lasts at least a second");
        Self {
            tag: name.clone(),
            name,
            seconds,
            limit,
        }
    }

    /// The 60 s burst window, keyed `…-min:`.
    pub fn minute(limit: u32) -> Self {
        Self {
            tag: Cow::Borrowed("min"),
            ..Self::new("minute", 60, limit)
        }
    }

    /// The 3600 s sustained window, keyed `…-hour:`.
    pub fn hour(limit: u32) -> Self {
        Self::new("hour", 3600, limit)
    }

    /// Start (unix seconds) of the window containing `now`.
    pub fn start(&self, now: i64) -> i64 {
        now - now.rem_euclid(self.seconds)
    }

    /// Whole seconds from `now` until the window containing it ends: from 1 to
    /// `seconds` (a window that starts at `now` has all of them left).
    pub fn seconds_left(&self, now: i64) -> i64 {
        self.start(now) + self.seconds - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000; // a multiple of 3600

    #[test]
    fn windows_are_aligned_to_the_epoch() {
        let minute = FixedWindow::minute(20);
        assert_eq!(minute.start(T0 + 61), T0 + 60);
        assert_eq!(minute.start(T0 - 1), T0 - 60);
        assert_eq!(FixedWindow::hour(1).start(T0 + 3599), T0);
    }

    #[test]
    fn seconds_left_counts_down_to_the_boundary_and_is_never_zero() {
        let minute = FixedWindow::minute(20);
        assert_eq!(minute.seconds_left(T0), 60);
        assert_eq!(minute.seconds_left(T0 + 1), 59);
        assert_eq!(minute.seconds_left(T0 + 59), 1);
    }

    #[test]
    fn the_minute_window_keeps_the_specs_key_tag() {
        assert_eq!(FixedWindow::minute(1).tag, "min");
        assert_eq!(FixedWindow::hour(1).tag, "hour");
        assert_eq!(FixedWindow::new("day", 86_400, 1).tag, "day");
    }
}
