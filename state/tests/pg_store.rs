//! The PostgreSQL state backend against a real (throwaway) server: the behaviours of the sled
//! backend, locks across sessions, dropped connections and server restarts.

mod common;

use common::{connect, database};
use trellis_state::{Acquired, LockInfo, StateError, StateStore, Workspace};

const SHOOT: &str = "shoot--dev--alpha";

#[test]
fn connect_commit_load_list_and_lock() {
    let (_server, url) = database("smoke");
    let store = connect(&url);
    assert_eq!(store.load(SHOOT).unwrap(), None);
    let mut ws = Workspace::new(SHOOT);
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(ws.serial, 2);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].serial, 2);
    let info = LockInfo::here("apply");
    assert_eq!(store.lock(SHOOT, &info).unwrap(), Acquired::Fresh);
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(info.clone()));
    let other = connect(&url);
    match other.lock(SHOOT, &LockInfo::here("plan")) {
        Err(StateError::Locked { holder, .. }) => assert_eq!(holder, info),
        other => panic!("expected Locked, got {other:?}"),
    }
    store.unlock(SHOOT, &info.id).unwrap();
    assert_eq!(other.lock(SHOOT, &LockInfo::here("plan")).unwrap(), Acquired::Fresh);
    store.close().unwrap();
    other.close().unwrap();
}
