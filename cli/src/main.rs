//! `trellis`: plan and apply Gardener shoot infrastructure.

// The doc comments of the command-line types are clap's help text, where `<state>` and `<shoot>` are
// placeholders a user reads, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use anyhow::{bail, Context as _, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use trellis_cli::backend::{SimPlace, StateLocation, Store};
use trellis_cli::ops::{self, ApplyOp, ApplyOptions, Session};
use trellis_cli::progress::Display;
use trellis_cli::shard::Shard;
use trellis_engine::binding::{Chosen, CloudChoice};
use trellis_engine::registry::Registry;
use trellis_plans::{escape, render, PlanSet};
use trellis_providers::features::Features;
use trellis_providers::provider::FleetWarning;
use trellis_state::{LockTarget, LockWait, StateError, StateStore, WorkspaceFile};

mod repair;
mod sim_cmd;

/// The providers and cloud bindings this binary plans with: the registry line.
fn registry() -> Arc<Registry> {
    Registry::builtin()
}

/// mimalloc instead of the system allocator: planning a fleet allocates many small, short-lived values
/// on every worker thread (YAML events, JSON values, plan nodes), where glibc's malloc took ~12 % of
/// the CPU (see the bench's section 4). It also replaces glibc's per-thread arenas, which held ~65 MiB
/// of an apply's 375 MiB for 2,000 shoots (the apply's tasks run on many threads).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` that ignores a closed stdout (apply and destroy keep going whatever happens to their output).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// The most nodes in flight at once: far above what a cloud's rate limits allow, far below what would
/// exhaust memory or the async runtime.
const MAX_PARALLELISM: u64 = 1000;
/// The longest simulated latency per call: a minute (a longer one would look like a hang).
const MAX_SIM_LATENCY_MS: u64 = 60_000;

/// `trellis --version`: the version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TRELLIS_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "trellis", version = VERSION, about = "Plan and apply Gardener shoot infrastructure, Terraform-style")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Admission validation only: every error at once, no cloud access.
    Validate(Inputs),
    /// Show what apply would do. Reads the cloud, never writes it.
    Plan(PlanArgs),
    /// Execute a saved plan, or plan and apply with --auto-approve.
    Apply(ApplyArgs),
    /// Delete the shoots' infrastructure (upstream delete graph); user-owned resources are never touched.
    Destroy(DestroyArgs),
    /// Render a saved plan.
    Show(ShowArgs),
    /// Semantic diff of two saved plans, for reviews. Exits 0 when they are equal, 2 when they
    /// differ, 1 on error.
    Diff(DiffArgs),
    /// Inspect and repair the state.
    #[command(subcommand)]
    State(StateCommand),
    /// Print the artifacts of a shoot's last apply from the state (InfrastructureStatus, azure.json or
    /// cloudprovider.conf, egress CIDRs, the domains plan's values), or one of them by name.
    Output(repair::OutputArgs),
    /// Run the simulated runtime writers (CCM, bastion controller) against the simulated cloud.
    Sim(sim_cmd::SimArgs),
    /// World files: what exists in a cloud, to plan offline with (`trellis plan --world FILE`).
    #[command(subcommand)]
    World(WorldCommand),
    /// Print the shell completion script for SHELL (e.g. `trellis completions bash >
    /// /etc/bash_completion.d/trellis`).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print trellis's man page, or a command's (roff; e.g. `trellis man plan > trellis-plan.1 && man
    /// ./trellis-plan.1`).
    Man {
        /// The command whose page to print (`plan`, `world`); without one, trellis's own page.
        command: Option<String>,
    },
}

#[derive(Subcommand)]
enum WorldCommand {
    /// Write the world file of everything the shoots' plans read from a real cloud (--cloud with its
    /// account and credentials, as for `trellis plan`): each resource as the cloud's GET or list
    /// returned it, with the parents and referenced resources the file needs to load, sorted by id.
    /// Credentials are never written. Then `trellis plan -f … --world FILE` plans offline as online.
    Export(ExportArgs),
}

#[derive(Args)]
struct ExportArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Write the world file here (written whole once the export is complete) instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct Inputs {
    /// Shoot manifest file, or a directory (a fleet: every Shoot in it). Repeatable.
    #[arg(short = 'f', long = "file", value_name = "FILE|DIR")]
    files: Vec<PathBuf>,
    /// Gardener feature gates to plan under, as Gardener components take them:
    /// `MutableShootDomains=true` (comma-separated `Name=true|false`; every gate is off by default).
    #[arg(long, value_name = "GATES", default_value = "", hide_default_value = true, value_parser = parse_feature_gates)]
    feature_gates: Features,
    #[command(flatten)]
    env: Env,
}

#[derive(Args, Clone)]
struct Env {
    /// Where the state lives: a directory (sled; the simulated cloud lives there too, unless --sim-dir)
    /// or a PostgreSQL database, postgres://USER@HOST:PORT/DB (shared by a team and its CI runners).
    #[arg(
        long,
        value_name = "DIR|URL",
        env = "TRELLIS_STATE",
        hide_env_values = true,
        default_value = ".trellis",
        global = true
    )]
    state: String,
    /// The simulated clouds' own directory (default with a PostgreSQL --state: .trellis/sim). Give each
    /// runner on one machine its own, or share one simulated cloud with `trellis sim serve` + --endpoint.
    #[arg(long, value_name = "DIR", env = "TRELLIS_SIM_DIR", global = true)]
    sim_dir: Option<PathBuf>,
    /// Which cloud to talk to.
    #[arg(long, default_value = "sim", global = true, value_parser = clap::builder::PossibleValuesParser::new(registry().cloud_names()))]
    cloud: String,
    /// World file: resources that exist outside trellis (re-synced into the simulated cloud on every run); with a real --cloud, only what stays simulated beside it.
    #[arg(long, value_name = "FILE", global = true)]
    world: Option<PathBuf>,
    /// Accept out-of-band changes to your BYO subnet, NSG or route table since the last apply.
    #[arg(long, global = true)]
    accept_drift: bool,
    /// Simulated cloud: latency per call in milliseconds (at most a minute).
    #[arg(long, hide = true, default_value_t = 0, global = true, value_parser = clap::value_parser!(u64).range(0..=MAX_SIM_LATENCY_MS))]
    sim_latency_ms: u64,
    /// Simulated cloud: extra latency per write (long-running operation) in milliseconds (at most a minute).
    #[arg(long, hide = true, default_value_t = 0, global = true, value_parser = clap::value_parser!(u64).range(0..=MAX_SIM_LATENCY_MS))]
    sim_write_latency_ms: u64,
    /// The cloud bindings' own flags (the account, the real client's endpoint).
    #[command(flatten)]
    bindings: BindingFlags,
    // Help: "With --cloud <each real cloud>: the API endpoint instead of the cloud's own …".
    #[arg(long, value_name = "URL", env = "TRELLIS_ENDPOINT", global = true, help = registry().endpoint_help())]
    endpoint: Option<String>,
    /// How long to wait for a lock another trellis process holds (the state dir, a shoot's workspace,
    /// the --sim-dir) before giving up, e.g. 30s or 5m (at most 24h), printing who holds it; 0s refuses
    /// at once, naming the holder.
    #[arg(
        long,
        value_name = "DURATION",
        env = "TRELLIS_LOCK_TIMEOUT",
        default_value = "0s",
        global = true,
        value_parser = trellis_state::parse_lock_timeout
    )]
    lock_timeout: Duration,
}

/// The registry's bindings' own flags ([`Registry::args`]), global as the rest of [`Env`], kept as
/// parsed for the bindings to read ([`CloudChoice::flags`]).
#[derive(Clone)]
struct BindingFlags(clap::ArgMatches);

impl clap::FromArgMatches for BindingFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(BindingFlags(matches.clone()))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0 = matches.clone();
        Ok(())
    }
}

impl clap::Args for BindingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.args(registry().args())
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        BindingFlags::augment_args(cmd)
    }
}

/// The ids of `Env`'s arguments that choose or reach a real cloud, or change how a plan reads one
/// (`--cloud`, `--endpoint`, `--accept-drift`): with the bindings' flags that configure a real client
/// only ([`binding_flag_reaches_a_real_cloud`]), what `trellis sim` refuses ([`Env::real_cloud_flags`])
/// and leaves out of its help.
const REAL_CLOUD_ARGS: [&str; 3] = ["cloud", "endpoint", "accept_drift"];

/// Whether a binding's flag (by its long name) configures a real client only
/// ([`Registry::real_client_flags`]: every flag but those a binding's simulated cloud uses too, such as
/// `--project`, which names the simulated project).
fn binding_flag_reaches_a_real_cloud(long: &str) -> bool {
    registry().real_client_flags().iter().any(|f| f.long == long)
}

impl Env {
    /// `--state` (or TRELLIS_STATE), checked: a malformed URL is one line naming it (password redacted).
    fn location(&self) -> Result<StateLocation> {
        Ok(self.state.parse::<StateLocation>()?)
    }

