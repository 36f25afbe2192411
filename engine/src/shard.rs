//! `--shard I/N`: the I-th of N stable shards of a fleet, so N runners split one fleet between them.
//!
//! A shoot belongs to shard `1 + (h mod N)`, where `h` is the first 8 bytes of the sha256 of its
//! technical id (`shoot--<project>--<name>`) read as a big-endian unsigned integer. The function is
//! fixed: every runner, on every machine and every trellis version, puts a shoot in the same shard,
//! and a shoot's domains plan (workspace `<id>+domains`) goes with its shoot (it is sharded by the
//! shoot's technical id, not by its workspace name).

use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;

/// One shard of a fleet: `index` of `count`, 1 ≤ index ≤ count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// The shard (1-based) of `count` that `technical_id` belongs to.
    pub fn number_of(technical_id: &str, count: u32) -> u32 {
        let digest = Sha256::digest(technical_id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        (u64::from_be_bytes(first) % u64::from(count)) as u32 + 1
    }

    /// Whether the shoot with this technical id is planned and applied by this shard.
    pub fn takes(&self, technical_id: &str) -> bool {
        Shard::number_of(technical_id, self.count) == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a `--shard` value is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("--shard {value}: {why}; pass I/N with 1 <= I <= N, e.g. --shard 1/4 for the first of 4 runners")]
pub struct BadShard {
    value: String,
    why: &'static str,
}

impl FromStr for Shard {
    type Err = BadShard;

    fn from_str(value: &str) -> Result<Shard, BadShard> {
        let bad = |why| BadShard { value: value.to_string(), why };
        let (i, n) = value.trim().split_once('/').ok_or_else(|| bad("not of the form I/N"))?;
        let parse = |s: &str, what| s.trim().parse::<u32>().map_err(|_| bad(what));
        let index = parse(i, "I is not a whole number")?;
        let count = parse(n, "N is not a whole number")?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(bad("I must be between 1 and N"));
        }
        Ok(Shard { index, count })
    }
}

/// How a shard split a fleet: the shoots (technical ids) it took, and those it left to the other shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardCount {
    pub taken: usize,
    pub left: usize,
}

impl ShardCount {
    /// The line a sharded command prints (on stderr): `shard 1/4: 3 of the fleet's 10 shoot(s); 7 left to the other shards`.
    pub fn line(&self, shard: Shard) -> String {
        format!(
            "shard {shard}: {} of the fleet's {} shoot(s) here; {} left to the other shards.",
            self.taken,
            self.taken + self.left,
            self.left
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shard_function_is_fixed() {
        // Pinned (computed independently: `sha256(id)[..8]` big-endian, mod N, plus 1): a change here
        // re-shards every fleet, and runners of two versions would disagree.
        for (id, of4, of2) in [("shoot--dev--bravo", 2, 2), ("shoot--dev--alpha", 4, 2), ("shoot--prod--x", 3, 1)] {
            assert_eq!(Shard::number_of(id, 4), of4, "{id}");
            assert_eq!(Shard::number_of(id, 2), of2, "{id}");
            assert_eq!(Shard::number_of(id, 1), 1, "{id}");
        }
    }

    #[test]
    fn every_shoot_is_in_exactly_one_shard() {
        for n in 1..=5u32 {
            for k in 0..200 {
                let id = format!("shoot--p--s{k}");
                let takers = (1..=n).filter(|i| Shard { index: *i, count: n }.takes(&id)).count();
                assert_eq!(takers, 1, "{id} of {n}");
            }
        }
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        for (value, why) in [
            ("3", "not of the form I/N"),
            ("0/4", "I must be between 1 and N"),
            ("5/4", "I must be between 1 and N"),
            ("1/0", "N must be at least 1"),
            ("a/4", "I is not a whole number"),
            ("1/-2", "N is not a whole number"),
        ] {
            let e = value.parse::<Shard>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("--shard {value}: {why};")), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
        assert_eq!("2/4".parse::<Shard>().unwrap().to_string(), "2/4");
    }
}
