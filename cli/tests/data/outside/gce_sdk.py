"""google-cloud-compute (Google's official Python client, REST transport) against `trellis sim serve`.

Usage: python gce_sdk.py ENDPOINT PROJECT. Every check asserts; the last line is "ok". What a real GCE
answers is the contract: routers, firewalls and networks have no fingerprint (a PATCH of what `get`
answered succeeds), a subnetwork's PATCH needs its fingerprint, aggregated lists are keyed by region,
operations can be waited on, a firewall mixing IPv4 and IPv6 is refused, a NAT is written by patching
its router.
"""

import sys

from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.cloud import compute_v1
from google.oauth2.credentials import Credentials

endpoint, project = sys.argv[1], sys.argv[2]
kw = dict(
    credentials=Credentials(token="sdk-test-token"),
    client_options=ClientOptions(api_endpoint=endpoint),
    transport="rest",
)
networks = compute_v1.NetworksClient(**kw)
subnets = compute_v1.SubnetworksClient(**kw)
routers = compute_v1.RoutersClient(**kw)
firewalls = compute_v1.FirewallsClient(**kw)
global_ops = compute_v1.GlobalOperationsClient(**kw)
region_ops = compute_v1.RegionOperationsClient(**kw)
# The SDK polls an ExtendedOperation (`.result()`) with operations clients it builds itself, without
# the client's `client_options`, i.e. at compute.googleapis.com (google-cloud-compute 1.57.0,
# `transports/base.py`, `_global_operations_client`): hand it ours, on the emulator.
for client in (networks, subnets, routers, firewalls):
    client._transport._extended_operations_services.update(global_operations=global_ops, region_operations=region_ops)
REGION = "europe-west1"
NET = f"projects/{project}/global/networks/sdk-vpc"
DONE = compute_v1.Operation.Status.DONE


def check(what, cond):
    assert cond, what
    print("ok:", what)


# An insert is an ExtendedOperation: .result() polls it until DONE; globalOperations.wait answers it DONE.
op = networks.insert(project=project, network_resource=compute_v1.Network(name="sdk-vpc", auto_create_subnetworks=False))
op.result(timeout=60)
check("network insert's operation is done", op.done() and not op.error_code)
check("globalOperations.wait answers DONE", global_ops.wait(project=project, operation=op.name).status == DONE)
check("globalOperations.get answers DONE", global_ops.get(project=project, operation=op.name).status == DONE)

for name, region, cidr in [("sdk-a", REGION, "10.10.0.0/24"), ("sdk-b", REGION, "10.10.1.0/24"), ("sdk-c", "us-central1", "10.10.2.0/24")]:
    op = subnets.insert(
        project=project,
        region=region,
        subnetwork_resource=compute_v1.Subnetwork(name=name, network=NET, ip_cidr_range=cidr),
    )
    op.result(timeout=60)
    check(f"regionOperations.wait on {name}'s insert answers DONE", region_ops.wait(project=project, region=region, operation=op.name).status == DONE)

# aggregatedList: every region's subnetworks, keyed regions/R, paged (two a page).
seen, warned = {}, set()
pager = subnets.aggregated_list(request=compute_v1.AggregatedListSubnetworksRequest(project=project, max_results=2))
for scope, scoped in pager:
    if scoped.subnetworks:
        seen.setdefault(scope, []).extend(s.name for s in scoped.subnetworks)
    elif scoped.warning.code:
        warned.add(scope)
check("aggregated_list lists europe-west1's subnetworks", sorted(seen.get(f"regions/{REGION}", [])) == ["sdk-a", "sdk-b"])
check("aggregated_list lists us-central1's subnetwork", seen.get("regions/us-central1") == ["sdk-c"])
check("aggregated_list warns of empty regions", "regions/asia-east1" in warned)

# Routers, firewalls and networks have no fingerprint: a PATCH of what `get` answered succeeds.
routers.insert(project=project, region=REGION, router_resource=compute_v1.Router(name="sdk-router", network=NET)).result(timeout=60)
router = routers.get(project=project, region=REGION, router="sdk-router")
router.description = "patched"
routers.patch(project=project, region=REGION, router="sdk-router", router_resource=router).result(timeout=60)
check("router get+patch without fingerprint", routers.get(project=project, region=REGION, router="sdk-router").description == "patched")

