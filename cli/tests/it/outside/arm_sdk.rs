//! Azure's official Python SDKs (azure-mgmt-network 33.1.0, azure-mgmt-resource 26.0.0) against
//! `trellis sim serve`: what a user's script sees of the simulated ARM cloud must be what it sees of
//! Azure (issue #24, item 2). The program (`cli/tests/data/outside/arm_sdk.py`) drives the SDK clients
//! — their models, pagers, long-running-operation pollers and error types — and prints what they saw;
//! the assertions are here. Each was found failing against the simulator before issue #24: the SDK's
//! `check_existence` was 405, `list_all` and the generic resource list had no route, `update_tags` was
//! 405, an NSG had no default rules, a lowercase `/resourcegroups/` path stayed in the ids, and the
//! refusals were accepted.

use crate::common::{outside, Sandbox};
use crate::emulator::Emulator;
use serde_json::{json, Value};
use std::path::Path;

/// `trellis sim serve` on a fresh state dir with lists paged at `page_size` (`--page-size`).
fn serve(sb: &Sandbox, page_size: u32) -> Emulator {
    Emulator::start_with(sb.state(), &["--page-size", &page_size.to_string()])
}

/// Runs `cli/tests/data/outside/<program>` with the SDK venv's Python against `serve`; its JSON report.
fn run_sdk(program: &str, serve: &Emulator) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/outside").join(program);
    let out = outside::sdk_python()
        .arg(&path)
        .arg(&serve.url)
        .arg(trellis_sim::DEFAULT_SUBSCRIPTION)
        .output()
        .expect("run the SDK venv's python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program} failed ({}):\n{stderr}\n{stdout}", out.status);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{program} printed no JSON ({e}):\n{stdout}\n{stderr}"))
}

const SUB: &str = trellis_sim::DEFAULT_SUBSCRIPTION;