    /// The flags a later command needs to reach the same state and cloud as this one (`--state`,
    /// `--sim-dir`, `--cloud`, `--endpoint`, the bindings' flags given on the command line), for the
    /// hints that print a command (`apply it with …`): each ` --flag value`, quoted for a POSIX shell.
    /// A PostgreSQL URL holding a password is not repeated (`--state …` stands for it).
    fn replay_flags(&self) -> String {
        let mut out = String::new();
        let flag = |out: &mut String, name: &str, value: &str| {
            out.push_str(&format!(" --{name} {}", shell_word(value)));
        };
        if self.state != ".trellis" {
            match url_with_password(&self.state) {
                true => out.push_str(" --state …"),
                false => flag(&mut out, "state", &self.state),
            }
        }
        if let Some(dir) = &self.sim_dir {
            flag(&mut out, "sim-dir", &dir.display().to_string());
        }
        if self.cloud != "sim" {
            flag(&mut out, "cloud", &self.cloud);
        }
        if let Some(endpoint) = &self.endpoint {
            flag(&mut out, "endpoint", endpoint);
        }
        for (long, value) in self.binding_flags_given() {
            if let Some(value) = value {
                flag(&mut out, &long, value);
            }
        }
        out
    }

    /// The bindings' flags given on the command line (not from the environment, not defaults): each
    /// long name with its value (`None`: not a text value).
    fn binding_flags_given(&self) -> Vec<(String, Option<&String>)> {
        let matches = &self.bindings.0;
        registry()
            .args()
            .iter()
            .filter_map(|arg| {
                let id = arg.get_id().as_str();
                let from_command_line = matches.try_contains_id(id).unwrap_or(false)
                    && matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
                let long = arg.get_long().filter(|_| from_command_line)?;
                Some((long.to_string(), matches.try_get_one::<String>(id).ok().flatten()))
            })
            .collect()
    }

    /// The flags given on the command line that choose or reach a real cloud, or change how a plan
    /// reads one (`--cloud` other than sim, `--endpoint`, `--accept-drift`, the bindings' account
    /// flags but `--project`, which names the simulated project too): `trellis sim` refuses them, they
    /// mean nothing to the simulated clouds.
    fn real_cloud_flags(&self) -> Vec<String> {
        let mut given = Vec::new();
        if self.cloud != "sim" {
            given.push(format!("--cloud {}", self.cloud));
        }
        if self.endpoint.is_some() {
            given.push("--endpoint".to_string());
        }
        if self.accept_drift {
            given.push("--accept-drift".to_string());
        }
        for (long, _) in self.binding_flags_given() {
            if binding_flag_reaches_a_real_cloud(&long) {
                given.push(format!("--{long}"));
            }
        }
        given
    }

    /// `--lock-timeout` ([`lock_wait`]).
    fn lock_wait(&self) -> LockWait {
        lock_wait(self.lock_timeout)
    }

    /// Where the simulated clouds live for this command ([`SimPlace::choose`]).
    fn sim_place(&self, location: &StateLocation) -> SimPlace {
        SimPlace::choose(location, self.sim_dir.as_deref(), self.endpoint.is_some())
    }

    /// Where the simulated clouds live, as messages name it: the sim dir, or the state dir holding them.
    fn sim_shown(&self, location: &StateLocation) -> String {
        match self.sim_place(location) {
            SimPlace::Dir(dir) => dir.display().to_string(),
            SimPlace::InState => location.to_string(),
            SimPlace::Temporary => "a temporary dir (pass --sim-dir)".to_string(),
        }
    }
}

/// `--lock-timeout`: each wait for a held lock says so on stderr, naming the holder (a user and host
/// from another machine's environment: escaped).
fn lock_wait(timeout: Duration) -> LockWait {
    LockWait::new(timeout, |waiting| eprintln!("{}", escape::text(&waiting.to_string())))
}

/// What a report of what was done prints (apply, destroy, `trellis sim audit`): it has no graph or
/// review rendering (those are the plan's: `trellis plan --output …`, `trellis show PLAN --output …`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ReportOutput {
    Text,
    Json,
}

/// What apply and destroy print on stdout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum RunOutput {
    /// The plan, then a line per shoot (applied / failed: why / skipped).
    Text,
    /// The report: every node's outcome, every call.
    Json,
    /// The plan and a table of what became of each shoot, for a pull-request comment or a CI job summary.
    Markdown,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum Output {
    Text,
    Json,
    Markdown,
    /// The dependency graph as Graphviz DOT (a fleet: one cluster per shoot).
    Dot,
    /// The dependency graph as a Mermaid flowchart (a fleet: one subgraph per shoot).
    Mermaid,
    /// One self-contained HTML page: summary, the graph as SVG, each node's reason and changes.
    Html,
}

#[derive(Args)]
struct PlanArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Write the plan to this file, for `trellis apply PLAN`.
    #[arg(long, value_name = "PLAN")]
    out: Option<PathBuf>,
    /// How to print the plan: text for people, JSON for tools (the plan file's format), markdown for a
    /// pull-request comment.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Exit 2 when the plan has changes (0: no changes, 1: error).
    #[arg(long)]
    detailed_exitcode: bool,
    /// Show unchanged nodes too, and every shoot of a fleet whole (not one line for a shoot without changes).
    #[arg(short, long)]
    verbose: bool,
    /// Plan the shoots' deletion (each provider's delete graph, what `trellis destroy` runs) as a plan
    /// that show, diff, markdown and `apply PLAN --expect-digest` treat like any other.
    #[arg(long)]
    destroy: bool,
    #[command(flatten)]
    prune: PruneFlag,
    #[command(flatten)]
    shard: ShardFlag,
    #[command(flatten)]
    target: TargetFlag,
    #[command(flatten)]
    replace: ReplaceFlag,
}

/// `--target SHOOT|ADDRESS` (plan, apply, destroy).
#[derive(Args)]
struct TargetFlag {
    /// Only this shoot (its technical id `shoot--project--name`, or its name), or only the resource at
    /// this address (as `trellis plan` prints it) and what it depends on (in a destroy: what must be
    /// deleted before it). Repeatable. The plan says it is partial; for exceptional situations such as
    /// recovering from errors, not for routine use.
    #[arg(long = "target", value_name = "SHOOT|ADDRESS")]
    targets: Vec<String>,
}

/// `--replace ADDRESS` (plan, apply).
#[derive(Args)]
struct ReplaceFlag {
    /// Replace the managed resource at this address (as `trellis plan` prints it): delete it and create
    /// it again, even where it is in sync or would be updated in place. Repeatable.
    #[arg(long = "replace", value_name = "ADDRESS")]
    addresses: Vec<String>,
}

impl TargetFlag {
    /// What `--target` and `--replace` ask, for the session ([`ops::Targeting`]).
    fn targeting(&self, replace: Option<&ReplaceFlag>) -> ops::Targeting {
        ops::Targeting::new(self.targets.clone(), replace.map(|r| r.addresses.clone()).unwrap_or_default())
    }
}

/// `--prune` (plan, apply -f).
#[derive(Args)]
struct PruneFlag {
    /// Also plan the destroy of every shoot in state whose manifest is gone from the fleet directory
    /// (-f DIR), from the manifest it was last applied with; without it they are only listed.
    #[arg(long, conflicts_with = "destroy")]
    prune: bool,
}

impl PruneFlag {
    /// What the fleet planner does about shoots in state that are not among `files`: looked for when a
    /// directory (a fleet) is among them; `--prune` without one is an error.
    fn orphans(&self, files: &[PathBuf]) -> Result<ops::Orphans> {
        let fleet = files.iter().any(|f| f.is_dir());
        Ok(match (self.prune, fleet) {
            (true, true) => ops::Orphans::Prune,
            (true, false) => bail!(
                "--prune needs a fleet directory among -f (it destroys the shoots in state whose manifests are gone from it); pass -f DIR"
            ),
            (false, true) => ops::Orphans::Report,
            (false, false) => ops::Orphans::Ignore,
        })
    }
}

/// `--shard I/N` (plan, apply, destroy).
#[derive(Args)]
struct ShardFlag {
    /// Only the I-th of N stable shards of the fleet (by technical id), so N runners split one fleet;
    /// fleet-wide checks still consult the shoots other shards applied in the shared state.
    #[arg(long = "shard", value_name = "I/N")]
    value: Option<String>,
}

impl ShardFlag {
    /// The shard, checked (a bad value is a one-line error, not clap's usage text).
    fn get(&self) -> Result<Option<Shard>> {
        Ok(self.value.as_deref().map(str::parse::<Shard>).transpose()?)
    }
}

#[derive(Args)]
struct ApplyArgs {
    /// A plan file written by `trellis plan --out`.
    plan: Option<PathBuf>,
    /// Apply the plan file only if each of its shoots' plan digests (printed by `trellis plan` and
    /// `trellis show PLAN`) is one of these: pins exactly what a reviewer approved. Repeat once per
    /// shoot of a fleet. `--digest` is the older name of the same flag.
    #[arg(long, visible_alias = "digest", value_name = "SHA256", requires = "plan", value_parser = parse_digest)]
    expect_digest: Vec<String>,
    #[command(flatten)]
    inputs: Inputs,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    prune: ApplyPruneFlag,
    #[command(flatten)]
    shard: ShardFlag,
    #[command(flatten)]
    target: TargetFlag,
    #[command(flatten)]
    replace: ReplaceFlag,
}

