//! The store in a `sled::Tree`.
//!
//! Layout of the tree (all values JSON):
//! - `<lowercased ARM id>` → `{"value": <resource as stored>, "origin": "world"|"api", "seq": n}`;
//! - `#subscription` → the subscription id the simulated cloud belongs to;
//! - `#clock` → the counter behind etags and creation order;
//! - `#addresses` → how many public IP addresses the simulated cloud has allocated.
//!
//! Every change is noted as dirty; [`Store::commit`] writes the dirty keys in one batch and flushes.

use crate::arm::ArmId;
use crate::core::store::{Entry, Origin, Store, DEFAULT_SUBSCRIPTION};
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const SUBSCRIPTION_KEY: &str = "#subscription";
const CLOCK_KEY: &str = "#clock";
const ADDRESSES_KEY: &str = "#addresses";

#[derive(Serialize, Deserialize)]
struct Persisted {
    value: Value,
    origin: Origin,
    seq: u64,
}

impl Store {
    /// Loads the store from `tree`. Keys that are neither ids nor metadata (an audit log kept in the
    /// same tree, say) are ignored.
    pub fn open(tree: sled::Tree, subscription: Option<String>) -> Result<Store, SimError> {
        let mut store = Store::in_memory(DEFAULT_SUBSCRIPTION);
        for item in tree.iter() {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let corrupt = |detail: String| SimError::Corrupt { key: key.clone(), detail };
            if key == SUBSCRIPTION_KEY {
                store.subscription = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key == CLOCK_KEY {
                store.clock = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key == ADDRESSES_KEY {
                store.addresses = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key.starts_with('/') {
                let p: Persisted = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
                let id_text = p.value.get("id").and_then(Value::as_str).unwrap_or(&key);
                let id = ArmId::parse(id_text).map_err(corrupt)?;
                if id.key() != key {
                    return Err(corrupt(format!("the stored resource has id {id}")));
                }
                store.index(&Entry::new(id, p.value, p.origin, p.seq));
            }
        }
        store.tree = Some(tree);
        if let Some(sub) = subscription {
            store.set_subscription(&sub);
        }
        store.commit()?;
        Ok(store)
    }

    /// Writes every change since the last commit to the tree in one batch and flushes it.
    /// Without a tree (in-memory store) this only forgets the changes.
    pub fn commit(&mut self) -> Result<(), SimError> {
        let Some(tree) = &self.tree else {
            self.dirty.clear();
            self.meta_dirty = false;
            return Ok(());
        };
        if self.dirty.is_empty() && !self.meta_dirty {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for key in &self.dirty {
            match self.entries.get(key) {
                Some(e) => {
                    let p = Persisted { value: e.value.clone(), origin: e.origin, seq: e.seq };
                    batch.insert(key.as_bytes(), serde_json::to_vec(&p).expect("JSON values always serialise"));
                }
                None => batch.remove(key.as_bytes()),
            }
        }
        if self.meta_dirty {
            batch.insert(SUBSCRIPTION_KEY, serde_json::to_vec(&self.subscription).expect("a string serialises"));
            batch.insert(CLOCK_KEY, serde_json::to_vec(&self.clock).expect("a number serialises"));
            batch.insert(ADDRESSES_KEY, serde_json::to_vec(&self.addresses).expect("a number serialises"));
        }
        tree.apply_batch(batch)?;
        tree.flush()?;
        self.dirty.clear();
        self.meta_dirty = false;
        Ok(())
    }
}
