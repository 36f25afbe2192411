//! `trellis sim …`: the simulated clouds of the state directory — a resource as a GET returns it
//! (`show`), the calls they answered (`audit`), the clouds over HTTP (`serve`) — and each cloud
//! binding's runtime writers (the CCM, the bastion controller: `CloudBinding::sim_commands`),
//! configured from what `trellis apply` left in state.
//!
//! Every cloud write of a runtime writer is printed on a line of its own (`PUT|DELETE <id> (<status>)`),
//! so the commands double as a way to see what the real controllers would do to the user's resources.

use super::{binding_flag_reaches_a_real_cloud, open, registry, Env, ReportOutput, REAL_CLOUD_ARGS};
use anyhow::{bail, Context as _, Result};
use clap::{FromArgMatches, Subcommand};
use std::collections::BTreeMap;
use std::time::Duration;
use trellis_cli::backend::StateLocation;
use trellis_cli::ops::Session;
use trellis_engine::binding::{ServeOptions, SimCtx, SimOutput};
use trellis_planner::cloud::{Call, Op};

/// `trellis sim`: the commands below ([`Own`]) and the bindings' runtime writers, with the session flags.
pub struct SimArgs {
    command: SimCommand,
    env: Env,
}

enum SimCommand {
    Own(Own),
    /// A binding's subcommand: its name, and the `sim` command's matches holding it.
    Binding(String, clap::ArgMatches),
}

/// The subcommands of `trellis sim` about every simulated cloud. Their help naming the clouds comes
/// from the registry (`SimArgs::augment_args`).
#[derive(Subcommand)]
enum Own {
    /// Print a resource's JSON as the simulated cloud returns it (a GET, not audited).
    Show { id: String },
    /// Print the calls the simulated clouds answered for the commands that write (`apply`, `destroy`,
    /// `trellis sim …`), oldest first, as the state dir keeps them (a plan's reads are not kept):
    /// what trellis and the runtime writers did to the simulated cloud.
    Audit {
        /// Only the writes (PUT, POST, PATCH, DELETE), refused ones included.
        #[arg(long)]
        writes: bool,
        #[arg(long, value_enum, default_value_t = ReportOutput::Text)]
        output: ReportOutput,
    },
    Serve {
        /// The address to listen on; a loopback address, since the clients send credentials over
        /// plain http only to loopback. Port 0 picks a free port (printed on the first line).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Page the ARM lists after N items (`nextLink`), so clients' paging can be tested with a few
        /// resources; default 1000, ARM's largest page.
        #[arg(long, value_name = "N", env = "TRELLIS_SIM_PAGE_SIZE", value_parser = clap::value_parser!(u32).range(1..=100_000))]
        page_size: Option<u32>,
        /// Test clients' retries: answer the first TIMES calls of METHOD (GET, LIST, PUT, DELETE) on
        /// a target containing TEXT with 429 (Retry-After 100 ms), in every served cloud; repeatable.
        #[arg(long, hide = true, value_name = "METHOD:TEXT:TIMES", value_parser = parse_throttle)]
        throttle: Vec<Throttle>,
    },
}

/// A `--throttle` rule of `trellis sim serve`.
#[derive(Clone, Debug)]
pub struct Throttle {
    method: String,
    text: String,
    times: usize,
}

fn parse_throttle(raw: &str) -> Result<Throttle, String> {
    let bad = || format!("'{raw}': expected METHOD:TEXT:TIMES, e.g. PUT:/dns/:2");
    let (method, rest) = raw.split_once(':').ok_or_else(bad)?;
    let (text, times) = rest.rsplit_once(':').ok_or_else(bad)?;
    let method = method.trim().to_ascii_uppercase();
    if !["GET", "LIST", "PUT", "DELETE"].contains(&method.as_str()) {
        return Err(format!("'{raw}': METHOD {method:?} is not one of GET, LIST, PUT, DELETE"));
    }
    let times = times.trim().parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(bad)?;
    Ok(Throttle { method, text: text.to_string(), times })
}