/// `--prune` of `apply -f`.
#[derive(Args)]
struct ApplyPruneFlag {
    /// With -f DIR: also destroy every shoot in state whose manifest is gone from the fleet directory
    /// (what `trellis plan -f DIR --prune` shows).
    #[arg(long, conflicts_with = "plan")]
    prune: bool,
}

#[derive(Args)]
struct DestroyArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    shard: ShardFlag,
    #[command(flatten)]
    target: TargetFlag,
}

/// How apply and destroy run.
#[derive(Args)]
struct RunFlags {
    /// Go ahead without asking (needed when not interactive).
    #[arg(long)]
    auto_approve: bool,
    /// text: the plan, then a line per shoot; json: the report (every node's outcome, every call);
    /// markdown: the plan and a table of the shoots' outcomes.
    #[arg(long, value_enum, default_value_t = RunOutput::Text)]
    output: RunOutput,
    /// Exit 2 when something was applied or destroyed, 0 when there was nothing to do (1: error).
    #[arg(long)]
    detailed_exitcode: bool,
    /// Of a fleet: a failing shoot does not stop the others (a shoot refused at planning is reported
    /// failed and the rest are applied); without it, no shoot starts after the first failure.
    #[arg(long)]
    keep_going: bool,
    /// Nodes in flight at once, across all shoots (1 to 1000).
    #[arg(long, default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_PARALLELISM))]
    parallelism: usize,
    /// At the end, print (on stderr) the calls made to a PostgreSQL state and the time spent waiting on it.
    #[arg(long)]
    timings: bool,
}

#[derive(Args)]
struct ShowArgs {
    /// A plan file written by `trellis plan --out`.
    plan: PathBuf,
    /// How to render it: what `plan` prints (text, json, markdown), Terraform's JSON plan format, the
    /// dependency graph (dot, mermaid) or one HTML page.
    #[arg(long, value_enum, default_value_t = ShowOutput::Text)]
    output: ShowOutput,
    /// Show unchanged nodes too, and every shoot of a fleet whole.
    #[arg(short, long)]
    verbose: bool,
    /// With `--output terraform-json`: the document on one line, as `terraform show -json` writes it
    /// (the default when stdout is not a terminal; some readers, terraform-compliance among them, read
    /// only a one-line document).
    #[arg(long)]
    compact: bool,
}

/// What `show` renders a saved plan as: what `plan` prints, Terraform's JSON plan representation, or the graph.
#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum ShowOutput {
    Text,
    Json,
    Markdown,
    /// Terraform's JSON plan representation (`terraform show -json`), for policy and review tools.
    TerraformJson,
    /// The dependency graph in Graphviz DOT.
    Dot,
    /// The dependency graph as a Mermaid flowchart (GitHub renders it).
    Mermaid,
    /// One self-contained HTML page: summary, the graph as SVG, each node, the artifacts.
    Html,
}

#[derive(Args)]
struct DiffArgs {
    /// The plan file to compare from (e.g. the base branch's).
    old: PathBuf,
    /// The plan file to compare to (e.g. the pull request's).
    new: PathBuf,
    /// How to print the differences: text, JSON for tools, markdown for a pull-request comment.
    #[arg(long, value_enum, default_value_t = DiffOutput::Text)]
    output: DiffOutput,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum DiffOutput {
    Text,
    Json,
    Markdown,
}

#[derive(Subcommand)]
enum StateCommand {
    /// Every workspace: shoot, lineage, serial, resources, lock.
    List(Env),
    /// One workspace as JSON.
    Show {
        /// The shoot's technical id (`shoot--project--name`), as `state list` prints it.
        shoot: String,
        #[command(flatten)]
        env: Env,
    },
    /// Remove a workspace lock left by a process that is gone.
    Unlock {
        /// The shoot's technical id whose lock to remove.
        shoot: String,
        #[command(flatten)]
        env: Env,
    },
    /// Print a workspace with its checksum, as JSON that `state push` reads back.
    Pull {
        /// The shoot's technical id whose workspace to print.
        shoot: String,
        #[command(flatten)]
        env: Env,
    },
    /// Copy every workspace (with its history, integrity-checked), and the histories kept for removed
    /// workspaces, from one backend to another, e.g. a sled dir into PostgreSQL. Re-running it after an
    /// interruption copies what is left.
    Migrate {
        /// Where the state is now: a state dir or postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "DIR|URL")]
        from: String,
        /// Where it goes: a state dir (created if needed) or postgres://USER@HOST:PORT/DB.
        #[arg(long, value_name = "DIR|URL")]
        to: String,
        /// How long to wait for a state dir another trellis process holds, e.g. 30s (at most 24h),
        /// printing who holds it; 0s refuses at once.
        #[arg(
            long,
            value_name = "DURATION",
            env = "TRELLIS_LOCK_TIMEOUT",
            default_value = "0s",
            value_parser = trellis_state::parse_lock_timeout
        )]
        lock_timeout: Duration,
    },
    /// Forget a workspace, or one resource of it, without touching the cloud (as `terraform state rm`).
    /// The workspace is written to a backup file first, which `state push` restores.
    Rm(repair::RmArgs),
    /// Restore a workspace from a file written by `state pull` (or a backup in <state>/backups/).
    Push {
        /// The shoot's technical id whose workspace to restore.
        shoot: String,
        /// The file `state pull` wrote (or a backup from <state>/backups/).
        file: PathBuf,
        /// Replace a stored workspace of another lineage, or at a higher serial than the file's.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        env: Env,
    },
}

fn main() -> ExitCode {
    // Usage errors exit 1 (clap's default 2 would read as "changes" under --detailed-exitcode).
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            print_usage_error(&e);
            return ExitCode::from(code);
        }
    };
    // `trellis plan | head` ends quietly, as other command-line tools do, instead of panicking on a
    // closed pipe (Rust ignores SIGPIPE by default). Not for commands that change the cloud: a closed
    // output pipe must not stop an apply half-way; their output ignores write errors instead (`out!`).
    if !matches!(cli.command, Command::Apply(_) | Command::Destroy(_)) {
        #[cfg(unix)]
        // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprint_error(&e);
            ExitCode::from(1)
        }
    }
}

/// Prints clap's message (usage errors, `--help`, `--version`) as clap does, except that an argument
/// holding a control character (a newline in `--expect-digest`'s value) is shown escaped wherever
/// clap quotes it: no value from the command line can print a line of its own.
fn print_usage_error(e: &clap::Error) {
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let values = args.iter().flat_map(|a| [Some(a.as_str()), a.split_once('=').map(|(_, v)| v)]).flatten();
    let unsafe_values: Vec<&str> = values.filter(|v| escape::text(v) != *v).collect();
    if unsafe_values.is_empty() {
        let _ = e.print();
        return;
    }
    let mut text = e.render().to_string();
    for v in unsafe_values {
        text = text.replace(v, &escape::text(v));
    }
    if e.use_stderr() {
        let _ = write!(std::io::stderr(), "{text}");
    } else {
        let _ = write!(std::io::stdout(), "{text}");
    }
}

/// The error and its causes as one text, `what: why: why`. A cause whose words the text already holds
/// (a library error that prints its source itself) is not repeated.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let words = cause.to_string();
        if text.contains(&words) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&words);
    }
    text
}

/// Prints an error to stderr after `error: `: one line, unless the error is a list
/// ([`ops::list_lines`]: a fleet's failures, field errors, a world file's problems), whose lines
/// follow one per line.
/// Everything else is escaped: a control character from user input (ESC, CR) cannot rewrite the
/// terminal, and a newline inside a quoted value (a path, an id, a flag's value) is shown as `\n`,
/// so no value can print a line of its own ("No changes.").
fn eprint_error(e: &anyhow::Error) {
    match ops::list_lines(e) {
        Some(lines) => eprint_lines(lines),
        None => eprint_lines([error_text(e)]),
    }
}

/// Prints `lines` as an error: the first after `error: `, each escaped ([`escape::text`]).
fn eprint_lines<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) {
    let mut stderr = std::io::stderr().lock();
    for (i, line) in lines.into_iter().enumerate() {
        let prefix = if i == 0 { "error: " } else { "" };
        let _ = writeln!(stderr, "{prefix}{}", escape::text(line.as_ref()));
    }
}

/// Prints a note the engine handed out (on Seed pairing: `note: …`, its values escaped already).
fn eprint_note(note: String) {
    eprintln!("{note}");
}

fn color_for(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

async fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Validate(inputs) => validate(inputs),
        Command::Plan(args) => plan(args).await,
        Command::Apply(args) => apply(args).await,
        Command::Destroy(args) => destroy(args).await,
        Command::Show(args) => show(args),
        Command::Diff(args) => diff(args),
        Command::State(cmd) => state(cmd),
        Command::Output(args) => repair::output(args),
        Command::Sim(args) => sim_cmd::run(args).await,
        Command::World(WorldCommand::Export(args)) => world_export(args).await,
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "trellis", &mut out);
            std::io::stdout().write_all(&out).context("cannot write the completion script to stdout")?;
            Ok(0)
        }
        Command::Man { command } => {
            let top = <Cli as clap::CommandFactory>::command();
            let page = match &command {
                None => top,
                Some(name) => match top.find_subcommand(name) {
                    // Leaked once per process: clap names are `&'static str` without its `string` feature.
                    Some(sub) => sub.clone().name(&*format!("trellis-{name}").leak()),
                    None => {
                        let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
                        bail!("trellis has no command {:?}; its commands are {}", escape::text(name), names.join(", "));
                    }
                },
            };
            let mut out = Vec::new();
            clap_mangen::Man::new(page).render(&mut out).context("cannot render the man page")?;
            std::io::stdout().write_all(&out).context("cannot write the man page to stdout")?;
            Ok(0)
        }
    }
}