firewalls.insert(
    project=project,
    firewall_resource=compute_v1.Firewall(name="sdk-fw", network=NET, allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["22"])]),
).result(timeout=60)
fw = firewalls.get(project=project, firewall="sdk-fw")
fw.source_ranges = ["10.0.0.0/8"]
firewalls.patch(project=project, firewall="sdk-fw", firewall_resource=fw).result(timeout=60)
check("firewall get+patch without fingerprint", list(firewalls.get(project=project, firewall="sdk-fw").source_ranges) == ["10.0.0.0/8"])

net = networks.get(project=project, network="sdk-vpc")
net.routing_config.routing_mode = "GLOBAL"
networks.patch(project=project, network="sdk-vpc", network_resource=net).result(timeout=60)
check("network get+patch without fingerprint", networks.get(project=project, network="sdk-vpc").routing_config.routing_mode == "GLOBAL")

# A subnetwork's PATCH needs its fingerprint: without it 400, with a stale one 412, with the current one done.
sub = subnets.get(project=project, region=REGION, subnetwork="sdk-a")
check("a subnetwork has a fingerprint", bool(sub.fingerprint))
try:
    subnets.patch(project=project, region=REGION, subnetwork="sdk-a", subnetwork_resource=compute_v1.Subnetwork(description="x"))
    check("a subnetwork patch without fingerprint is refused", False)
except exceptions.BadRequest as e:
    check(f"a subnetwork patch without fingerprint is 400: {e.message}", "fingerprint" in e.message)
subnets.patch(
    project=project, region=REGION, subnetwork="sdk-a", subnetwork_resource=compute_v1.Subnetwork(description="x", fingerprint=sub.fingerprint)
).result(timeout=60)
check("a subnetwork patch with its fingerprint is done", subnets.get(project=project, region=REGION, subnetwork="sdk-a").description == "x")
try:
    subnets.patch(
        project=project, region=REGION, subnetwork="sdk-a", subnetwork_resource=compute_v1.Subnetwork(description="y", fingerprint=sub.fingerprint)
    )
    check("a subnetwork patch with a stale fingerprint is refused", False)
except exceptions.PreconditionFailed as e:
    check(f"a stale fingerprint is 412: {e.message}", e.code == 412)

# A firewall mixing IPv4 and IPv6 ranges is refused.
try:
    firewalls.insert(
        project=project,
        firewall_resource=compute_v1.Firewall(
            name="sdk-mixed", network=NET, source_ranges=["10.0.0.0/8", "2600:1900::/64"], allowed=[compute_v1.Allowed(I_p_protocol="tcp")]
        ),
    )
    check("a firewall mixing IPv4 and IPv6 is refused", False)
except exceptions.BadRequest as e:
    check(f"a firewall mixing IPv4 and IPv6 is 400: {e.message}", "IPv6" in e.message and "sourceRanges" in e.message)

# A NAT is part of its router: added and removed by patching the router's nats.
def nat(name):
    return compute_v1.RouterNat(name=name, nat_ip_allocate_option="AUTO_ONLY", source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES")

router = routers.get(project=project, region=REGION, router="sdk-router")
router.nats = [nat("sdk-nat"), nat("sdk-nat-2")]
routers.patch(project=project, region=REGION, router="sdk-router", router_resource=router).result(timeout=60)
names = [n.name for n in routers.get(project=project, region=REGION, router="sdk-router").nats]
check("two NATs added by a router patch", names == ["sdk-nat", "sdk-nat-2"])
router = routers.get(project=project, region=REGION, router="sdk-router")
router.nats = [n for n in router.nats if n.name != "sdk-nat"]
routers.patch(project=project, region=REGION, router="sdk-router", router_resource=router).result(timeout=60)
names = [n.name for n in routers.get(project=project, region=REGION, router="sdk-router").nats]
check("one NAT removed by a router patch", names == ["sdk-nat-2"])
print("ok")
