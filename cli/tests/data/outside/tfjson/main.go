// Reads documents written by `trellis show PLAN --output terraform-json` with HashiCorp's
// terraform-json types (github.com/hashicorp/terraform-json) and checks what Terraform's readers rely
// on. Prints one JSON line per file: the count of each action list and the resource types seen.
//
// Versions: Debian ships terraform-json v0.5.0 (2020), whose Plan.UnmarshalJSON and
// State.UnmarshalJSON accept format_version "0.1" and nothing else; terraform-json since v0.13 accepts
// every version in ">= 0.1, < 2.0" (Terraform writes "1.2" for a plan and "1.0" for prior_state). So
// this program checks both versions against the current upstream constraint itself, then hands the
// library the document with the versions it knows, and decodes every other field with its types.
//
// Usage: go run main.go [-mapped] FILE...   (-mapped: every type must be a hashicorp provider's)
package main

import (
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// upstreamAccepts is terraform-json's current constraint on format versions: ">= 0.1, < 2.0".
func upstreamAccepts(version string) bool {
	parts := strings.Split(version, ".")
	if len(parts) != 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return (major == 0 && minor >= 1) || major == 1
}

func fail(file, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", file, fmt.Sprintf(format, args...))
	os.Exit(1)
}

type key struct {
	module, mode, typ, name, index string
}

func main() {
	mapped := false
	files := os.Args[1:]
	if len(files) > 0 && files[0] == "-mapped" {
		mapped, files = true, files[1:]
	}
	for _, file := range files {
		check(file, mapped)
	}
}

func check(file string, mapped bool) {
	text, err := ioutil.ReadFile(file)
	if err != nil {
		fail(file, "%v", err)
	}
	var raw map[string]interface{}
	if err := json.Unmarshal(text, &raw); err != nil {
		fail(file, "not JSON: %v", err)
	}
	version, _ := raw["format_version"].(string)
	if !upstreamAccepts(version) {
		fail(file, "format_version %q is outside terraform-json's >= 0.1, < 2.0", version)
	}
	raw["format_version"] = tfjson.PlanFormatVersion
	prior, ok := raw["prior_state"].(map[string]interface{})
	if !ok {
		fail(file, "no prior_state")
	}
	priorVersion, _ := prior["format_version"].(string)
	if !upstreamAccepts(priorVersion) {
		fail(file, "prior_state.format_version %q is outside terraform-json's >= 0.1, < 2.0", priorVersion)
	}
	prior["format_version"] = tfjson.StateFormatVersion
	known, _ := json.Marshal(raw)
	var plan tfjson.Plan
	if err := json.Unmarshal(known, &plan); err != nil {
		fail(file, "terraform-json cannot decode it: %v", err)
	}
	if plan.TerraformVersion == "" || plan.PlannedValues == nil || plan.PriorState == nil || plan.Config == nil {
		fail(file, "terraform_version, planned_values, prior_state or configuration missing")
	}

	planned := resources(plan.PlannedValues.RootModule)
	priorValues := resources(plan.PriorState.Values.RootModule)
	configured := map[string]bool{}
	for name, call := range plan.Config.RootModule.ModuleCalls {
		for _, r := range call.Module.Resources {
			configured["module."+name+"."+r.Address] = true
		}
	}

	seen := map[key]string{}
	actions := map[string]int{}
	types := map[string]bool{}
	for _, rc := range plan.ResourceChanges {
		index := ""
		if rc.Index != nil {
			index = fmt.Sprint(rc.Index)
		}
		k := key{rc.ModuleAddress, string(rc.Mode), rc.Type, rc.Name, index}
		if other, dup := seen[k]; dup {
			fail(file, "%s and %s are both %v", other, rc.Address, k)
		}
		seen[k] = rc.Address
		if rc.ModuleAddress == "" || !strings.HasPrefix(rc.ModuleAddress, "module.") {
			fail(file, "%s: no module_address", rc.Address)
		}
		if !identifier.MatchString(rc.Name) || !identifier.MatchString(strings.TrimPrefix(rc.ModuleAddress, "module.")) {
			fail(file, "%s: name %q or module is not an identifier", rc.Address, rc.Name)
		}
		local := rc.Type + "." + rc.Name
		if rc.Mode == tfjson.DataResourceMode {
			local = "data." + local
		}
		if rc.Address != rc.ModuleAddress+"."+local {
			fail(file, "address %s is not module_address.[data.]type.name", rc.Address)
		}
		if mapped {
			provider := rc.ProviderName[strings.LastIndex(rc.ProviderName, "/")+1:]
			if !strings.HasPrefix(rc.ProviderName, "registry.terraform.io/hashicorp/") || !strings.HasPrefix(rc.Type, provider+"_") {
				fail(file, "%s: type %s of provider %s is not a hashicorp provider's", rc.Address, rc.Type, rc.ProviderName)
			}
		}
		types[rc.Type] = true
		c := rc.Change
		name := strings.Join(actionNames(c.Actions), ",")
		actions[name]++
		before, beforeIsObject := c.Before.(map[string]interface{})
		after, afterIsObject := c.After.(map[string]interface{})
		switch {
		case c.Actions.Update(), c.Actions.Replace(), c.Actions.NoOp():
			if !beforeIsObject || !afterIsObject {
				fail(file, "%s (%s): before and after must both be objects", rc.Address, name)
			}
		case c.Actions.Delete():
			if !beforeIsObject || c.After != nil {
				fail(file, "%s: a delete's before is an object, its after null", rc.Address)
			}
		case c.Actions.Create():
			if c.Before != nil || !afterIsObject {
				fail(file, "%s: a create's before is null, its after an object", rc.Address)
			}
		}
		if beforeIsObject {
			if len(before) < 2 {
				fail(file, "%s: before is not the whole object: %v", rc.Address, before)
			}
			if !reflect.DeepEqual(priorValues[rc.Address], before) {
				fail(file, "%s: prior_state's values are not the change's before", rc.Address)
			}
		}
		if c.Actions.Delete() {
			if _, there := planned[rc.Address]; there {
				fail(file, "%s: deleted, yet in planned_values", rc.Address)
			}
		} else {
			values, there := planned[rc.Address]
			if !there {
				fail(file, "%s: not in planned_values", rc.Address)
			}
			if afterIsObject && !reflect.DeepEqual(values, after) {
				fail(file, "%s: planned_values are not the change's after", rc.Address)
			}
		}
		if _, isObject := c.AfterUnknown.(map[string]interface{}); !isObject && c.AfterUnknown != true {
			fail(file, "%s: after_unknown is neither an object nor true", rc.Address)
		}
		reason, _ := rawReason(raw, rc.Address)
		if reason != "delete_because_no_resource_config" && !configured[rc.Address] {
			fail(file, "%s: not in configuration.root_module.module_calls", rc.Address)
		}
	}
	if len(planned) > len(plan.ResourceChanges) {
		fail(file, "planned_values has resources no change lists")
	}
	typeList := []string{}
	for t := range types {
		typeList = append(typeList, t)
	}
	sort.Strings(typeList)
	out, _ := json.Marshal(map[string]interface{}{"file": file, "actions": actions, "types": typeList})
	fmt.Println(string(out))
}

func actionNames(actions tfjson.Actions) []string {
	names := []string{}
	for _, a := range actions {
		names = append(names, string(a))
	}
	return names
}

// resources: every resource of a module tree, by address, with its values.
func resources(module *tfjson.StateModule) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	if module == nil {
		return out
	}
	for _, r := range module.Resources {
		out[r.Address] = r.AttributeValues
	}
	for _, child := range module.ChildModules {
		for address, values := range resources(child) {
			out[address] = values
		}
	}
	return out
}

// rawReason: a change's action_reason, which terraform-json v0.5.0 does not model yet.
func rawReason(raw map[string]interface{}, address string) (string, bool) {
	changes, _ := raw["resource_changes"].([]interface{})
	for _, c := range changes {
		rc, _ := c.(map[string]interface{})
		if rc["address"] == address {
			reason, ok := rc["action_reason"].(string)
			return reason, ok
		}
	}
	return "", false
}