/// `trellis world export`: the shoots planned through the chosen real clients, recording what they
/// read ([`ops::export_world`]); the world file to `--out` (atomically) or stdout, progress on stderr.
async fn world_export(args: ExportArgs) -> Result<u8> {
    let files = ops::list_manifest_files(&args.inputs.files)?;
    if let Some(out) = &args.out {
        check_world_out(out, &files)?;
    }
    let env = &args.inputs.env;
    let registry = registry();
    let chosen = choose_clouds(&registry, env).await?;
    ops::check_export_clouds(&registry, &chosen)?;
    let files = ops::read_ahead(Arc::clone(&registry), files);
    let location = env.location()?;
    let sim_place = env.sim_place(&location);
    let (mut session, note) =
        Session::open_with(registry, &location, &sim_place, "world export", env.world.as_deref(), env.lock_wait())?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    session.features = args.inputs.feature_gates;
    session.accept_drift = env.accept_drift;
    let result = world_export_in(&mut session, chosen, &args, files).await;
    session.finish(result)
}

async fn world_export_in(
    session: &mut Session,
    chosen: Vec<trellis_engine::binding::Chosen>,
    args: &ExportArgs,
    files: ops::ReadAhead,
) -> Result<u8> {
    let progress = |p: ops::ExportProgress<'_>| match p {
        ops::ExportProgress::Planned { shoot, resources } => {
            eprintln!("world export: {} read ({resources} resource(s) so far)", escape::text(shoot))
        }
        ops::ExportProgress::Writing => {
            eprintln!("world export: reading what the world file needs besides (parents, referenced resources)")
        }
    };
    let export = ops::export_world(session, chosen, &args.inputs.files, files, eprint_note, progress).await?;
    if !export.preflight_failures.is_empty() {
        eprintln!(
            "note: pre-flight fails against what was read (an offline plan with this world file fails the same way):"
        );
        for line in &export.preflight_failures {
            eprintln!("note: {}", escape::text(line));
        }
    }
    for line in &export.not_exported {
        eprintln!("note: {}", escape::text(line));
    }
    let counts: Vec<String> = export.sections.iter().map(|(key, n)| format!("{key}: {n} resource(s)")).collect();
    match &args.out {
        Some(out) => {
            let context = || format!("cannot write world file {}", out.display());
            let mut tmp = PlanFile::temp_beside(out).with_context(context)?;
            tmp.write_all(export.yaml.as_bytes()).with_context(context)?;
            tmp.as_file().sync_all().with_context(context)?;
            tmp.persist(out).map_err(|e| e.error).with_context(context)?;
            let out = escape::text(&out.display().to_string()).into_owned();
            eprintln!(
                "Wrote the world file {out} ({}); plan offline with `trellis plan -f … --world {out}`.",
                counts.join(", ")
            );
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(export.yaml.as_bytes());
            let _ = stdout.flush();
            eprintln!("world export: {}", counts.join(", "));
        }
    }
    Ok(0)
}

/// `world export --out` may not name an input manifest or a directory, and its directory must exist.
fn check_world_out(out: &Path, files: &[PathBuf]) -> Result<()> {
    check_out_dir(out, "world file to write, e.g. --out world.yaml")?;
    let Ok(target) = out.canonicalize() else { return Ok(()) };
    if files.iter().any(|f| f.canonicalize().is_ok_and(|f| f == target)) {
        bail!(
            "--out {}: is one of the input manifests; a world file must not overwrite its input — choose another name, e.g. --out world.yaml",
            out.display()
        );
    }
    Ok(())
}

/// The cloud each provider's shoots talk to, from `--cloud`, `--endpoint`, `--world` and the bindings'
/// flags: a real client is built here, before any state is opened (a bad flag touches nothing).
async fn choose_clouds(registry: &Registry, env: &Env) -> Result<Vec<Chosen>> {
    let choice = CloudChoice {
        cloud: &env.cloud,
        endpoint: env.endpoint.as_deref(),
        world: env.world.as_deref(),
        flags: &env.bindings.0,
    };
    registry.choose(&choice).await
}

async fn open(env: &Env, operation: &str) -> Result<Session> {
    // The cloud each provider's shoots talk to: a real client is built before the state is opened (a
    // bad flag touches nothing).
    let registry = registry();
    let chosen = choose_clouds(&registry, env).await?;
    let location = env.location()?;
    let sim_place = env.sim_place(&location);
    let (mut session, note) =
        Session::open_with(registry, &location, &sim_place, operation, env.world.as_deref(), env.lock_wait())?;
    session.accept_drift = env.accept_drift;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    session.set_sim_faults(trellis_sim::Faults {
        latency: Duration::from_millis(env.sim_latency_ms),
        write_latency: Duration::from_millis(env.sim_write_latency_ms),
        ..Default::default()
    });
    session.use_chosen(chosen);
    Ok(session)
}

