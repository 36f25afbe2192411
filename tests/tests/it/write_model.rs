//! The executor's write model end to end (issue #8, item 3): writes under the etag of the re-read
//! (a lost update is caught), creates as creates (a retried create that landed is success, someone
//! else's resource is not taken over), and writes to the children of one VNet one at a time.

use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op, Precondition};
use trellis_planner::ids::{ArmId, ArmIds, IdScheme};
use trellis_planner::retry::RetryPolicy;
use trellis_planner::write::{WriteLocks, Writer};
use trellis_sim::{Fault, FaultRule, Faults, Matcher};
use trellis_tests::Scenario;

/// The ids of the simulated cloud's resources of REST type `rtype`.
fn ids_of(s: &Scenario, rtype: &str) -> Vec<String> {
    s.sim()
        .snapshot()
        .iter()
        .filter(|r| r["type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(rtype)))
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect()
}

/// The failed nodes of an apply report: (address, error).
fn failures(report: &trellis_engine::ops::ApplyReport) -> Vec<(String, String)> {
    let doc = serde_json::to_value(report).unwrap();
    doc["shoots"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["nodes"].as_array().unwrap().iter())
        .filter(|n| n["status"] == "failed")
        .map(|n| (n["address"].as_str().unwrap().to_string(), n["error"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Another writer: right before the executor's first write of `target`, it makes its own write
/// (`PUT id body`) through the same cloud, as the CCM or a colleague would between the executor's
/// read and its write.
struct Interloper {
    inner: Arc<dyn CloudWrite>,
    target: String,
    write: Mutex<Option<(String, Value)>>,
}

impl Interloper {
    fn new(inner: Arc<dyn CloudWrite>, target: &str, id: &str, body: Value) -> Interloper {
        Interloper { inner, target: target.to_string(), write: Mutex::new(Some((id.to_string(), body))) }
    }

    /// Puts the other writer between the scenario's executor and its cloud.
    fn install(s: &mut Scenario, target: &str, id: &str, body: Value) {
        let cloud = Interloper::new(s.azure_cloud(), target, id, body);
        s.use_azure_cloud(Arc::new(cloud));
    }

    async fn interfere(&self, id: &str) {
        if !ArmIds.same(id, &self.target) {
            return;
        }
        let write = self.write.lock().unwrap().take();
        if let Some((id, body)) = write {
            self.inner.put(&id, body).await.expect("the other writer's write succeeds");
        }
    }
}

#[async_trait]
impl CloudRead for Interloper {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.inner.get(id).await
    }
    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.inner.list(parent, rtype).await
    }
}

#[async_trait]
impl CloudWrite for Interloper {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.interfere(id).await;
        self.inner.create(id, body).await
    }
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        self.interfere(id).await;
        self.inner.update(id, body, pre).await
    }
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        self.interfere(id).await;
        self.inner.remove(id, pre).await
    }
}

/// The CCM writes a per-node route into the worker route table between the executor's re-read and
/// its write of the table. The executor's body (the table as read, with its patch) lacks that route,
/// and an ARM route table PUT replaces the routes with the body's: without the etag the CCM's route
/// would be gone. With it, ARM refuses the stale etag, the write fails saying so and the route stays.
#[tokio::test]
async fn regression_lost_update_against_the_ccm_is_caught() {
    let s = Scenario::new("A1");
    assert!(s.apply().await.unwrap().ok);
    let rt = ids_of(&s, "Microsoft.Network/routeTables").pop().expect("A1 has a route table");
    let route = format!("{rt}/routes/shoot--dev--alpha-node-1");
    let ccm_route = json!({"properties": {"addressPrefix": "100.96.1.0/24", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.250.0.5"}});
    let ccm = Interloper::new(s.azure_cloud(), &rt, &route, ccm_route);

    let locks = WriteLocks::new(&trellis_planner::ids::ArmIds);
    let retry = RetryPolicy::immediate(3);
    let writer = Writer { cloud: &ccm, retry: &retry, locks: &locks };
    let read = writer.get(&rt).await.unwrap().unwrap();
    let patch = json!({"tags": {"gardener": "managed"}});
    let mut body = read.clone();
    trellis_planner::json::merge_patch(&mut body, &patch);
    let err = writer.update(&rt, &body, &read, Some(&patch)).await.unwrap_err();
    assert_eq!(err.class(), "precondition_failed");
    let err = err.to_string();
    assert!(err.contains(&format!("{rt}: changed since it was read (etag ")), "{err}");
    assert!(err.contains("re-run `trellis plan`"), "{err}");
    assert!(s.exists(&route), "the CCM's route is intact");
    assert_eq!(s.sim().get_now(&rt).unwrap().get("tags"), None, "the stale write was not made");
}

/// A subnet is updated (a second prefix added out of band is removed) while someone adds a service
/// endpoint to it: the update is refused, the other change is not overwritten.
#[tokio::test]
async fn regression_update_after_another_write_is_refused_not_overwritten() {
    let mut s = Scenario::new("I7-9");
    assert!(s.apply().await.unwrap().ok);
    let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/shoot--platform--vnet-ok-nodes";
    let mut subnet = s.sim().get_now(id).unwrap();
    let props = subnet["properties"].as_object_mut().unwrap();
    props.remove("addressPrefix");
    props.insert("addressPrefixes".into(), json!(["10.0.2.0/24", "10.0.3.0/24"]));
    s.sim().put(id, subnet.clone()).await.unwrap();

    subnet["properties"]["serviceEndpoints"] = json!([{"service": "Microsoft.Storage"}]);
    Interloper::install(&mut s, id, id, subnet);
    let report = s.apply().await.unwrap();
    assert!(!report.ok);
    let failed = failures(&report);
    assert!(failed.iter().any(|(_, e)| e.contains("changed since it was read")), "{failed:?}");
    let live = s.sim().get_now(id).unwrap();
    assert_eq!(live["properties"]["serviceEndpoints"], json!([{"service": "Microsoft.Storage"}]), "{live}");
}

/// A create whose first attempt landed but timed out is retried; the retry finds the resource
/// (`If-None-Match: *` → 412), reads it, sees it is the one this plan creates, and the node is done.
#[tokio::test]
async fn scenario_retried_create_that_landed_is_success() {
    let s = Scenario::new("A1");
    let rule = FaultRule::once_at(
        Matcher { method: Some("PUT".into()), target_contains: Some("/routeTables/".into()), op: None },
        1,
        Fault::TimeoutAfterApply,
    );
    s.sim().set_faults(Faults::none().with_rule(rule));
    let report = s.apply().await.unwrap();
    assert_eq!(s.sim().faults_fired(), 1);
    assert!(report.ok, "{:?}", failures(&report));
    let rt = ids_of(&s, "Microsoft.Network/routeTables").pop().unwrap();
    let puts: Vec<u16> =
        report.calls.iter().filter(|c| c.method == "PUT" && c.target == rt).map(|c| c.status).collect();
    assert_eq!(puts, vec![408, 412], "the timed-out create, then the retry that found it");
    assert!(!s.plan().await.unwrap().has_changes());
}

/// Someone else creates the route table between the executor's re-read and its create: the create
/// is refused, the executor reads what is there, sees it is not what the plan creates, and fails
/// naming it — without overwriting it.
#[tokio::test]
async fn regression_create_over_a_foreign_existing_resource_fails_naming_it() {
    let mut s = Scenario::new("A1");
    let plan = s.plan().await.unwrap();
    let rt = plan
        .nodes
        .iter()
        .filter_map(|n| n.id.clone())
        .find(|id| ArmId::parse(id).is_ok_and(|a| a.rtype().eq_ignore_ascii_case("Microsoft.Network/routeTables")))
        .expect("A1 plans a route table");
    Interloper::install(&mut s, &rt, &rt, json!({"location": "northeurope", "tags": {"owner": "someone-else"}}));
    let report = s.apply().await.unwrap();
    assert!(!report.ok);
    let failed = failures(&report);
    let (_, error) = failed.iter().find(|(_, e)| e.contains(&rt)).unwrap_or_else(|| panic!("{failed:?}"));
    assert!(error.contains("already exists and is not the one this plan creates"), "{error}");
    let live = s.sim().get_now(&rt).unwrap();
    assert_eq!(live["tags"]["owner"], "someone-else", "the other resource is untouched: {live}");
    assert_eq!(live["location"], "northeurope");
}

/// ARM refuses a write to a child of a VNet while another one is running
/// (`AnotherOperationInProgress`). This cloud answers that way whenever two writes under one parent
/// overlap (each write takes a little while); A4 plans three subnets in one VNet at once.
struct BusyParents {
    inner: Arc<dyn CloudWrite>,
    in_flight: Mutex<HashMap<String, usize>>,
    overlaps: Mutex<Vec<String>>,
}

impl BusyParents {
    async fn write<T>(
        &self,
        id: &str,
        call: impl std::future::Future<Output = Result<T, CloudError>>,
    ) -> Result<T, CloudError> {
        let parent = ArmId::parse(id).ok().filter(ArmId::is_child).and_then(|a| a.parent()).map(|p| p.key());
        let Some(parent) = parent else { return call.await };
        let busy = {
            let mut in_flight = self.in_flight.lock().unwrap();
            let n = in_flight.entry(parent.clone()).or_default();
            *n += 1;
            *n > 1
        };
        let res = if busy {
            self.overlaps.lock().unwrap().push(id.to_string());
            Err(CloudError::Conflict {
                target: id.to_string(),
                code: "AnotherOperationInProgress".into(),
                message: format!("Another operation on this or dependent resource is in progress ({parent})."),
            })
        } else {
            tokio::time::sleep(Duration::from_millis(30)).await;
            call.await
        };
        *self.in_flight.lock().unwrap().get_mut(&parent).unwrap() -= 1;
        res
    }
}

#[async_trait]
impl CloudRead for BusyParents {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.inner.get(id).await
    }
    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.inner.list(parent, rtype).await
    }
}

#[async_trait]
impl CloudWrite for BusyParents {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.write(id, self.inner.create(id, body)).await
    }
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        self.write(id, self.inner.update(id, body, pre)).await
    }
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        self.write(id, self.inner.remove(id, pre)).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a4_three_subnets_in_one_vnet_never_hit_another_operation_in_progress() {
    let mut s = Scenario::new("A4");
    let busy = Arc::new(BusyParents {
        inner: s.azure_cloud(),
        in_flight: Mutex::new(HashMap::new()),
        overlaps: Mutex::new(Vec::new()),
    });
    s.use_azure_cloud(busy.clone());
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{:?}", failures(&report));
    let subnets = ids_of(&s, "Microsoft.Network/virtualNetworks/subnets");
    assert_eq!(subnets.len(), 3, "{subnets:?}");
    assert_eq!(*busy.overlaps.lock().unwrap(), Vec::<String>::new(), "writes under one VNet overlapped");
    assert!(report.calls.iter().all(|c| c.status != 409), "no write was refused as busy");
    assert!(report.calls.iter().filter(|c| c.op == Op::Write).count() >= 3);
}
