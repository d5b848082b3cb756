//! Per-user request rate limiting on `/a2a` (GCRA: a sustained rate plus a burst).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Forgotten users' state is dropped every this many checks, so memory stays bounded.
const SWEEP_EVERY: u64 = 4096;

pub(crate) struct UserRateLimit {
    limiter: Option<DefaultKeyedRateLimiter<String>>,
    checks: AtomicU64,
}

impl UserRateLimit {
    /// `per_minute == 0` turns the limit off.
    pub(crate) fn new(per_minute: u32, burst: u32) -> UserRateLimit {
        let limiter = NonZeroU32::new(per_minute).map(|rate| {
            let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
            RateLimiter::keyed(Quota::per_minute(rate).allow_burst(burst))
        });
        UserRateLimit {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    /// `per_hour == 0` turns the limit off.
    pub(crate) fn per_hour(per_hour: u32, burst: u32) -> UserRateLimit {
        let limiter = NonZeroU32::new(per_hour).map(|rate| {
            let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
            RateLimiter::keyed(Quota::per_hour(rate).allow_burst(burst))
        });
        UserRateLimit {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    /// Counts a request of `user`; `Err(seconds)` says when to retry.
    pub(crate) fn check(&self, user: &str) -> Result<(), u64> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            limiter.retain_recent();
        }
        limiter.check_key(&user.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_has_an_own_budget() {
        let limit = UserRateLimit::new(1, 2);
        assert!(limit.check("alice").is_ok());
        assert!(limit.check("alice").is_ok());
        let retry = limit.check("alice").unwrap_err();
        assert!((1..=60).contains(&retry), "retry after {retry}");
        assert!(limit.check("bob").is_ok());
        let off = UserRateLimit::new(0, 0);
        for _ in 0..100 {
            assert!(off.check("alice").is_ok());
        }
    }
}
