use super::*;

fn slots(limit: usize) -> Arc<Slots> {
    let config = RuntimeConfig {
        max_concurrent_runs: limit,
        ..RuntimeConfig::default()
    };
    Arc::new(Slots::new(&config, [&SkillId::from("s")], None))
}

#[tokio::test]
async fn slots_are_limited_and_waiters_served_in_order() {
    let slots = slots(1);
    let held = slots.try_take("s").expect("a free slot");
    assert!(slots.try_take("s").is_none());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..3 {
        let (waiter, tx) = (slots.clone(), tx.clone());
        tokio::spawn(async move {
            let slot = waiter.take("s").await.unwrap();
            tx.send(n).unwrap();
            drop(slot);
        });
        // Queue them in a known order (a waiter that never queues fails the test
        // rather than hanging it).
        let queued = async {
            while slots.waiting() < n + 1 {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), queued)
            .await
            .unwrap_or_else(|_| panic!("waiter {n} never queued for the slot"));
    }
    // A free slot goes to the longest waiter, not to whoever asks now.
    drop(held);
    assert!(
        slots.try_take("s").is_none(),
        "a late caller took the freed slot"
    );
    let mut order = Vec::new();
    for _ in 0..3 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv());
        order.push(next.await.expect("a waiter never got the slot").unwrap());
    }
    assert_eq!(order, [0, 1, 2]);
    assert_eq!(slots.waiting(), 0);
}

#[test]
fn a_backlog_counts_as_waiting_until_each_asks_or_it_is_dropped() {
    let slots = slots(1);
    let mut backlog = slots.backlog(3);
    assert_eq!(slots.waiting(), 3);
    backlog.asking();
    assert_eq!(slots.waiting(), 2);
    drop(backlog);
    assert_eq!(slots.waiting(), 0);
}

#[test]
fn an_unregistered_skill_has_no_slot() {
    assert!(slots(1).try_take("nope").is_none());
}
