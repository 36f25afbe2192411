//! The runtime writers on the simulated GCE cloud: the CCM's routes and Service firewall rules, and
//! the bastion controller — in the user's VPC, next to the user's own resources.

use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::gce::runtime::{
    route_name, service_hash, BastionSpec, LbService, Node, ShootNetwork, ILB_SUBNET_ANNOTATION,
};
use trellis_sim::{GceSim, WorldFile};

fn shoot(id: &str) -> ShootNetwork {
    ShootNetwork {
        project: "p".into(),
        region: "europe-west1".into(),
        network: "shared-vpc".into(),
        workers_subnet: "workers".into(),
        technical_id: id.into(),
    }
}

fn user_world() -> GceSim {
    let text = r#"
gce:
  resources:
    - selfLink: projects/p/global/networks/shared-vpc
    - selfLink: projects/p/regions/europe-west1/subnetworks/workers
      network: projects/p/global/networks/shared-vpc
      ipCidrRange: 10.250.0.0/24
    - selfLink: projects/p/regions/europe-west1/subnetworks/lb
      network: projects/p/global/networks/shared-vpc
      ipCidrRange: 10.251.0.0/24
    - selfLink: projects/p/global/routes/user-default
      network: projects/p/global/networks/shared-vpc
      destRange: 0.0.0.0/0
      nextHopIp: 10.250.0.254
    - selfLink: projects/p/global/firewalls/user-allow-internal
      network: projects/p/global/networks/shared-vpc
      sourceRanges: [10.0.0.0/8]
      allowed: [{IPProtocol: all}]
"#;
    let sim = GceSim::in_memory();
    sim.sync_world(&WorldFile::parse("world.yaml", text).unwrap()).unwrap();
    sim
}

fn node(name: &str, cidrs: &[&str]) -> Node {
    Node { name: name.into(), zone: "europe-west1-b".into(), pod_cidrs: cidrs.iter().map(|c| c.to_string()).collect() }
}