fn validate(inputs: Inputs) -> Result<u8> {
    let registry = registry();
    let (shoots, seeds) = ops::load_inputs(&registry, &inputs.files, inputs.feature_gates, &mut eprint_note)?;
    // Update rules need the last-applied config: use the state when there is one. It is checked like
    // every other command's (not a trellis state dir, or damaged: refused); only a state dir that
    // another process holds is skipped, with a note. Nothing is created.
    let store = match Store::open_existing(&inputs.env.location()?, "validate", &inputs.env.lock_wait()) {
        Ok(store) => store,
        Err(e @ (StateError::DirInUse { .. } | StateError::LockTimeout { .. })) => {
            eprintln!("note: update rules skipped, the state cannot be read: {e}");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut failed = 0;
    for s in &shoots {
        let ws = match &store {
            Some(store) => store.load(&s.id())?,
            None => None,
        }
        .unwrap_or_else(|| trellis_state::Workspace::new(&s.id()));
        match s.provider.validate(s.shoot.as_ref(), &ws) {
            Ok(()) => {}
            Err(trellis_providers::provider::ProviderError::Invalid(errs)) => {
                failed += 1;
                let head = format!("{} ({}): {} validation error(s):", s.id(), s.file.display(), errs.len());
                eprint_lines(std::iter::once(head).chain(errs.iter().map(|e| e.to_string())));
            }
            // Not a rule of the manifest, but the shoot cannot be planned as it is (e.g. its workspace
            // is recorded with another provider): as `plan` says it.
            Err(other) => {
                failed += 1;
                eprint_lines([format!("{} ({}): {other}", s.id(), s.file.display())]);
            }
        }
    }
    // The Seed-level rules of GEP-0066 over each Seed and the derived inputs of its shoots, with the
    // state when there is one ([`ops::check_seeds`]).
    if failed == 0 {
        let store = store.as_ref().map(|s| s as &dyn trellis_state::StateStore);
        if let Err(e) = ops::check_seeds(
            &registry,
            shoots.iter().map(|s| (s.provider, s.shoot.as_ref(), s.file.as_path())),
            &seeds,
            inputs.feature_gates,
            store,
        ) {
            failed += 1;
            eprint_error(&e);
        }
    }
    if let Some(store) = store {
        store.close()?;
    }
    if failed > 0 {
        return Ok(1);
    }
    // A shoot may have its own plan, derived plans, or both: count each shoot once.
    let count = shoots.iter().map(|s| s.shoot.technical_id()).collect::<std::collections::BTreeSet<_>>().len();
    let derived: Vec<String> = registry
        .entries()
        .iter()
        .filter(|e| e.derived.is_some())
        .map(|e| (e.provider.type_name(), shoots.iter().filter(|s| s.provider.type_name() == e.provider.type_name())))
        .map(|(kind, with)| (kind, with.count()))
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| format!("{n} with a {kind} plan"))
        .collect();
    match derived.is_empty() {
        true => println!("{count} shoot(s) valid."),
        false => println!("{count} shoot(s) valid ({}).", derived.join(", ")),
    }
    Ok(0)
}

async fn plan(args: PlanArgs) -> Result<u8> {
    // Listed up front (nothing parsed yet): the fleet's order is known, and a bad path touches nothing.
    let files = ops::list_manifest_files(&args.inputs.files)?;
    let shard = args.shard.get()?;
    let orphans = args.prune.orphans(&args.inputs.files)?;
    if args.destroy && !args.replace.addresses.is_empty() {
        bail!("--replace does not go with --destroy: a destroy plan deletes, it replaces nothing");
    }
    if let Some(out) = &args.out {
        check_out_path(out, &files)?;
    }
    let files = ops::read_ahead(registry(), files);
    let mut session = open(&args.inputs.env, "plan").await?;
    session.features = args.inputs.feature_gates;
    session.targeting = args.target.targeting(Some(&args.replace));
    let result = plan_in(&session, files, &args, shard, orphans).await;
    let result = world_hint(result, &args.inputs.env);
    // A failed command removes the state dir again if it made it and recorded nothing in it.
    session.finish(result)
}

/// Plans the fleet as a stream ([`ops::plan_fleet_streaming`]): each shoot's plan is written in
/// input order as soon as it and the shoots before it are planned — into `--out`'s temporary file
/// (kept only if the whole fleet plans), as JSON straight to stdout (on a failure it ends where the
/// failure was found: no complete document, exit 1), and as text into a temporary file of its own
/// ([`Spill`]) copied to stdout only once the whole fleet planned and passed the fleet checks (a fleet
/// failing a fleet check printed its whole text plan first). Memory stays flat either way. The fleet
/// checks' warnings follow the plans (text: before the total line; JSON: on stderr). Markdown, HTML and
/// the graphs are rendered once the whole fleet is planned.
async fn plan_in(
    session: &Session,
    files: ops::ReadAhead,
    args: &PlanArgs,
    shard: Option<Shard>,
    orphans: ops::Orphans,
) -> Result<u8> {
    let json = args.output == Output::Json;
    let text = (args.output == Output::Text)
        .then(|| render::TextOptions { color: color_for(std::io::stdout().is_terminal()), verbose: args.verbose });
    let mut plan_file = args.out.as_deref().map(PlanFile::create).transpose()?;
    // JSON streams to stdout as it is planned (a consumer checks the exit code; a failed fleet's JSON
    // ends where the failure was found and is no complete document); the text, read by people, is held
    // until the whole fleet planned ([`Spill`]).
    let mut json_out = json
        .then(|| trellis_plans::PlanSetWriter::new(std::io::BufWriter::with_capacity(STDOUT_CHUNK, std::io::stdout())));
    let mut text_out = match &text {
        Some(o) => Some(render::TextWriter::new(Spill::new()?, o)),
        None => None,
    };
    // Markdown, HTML and the graphs need the whole fleet.
    let keep_plans = !json && text.is_none();
    let mut kept = Vec::new();
    let opts = ops::StreamOptions {
        json: json || plan_file.is_some(),
        text,
        keep_plans,
        shard,
        destroy: args.destroy,
        orphans,
        ..Default::default()
    };
    let summary = ops::plan_fleet_streaming(session, &args.inputs.files, files, opts, eprint_note, |p| {
        if let (Some(file), Some(rendered)) = (plan_file.as_mut(), &p.json) {
            file.push(rendered.clone())?;
        }
        // A closed pipe ends the process (SIGPIPE); other write errors to stdout are not the plan's.
        if let (Some(out), Some(rendered)) = (json_out.as_mut(), p.json) {
            let _ = out.push_rendered(rendered);
        }
        if let (Some(out), Some(rendered)) = (text_out.as_mut(), &p.text) {
            out.push(rendered).map_err(Spill::error)?;
        }
        kept.extend(p.plan);
        Ok(())
    })
    .await?;
    if let Some(shard) = shard {
        eprintln!("{}", summary.shard.line(shard));
    }
    left_out_note(summary.left_out);
    if let Some(out) = json_out {
        let _ = out.finish();
        // The fleet checks' warnings follow the JSON, on stderr.
        for w in &summary.fleet_warnings {
            eprintln!("warning: {}: {}", escape::text(&w.shoot), escape::text(&w.message));
        }
    }
    if let Some(out) = text_out {
        let warnings = summary.fleet_warnings.iter().map(|w| (w.shoot.as_str(), w.message.as_str()));
        out.finish(warnings).map_err(Spill::error)?.print()?;
    }
    if let (Some(file), Some(out)) = (plan_file, &args.out) {
        file.persist(&summary.fleet_warnings)?;
        let out = escape::text(&out.display().to_string()).into_owned();
        let flags = escape::text(&args.inputs.env.replay_flags()).into_owned();
        eprintln!("Saved the plan to {out}; apply it with `trellis apply {}{flags}`.", shell_word(&out));
    }
    if keep_plans {
        // In input order, as the JSON.
        ops::add_fleet_warnings(kept.iter_mut(), summary.fleet_warnings);
        let set = PlanSet { format_version: trellis_plans::FORMAT_VERSION, plans: kept };
        print_plan(&set, args.output, args.verbose);
    }
    Ok(if args.detailed_exitcode && summary.changes { 2 } else { 0 })
}

/// `--target`'s note on the plans it left out (none: nothing to say).
fn left_out_note(left_out: usize) {
    if left_out > 0 {
        eprintln!("note: --target leaves out {left_out} plan(s) of the inputs: they are neither planned nor applied");
    }
}

/// How much of a streamed plan is written at once: a fleet's output is large (~15 KB of JSON, ~4 KB
/// of text a shoot), and 8 KiB pieces cost ~7 % of the wall time of the bench's 10,000-shoot fleet
/// into a pipe.
const STDOUT_CHUNK: usize = 1 << 20;

/// A plan's stdout output, held in an unnamed temporary file (removed by the system when closed,
/// also on a crash) until the whole fleet planned; then [`Spill::print`] copies it to stdout.
struct Spill(std::io::BufWriter<std::fs::File>);

impl Spill {
    fn new() -> Result<Spill> {
        let file = tempfile::tempfile().context(
            "cannot create a temporary file for the plan's output (it is printed once the whole fleet is planned); check TMPDIR",
        )?;
        Ok(Spill(std::io::BufWriter::with_capacity(STDOUT_CHUNK, file)))
    }

    fn error(e: std::io::Error) -> anyhow::Error {
        anyhow::anyhow!("cannot write the plan's output to its temporary file: {e}; check the space in TMPDIR")
    }

    /// Copies the output to stdout in [`STDOUT_CHUNK`] pieces. A closed pipe ends the process
    /// (SIGPIPE, as `plan | head` expects); other write errors to stdout are not the plan's.
    fn print(self) -> Result<()> {
        use std::io::{Read as _, Seek as _};
        let mut file = self.0.into_inner().map_err(|e| Spill::error(e.into_error()))?;
        file.rewind().map_err(Spill::error)?;
        let mut chunk = vec![0; STDOUT_CHUNK];
        let mut stdout = std::io::stdout().lock();
        loop {
            let n = file.read(&mut chunk).map_err(Spill::error)?;
            if n == 0 || stdout.write_all(&chunk[..n]).is_err() {
                break;
            }
        }
        let _ = stdout.flush();
        Ok(())
    }
}

impl std::io::Write for Spill {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn print_plan(set: &PlanSet, output: Output, verbose: bool) {
    match output {
        Output::Text => {
            let color = color_for(std::io::stdout().is_terminal());
            let _ = write!(std::io::stdout(), "{}", render::text(set, &render::TextOptions { color, verbose }));
        }
        Output::Json => {
            let stdout = std::io::stdout();
            let _ = set.write_json(std::io::BufWriter::new(stdout.lock()));
        }
        Output::Markdown => {
            let _ = write!(std::io::stdout(), "{}", render::markdown(set));
        }
        Output::Dot => {
            let _ = write!(std::io::stdout(), "{}", trellis_plans::graphs::dot_set(set));
        }
        Output::Mermaid => {
            let _ = write!(std::io::stdout(), "{}", trellis_plans::graphs::mermaid_set(set, false));
        }
        Output::Html => {
            let _ = write!(std::io::stdout(), "{}", trellis_plans::html::html(set));
        }
    }
}

/// The directory a file named by `--out` is written in (through a temporary file beside it).
fn out_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// `--out` names a file (not a directory) in a directory that exists: checked before any work, so a
/// long plan or export does not fail at its end. `what` names the file, e.g. `plan file to write, e.g.
/// --out plan.json`.
fn check_out_dir(out: &Path, what: &str) -> Result<()> {
    if out.is_dir() {
        bail!("--out {}: is a directory; name the {what}", out.display());
    }
    let dir = out_dir(out);
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => bail!("--out {}: {} is not a directory; name a file in an existing directory", out.display(), dir.display()),
        Err(e) => bail!(
            "--out {}: cannot use its directory {}: {e}; create the directory first (mkdir -p {}) or name a file in an existing one",
            out.display(),
            dir.display(),
            dir.display()
        ),
    }
}

/// `--out` may not name an input manifest (the plan would replace the Shoot it was made from) or a
/// directory, and its directory must exist. Checked before planning, so nothing is planned for nothing.
fn check_out_path(out: &Path, files: &[PathBuf]) -> Result<()> {
    check_out_dir(out, "plan file to write, e.g. --out plan.json")?;
    let Ok(target) = out.canonicalize() else { return Ok(()) };
    let Some(input) = files.iter().find(|f| f.canonicalize().is_ok_and(|f| f == target)) else { return Ok(()) };
    let loaded = trellis_providers::manifest::load_file(input)?;
    // The first Shoot of that file whose name can be shown (a technical id is computed only from
    // valid names; an invalid one fails the plan anyway, before anything is written).
    let shoot = loaded.shoots.iter().find(|s| trellis_providers::metadata::validate(s.metadata()).is_empty());
    if let Some(shoot) = shoot {
        bail!(
            "--out {}: is the manifest of shoot {}; a plan file must not overwrite its input — choose another name, e.g. --out plan.json",
            out.display(),
            shoot.technical_id()
        );
    }
    Ok(())
}

/// A plan file being written: a temporary file in the same directory, streamed into, then synced and
/// renamed over the path ([`PlanFile::persist`]), so a crash leaves either the old file or the whole new
/// one, and a failed plan (dropped without `persist`) leaves nothing.
struct PlanFile {
    path: PathBuf,
    writer: trellis_plans::PlanSetWriter<std::io::BufWriter<tempfile::NamedTempFile>>,
}

impl PlanFile {
    /// A temporary file in `path`'s directory (renamed onto it in the end). The error names the
    /// directory, not the temporary file's random name (which tempfile's own error gives).
    fn temp_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
        let dir = out_dir(path);
        tempfile::NamedTempFile::new_in(dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot create a file in {}: {}", dir.display(), e.kind()))
        })
    }

    fn create(path: &Path) -> Result<PlanFile> {
        let tmp = PlanFile::temp_beside(path).with_context(|| format!("cannot write plan file {}", path.display()))?;
        Ok(PlanFile {
            path: path.to_path_buf(),
            writer: trellis_plans::PlanSetWriter::new(std::io::BufWriter::new(tmp)),
        })
    }

    fn push(&mut self, plan: trellis_plans::RenderedPlan) -> Result<()> {
        self.writer.push_rendered(plan).with_context(|| format!("cannot write plan file {}", self.path.display()))
    }

    /// Renames the written plan onto `--out`; with the fleet checks' warnings (known only at the
    /// end, after the plans were written) added to the plans they are for.
    fn persist(self, fleet_warnings: &[FleetWarning]) -> Result<()> {
        let path = self.path;
        let context = || format!("cannot write plan file {}", path.display());
        let file = self.writer.finish().with_context(context)?;
        let mut tmp = file.into_inner().map_err(|e| e.into_error()).with_context(context)?;
        if !fleet_warnings.is_empty() {
            let mut set = read_plan(tmp.path(), "plan")?;
            ops::add_fleet_warnings(set.plans.iter_mut(), fleet_warnings.to_vec());
            tmp = PlanFile::temp_beside(&path).with_context(context)?;
            let mut w = std::io::BufWriter::new(tmp.as_file_mut());
            set.write_json(&mut w).with_context(context)?;
            w.flush().with_context(context)?;
            drop(w);
        }
        tmp.as_file().sync_all().with_context(context)?;
        tmp.persist(&path).map_err(|e| e.error).with_context(context)?;
        Ok(())
    }
}