#[test]
fn regression_the_official_azure_sdks_see_the_simulated_arm_as_azure_answers_them() {
    let sb = Sandbox::new();
    let serve = serve(&sb, 3);
    let r = run_sdk("arm_sdk.py", &serve);

    // Resource groups: canonical ids; check_existence is HEAD 204 / 404, case-insensitive.
    assert_eq!(r["rg_id"], json!(format!("/subscriptions/{SUB}/resourceGroups/sdk-rg")));
    assert_eq!(
        (&r["exists"], &r["exists_other_case"], &r["exists_missing"]),
        (&json!(true), &json!(true), &json!(false))
    );

    // A VNet written through `/resourcegroups/…/microsoft.network/virtualnetworks/` is answered canonically.
    let canonical =
        format!("/subscriptions/{SUB}/resourceGroups/sdk-rg/providers/Microsoft.Network/virtualNetworks/lowercase");
    assert_eq!(r["lowercase_vnet_id"], json!(canonical));
    assert_eq!(r["lowercase_generic_id"], json!(canonical));
    assert_eq!(
        r["subnet_id"],
        json!(format!(
            "/subscriptions/{SUB}/resourceGroups/sdk-rg/providers/Microsoft.Network/virtualNetworks/v1/subnets/workers"
        ))
    );

    // The NSG model deserializes Azure's six default rules; none is a rule of the user's.
    let defaults: Vec<(String, i64, String, String)> = r["nsg_default_rules"]
        .as_array()
        .expect("default rules")
        .iter()
        .map(|d| {
            (
                d["name"].as_str().unwrap().to_string(),
                d["priority"].as_i64().unwrap(),
                d["direction"].as_str().unwrap().to_string(),
                d["access"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = [
        ("AllowVnetInBound", 65000, "Inbound", "Allow"),
        ("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow"),
        ("DenyAllInBound", 65500, "Inbound", "Deny"),
        ("AllowVnetOutBound", 65000, "Outbound", "Allow"),
        ("AllowInternetOutBound", 65001, "Outbound", "Allow"),
        ("DenyAllOutBound", 65500, "Outbound", "Deny"),
    ];
    let expect: Vec<(String, i64, String, String)> =
        expect.iter().map(|(n, p, d, a)| (n.to_string(), *p, d.to_string(), a.to_string())).collect();
    assert_eq!(defaults, expect);
    assert_eq!(r["nsg_default_rules"][4]["description"], json!("Allow outbound traffic from all VMs to Internet"));
    assert_eq!(
        r["nsg_default_rules"][0]["id"],
        json!(format!("/subscriptions/{SUB}/resourceGroups/sdk-rg/providers/Microsoft.Network/networkSecurityGroups/nsg/defaultSecurityRules/AllowVnetInBound"))
    );
    assert_eq!(r["nsg_security_rules"], json!(0));
    assert_eq!(r["default_rules_listed"].as_array().unwrap().len(), 6);
    assert_eq!(r["default_rule_get"], json!(65500));
    assert_eq!(r["nsg_after_rule"], json!({"rules": ["https"], "defaults": 6}), "a rule of one's own beside them");

    // List All through nextLink, three to a page (--page-size 3): every VNet once.
    let pages = r["vnet_pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert!(pages.iter().all(|p| p.as_array().unwrap().len() <= 3));
    let mut all: Vec<&str> = pages.iter().flat_map(|p| p.as_array().unwrap()).map(|v| v.as_str().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, ["lowercase", "v1", "v2", "v3", "v4"]);
    assert_eq!(r["nsgs_all"], json!(["nsg", "nsg2"]));
    assert_eq!(r["vnets_in_rg"], json!(["lowercase", "v1", "v2"]));
    assert_eq!(r["groups"], json!(["sdk-other", "sdk-rg"]));

    // Update Tags replaces the tags (the public IP's `old` tag is gone) of every kind; nothing else changes.
    let tags = json!({"team": "net", "env": "test"});
    for kind in ["vnet", "nsg", "route_table", "public_ip", "nat_gateway"] {
        assert_eq!(r["tags"][kind], tags, "{kind}");
    }
    assert_eq!(r["tags_read_back"], tags);
    assert_eq!(r["vnet_subnets_after_tags"], json!(["workers"]));

    // The generic list: top-level resources only (no subnet, no rule), paged, filtered by type.
    let generic: Vec<(String, String)> = r["generic"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g[0].as_str().unwrap().to_string(), g[1].as_str().unwrap().to_string()))
        .collect();
    let names: Vec<&str> = generic.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["lowercase", "nat", "nsg", "pip", "rt", "v1", "v2"]);
    assert!(generic.contains(&("pip".into(), "Microsoft.Network/publicIPAddresses".into())));
    assert_eq!(r["generic_vnets"], json!(["lowercase", "v1", "v2"]));

    // Refusals: HttpResponseError with Azure's code, and nothing written.
    let code = |k: &str| r["refusals"][k]["code"].as_str().map(str::to_string);
    assert_eq!(code("priority_low").as_deref(), Some("SecurityRuleInvalidPriority"));
    assert_eq!(code("priority_high").as_deref(), Some("SecurityRuleInvalidPriority"));
    assert_eq!(
        r["refusals"]["priority_low"]["message"],
        json!("Security rule has invalid Priority. Value provided: 99 Allowed range 100-4096.")
    );
    assert_eq!(r["refusals"]["priority_low"]["status"], json!(400));
    assert_eq!(code("same_priority").as_deref(), Some("SecurityRuleConflict"));
    assert_eq!(
        r["refusals"]["same_priority"]["message"],
        json!("Security rule clash conflicts with rule https. Rules cannot have the same Priority and Direction.")
    );
    assert_eq!(r["refusals"]["other_direction_ok"], Value::Null, "the same priority outbound is fine");
    assert_eq!(code("bad_prefix").as_deref(), Some("SecurityRuleInvalidAddressPrefix"));
    assert_eq!(code("vnet_prefix").as_deref(), Some("InvalidAddressPrefixFormat"));
    assert_eq!(code("appliance_route").as_deref(), Some("MissingNextHopIpAddress"));
    assert_eq!(r["refusals"]["appliance_route_with_hop"], Value::Null);
    assert_eq!(r["rules_after_refusals"], json!(["https", "out"]));

    // Deletes through their pollers: the VNet, and the group with what was in it.
    assert_eq!(r["after_deletes"], json!({"vnets": ["lowercase", "v1"], "other_group_exists": false}));
}
