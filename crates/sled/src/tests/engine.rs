//! What fundi relies on in its patched sled: index nodes split and merge without losing keys, and a sync store syncs the log for each flush it waits for.

use super::*;

/// The vendored sled splits index nodes above 64 children and merges them below 16
/// instead of 256 and 64 (`vendor/sled/FUNDI-PATCH.md`). Enough keys for many index
/// nodes, written in order (as task ids and listing keys are) and scattered, then mostly
/// removed (leaves merge, and so index nodes), read back exactly, before and after a
/// reopen.
#[tokio::test]
async fn sled_index_nodes_split_and_merge_without_losing_keys() {
    use std::collections::BTreeMap;
    const N: u32 = 20_011; // prime: `i * 7_919 % N` visits every i once.
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::<Vec<u8>, Vec<u8>>::new();
    let in_order = |i: u32| [b"a".as_slice(), &i.to_be_bytes()].concat();
    let scattered = |i: u32| [b"b".as_slice(), &(i * 7_919 % N).to_be_bytes()].concat();
    let assert_same = |db: &sled::Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str| {
        let stored: Vec<(Vec<u8>, Vec<u8>)> = db
            .iter()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(stored.len(), expected.len(), "{when}: number of keys");
        assert!(stored == expected, "{when}: keys or values differ");
        for (key, value) in model.iter().step_by(97) {
            assert_eq!(
                db.get(key).unwrap().as_deref(),
                Some(value.as_slice()),
                "{when}"
            );
        }
    };
    {
        let db = sled::open(dir.path()).unwrap();
        for i in 0..N {
            for key in [in_order(i), scattered(i)] {
                let value = vec![(i % 251) as u8; 1 + (i % 40) as usize];
                db.insert(&key, value.as_slice()).unwrap();
                model.insert(key, value);
            }
        }
        assert_same(&db, &model, "written");
        // Nine in ten of the ordered keys, in long runs: whole leaves empty out.
        for i in (0..N).filter(|i| i % 1_000 >= 100) {
            db.remove(in_order(i)).unwrap();
            model.remove(&in_order(i));
        }
        // Three in four of the scattered ones.
        for i in (0..N).filter(|i| i % 4 != 0) {
            db.remove(scattered(i)).unwrap();
            model.remove(&scattered(i));
        }
        assert_same(&db, &model, "mostly removed");
        db.flush().unwrap();
    }
    let db = reopen_raw(dir.path()).await;
    assert_same(&db, &model, "reopened");
    for i in 0..N / 2 {
        let key = in_order(N + i);
        db.insert(&key, &[1]).unwrap();
        model.insert(key, vec![1]);
    }
    assert_same(&db, &model, "written again after the reopen");
}

/// sled's flush alone does not survive a power loss (`log_sync`): every flush a `sync`
/// store waits for syncs the log file, and a settle with nothing pending syncs nothing.
#[tokio::test]
async fn a_sync_store_syncs_its_log_for_each_flush_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
    // Opening ends with a flush: what repair wrote is durable before anything is read.
    assert_eq!(store.log.syncs(), 1);
    let r = record("t1", "c", TaskState::Working, 1_000, "u");
    store.commit(&r, 0, &[created(&r)]).await.unwrap();
    assert_eq!(store.log.syncs(), 2, "a commit waits for a synced flush");
    store.settle().await.unwrap();
    assert_eq!(store.log.syncs(), 2, "nothing pending: no flush, no sync");
    advance(&store, "t1", TaskState::Completed, 2_000).await;
    assert_eq!(store.log.syncs(), 3);
    store.flush().await.unwrap();
    assert_eq!(store.log.syncs(), 4, "an explicit flush syncs too");
}
