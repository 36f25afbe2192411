use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::ArmSim;
#[tokio::test]
async fn perf() {
    let sim = ArmSim::in_memory("s");
    let t = std::time::Instant::now();
    for i in 0..1000 {
        let rg = format!("/subscriptions/s/resourceGroups/shoot-{i}");
        let n = format!("{rg}/providers/Microsoft.Network");
        sim.put(&rg, json!({"location": "w"})).await.unwrap();
        sim.put(&format!("{n}/virtualNetworks/v"), json!({"location": "w"})).await.unwrap();
        sim.put(&format!("{n}/routeTables/rt"), json!({"location": "w"})).await.unwrap();
        sim.put(&format!("{n}/networkSecurityGroups/nsg"), json!({"location": "w"})).await.unwrap();
        sim.put(&format!("{n}/publicIPAddresses/ip"), json!({"location": "w"})).await.unwrap();
        sim.put(&format!("{n}/natGateways/nat"), json!({"location": "w", "properties": {"publicIpAddresses": [{"id": format!("{n}/publicIPAddresses/ip")}]}})).await.unwrap();
        sim.put(&format!("{n}/virtualNetworks/v/subnets/s"), json!({"properties": {"routeTable": {"id": format!("{n}/routeTables/rt")}, "networkSecurityGroup": {"id": format!("{n}/networkSecurityGroups/nsg")}, "natGateway": {"id": format!("{n}/natGateways/nat")}}})).await.unwrap();
        sim.get(&format!("{n}/routeTables/rt")).await.unwrap();
    }
    eprintln!("7000 puts + 1000 gets: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let snap = sim.snapshot();
    eprintln!("snapshot of {}: {:?}", snap.len(), t.elapsed());
}
