//! `trellis state rm` (forget a workspace, or one resource of it, without touching the cloud) and
//! `trellis output` (the artifacts of a shoot's last apply, from the state).

use super::{no_workspace, open_existing, registry, shown, Env, ReportOutput};
use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde_json::Value;
use std::io::Write as _;
use std::path::PathBuf;
use trellis_cli::backend::Store;
use trellis_plans::artifact::Shown;
use trellis_plans::{escape, Artifacts};
use trellis_state::{StateStore, Workspace, WorkspaceFile};

#[derive(Args)]
pub(crate) struct RmArgs {
    /// The shoot's technical id (`shoot--project--name`), as `state list` prints it.
    shoot: String,
    /// One resource of the workspace to forget, by its address or its cloud id as `state show` prints
    /// them; without it, the whole workspace is forgotten.
    address: Option<String>,
    /// Print what would be removed, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Where to write the backup of the workspace (default: <state>/backups/ for a state dir, the current
    /// directory for PostgreSQL; named <shoot>.removed-<serial>-<lineage>.json). Never overwritten.
    #[arg(long, value_name = "FILE")]
    backup: Option<PathBuf>,
    #[command(flatten)]
    env: Env,
}

/// `trellis state rm SHOOT [ADDRESS]`: the workspace (or the resource) is forgotten, the cloud is not
/// touched. Under the workspace lock; the workspace as it was is written first as a `state pull` file,
/// and the line printed names it and the `state push` that undoes the removal.
pub(crate) fn state_rm(args: RmArgs) -> Result<()> {
    let store = open_existing(&args.env, "state rm")?;
    let result = if args.dry_run { dry_run(&store, &args) } else { locked(&store, &args) };
    let closed = store.close();
    let lines = result?;
    closed?;
    for line in lines {
        println!("{}", escape::text(&line));
    }
    Ok(())
}

fn dry_run(store: &Store, args: &RmArgs) -> Result<Vec<String>> {
    let ws = load(store, args)?;
    let state = shown(&args.env);
    Ok(vec![match &args.address {
        None => format!(
            "Would remove workspace {} (serial {}, {} resource(s)) from {state}; the cloud would not be touched.",
            ws.shoot,
            ws.serial,
            ws.resources.len()
        ),
        Some(wanted) => {
            let address = resource(&ws, wanted, args)?;
            format!(
                "Would remove {address} ({}) from workspace {} in {state}; the cloud would not be touched.",
                ws.resources[address].id, ws.shoot
            )
        }
    }])
}

/// The removal under the workspace lock, released again whatever happens.
fn locked(store: &Store, args: &RmArgs) -> Result<Vec<String>> {
    let lock = trellis_state::LockInfo::here("state rm");
    let mut lines = Vec::new();
    if let trellis_state::Acquired::BrokeStale(dead) = store.lock(&args.shoot, &lock)? {
        eprintln!("{}: took over a stale lock from a process that is gone ({dead})", args.shoot);
    }
    let removed = remove(store, args, &mut lines);
    let unlocked = store.unlock(&args.shoot, &lock.id);
    removed?;
    unlocked?;
    Ok(lines)
}

