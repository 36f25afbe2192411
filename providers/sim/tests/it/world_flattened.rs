//! World files in the flattened shape `az … show -o json` prints are refused with a hint.

use trellis_sim::WorldFile;

#[test]
fn flattened_az_cli_output_is_refused_with_the_export_command() {
    let text = "azure:\n  subscriptionId: 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17\n  resources:\n    - id: /subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub\n      location: westeurope\n    - id: /subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub/providers/Microsoft.Network/routeTables/rt\n      location: westeurope\n      routes: []\n";
    let err = WorldFile::parse("w.yaml", text).unwrap_err().to_string();
    assert!(err.contains("has `routes` at the top level"), "{err}");
    assert!(err.contains("az rest --method get"), "{err}");
}
