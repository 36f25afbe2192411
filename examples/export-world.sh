#!/usr/bin/env bash
# Export a BYO subnet and everything it references into a trellis world file.
# Usage: examples/export-world.sh <vnet resource group> <vnet> <subnet> > world.yaml
set -euo pipefail
VNET_RG=$1 VNET=$2 SUBNET=$3
SUB=$(az account show --query id -o tsv)
get() { az rest --method get --url "https://management.azure.com$1?api-version=$2"; }
NET_API=2024-05-01

SUBNET_ID=$(az network vnet subnet show -g "$VNET_RG" --vnet-name "$VNET" -n "$SUBNET" --query id -o tsv)
RT_ID=$(az network vnet subnet show --ids "$SUBNET_ID" --query routeTable.id -o tsv)
NSG_ID=$(az network vnet subnet show --ids "$SUBNET_ID" --query networkSecurityGroup.id -o tsv)
NAT_ID=$(az network vnet subnet show --ids "$SUBNET_ID" --query natGateway.id -o tsv)
VNET_ID=${SUBNET_ID%/subnets/*}
IP_IDS=""
[ -z "$NAT_ID" ] || IP_IDS=$(get "$NAT_ID" "$NET_API" | jq -r '.properties.publicIpAddresses[]?.id')

{
  # every resource group involved, once (ids may differ in case)
  for rg in $(printf '%s\n' "$VNET_ID" $RT_ID $NSG_ID $NAT_ID $IP_IDS | cut -d/ -f1-5 | sort -fu); do
    get "$rg" 2021-04-01
  done
  # the VNet without its nested subnets: only the shoot's subnet is declared
  get "$VNET_ID" "$NET_API" | jq 'del(.properties.subnets)'
  for id in $IP_IDS $NAT_ID $RT_ID $NSG_ID; do get "$id" "$NET_API"; done
  get "$SUBNET_ID" "$NET_API"
} | # other subscriptions the exported resources live in (a hub network in another subscription) are
  # listed under otherSubscriptions, so the world file accepts them there and pre-flight rule C12 reports them
  jq -s --arg sub "$SUB" '
  ([.[].id | split("/")[2] | ascii_downcase] | unique | map(select(. != ($sub | ascii_downcase)))) as $others
  | {azure: ({subscriptionId: $sub} + (if $others == [] then {} else {otherSubscriptions: $others} end) + {resources: .})}'
