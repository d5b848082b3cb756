//! The measurements: which server, which workload, how many workers (`cases`).

/// A named measurement: which server, which workload, how many workers.
#[derive(Clone)]
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) target: Target,
    pub(crate) workload: Workload,
    pub(crate) concurrency: usize,
    /// Served by the `--compare` binary.
    pub(crate) compared: bool,
}

impl Case {
    pub(crate) fn label(&self) -> String {
        match self.compared {
            true => format!("{} [compare]", self.name),
            false => self.name.to_string(),
        }
    }

    /// Baselines run whatever `--only` says.
    pub(crate) fn is_baseline(&self) -> bool {
        matches!(self.target, Target::BareAxum | Target::SledFlushPerRequest)
    }

    /// Served by a fundi binary (so `--compare` measures it too).
    pub(crate) fn is_fundi(&self) -> bool {
        matches!(
            self.target,
            Target::FundiSync
                | Target::FundiBatched
                | Target::FundiMemory
                | Target::FundiPostgres
                | Target::FundiPostgresOneNode
                | Target::FundiPostgresTwoNodes
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Target {
    BareAxum,
    SledFlushPerRequest,
    FundiSync,
    FundiBatched,
    FundiMemory,
    /// fundi on PostgreSQL (`--postgres-url`).
    FundiPostgres,
    /// One fundi node of several on a PostgreSQL schema (`store.postgres.node-id`).
    FundiPostgresOneNode,
    /// Two fundi nodes on one PostgreSQL schema, each worker's requests to one of them.
    FundiPostgresTwoNodes,
    /// The official A2A Rust SDK's server, in memory (`rust_sdk`).
    RustSdk,
    /// The same over its gRPC binding.
    RustSdkGrpc,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Workload {
    SendBlocking,
    GetTask,
    /// W3: echo posts its steps (`SkillContext::post_progress_with_checkpoint`).
    Stream,
    /// W3 with each step stored before the next (echo's `waitEachStep`): the cost of
    /// `SkillContext::progress_with_checkpoint`. Set beside the SDK's plain W3.
    StreamEachStepStored,
    /// W1 over gRPC (`grpc.rs`).
    SendBlockingGrpc,
    /// W3 over gRPC.
    StreamGrpc,
}

impl Workload {
    pub(crate) fn is_stream(self) -> bool {
        matches!(
            self,
            Workload::Stream | Workload::StreamEachStepStored | Workload::StreamGrpc
        )
    }
}

pub(crate) fn cases() -> Vec<Case> {
    use Target::*;
    use Workload::*;
    let mut cases = Vec::new();
    for c in [1, 16, 50, 64] {
        cases.push(Case {
            name: "bare axum echo",
            target: BareAxum,
            workload: SendBlocking,
            concurrency: c,
            compared: false,
        });
    }
    for c in [16, 64] {
        cases.push(Case {
            name: "sled flush per request",
            target: SledFlushPerRequest,
            workload: SendBlocking,
            concurrency: c,
            compared: false,
        });
    }
    for (name, target) in [
        ("W1 send, sync", FundiSync),
        ("W1 send, batched", FundiBatched),
        ("W1 send, memory store", FundiMemory),
        ("W1 send, postgres", FundiPostgres),
        ("W1 send, postgres, 1 node of several", FundiPostgresOneNode),
        ("W1 send, postgres, 2 nodes", FundiPostgresTwoNodes),
        ("W1 send, Rust SDK in memory", RustSdk),
    ] {
        for c in [1, 16, 64] {
            cases.push(Case {
                name,
                target,
                workload: SendBlocking,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W1 send, sync, gRPC", FundiSync),
        ("W1 send, Rust SDK in memory, gRPC", RustSdkGrpc),
    ] {
        for c in [1, 16, 64] {
            cases.push(Case {
                name,
                target,
                workload: SendBlockingGrpc,
                concurrency: c,
                compared: false,
            });
        }
    }
    cases.push(Case {
        name: "W2 get, sync",
        target: FundiSync,
        workload: GetTask,
        concurrency: 16,
        compared: false,
    });
    for (name, target) in [
        ("W3 stream, sync", FundiSync),
        ("W3 stream, batched", FundiBatched),
        ("W3 stream, memory store", FundiMemory),
        ("W3 stream, postgres", FundiPostgres),
        (
            "W3 stream, postgres, 1 node of several",
            FundiPostgresOneNode,
        ),
        ("W3 stream, postgres, 2 nodes", FundiPostgresTwoNodes),
        ("W3 stream, Rust SDK in memory", RustSdk),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: Stream,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W3 stream, sync, gRPC", FundiSync),
        ("W3 stream, Rust SDK in memory, gRPC", RustSdkGrpc),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: StreamGrpc,
                concurrency: c,
                compared: false,
            });
        }
    }
    for (name, target) in [
        ("W3 stream, each step stored, sync", FundiSync),
        ("W3 stream, each step stored, batched", FundiBatched),
        ("W3 stream, each step stored, postgres", FundiPostgres),
    ] {
        for c in [1, 50] {
            cases.push(Case {
                name,
                target,
                workload: StreamEachStepStored,
                concurrency: c,
                compared: false,
            });
        }
    }
    cases
}