fn names(sim: &GceSim, collection: &str) -> Vec<String> {
    sim.snapshot()
        .iter()
        .filter(|v| v["selfLink"].as_str().unwrap_or_default().contains(&format!("/{collection}/")))
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_route_controller_writes_one_ipv4_route_per_node_and_leaves_others_alone() {
    let sim = user_world();
    let a = shoot("shoot--p--a");
    let b = shoot("shoot--p--b");
    sim.ccm_sync_routes(
        &a,
        &[node("n1", &["100.96.0.0/24", "fd00:1::/64"]), node("n2", &["100.96.1.0/24"]), node("v6", &["fd00:2::/64"])],
    )
    .await
    .unwrap();
    sim.ccm_sync_routes(&b, &[node("m1", &["100.112.0.0/24"])]).await.unwrap();
    let r = sim.get_now(&format!("projects/p/global/routes/{}", route_name("shoot--p--a", "n1"))).unwrap();
    assert_eq!(r["destRange"], "100.96.0.0/24");
    assert!(r["nextHopInstance"].as_str().unwrap().ends_with("projects/p/zones/europe-west1-b/instances/n1"));
    assert_eq!(r["tags"], json!(["shoot--p--a"]));
    assert!(r["name"].as_str().unwrap().starts_with("shoot--p--a-"));
    assert_eq!(names(&sim, "routes").len(), 4, "two of a, one of b, the user's");

    // A node goes: only its route is deleted; a second sync writes nothing.
    sim.ccm_sync_routes(&a, &[node("n1", &["100.96.0.0/24"])]).await.unwrap();
    let mark = sim.calls().len();
    sim.ccm_sync_routes(&a, &[node("n1", &["100.96.0.0/24"])]).await.unwrap();
    assert!(sim.calls()[mark..].iter().all(|c| c.method == "LIST"), "{:?}", &sim.calls()[mark..]);
    let mut left = names(&sim, "routes");
    left.sort();
    let mut want = vec![route_name("shoot--p--a", "n1"), route_name("shoot--p--b", "m1"), "user-default".to_string()];
    want.sort();
    assert_eq!(left, want);
}

#[tokio::test]
async fn the_service_controller_writes_tag_scoped_rules_and_allocates_the_frontend() {
    let sim = user_world();
    let s = shoot("shoot--p--a");
    let web = LbService {
        namespace: "default".into(),
        name: "web".into(),
        ports: vec![("TCP".into(), 30080)],
        ..Default::default()
    };
    let st = sim.ccm_ensure_service(&s, &web).await.unwrap();
    let h = service_hash("default", "web");
    assert_eq!(st.firewalls, [format!("k8s-fw-{h}-web"), format!("k8s-{h}-hc")]);
    let fw = sim.get_now(&format!("projects/p/global/firewalls/k8s-fw-{h}-web")).unwrap();
    assert_eq!(fw["targetTags"], json!(["shoot--p--a"]));
    assert_eq!(fw["sourceRanges"], json!(["0.0.0.0/0"]));
    assert_eq!(fw["allowed"], json!([{"IPProtocol": "tcp", "ports": ["30080"]}]));
    let hc = sim.get_now(&format!("projects/p/global/firewalls/k8s-{h}-hc")).unwrap();
    assert_eq!(hc["targetTags"], json!(["shoot--p--a"]));
    assert!(st.ip.starts_with("35.190."), "external: {st:?}");

    // Internal load balancers: the workers subnet, or the annotated one.
    let ilb = LbService {
        namespace: "default".into(),
        name: "ilb".into(),
        ports: vec![("TCP".into(), 30081)],
        internal: true,
        ..Default::default()
    };
    assert!(sim.ccm_ensure_service(&s, &ilb).await.unwrap().ip.starts_with("10.250.0."));
    let annotated = LbService {
        name: "ilb2".into(),
        annotations: vec![(ILB_SUBNET_ANNOTATION.into(), "lb".into())],
        ..ilb.clone()
    };
    assert_eq!(sim.ccm_ensure_service(&s, &annotated).await.unwrap().ip, "10.251.0.2");

    // Idempotent; the Service's deletion removes exactly its resources.
    let mark = sim.calls().len();
    sim.ccm_ensure_service(&s, &web).await.unwrap();
    assert!(sim.calls()[mark..].iter().all(|c| c.method == "GET"));
    sim.ccm_delete_service(&s, &web).await.unwrap();
    assert!(sim.get_now(&format!("projects/p/global/firewalls/k8s-fw-{h}-web")).is_none());
    assert!(sim.get_now("projects/p/global/firewalls/user-allow-internal").is_some());
    assert_eq!(names(&sim, "firewalls").len(), 5, "the two ILBs' rules and the user's");
}

#[tokio::test]
async fn the_bastion_controller_writes_three_tag_scoped_rules_and_a_vm_in_the_workers_subnet() {
    let sim = user_world();
    let s = shoot("shoot--p--a");
    let b = BastionSpec {
        name: "shoot--p--a-bastion-1".into(),
        zone: "europe-west1-b".into(),
        ingress: vec!["203.0.113.0/24".into()],
    };
    let st = sim.bastion_ensure(&s, &b).await.unwrap();
    assert_eq!(st.internal_ip, "10.250.0.2");
    assert!(st.external_ip.starts_with("35.190."));
    let vm = sim.get(&format!("projects/p/zones/europe-west1-b/instances/{}", b.name)).await.unwrap().unwrap();
    assert_eq!(vm["kind"], "compute#instance");
    assert!(vm["networkInterfaces"][0]["subnetwork"]
        .as_str()
        .unwrap()
        .ends_with("regions/europe-west1/subnetworks/workers"));
    for suffix in ["-allow-ssh", "-egress-worker", "-deny-all"] {
        let fw = sim.get_now(&format!("projects/p/global/firewalls/{}{suffix}", b.name)).unwrap();
        assert_eq!(fw["targetTags"], json!([b.name]), "{suffix}");
    }
    let egress = sim.get_now(&format!("projects/p/global/firewalls/{}-egress-worker", b.name)).unwrap();
    assert_eq!(egress["destinationRanges"], json!(["10.250.0.0/24"]), "read live from the workers subnet");
    // A subnet with a VM in it cannot be deleted.
    assert!(sim.delete("projects/p/regions/europe-west1/subnetworks/workers").await.is_err());
    sim.bastion_delete(&s, &b).await.unwrap();
    assert_eq!(names(&sim, "firewalls"), ["user-allow-internal"]);
    assert!(names(&sim, "instances").is_empty());
}
