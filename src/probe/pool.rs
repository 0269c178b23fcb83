//! A work pool for probes that handle many independent items (interpreters): one thread per
//! core pulling from one queue, results kept in the items' order, a panic in one item costing
//! that item only, and the probe deadline checked before each item is taken.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// What became of one item.
#[derive(Debug)]
pub enum Slot<R> {
    /// It was handled.
    Done(R),
    /// Handling it panicked (a bug in envdoctor); the panic was caught.
    Panicked,
    /// The deadline came before it was taken.
    Skipped,
}

/// `f` over `items` on up to `available_parallelism` threads (each with the probe stack), in
/// the items' order.
pub fn map_in_order<T, R, F>(items: &[T], deadline: Instant, f: F) -> Vec<Slot<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while Instant::now() < deadline {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item)));
            done.push((i, r.map_or(Slot::Panicked, Slot::Done)));
        }
        done
    };
    let finished: Vec<(usize, Slot<R>)> = if workers == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .stack_size(super::PROBE_STACK)
                        .spawn_scoped(s, work)
                        .ok()
                })
                .collect();
            // A worker's own panic is impossible (each item's is caught); a failed join loses
            // only that worker's items, which read as skipped.
            handles
                .into_iter()
                .filter_map(|h| h.join().ok())
                .flatten()
                .collect()
        })
    };
    let mut out: Vec<Slot<R>> = (0..items.len()).map(|_| Slot::Skipped).collect();
    for (i, r) in finished {
        out[i] = r;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn keeps_order_and_isolates_a_panic() {
        let items: Vec<u32> = (0..50).collect();
        let far = Instant::now() + Duration::from_secs(60);
        let out = map_in_order(&items, far, |&n| {
            assert!(n != 7, "item seven breaks");
            n * 2
        });
        assert_eq!(out.len(), 50);
        for (n, slot) in items.iter().zip(&out) {
            match slot {
                Slot::Done(v) => assert_eq!(*v, n * 2),
                Slot::Panicked => assert_eq!(*n, 7),
                Slot::Skipped => panic!("{n} skipped before the deadline"),
            }
        }
    }

    #[test]
    fn a_past_deadline_skips_everything() {
        let out = map_in_order(&[1, 2, 3], Instant::now(), |&n: &i32| n);
        assert!(out.iter().all(|s| matches!(s, Slot::Skipped)));
    }
}
