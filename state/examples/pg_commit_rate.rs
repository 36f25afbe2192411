//! Prints how fast each backend commits: `cargo run --release -p trellis-state --example pg_commit_rate
//! [SHOOTS] [THREADS] [COMMITS_PER_SHOOT]` (default 1000 8 5). Starts a throwaway PostgreSQL server
//! (trellis-pgtest, fsync on), commits SHOOTS workspaces COMMITS_PER_SHOOT times each from THREADS
//! threads, with each shoot locked around its commits as `apply` does (`NOLOCK=1`: without locks),
//! then does the same on a sled state dir. Figures, not a test. On the shared 2-core dev machine
//! (1000 shoots, 8 threads, 5 commits each): PostgreSQL ~2,700 commits/s with locks (~2,900 without),
//! sled ~3,400–4,300.

use std::sync::Arc;
use std::time::Instant;
use trellis_state::{
    Kind, LockInfo, Ownership, PgStore, ProviderState, SledStore, StateStore, StoredResource, Workspace,
};

fn workspace(shoot: &str) -> Workspace {
    let mut ws = Workspace::new(shoot);
    for i in 0..12 {
        ws.resources.insert(
            format!("azure.subnet.{shoot}.nodes-{i}"),
            StoredResource {
                kind: Kind::new("subnet"),
                id: format!("/subscriptions/s/resourceGroups/{shoot}/providers/Microsoft.Network/virtualNetworks/{shoot}/subnets/nodes-{i}"),
                ownership: Ownership::Managed,
            },
        );
    }
    ws.provider_state = Some(ProviderState {
        provider: "azure".to_string(),
        version: 2,
        data: serde_json::json!({"last_applied": {"networks": {"vnet": {"cidr": "10.250.0.0/16"}, "zones": [1, 2, 3]}}}),
    });
    ws
}

fn run(store: Arc<dyn StateStore>, shoots: usize, threads: usize, commits: usize) -> f64 {
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in (t..shoots).step_by(threads) {
                    let shoot = format!("shoot--bench--s{i:05}");
                    let lock = LockInfo::here("apply");
                    if std::env::var_os("NOLOCK").is_none() {
                        store.lock(&shoot, &lock).unwrap();
                    }
                    let mut ws = workspace(&shoot);
                    for n in 0..commits {
                        ws.outputs = Some(serde_json::json!({"node": n}));
                        store.commit(&mut ws, "apply").unwrap();
                    }
                    store.unlock(&shoot, &lock.id).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    started.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (shoots, threads, commits) =
        (args.first().copied().unwrap_or(1000), args.get(1).copied().unwrap_or(8), args.get(2).copied().unwrap_or(5));
    let total = shoots * commits;
    let server = trellis_pgtest::PgServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.create_database("bench").unwrap().parse().unwrap();
    let pg = Arc::new(PgStore::connect(&url, "bench").unwrap());
    let wall = run(pg.clone(), shoots, threads, commits);
    let stats = pg.stats();
    println!(
        "postgres: {total} commits of {shoots} shoots from {threads} threads in {wall:.2} s = {:.0} commits/s; \
         {} calls, {:.2} s waited on the database (summed over threads)",
        total as f64 / wall,
        stats.calls,
        stats.busy.as_secs_f64()
    );
    let dir = tempfile::tempdir().unwrap();
    let sled: Arc<dyn StateStore> = Arc::new(SledStore::open(dir.path(), "bench").unwrap());
    let wall = run(sled, shoots, threads, commits);
    println!(
        "sled:     {total} commits of {shoots} shoots from {threads} threads in {wall:.2} s = {:.0} commits/s",
        total as f64 / wall
    );
}
