//! CIDR checks with the semantics and messages of gardener's `pkg/utils/validation/cidr`, shared by
//! the providers' admission validation (Azure, GCP) and [`crate::networking`].
//!
//! - [`Cidr::validate_subset`] reports on the *subset's* path: `must be a subset of "<path>" ("<cidr>")`.
//! - [`Cidr::validate_not_overlap`] reports on the other CIDR's path: `must not overlap with "<path>" ("<cidr>")`.
//! - Both skip silently when either side fails to parse; [`Cidr::validate_parse`] reports that
//!   (`invalid CIDR address: <s>`, Go's `net.ParseCIDR` error).

use std::net::IpAddr;

use ipnet::IpNet;

use crate::field::{escape_unprintable, go_quote, ErrorList, FieldError, Path};

/// A CIDR string with the field path it came from (gardener's `cidrvalidation.CIDR`).
#[derive(Clone, Debug)]
pub struct Cidr {
    cidr: String,
    path: Path,
    net: Result<IpNet, String>,
}

impl Cidr {
    /// `cidrvalidation.NewCIDR(c, path)`.
    pub fn new(cidr: &str, path: Path) -> Cidr {
        let net = parse_cidr(cidr).map(|(_, net)| net);
        Cidr { cidr: cidr.to_string(), path, net }
    }

