//! Layout of a workspace in the sled backend since state format 4: one key per part — each resource
//! record, the outputs, the provider state, the applied manifest — and a small head value (shoot, lineage, serial, resource
//! count and the digest of the parts), so a commit writes only the parts that changed and the head (see
//! the crate docs, "Storage layout").
//!
//! The digest of a workspace's parts is the XOR of the BLAKE3 hashes of its parts, each hashed with
//! its full key (so a part moved to another key or another shoot changes it). A part changed, added
//! or removed behind trellis' back changes the digest, which no longer matches the one in the head
//! value; the head value itself is covered by the checksum its head record and history entry name.

use crate::{ProviderState, StoredResource, Workspace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Tag of a resource record's key (followed by the resource's address).
const RESOURCE: u8 = b'r';
/// Tag of the outputs' key.
const OUTPUTS: u8 = b'o';
/// Tag of the provider state's key.
const PROVIDER: u8 = b'p';
/// Tag of the applied manifest's key.
const MANIFEST: u8 = b'm';

/// The head value of a workspace stored in parts.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct HeadValue {
    pub shoot: String,
    pub lineage: String,
    pub serial: u64,
    /// How many resource records the workspace holds (for `state list`).
    pub resources: usize,
    /// [`digest`] of the workspace's parts, hex.
    pub parts: String,
}

/// `shoot ++ 0xFF`: every key of a shoot's parts starts with this (0xFF never occurs in UTF-8).
pub(crate) fn prefix(shoot: &str) -> Vec<u8> {
    let mut key = shoot.as_bytes().to_vec();
    key.push(0xFF);
    key
}

fn key(shoot: &str, tag: u8, name: &str) -> Vec<u8> {
    let mut key = prefix(shoot);
    key.push(tag);
    key.extend_from_slice(name.as_bytes());
    key
}

/// The shoot a part's key belongs to, if the key has the form of one.
pub(crate) fn shoot_of(key: &[u8]) -> Option<&str> {
    let end = key.iter().position(|&b| b == 0xFF)?;
    std::str::from_utf8(&key[..end]).ok()
}

/// The parts of `ws`, full key -> value (compact JSON).
pub(crate) fn parts(ws: &Workspace) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (address, resource) in &ws.resources {
        out.insert(key(&ws.shoot, RESOURCE, address), json(resource));
    }
    if let Some(outputs) = &ws.outputs {
        out.insert(key(&ws.shoot, OUTPUTS, ""), json(outputs));
    }
    if let Some(state) = &ws.provider_state {
        out.insert(key(&ws.shoot, PROVIDER, ""), json(state));
    }
    if let Some(manifest) = &ws.applied_manifest {
        out.insert(key(&ws.shoot, MANIFEST, ""), json(manifest));
    }
    out
}

fn json<T: Serialize>(value: &T) -> Vec<u8> {
    // Resources, outputs and provider state are strings and JSON values: serialising cannot fail.
    serde_json::to_vec(value).expect("a workspace part serialises")
}

/// Running digest of a workspace's parts: the XOR of each part's BLAKE3 hash of (key length, key,
/// value). The order of the parts does not matter.
#[derive(Default, Clone, Copy, PartialEq, Debug)]
pub(crate) struct Digest([u8; 32]);

impl Digest {
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&(key.len() as u64).to_le_bytes());
        hasher.update(key);
        hasher.update(value);
        for (d, h) in self.0.iter_mut().zip(hasher.finalize().as_bytes()) {
            *d ^= h;
        }
    }

    pub(crate) fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// The head value of `ws` with the digest of `parts` (its [`parts`]).
pub(crate) fn head_value(ws: &Workspace, parts: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let mut digest = Digest::default();
    for (key, value) in parts {
        digest.add(key, value);
    }
    let head = HeadValue {
        shoot: ws.shoot.clone(),
        lineage: ws.lineage.clone(),
        serial: ws.serial,
        resources: ws.resources.len(),
        parts: digest.hex(),
    };
    serde_json::to_vec(&head).expect("a head value serialises")
}

/// Builds the workspace from its head value and its parts (full key -> value). The caller has checked
/// the parts against the head's digest (`SledStore::load` does, as it reads them: a mismatch is damage,
/// reported before anything is parsed), so this hashes nothing. `Err`: what is wrong, in words.
pub(crate) fn assemble<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    head: &HeadValue,
    parts: impl IntoIterator<Item = (K, V)>,
) -> Result<Workspace, String> {
    let mut ws = Workspace {
        shoot: head.shoot.clone(),
        lineage: head.lineage.clone(),
        serial: head.serial,
        resources: BTreeMap::new(),
        outputs: None,
        provider_state: None,
        applied_manifest: None,
    };
    let prefix = prefix(&head.shoot);
    for (key, value) in parts {
        let (key, value) = (key.as_ref(), value.as_ref());
        let Some(rest) = key.strip_prefix(prefix.as_slice()) else {
            return Err("a record of another workspace is stored among its records".to_string());
        };
        let name = String::from_utf8_lossy(rest.get(1..).unwrap_or_default()).into_owned();
        let parsed = match rest.first() {
            Some(&RESOURCE) => serde_json::from_slice::<StoredResource>(value)
                .map(|r| {
                    ws.resources.insert(name.clone(), r);
                })
                .map_err(|e| format!("its resource record {name} does not parse ({e})")),
            Some(&OUTPUTS) => serde_json::from_slice(value)
                .map(|o| ws.outputs = Some(o))
                .map_err(|e| format!("its outputs record does not parse ({e})")),
            Some(&PROVIDER) => serde_json::from_slice::<ProviderState>(value)
                .map(|p| ws.provider_state = Some(p))
                .map_err(|e| format!("its provider state record does not parse ({e})")),
            Some(&MANIFEST) => serde_json::from_slice(value)
                .map(|m| ws.applied_manifest = Some(m))
                .map_err(|e| format!("its applied manifest record does not parse ({e})")),
            _ => Err(format!(
                "it holds a record of a kind this trellis does not know ({})",
                String::from_utf8_lossy(rest)
            )),
        };
        parsed?;
    }
    Ok(ws)
}