fn remove(store: &Store, args: &RmArgs, lines: &mut Vec<String>) -> Result<()> {
    let ws = load(store, args)?;
    let state = shown(&args.env);
    let backup = match &args.backup {
        Some(file) => file.clone(),
        None => {
            let name = trellis_state::removal_backup_file(&ws.shoot, &ws.lineage, ws.serial);
            match store {
                Store::Sled(s) => s.backups_dir().join(name),
                Store::Postgres(_) => PathBuf::from(name),
            }
        }
    };
    let address = args.address.as_deref().map(|wanted| resource(&ws, wanted, args)).transpose()?;
    WorkspaceFile::write_new(&backup, &ws).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
            "not removing anything from workspace {}: the backup file {} exists already; pass --backup FILE to write it elsewhere",
            ws.shoot,
            backup.display()
        ),
        _ => anyhow::anyhow!(
            "not removing anything from workspace {}: cannot write the backup {} ({e}); pass --backup FILE to write it elsewhere",
            ws.shoot,
            backup.display()
        ),
    })?;
    let file = super::shell_word(&backup.display().to_string());
    let replay = args.env.replay_flags();
    match address {
        None => {
            let history = store.remove(&ws.shoot, &ws.lineage, ws.serial)?;
            lines.push(format!(
                "Removed workspace {} (serial {}, {} resource(s)) from {state}; the cloud was not touched, and the \
                 next plan of the shoot starts from nothing (it creates what it needs, taking over what it finds of \
                 its own). Backup: {}; undo with `trellis state push {} {file}{replay}`. Its history is kept as {history}.",
                ws.shoot,
                ws.serial,
                ws.resources.len(),
                backup.display(),
                ws.shoot,
            ));
            for (kind, name) in derived(store, &ws.shoot)? {
                lines.push(format!(
                    "note: the {kind} workspace {name} is kept; `trellis state rm {name}{replay}` removes it too."
                ));
            }
        }
        Some(address) => {
            let mut next = ws.clone();
            let id = next.resources[address].id.clone();
            next.forget_resource(address, &id);
            store.commit(&mut next, trellis_state::REMOVE_OPERATION)?;
            lines.push(format!(
                "Removed {address} ({id}) from workspace {} in {state} (now serial {}); the cloud was not touched, \
                 and if the configuration still wants the resource, the next plan finds it as before (no change) and \
                 the next apply records it again. Backup: {}; undo with `trellis state push {} {file} --force{replay}`.",
                ws.shoot,
                next.serial,
                backup.display(),
                ws.shoot,
            ));
        }
    }
    Ok(())
}

/// The stored workspace of the shoot, or the one-line error naming `state list`.
fn load(store: &Store, args: &RmArgs) -> Result<Workspace> {
    store.load(&args.shoot)?.ok_or_else(|| no_workspace(&args.shoot, &args.env))
}

/// The address of the resource `wanted` names, or the one-line error naming `state show`.
fn resource<'a>(ws: &'a Workspace, wanted: &str, args: &RmArgs) -> Result<&'a str> {
    match ws.resource_address(wanted) {
        Some(address) => Ok(address),
        None => bail!(
            "workspace {} in {} records no resource {wanted}; `trellis state show {}` lists its resources (each \
             address with its id)",
            ws.shoot,
            shown(&args.env),
            ws.shoot
        ),
    }
}

/// The derived workspaces stored beside the shoot's own (`shoot--p--n+domains`): (provider, name).
fn derived(store: &Store, shoot: &str) -> Result<Vec<(&'static str, String)>> {
    let mut out = Vec::new();
    for entry in registry().entries() {
        let Some(d) = entry.derived else { continue };
        if shoot.ends_with(d.workspace_suffix) {
            continue;
        }
        let name = format!("{shoot}{}", d.workspace_suffix);
        if store.load(&name)?.is_some() {
            out.push((entry.provider.type_name(), name));
        }
    }
    Ok(out)
}

#[derive(Args)]
pub(crate) struct OutputArgs {
    /// The shoot's technical id (`shoot--project--name`), as `state list` prints it.
    shoot: String,
    /// One artifact, by name (`infrastructure_status`, `azure.json` or `cloudprovider.conf`, `domains`,
    /// …): only its content is printed — a file as it is, anything else as JSON.
    name: Option<String>,
    /// How to print all artifacts: text (each under its name) or json (one object, name → value).
    #[arg(long, value_enum, default_value_t = ReportOutput::Text)]
    output: ReportOutput,
    #[command(flatten)]
    env: Env,
}

/// The plan JSON's name of the cloud-provider config, which `trellis output` lists under its file name
/// (`azure.json`, `cloudprovider.conf`) and finds under either.
const CLOUD_PROVIDER_CONFIG: &str = "cloud_provider_config";

/// One artifact as `trellis output` prints it.
enum Out {
    /// A file (the cloud-provider config), byte for byte.
    File(String),
    Json(Value),
}

impl Out {
    fn json(&self) -> Value {
        match self {
            Out::File(content) => Value::String(content.clone()),
            Out::Json(v) => v.clone(),
        }
    }
}