impl Throttle {
    fn rule(&self) -> trellis_sim::FaultRule {
        use trellis_sim::{Fault, FaultRule, Matcher};
        let mut matcher = Matcher::method(&self.method);
        matcher.target_contains = Some(self.text.clone());
        FaultRule::always(matcher, Fault::Throttle { retry_after: Duration::from_millis(100) }).times(self.times)
    }
}

impl FromArgMatches for SimArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let env = Env::from_arg_matches(matches)?;
        let command = match matches.subcommand_name() {
            Some(name) if Own::has_subcommand(name) => SimCommand::Own(Own::from_arg_matches(matches)?),
            Some(name) => SimCommand::Binding(name.to_string(), matches.clone()),
            None => return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
        };
        Ok(SimArgs { command, env })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = SimArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for SimArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let registry = registry();
        let cmd = Own::augment_subcommands(cmd.subcommands(registry.sim_commands()))
            .mut_subcommand("show", |c| c.mut_arg("id", |a| a.help(registry.show_help())))
            .mut_subcommand("audit", |c| c.mut_arg("output", |a| a.help(registry.audit_output_help())))
            .mut_subcommand("serve", |c| c.about(registry.serve_about()));
        let cmd = <Env as clap::Args>::augment_args(cmd.subcommand_required(true).arg_required_else_help(true));
        // The flags `trellis sim` refuses (they choose or reach a real cloud: `Env::real_cloud_flags`)
        // are not in its help; given, they are still refused in words.
        let accounts = registry.args();
        let refused = REAL_CLOUD_ARGS.map(String::from).into_iter().chain(
            accounts
                .iter()
                .filter(|a| a.get_long().is_some_and(binding_flag_reaches_a_real_cloud))
                .map(|a| a.get_id().to_string()),
        );
        refused.fold(cmd, |cmd, id| cmd.mut_arg(id, |a| a.hide(true)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        SimArgs::augment_args(cmd)
    }
}

/// `trellis sim audit`: the kept calls of each simulated cloud (see [`Own::Audit`]).
fn audit(session: Session, writes: bool, output: ReportOutput) -> Result<u8> {
    let mut logs = session.audit_logs()?;
    for (_, calls) in &mut logs {
        calls.retain(|c| !writes || c.op == Op::Write);
    }
    session.close()?;
    let out = match output {
        ReportOutput::Json => {
            let logs: BTreeMap<&str, &Vec<Call>> = logs.iter().map(|(cloud, calls)| (*cloud, calls)).collect();
            serde_json::to_string_pretty(&logs)? + "\n"
        }
        ReportOutput::Text => {
            let lines: Vec<String> = logs
                .iter()
                .flat_map(|(cloud, calls)| calls.iter().map(move |c| (cloud, c)))
                .map(|(cloud, c)| {
                    format!("{cloud:<5} {:<6} {} {}\n", c.method, c.status, trellis_plans::escape::text(&c.target))
                })
                .collect();
            if lines.is_empty() {
                let what = if writes { "writes" } else { "calls" };
                format!("No {what} kept: nothing has written the simulated clouds of this state yet.\n")
            } else {
                lines.concat()
            }
        }
    };
    print!("{out}");
    Ok(0)
}