/// A pre-flight failure against the simulated cloud without `--world` that finds a resource of the
/// user's missing (a BYO VNet, VPC, subnet) is most often one never declared: the error's last line
/// says how. Other pre-flight failures are not about the world and get no hint.
fn world_hint(result: Result<u8>, env: &Env) -> Result<u8> {
    result.map_err(|mut e| {
        if env.cloud == "sim" && env.world.is_none() {
            if let Some(fleet) = e.downcast_mut::<ops::FleetError>().filter(|f| f.has_missing_user_resource()) {
                fleet.hint = Some(
                    "the simulated cloud holds only what trellis applied and what a world file declared: declare your own resources (VNet, VPC, subnets, …) in a world file and pass --world FILE (docs/usage/usage.md, \"World files and trellis world export\")"
                        .to_string(),
                );
            }
        }
        e
    })
}

/// `word` as one word of a POSIX shell: as it is when it holds only safe characters, else in single
/// quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Whether `state` is a URL with a password in it (`postgres://user:secret@host/db`).
fn url_with_password(state: &str) -> bool {
    state.split_once("://").is_some_and(|(_, rest)| {
        rest.split(['/', '?']).next().and_then(|auth| auth.rsplit_once('@')).is_some_and(|(user, _)| user.contains(':'))
    })
}

