"""google-cloud-dns (Google's official Python client for Cloud DNS v1) against `trellis sim serve`.

Usage: python clouddns_sdk.py ENDPOINT PROJECT. The emulator's world holds zone example.com (managed
zone example-com) with someone's record set www.example.com A. Every check asserts; the last line is
"ok". What a real Cloud DNS answers is the contract: the zones of the project, record sets with fully
qualified names, a change answered with its status and polled until done, an addition of a set that
exists refused (409), a deletion that is not the set held refused (412).
"""

import sys
import time

from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.cloud import dns
from google.oauth2.credentials import Credentials

endpoint, project = sys.argv[1], sys.argv[2]
client = dns.Client(
    project=project,
    credentials=Credentials(token="sdk-test-token"),
    client_options=ClientOptions(api_endpoint=endpoint),
)


def check(what, cond):
    assert cond, what


def wait(change):
    for _ in range(100):
        if change.status == "done":
            return
        time.sleep(0.05)
        change.reload()
    raise AssertionError(f"change {change.name} never done")


zones = list(client.list_zones())
check(f"the zones: {[(z.name, z.dns_name) for z in zones]}", [(z.name, z.dns_name) for z in zones] == [("example-com", "example.com.")])
zone = client.zone("example-com", "example.com.")
check("the zone exists", zone.exists())
sets = {(r.name, r.record_type): r for r in zone.list_resource_record_sets()}
www = sets.get(("www.example.com.", "A"))
check(f"someone's record set: {sorted(sets)}", www is not None and www.rrdatas == ["192.0.2.9"] and www.ttl == 60)

# Create through a change, polled until done.
mine = zone.resource_record_set("sdk.example.com.", "A", 300, ["192.0.2.44"])
change = zone.changes()
change.add_record_set(mine)
change.create()
check(f"a change has an id and a status: {change.name} {change.status}", change.name and change.status in ("pending", "done"))
wait(change)
sets = {(r.name, r.record_type): r for r in zone.list_resource_record_sets()}
check("the record set exists", sets[("sdk.example.com.", "A")].rrdatas == ["192.0.2.44"])

# Adding it again: 409.
again = zone.changes()
again.add_record_set(zone.resource_record_set("sdk.example.com.", "A", 300, ["192.0.2.45"]))
try:
    again.create()
    raise AssertionError("adding an existing record set was accepted")
except exceptions.Conflict:
    pass

# Replacing someone's set under a deletion that is not what is held: 412, nothing written.
stale = zone.changes()
stale.delete_record_set(zone.resource_record_set("www.example.com.", "A", 60, ["192.0.2.1"]))
stale.add_record_set(zone.resource_record_set("www.example.com.", "A", 60, ["192.0.2.2"]))
try:
    stale.create()
    raise AssertionError("a stale deletion was accepted")
except exceptions.PreconditionFailed:
    pass

# Replacing and deleting ours under the exact set held.
swap = zone.changes()
swap.delete_record_set(mine)
swap.add_record_set(zone.resource_record_set("sdk.example.com.", "A", 120, ["192.0.2.46"]))
swap.create()
wait(swap)
gone = zone.changes()
gone.delete_record_set(zone.resource_record_set("sdk.example.com.", "A", 120, ["192.0.2.46"]))
gone.create()
wait(gone)
sets = {(r.name, r.record_type): r for r in zone.list_resource_record_sets()}
check(f"ours is gone, theirs is as it was: {sorted(sets)}", ("sdk.example.com.", "A") not in sets and sets[("www.example.com.", "A")].rrdatas == ["192.0.2.9"])
print("ok")