pub async fn run(args: SimArgs) -> Result<u8> {
    let env = &args.env;
    let given = env.real_cloud_flags();
    if !given.is_empty() {
        bail!(
            "{} {} nothing to `trellis sim`: it works on the simulated clouds of the state dir or --sim-dir; drop {} (a real client reaches `trellis sim serve` with `--cloud azure|gcp --endpoint URL` on its own command)",
            given.join(", "),
            if given.len() == 1 { "means" } else { "mean" },
            if given.len() == 1 { "it" } else { "them" }
        );
    }
    if let SimCommand::Own(Own::Serve { listen, page_size, throttle }) = args.command {
        let opts = ServeOptions { page_size: page_size.map(|n| n as usize) };
        return serve(env, listen, &opts, &throttle).await;
    }
    let location = env.location()?;
    if let StateLocation::Dir(dir) = &location {
        if !dir.exists() {
            bail!(
                "state directory {} does not exist; run `trellis apply -f <shoot.yaml> --state {}` first",
                dir.display(),
                dir.display()
            );
        }
    }
    let session = open(env, "sim").await?;
    let state = location.to_string();
    let sim_where = env.sim_shown(&location);
    match args.command {
        SimCommand::Own(Own::Audit { writes, output }) => audit(session, writes, output),
        SimCommand::Own(Own::Show { id }) => {
            let Some((sim, what)) = session.sim_showing(&id) else {
                bail!("{id}: no simulated cloud takes this id");
            };
            let Some(value) = sim.get_now(&id) else {
                bail!("{id}: not found in the {what} in {sim_where}");
            };
            println!("{}", serde_json::to_string_pretty(&value)?);
            Ok(0)
        }
        SimCommand::Own(Own::Serve { .. }) => unreachable!("served above"),
        SimCommand::Binding(name, matches) => {
            let binding = registry()
                .sim_command_binding(&name)
                .with_context(|| format!("bug: no binding has the command `trellis sim {name}`; please report"))?;
            let ctx = SimCtx { state: &state, sim_where: &sim_where };
            match binding.run_sim(&session, &name, &matches, &ctx).await? {
                SimOutput::Shown(text) => {
                    println!("{text}");
                    Ok(0)
                }
                SimOutput::Wrote { calls, result } => report(session, calls, result),
            }
        }
    }
}

/// Prints the writes a `trellis sim …` command made — also when a later call failed, as the audit log
/// keeps them — closes the session, then the command's summary or its error.
fn report(session: Session, calls: Vec<Call>, result: Result<String>) -> Result<u8> {
    let writes: Vec<_> = calls.into_iter().filter(|c| c.op == Op::Write).collect();
    for c in &writes {
        println!("{} {} ({})", c.method, c.target, c.status);
    }
    session.close()?;
    let summary = result?;
    if writes.is_empty() {
        println!("No cloud writes: everything was already in place.");
    }
    println!("{summary}");
    Ok(0)
}

/// `trellis sim serve`: the simulated clouds of the state dir that have an HTTP API (with `--world`
/// synced in) behind one listener until Ctrl-C or SIGTERM; the audit log of what the clients did is
/// kept as for `trellis sim …` ([`Session::serve`]: every request that may write is answered after the
/// state dir's grouped flush, and the served clouds' audit logs are kept as the calls are made).
async fn serve(env: &Env, listen: std::net::SocketAddr, opts: &ServeOptions, throttle: &[Throttle]) -> Result<u8> {
    if !listen.ip().is_loopback() {
        bail!("--listen {listen} is not a loopback address; the emulator serves plain http, so listen on 127.0.0.1 (the real clients send credentials over http only to loopback)");
    }
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("the listener has no address")?;
    // Before anything is answered: a stop signal from then on is a graceful stop.
    let stop = stop_signal()?;
    let session = open(env, "sim serve").await?;
    if !throttle.is_empty() {
        let mut faults = trellis_sim::Faults::none()
            .with_latency(Duration::from_millis(env.sim_latency_ms), Duration::from_millis(env.sim_write_latency_ms));
        faults.rules = throttle.iter().map(Throttle::rule).collect();
        session.set_sim_faults(faults);
    }
    let (router, apis) = match session.serve(opts) {
        Ok(served) => served,
        Err(e) => return session.finish(Err(e)),
    };
    println!(
        "serving the simulated clouds of {} on http://{addr} ({} REST); Ctrl-C or SIGTERM stops",
        env.sim_shown(&env.location()?),
        apis.join(" and ")
    );
    let served = axum::serve(listener, router).with_graceful_shutdown(stop).await.context("the emulator stopped");
    // Writes what a failed keep left in memory, and flushes the reads' entries.
    let audited = served.and_then(|()| session.persist_served_audit());
    session.finish(audited.map(|()| 0))
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM, which both stop the emulator gracefully. The handlers
/// are installed when this is called, so a signal that arrives before the future is polled counts.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle Ctrl-C (SIGINT)")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}