/// Reads the plan file `path` for `command` (`apply`, `show`, `diff`). A manifest given where a plan
/// file belongs (`trellis apply shoot.yaml`, `-f` forgotten) is said to be one, with the command meant.
fn read_plan(path: &Path, command: &str) -> Result<PlanSet> {
    let text = trellis_providers::manifest::read_input(path)
        .with_context(|| format!("cannot read plan file {}", path.display()))?;
    let shown = path.display().to_string();
    match PlanSet::from_json(&shown, &text) {
        Ok(set) => Ok(set),
        Err(_) if looks_like_manifest(&text) => {
            let shown = escape::text(&shown).into_owned();
            let meant = match command {
                "apply" => format!("to plan and apply manifests, pass them with -f: `trellis apply -f {shown}`"),
                _ => format!("to see the plan of manifests, run `trellis plan -f {shown}`"),
            };
            Err(anyhow::anyhow!(
                "{shown} is a manifest, not a plan file (`trellis {command}` takes a file written by `trellis plan --out`); {meant}"
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether `text` reads as a YAML manifest rather than JSON: a top-level `apiVersion:`/`kind:` line.
fn looks_like_manifest(text: &str) -> bool {
    !text.trim_start().starts_with('{') && text.lines().any(|l| l.starts_with("apiVersion:") || l.starts_with("kind:"))
}

/// A `--feature-gates` value ([`Features`]' parser: only gates trellis knows, `true` or `false`).
fn parse_feature_gates(value: &str) -> Result<Features, String> {
    value.parse::<Features>().map_err(|e| e.to_string())
}

/// An `--expect-digest` value: the 64 hex digits of a sha256, as plans show it.
fn parse_digest(value: &str) -> Result<String, String> {
    let value = value.trim().to_ascii_lowercase();
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value)
    } else {
        Err("expected the 64 hex digits of a plan digest, as `trellis show PLAN` prints it".to_string())
    }
}

/// `apply PLAN --expect-digest …`: every plan of the file has one of the approved digests, and every approved
/// digest names a plan of the file.
fn check_pinned(saved: &PlanSet, approved: &[String]) -> Result<()> {
    if approved.is_empty() {
        return Ok(());
    }
    if let Some(p) = saved.plans.iter().find(|p| !approved.contains(&p.digest)) {
        bail!(
            "{}: its plan digest {} is not one of the approved --expect-digest values; this is not the plan that was approved — review it again",
            p.shoot,
            p.digest
        );
    }
    if let Some(d) = approved.iter().find(|d| !saved.plans.iter().any(|p| &&p.digest == d)) {
        bail!("--expect-digest {d} matches no plan in the plan file; check that you pass the approved plan file");
    }
    Ok(())
}

fn confirm(auto_approve: bool, what: &str) -> Result<bool> {
    if auto_approve {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        if what == "destroy" {
            bail!("destroy needs --auto-approve when not run interactively");
        }
        bail!("{what} needs --auto-approve when not run interactively (or save a plan with `trellis plan --out PLAN` and run `trellis apply PLAN`)");
    }
    eprint!("Do you want to perform these actions? Only 'yes' will be accepted: ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(answer.trim() == "yes")
}

async fn apply(args: ApplyArgs) -> Result<u8> {
    if args.plan.is_some() && !args.inputs.files.is_empty() {
        bail!("pass either a plan file or -f manifests, not both: a saved plan carries its own manifests");
    }
    let shard = args.shard.get()?;
    if shard.is_some() && args.plan.is_some() {
        bail!("--shard selects shoots from -f manifests; a saved plan is applied whole: make it with `trellis plan --shard I/N --out PLAN`");
    }
    if args.plan.is_some() && !(args.target.targets.is_empty() && args.replace.addresses.is_empty()) {
        bail!("--target and --replace choose what is planned from -f manifests; a saved plan is applied as it was made: make it with `trellis plan --target … --replace … --out PLAN`");
    }
    // A plan file is read and checked before the state is opened: a bad file touches nothing.
    let saved = match &args.plan {
        Some(path) => {
            let saved = read_plan(path, "apply")?;
            check_pinned(&saved, &args.expect_digest)?;
            let shoots = ops::shoots_from_plan_with(&registry(), &saved)?;
            Some((saved, shoots))
        }
        None => None,
    };
    let mut session = open(&args.inputs.env, "apply").await?;
    session.features = args.inputs.feature_gates;
    session.targeting = args.target.targeting(Some(&args.replace));
    let result = apply_in(&session, &args, saved, shard).await;
    let result = world_hint(result, &args.inputs.env);
    print_timings(&session, args.run.timings);
    session.finish(result)
}

async fn apply_in(
    session: &Session,
    args: &ApplyArgs,
    saved: Option<(PlanSet, Vec<ops::ShootInput>)>,
    shard: Option<Shard>,
) -> Result<u8> {
    let mut run = Run { operation: ApplyOp::Apply, planned: ops::PlannedIn::ThisRun, refused: Vec::new() };
    let plans = match saved {
        Some((saved, shoots)) => {
            // A file of destroy plans only (`plan --destroy`) is applied as `destroy` runs; a file that
            // mixes them (`plan --prune`) applies each shoot's plan as it is.
            if saved.plans.iter().all(|p| p.destroy) {
                run.operation = ApplyOp::Destroy;
            }
            run.planned = ops::PlannedIn::SavedPlan;
            ops::check_saved_plan(session, &saved, shoots).await?
        }
        None => {
            let orphans = if args.prune.prune {
                PruneFlag { prune: true }.orphans(&args.inputs.files)?
            } else {
                ops::Orphans::Ignore
            };
            let fleet = FleetRun { destroy: false, shard, orphans, keep_going: args.run.keep_going };
            let (plans, refused) = plan_files(session, &args.inputs.files, fleet).await?;
            run.refused = refused;
            print_run_plan(&plans, args.run.output);
            if !confirm(args.run.auto_approve, "apply -f")? {
                eprintln!("Apply cancelled.");
                return Ok(1);
            }
            plans
        }
    };
    execute(session, plans, run, &args.run).await
}

/// How a fleet's apply or destroy runs, besides its flags: what it does, where its plans were made, and
/// the shoots refused at planning under `--keep-going` (reported failed).
struct Run {
    operation: ApplyOp,
    planned: ops::PlannedIn,
    refused: Vec<(String, PathBuf, trellis_providers::provider::ProviderError)>,
}

/// What apply and destroy print before asking: the plan (text or markdown; the JSON report has it),
/// as `plan` prints it, in its order (`plans` come in input order, [`ops::plan_files`]). Rendered from
/// the plans about to be applied, never a copy of them: an apply holds every plan of the fleet, and
/// copying each to print it doubled its memory.
fn print_run_plan(plans: &[ops::ShootPlan], output: RunOutput) {
    let plans: Vec<&trellis_plans::Plan> = plans.iter().map(|p| &p.planned.plan).collect();
    match output {
        RunOutput::Text => {
            let opts = render::TextOptions { color: color_for(std::io::stdout().is_terminal()), verbose: false };
            let mut out = render::TextWriter::new(std::io::BufWriter::new(std::io::stdout().lock()), &opts);
            let written = plans.iter().try_for_each(|plan| out.push(&render::RenderedText::of(plan, &opts)));
            // stdout closed (a pager quit): the apply goes on as before, without the rest of its text.
            let _ = written.and_then(|()| out.finish(std::iter::empty::<(&str, &str)>())).and_then(|mut o| o.flush());
        }
        RunOutput::Markdown => {
            let _ = write!(std::io::stdout(), "{}", render::markdown_of(&plans));
        }
        RunOutput::Json => {}
    }
}

async fn destroy(args: DestroyArgs) -> Result<u8> {
    args.shard.get()?;
    let mut session = open(&args.inputs.env, "destroy").await?;
    session.features = args.inputs.feature_gates;
    session.targeting = args.target.targeting(None);
    let result = destroy_in(&session, &args).await;
    let result = world_hint(result, &args.inputs.env);
    print_timings(&session, args.run.timings);
    session.finish(result)
}

/// `--timings`: the state database's share of the command (a sled dir has no database to wait on).
fn print_timings(session: &Session, timings: bool) {
    if !timings {
        return;
    }
    match session.store.stats() {
        Some(stats) => eprintln!(
            "timings: {} PostgreSQL call(s), {:.3} s waiting on the database (summed over threads)",
            stats.calls,
            stats.busy.as_secs_f64()
        ),
        None => eprintln!("timings: the state is a sled dir; there is no database to wait on"),
    }
}

/// How a fleet is planned for apply and destroy.
#[derive(Clone, Copy)]
struct FleetRun {
    destroy: bool,
    shard: Option<Shard>,
    orphans: ops::Orphans,
    keep_going: bool,
}

/// [`ops::plan_files`] of `shard`'s shoots (all without `--shard`), with the notes on Seed pairing and
/// orphans and the shard's line on stderr. Returns the plans and, under `--keep-going`, the shoots the
/// providers refused (every refusal fails the call otherwise).
async fn plan_files(
    session: &Session,
    files: &[PathBuf],
    fleet: FleetRun,
) -> Result<(Vec<ops::ShootPlan>, Vec<(String, PathBuf, trellis_providers::provider::ProviderError)>)> {
    let opts = ops::StreamOptions {
        destroy: fleet.destroy,
        shard: fleet.shard,
        orphans: fleet.orphans,
        keep_going: fleet.keep_going,
        ..Default::default()
    };
    let mut planned = ops::plan_files_with_options(session, files, opts, eprint_note).await?;
    if let Some(shard) = fleet.shard {
        eprintln!("{}", planned.summary.shard.line(shard));
    }
    left_out_note(planned.summary.left_out);
    let refused = std::mem::take(&mut planned.summary.refused);
    Ok((planned.plans, refused))
}

async fn destroy_in(session: &Session, args: &DestroyArgs) -> Result<u8> {
    let fleet = FleetRun {
        destroy: true,
        shard: args.shard.get()?,
        orphans: ops::Orphans::Ignore,
        keep_going: args.run.keep_going,
    };
    let (plans, refused) = plan_files(session, &args.inputs.files, fleet).await?;
    print_run_plan(&plans, args.run.output);
    if !confirm(args.run.auto_approve, "destroy")? {
        eprintln!("Destroy cancelled.");
        return Ok(1);
    }
    let run = Run { operation: ApplyOp::Destroy, planned: ops::PlannedIn::ThisRun, refused };
    execute(session, plans, run, &args.run).await
}

/// Carries out the plans ([`ops::apply`](fn@ops::apply)) and prints what became of each shoot: the
/// JSON report, or a line (text) or table row (markdown) per shoot — applied, failed and why, or
/// skipped — the shoots refused at planning (`--keep-going`) among the failed.
async fn execute(session: &Session, plans: Vec<ops::ShootPlan>, run: Run, flags: &RunFlags) -> Result<u8> {
    let total: usize = plans.iter().map(|p| p.planned.plan.nodes.len()).sum();
    let changes = plans.iter().any(|p| p.planned.plan.has_changes());
    let mut display = Display::new(total as u64, std::io::stderr().is_terminal(), flags.output == RunOutput::Json);
    let opts = ApplyOptions {
        parallelism: flags.parallelism,
        operation: run.operation,
        keep_going: flags.keep_going,
        planned: run.planned,
    };
    let mut report = ops::apply(session, plans, &opts, &mut display).await?;
    display.done();
    for (shoot, file, e) in run.refused {
        let why = format!("refused at planning ({}): {}", file.display(), e);
        report.shoots.push(ops::ShootReport::not_applied(shoot, run.operation, ops::ShootStatus::Failed, why));
        report.ok = false;
    }
    report.shoots.sort_by(|a, b| a.shoot.cmp(&b.shoot));
    match flags.output {
        RunOutput::Json => {
            // Written as it is serialised (the report of a large fleet is tens of MiB); errors are
            // ignored as `out!` ignores them: a closed stdout does not fail an apply that has happened.
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            if serde_json::to_writer_pretty(&mut stdout, &report).is_ok() {
                let _ = writeln!(stdout);
            }
            let _ = stdout.flush();
        }
        RunOutput::Text => print_report_text(&report),
        RunOutput::Markdown => {
            let _ = write!(std::io::stdout(), "{}", report_markdown(&report, run.operation));
        }
    }
    Ok(match (report.ok, flags.detailed_exitcode && changes) {
        (false, _) => 1,
        (true, true) => 2,
        (true, false) => 0,
    })
}

/// What a shoot's report line says about it: `apply complete.`, `apply incomplete: …`, `failed: …`,
/// `skipped: …`.
fn shoot_outcome(s: &ops::ShootReport) -> String {
    let operation = s.operation;
    let failed = s.nodes.iter().filter(|n| !n.outcome.is_ok()).count();
    match (s.status, &s.error) {
        (ops::ShootStatus::Applied, _) => format!("{} complete.", operation.as_str()),
        (ops::ShootStatus::Skipped, why) => format!("skipped: {}", why.as_deref().unwrap_or("not started")),
        (ops::ShootStatus::Failed, Some(why)) => format!("failed: {why}"),
        (ops::ShootStatus::Failed, None) if failed > 0 => format!(
            "{} incomplete: {failed} node(s) did not complete; state keeps what was done — fix the cause and run `trellis plan` again.",
            operation.as_str()
        ),
        (ops::ShootStatus::Failed, None) => format!("{} incomplete: see the warnings above.", operation.as_str()),
    }
}

fn print_report_text(report: &ops::ApplyReport) {
    let writes = report.calls.iter().filter(|c| c.op == trellis_planner::cloud::Op::Write).count();
    for s in &report.shoots {
        for w in &s.warnings {
            out!("Warning: {}", escape::text(w));
        }
        if !s.orphans.is_empty() {
            out!(
                "{}: {} artifact(s) of the CCM and bastion controller remain in your network; trellis does not delete them. To prune:",
                s.shoot,
                s.orphans.len()
            );
            for o in &s.orphans {
                out!("  {}  # {}", escape::text(&o.prune), o.writer);
            }
        }
        out!("{}: {}", s.shoot, escape::text(&shoot_outcome(s)));
    }
    out!("{} cloud call(s), {writes} write(s).", report.calls.len());
}

/// The report as markdown: one table row per shoot (its outcome), then the calls.
fn report_markdown(report: &ops::ApplyReport, operation: ApplyOp) -> String {
    use trellis_plans::escape::{md_code, md_inline, Md};
    let writes = report.calls.iter().filter(|c| c.op == trellis_planner::cloud::Op::Write).count();
    let mut out = format!("### trellis {}\n\n| shoot | outcome |\n|---|---|\n", operation.as_str());
    for s in &report.shoots {
        let (shoot, outcome) = (md_code(&s.shoot, Md::Cell), md_inline(&shoot_outcome(s), Md::Cell));
        out.push_str(&format!("| {shoot} | {outcome} |\n"));
    }
    out.push_str(&format!("\n{} cloud call(s), {writes} write(s).\n", report.calls.len()));
    for s in &report.shoots {
        for w in &s.warnings {
            out.push_str(&format!("\n> **Warning:** {}\n", md_inline(w, Md::Inline)));
        }
    }
    out
}

fn show(args: ShowArgs) -> Result<u8> {
    let set = read_plan(&args.plan, "show")?;
    let output = match args.output {
        ShowOutput::Text => Output::Text,
        ShowOutput::Json => Output::Json,
        ShowOutput::Markdown => Output::Markdown,
        ShowOutput::Dot => Output::Dot,
        ShowOutput::Mermaid => Output::Mermaid,
        ShowOutput::Html => Output::Html,
        ShowOutput::TerraformJson => {
            let doc = trellis_plans::terraform::plan_json(&set, env!("CARGO_PKG_VERSION"), &*registry());
            if args.compact || !std::io::stdout().is_terminal() {
                out!("{doc}");
            } else {
                out!("{doc:#}");
            }
            return Ok(0);
        }
    };
    print_plan(&set, output, args.verbose);
    Ok(0)
}

fn diff(args: DiffArgs) -> Result<u8> {
    let old = read_plan(&args.old, "diff")?;
    let new = read_plan(&args.new, "diff")?;
    let d = trellis_plans::diff::diff(&old, &new);
    match args.output {
        DiffOutput::Markdown => print!("{}", trellis_plans::diff::diff_markdown(&d)),
        DiffOutput::Json => println!("{:#}", trellis_plans::diff::diff_json(&d)),
        DiffOutput::Text => {
            print!("{}", trellis_plans::diff::render_diff(&d, color_for(std::io::stdout().is_terminal())))
        }
    }
    // As `diff(1)` and `plan --detailed-exitcode`: CI gates on "the plans differ" without parsing.
    Ok(if d.is_empty() { 0 } else { 2 })
}

/// Opens existing state for the `state` commands that read (which never create a state dir).
fn open_existing(env: &Env, operation: &str) -> Result<Store> {
    open_existing_at(&env.location()?, operation, &env.lock_wait())
}

fn open_existing_at(location: &StateLocation, operation: &str, wait: &LockWait) -> Result<Store> {
    match Store::open_existing(location, operation, wait)? {
        Some(store) => Ok(store),
        None => bail!(
            "there is no state at {location} (nothing was applied with --state {location}); pass the state dir or database URL with --state"
        ),
    }
}

/// The `--state` as messages show it (a database URL without its password).
fn shown(env: &Env) -> String {
    env.location().map(|l| l.to_string()).unwrap_or_else(|_| "the state".to_string())
}

fn no_workspace(shoot: &str, env: &Env) -> anyhow::Error {
    anyhow::anyhow!("no workspace for {shoot} in {}; `trellis state list` shows the workspaces", shown(env))
}

fn state(cmd: StateCommand) -> Result<u8> {
    match cmd {
        StateCommand::List(env) => {
            let store = open_existing(&env, "state list")?;
            let list = store.list()?;
            store.close()?;
            if list.is_empty() {
                println!("No workspaces in {}.", shown(&env));
            }
            for w in list {
                // Lock holders name a user and a host from another machine's environment: shown escaped.
                let lock = w.locked_by.map(|l| format!("  locked: {l}")).unwrap_or_default();
                let line = format!(
                    "{}  serial {}  {} resource(s)  lineage {}{lock}",
                    w.shoot, w.serial, w.resources, w.lineage
                );
                println!("{}", escape::text(&line));
            }
        }
        StateCommand::Show { shoot, env } => {
            let store = open_existing(&env, "state show")?;
            // A technical id names the shoot's own workspace; the workspaces of its derived plans
            // (`<id><suffix>`) are described beside it, and shown when one is the only one.
            let ws = store.load(&shoot)?;
            let mut derived = Vec::new();
            for entry in registry().entries() {
                let Some(d) = entry.derived else { continue };
                let name = match shoot.ends_with(d.workspace_suffix) {
                    true => shoot.clone(),
                    false => format!("{shoot}{}", d.workspace_suffix),
                };
                let found = if name == shoot { ws.clone() } else { store.load(&name)? };
                derived.extend(found.map(|found| (entry.provider.type_name(), name, d.describe, found)));
            }
            store.close()?;
            let ws = ws.or_else(|| derived.first().map(|d| d.3.clone())).ok_or_else(|| no_workspace(&shoot, &env))?;
            println!("{}", serde_json::to_string_pretty(&ws)?);
            for (kind, name, describe, found) in derived {
                // On stderr: stdout stays the workspace's JSON.
                eprintln!("{kind} ({name}):");
                for line in describe(&found) {
                    eprintln!("  {}", escape::text(&line));
                }
            }
        }
        StateCommand::Unlock { shoot, env } => {
            let store = open_existing(&env, "state unlock")?;
            let held = store.force_unlock(&shoot)?;
            let known = store.load(&shoot)?.is_some();
            store.close()?;
            match held {
                Some(held) => println!("Removed the lock on {shoot} ({held})."),
                None if known => println!("{shoot} was not locked."),
                None => bail!(
                    "no workspace and no lock for {shoot} in {}; `trellis state list` shows the workspaces",
                    shown(&env)
                ),
            }
        }
        StateCommand::Pull { shoot, env } => {
            let store = open_existing(&env, "state pull")?;
            let ws = store.load(&shoot)?;
            store.close()?;
            let ws = ws.ok_or_else(|| no_workspace(&shoot, &env))?;
            println!("{}", serde_json::to_string_pretty(&WorkspaceFile::new(ws))?);
        }
        StateCommand::Migrate { from, to, lock_timeout } => migrate(&from, &to, &lock_wait(lock_timeout))?,
        StateCommand::Rm(args) => repair::state_rm(args)?,
        StateCommand::Push { shoot, file, force, env } => {
            let shown = file.display().to_string();
            let text =
                trellis_providers::manifest::read_input(&file).with_context(|| format!("cannot read {shown}"))?;
            let ws = WorkspaceFile::parse(&shown, &text)?;
            if ws.shoot != shoot {
                bail!(
                    "{shown} holds the workspace of {}, not of {shoot}; pass the shoot the file belongs to",
                    ws.shoot
                );
            }
            // Restoring may well go into a new state dir (the damaged one moved aside): create it.
            let wait = env.lock_wait();
            let store = Store::open(&env.location()?, "state push", &wait)?;
            match push(&store, &ws, force, &wait) {
                Ok(serial) => {
                    store.close()?;
                    println!(
                        "Pushed {shoot} from {shown}: the state now holds it at serial {serial} (lineage {}).",
                        ws.lineage
                    );
                }
                Err(e) => {
                    let _ = store.discard();
                    return Err(e);
                }
            }
        }
    }
    Ok(0)
}

/// `trellis state migrate --from … --to …`: a line per shoot, then a summary.
fn migrate(from: &str, to: &str, wait: &LockWait) -> Result<()> {
    let from = from.parse::<StateLocation>().context("--from")?;
    let to = to.parse::<StateLocation>().context("--to")?;
    let same = match (&from, &to) {
        (StateLocation::Dir(a), StateLocation::Dir(b)) => match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        },
        (a, b) => a == b,
    };
    if same {
        bail!("--from and --to are the same state ({from}); migrate copies state from one place to another");
    }
    let source = open_existing_at(&from, "state migrate", wait)?;
    let target = match Store::open(&to, "state migrate", wait) {
        Ok(target) => target,
        Err(e) => {
            let _ = source.close();
            return Err(e.into());
        }
    };
    let result = trellis_state::migrate(&source, &target, &mut |shoot, outcome| {
        let line = match outcome {
            trellis_state::Imported::Created => format!("{shoot}: copied"),
            trellis_state::Imported::AlreadyThere => format!("{shoot}: already there (same lineage and serial)"),
        };
        println!("{}", escape::text(&line));
    });
    let closed = source.close().and(target.close());
    let report = result?;
    closed?;
    println!(
        "Migrated {} workspace(s) from {from} to {to}: {} copied, {} already there; and the histories of {} removed workspace(s).",
        report.created + report.already_there,
        report.created,
        report.already_there,
        report.removed_histories
    );
    Ok(())
}

/// `state push` under the workspace lock (waited for as `wait` says).
// The lock attempt returns the state crate's `StateError` as it is.
#[allow(clippy::result_large_err)]
fn push(store: &dyn StateStore, ws: &trellis_state::Workspace, force: bool, wait: &LockWait) -> Result<u64> {
    let lock = trellis_state::LockInfo::here("state push");
    let target = LockTarget::Workspace(ws.shoot.clone());
    if let trellis_state::Acquired::BrokeStale(dead) = wait.acquire(&target, || store.lock(&ws.shoot, &lock))? {
        eprintln!("{}: took over a stale lock from a process that is gone ({dead})", ws.shoot);
    }
    let pushed = store.push(ws, force);
    store.unlock(&ws.shoot, &lock.id)?;
    Ok(pushed?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of every command says what it is for in `--help` (and the man page).
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&<Cli as clap::CommandFactory>::command(), "trellis", &mut missing);
        assert!(missing.is_empty(), "without help: {missing:#?}");
    }
}