    pub fn cidr(&self) -> &str {
        &self.cidr
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed network (address truncated to the prefix), if it parses.
    pub fn net(&self) -> Option<IpNet> {
        self.net.as_ref().ok().copied()
    }

    /// `Parse()`: whether the CIDR parses.
    pub fn parses(&self) -> bool {
        self.net.is_ok()
    }

    /// `ValidateParse()`: Invalid on this path with Go's parse error.
    pub fn validate_parse(&self) -> ErrorList {
        match &self.net {
            Ok(_) => Vec::new(),
            Err(e) => vec![FieldError::invalid(&self.path, &self.cidr, e.as_str())],
        }
    }

    /// `ValidateSubset(subsets...)`: every subset must lie within this CIDR (first and last address).
    pub fn validate_subset(&self, subsets: &[&Cidr]) -> ErrorList {
        let mut errs = Vec::new();
        let Ok(net) = &self.net else { return errs };
        for subset in subsets {
            if std::ptr::eq(*subset, self) {
                continue;
            }
            let Ok(sub) = &subset.net else { continue };
            if !net.contains(&sub.network()) || !net.contains(&sub.broadcast()) {
                errs.push(FieldError::invalid(
                    &subset.path,
                    &subset.cidr,
                    format!("must be a subset of {} ({})", go_quote(self.path.as_str()), go_quote(&self.cidr)),
                ));
            }
        }
        errs
    }

    /// `ValidateNotOverlap(subsets...)`: no subset may overlap this CIDR.
    pub fn validate_not_overlap(&self, subsets: &[&Cidr]) -> ErrorList {
        let mut errs = Vec::new();
        let Ok(net) = &self.net else { return errs };
        for subset in subsets {
            if std::ptr::eq(*subset, self) {
                continue;
            }
            let Ok(sub) = &subset.net else { continue };
            if !net.contains(&sub.network()) && !sub.contains(&net.network()) {
                continue;
            }
            errs.push(FieldError::invalid(
                &subset.path,
                &subset.cidr,
                format!("must not overlap with {} ({})", go_quote(self.path.as_str()), go_quote(&self.cidr)),
            ));
        }
        errs
    }

    /// Whether `other` lies within this CIDR (false when either fails to parse).
    pub fn contains(&self, other: &Cidr) -> bool {
        match (&self.net, &other.net) {
            (Ok(net), Ok(sub)) => net.contains(&sub.network()) && net.contains(&sub.broadcast()),
            _ => false,
        }
    }
}

/// `ValidateCIDRParse(cidrs...)`.
pub fn validate_cidr_parse(cidrs: &[&Cidr]) -> ErrorList {
    cidrs.iter().flat_map(|c| c.validate_parse()).collect()
}

/// `ValidateCIDROverlap(cidrs, false)`: pairwise, reported on the later element.
pub fn validate_cidr_not_overlap(cidrs: &[Cidr]) -> ErrorList {
    let mut errs = Vec::new();
    for i in 0..cidrs.len().saturating_sub(1) {
        let rest: Vec<&Cidr> = cidrs[i + 1..].iter().collect();
        errs.extend(cidrs[i].validate_not_overlap(&rest));
    }
    errs
}

/// `ValidateCIDRIsCanonical(path, cidr)`: `must be valid canonical CIDR` when the address has host
/// bits set; skipped for "" and for CIDRs that do not parse.
pub fn validate_cidr_is_canonical(path: &Path, cidr: &str) -> ErrorList {
    if cidr.is_empty() {
        return Vec::new();
    }
    match parse_cidr(cidr) {
        Ok((addr, net)) if addr != net.network() => {
            vec![FieldError::invalid(path, cidr, "must be valid canonical CIDR")]
        }
        _ => Vec::new(),
    }
}

/// Go's `net.ParseCIDR`: `<addr>/<decimal prefix>`; the address as written and the network.
/// The error is Go's: `invalid CIDR address: <s>` (unprintable characters of `s` escaped).
pub fn parse_cidr(s: &str) -> Result<(IpAddr, IpNet), String> {
    // Go's text embeds `s` as written; unprintable characters are shown escaped so the error stays one line.
    let err = || format!("invalid CIDR address: {}", escape_unprintable(s));
    let (addr, prefix) = s.split_once('/').ok_or_else(err)?;
    let addr: IpAddr = addr.parse().map_err(|_| err())?;
    // Go's dtoi: decimal digits only (leading zeros allowed), below 0xFFFFFF.
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    let mut bits: u32 = 0;
    for b in prefix.bytes() {
        bits = bits * 10 + u32::from(b - b'0');
        if bits >= 0xFF_FFFF {
            return Err(err());
        }
    }
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(err());
    }
    let net = IpNet::new(addr, bits as u8).map_err(|_| err())?.trunc();
    Ok((addr, net))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str, p: &str) -> Cidr {
        Cidr::new(s, Path::new(p))
    }

    #[test]
    fn subset_reports_on_the_subset_path() {
        let vnet = c("10.0.0.0/16", "networks.vnet.cidr");
        let nodes = c("10.1.0.0/24", "networking.nodes");
        let errs = vnet.validate_subset(&[&nodes]);
        assert_eq!(
            errs[0].to_string(),
            r#"networking.nodes: Invalid value: "10.1.0.0/24": must be a subset of "networks.vnet.cidr" ("10.0.0.0/16")"#
        );
        assert!(vnet.validate_subset(&[&c("10.0.1.0/24", "x")]).is_empty());
        assert!(vnet.validate_subset(&[&c("garbage", "x")]).is_empty());
        assert!(c("garbage", "x").validate_subset(&[&nodes]).is_empty());
        // Larger than the superset: the last address is outside.
        assert_eq!(vnet.validate_subset(&[&c("10.0.0.0/8", "x")]).len(), 1);
    }

    #[test]
    fn overlap_both_directions() {
        let pods = c("100.96.0.0/11", "networking.pods");
        assert_eq!(pods.validate_not_overlap(&[&c("100.96.1.0/24", "z")]).len(), 1);
        assert_eq!(pods.validate_not_overlap(&[&c("100.0.0.0/8", "z")]).len(), 1);
        assert!(pods.validate_not_overlap(&[&c("10.0.0.0/8", "z")]).is_empty());
        let errs = validate_cidr_not_overlap(&[c("10.0.0.0/24", "a"), c("10.0.0.0/25", "b")]);
        assert_eq!(
            errs[0].to_string(),
            r#"b: Invalid value: "10.0.0.0/25": must not overlap with "a" ("10.0.0.0/24")"#
        );
    }

    #[test]
    fn parse_and_canonical_as_go() {
        assert_eq!(c("10.0.0.0/33", "w").validate_parse()[0].detail, "invalid CIDR address: 10.0.0.0/33");
        assert!(c("10.0.0.0/08", "w").parses());
        assert!(c("10.0.0.0/0000008", "w").parses());
        assert!(!c("10.0.0.0", "w").parses());
        assert!(!c("010.0.0.0/8", "w").parses());
        assert!(!c("10.0.0.0/+8", "w").parses());
        assert!(c("2001:db8::/32", "w").parses());
        let p = Path::new("networks.workers");
        assert_eq!(validate_cidr_is_canonical(&p, "10.0.0.1/24")[0].detail, "must be valid canonical CIDR");
        assert!(validate_cidr_is_canonical(&p, "10.0.0.0/24").is_empty());
        assert!(validate_cidr_is_canonical(&p, "").is_empty());
        assert!(validate_cidr_is_canonical(&p, "nope").is_empty());
    }
}