/// `trellis output SHOOT [NAME]`: the artifacts of the shoot's last apply, as the state records them
/// (the shoot's workspace, then its derived ones: the domains plan's). Reads only, as `state show`.
pub(crate) fn output(args: OutputArgs) -> Result<u8> {
    let store = open_existing(&args.env, "output")?;
    let found = read_outputs(&store, &args);
    let closed = store.close();
    let (any, artifacts) = found?;
    closed?;
    let state = shown(&args.env);
    if !any {
        return Err(no_workspace(&args.shoot, &args.env));
    }
    if artifacts.is_empty() {
        bail!(
            "{} has no applied artifacts in {state} (it was never applied completely, or it was destroyed); run `trellis apply` first",
            args.shoot
        );
    }
    let mut stdout = std::io::stdout().lock();
    match &args.name {
        Some(name) => {
            // The plan JSON's key of the cloud-provider config names it as well as its file name does.
            let found = artifacts.iter().find(|(n, out)| {
                n == name || (name == CLOUD_PROVIDER_CONFIG && matches!(out, Out::File(_)) && !n.contains('/'))
            });
            let Some((_, out)) = found else {
                let names: Vec<&str> = artifacts.iter().map(|(n, _)| n.as_str()).collect();
                bail!(
                    "{} has no artifact {:?} in {state}; its artifacts are {}",
                    args.shoot,
                    escape::text(name),
                    names.join(", ")
                );
            };
            match (out, args.output) {
                (Out::File(content), ReportOutput::Text) => stdout.write_all(content.as_bytes())?,
                (out, _) => writeln!(stdout, "{}", serde_json::to_string_pretty(&out.json())?)?,
            }
        }
        None if args.output == ReportOutput::Json => {
            let object: serde_json::Map<String, Value> =
                artifacts.iter().map(|(name, out)| (name.clone(), out.json())).collect();
            writeln!(stdout, "{}", serde_json::to_string_pretty(&Value::Object(object))?)?;
        }
        None => {
            for (name, out) in &artifacts {
                let content = match out {
                    Out::File(content) => content.clone(),
                    Out::Json(v) => serde_json::to_string_pretty(v)?,
                };
                writeln!(stdout, "{}:", escape::text(name))?;
                for line in escape::lines(&content).lines() {
                    match line.is_empty() {
                        true => writeln!(stdout)?,
                        false => writeln!(stdout, "  {line}")?,
                    }
                }
            }
        }
    }
    Ok(0)
}

/// Whether the shoot has any workspace, and the artifacts recorded in them by name, in order.
fn read_outputs(store: &Store, args: &OutputArgs) -> Result<(bool, Vec<(String, Out)>)> {
    let mut names = vec![args.shoot.clone()];
    for entry in registry().entries() {
        if let Some(d) = entry.derived.filter(|d| !args.shoot.ends_with(d.workspace_suffix)) {
            names.push(format!("{}{}", args.shoot, d.workspace_suffix));
        }
    }
    let mut any = false;
    let mut out: Vec<(String, Out)> = Vec::new();
    for name in names {
        let Some(ws) = store.load(&name)? else { continue };
        any = true;
        let Some(outputs) = ws.outputs else { continue };
        let artifacts: Artifacts = serde_json::from_value(outputs).with_context(|| {
            format!("the applied artifacts of {name} in {} cannot be read; run `trellis apply` again", shown(&args.env))
        })?;
        for artifact in artifacts.shown() {
            let (key, value) = match artifact {
                Shown::InfrastructureStatus(v) => (artifact.name().to_string(), Out::Json(v.clone())),
                Shown::EgressCidrs(c) => (artifact.name().to_string(), Out::Json(serde_json::json!(c))),
                Shown::CloudProviderConfig(c) if c.content.is_empty() => continue,
                Shown::CloudProviderConfig(c) => (c.shown_name().into_owned(), Out::File(c.content.clone())),
                Shown::CcmFlags(f) => (artifact.name().to_string(), Out::Json(serde_json::json!(f))),
                Shown::AllowEgress(b) => (artifact.name().to_string(), Out::Json(Value::Bool(b))),
                Shown::Value(n, v) => (n.to_string(), Out::Json(v.clone())),
            };
            // A derived workspace's artifact of a name the shoot's own has: named after its workspace.
            let key = match out.iter().any(|(n, _)| *n == key) {
                true => format!("{name}/{key}"),
                false => key,
            };
            out.push((key, value));
        }
    }
    Ok((any, out))
}
