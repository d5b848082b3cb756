//! Command-line arguments.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod access;

pub(crate) use access::AccessCommand;

/// fundi: an A2A server and runtime for long-running agent skills.
#[derive(Debug, Parser)]
#[command(name = "fundi", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the server (reads config/fundi.toml and FUNDI__SECTION__FIELD variables).
    Serve(ServeArgs),
    /// Check the store (while no server runs on it) and list the tasks set aside because
    /// their stored data could not be read.
    Doctor(DoctorArgs),
    /// Serve fundi's tasks as MCP tools over stdio, for an MCP client (a coding
    /// assistant, a chat client) to start: the tools talk A2A to the fundi server at
    /// --url with the CLI's credentials.
    Mcp(McpArgs),
    /// Make a new key to sign the agent card; the one it replaces stays published for
    /// card-signing.keep-retired-days. A server takes the new key at its next start.
    RotateCardKey(DoctorArgs),
    #[command(flatten)]
    Client(ClientCommand),
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Config file (default: config/fundi.toml, when it exists).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on (overrides server.bind).
    #[arg(long)]
    pub(crate) bind: Option<SocketAddr>,
    /// sled directory (overrides store.path).
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Log lines as `text` or `json` (overrides log.format).
    #[arg(long, value_enum)]
    pub(crate) log_format: Option<fundi::telemetry::LogFormat>,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Config file (default: config/fundi.toml, when it exists).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// sled directory (overrides store.path).
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
}

/// Where `fundi mcp` finds the server and its credentials: each field from its flag or
/// environment variable, else the config file's `[mcp]`, else the credentials file.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The server's base URL (default: mcp.url, else http://127.0.0.1:8080).
    #[arg(long, env = "FUNDI_URL")]
    pub(crate) url: Option<String>,
    /// The bearer token (default: mcp.token, else the credentials file).
    #[arg(long, env = "FUNDI_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// The end user's token (default: mcp.user-token, else the credentials file).
    #[arg(long, env = "FUNDI_USER_TOKEN", hide_env_values = true)]
    pub(crate) user_token: Option<String>,
    /// The header that carries the user token (default: mcp.user-header, else the
    /// credentials file's, else X-Fundi-User-Token).
    #[arg(long, env = "FUNDI_USER_HEADER")]
    pub(crate) user_header: Option<String>,
    /// The credentials file a local server wrote (default: mcp.credentials-file, else
    /// data/credentials.json).
    #[arg(long, env = "FUNDI_CREDENTIALS")]
    pub(crate) credentials: Option<PathBuf>,
    /// Config file whose [mcp] section applies (default: config/fundi.toml, when it
    /// exists; FUNDI__MCP__ALLOW_WRITES and FUNDI__MCP__WAIT_CEILING_S override it).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Offer the tools that change anything (overrides mcp.allow-writes).
    #[arg(long)]
    pub(crate) allow_writes: bool,
}

/// Where the client finds the server.
#[derive(Debug, Args)]
pub(crate) struct Endpoint {
    /// The server's base URL.
    #[arg(long, env = "FUNDI_URL", default_value = "http://127.0.0.1:8080")]
    pub(crate) url: String,
    /// Print the raw JSON-RPC result instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// The bearer token (default: from the credentials file).
    #[arg(long, env = "FUNDI_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// The end user's token (default: from the credentials file).
    #[arg(long, env = "FUNDI_USER_TOKEN", hide_env_values = true)]
    pub(crate) user_token: Option<String>,
    /// The header that carries the user token.
    #[arg(long, env = "FUNDI_USER_HEADER", default_value = fundi_gateway::DEFAULT_USER_HEADER)]
    pub(crate) user_header: String,
    /// The credentials a local server wrote (used when no tokens are given).
    #[arg(
        long,
        env = "FUNDI_CREDENTIALS",
        default_value = "data/credentials.json"
    )]
    pub(crate) credentials: PathBuf,
}

/// A message to send.
#[derive(Debug, Args)]
pub(crate) struct MessageArgs {
    /// The message text.
    pub(crate) text: String,
    /// The skill to run (message metadata "skill").
    #[arg(long)]
    pub(crate) skill: Option<String>,
    /// A JSON value sent as a data part, e.g. '{"steps": 3, "delayMs": 200}'.
    #[arg(long)]
    pub(crate) data: Option<String>,
    /// An HTML file sent as a file part (for a11y-audit).
    #[arg(long)]
    pub(crate) html: Option<PathBuf>,
    /// Continue this task (answer an input-required task).
    #[arg(long)]
    pub(crate) task: Option<String>,
    /// Delegate to this peer (the delegate skill): the text and --data go to the peer,
    /// --skill names the peer's skill.
    #[arg(long, conflicts_with = "task")]
    pub(crate) peer: Option<String>,
    /// Start the task in this context.
    #[arg(long)]
    pub(crate) context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ClientCommand {
    /// Send a message and wait for the task to finish or ask for input.
    Send {
        #[command(flatten)]
        endpoint: Endpoint,
        #[command(flatten)]
        message: MessageArgs,
        /// Return as soon as the task is created.
        #[arg(long)]
        no_wait: bool,
    },
    /// Send a message and show the task's progress live.
    Stream {
        #[command(flatten)]
        endpoint: Endpoint,
        #[command(flatten)]
        message: MessageArgs,
    },
    /// Show a task.
    Get {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        id: String,
        /// Show at most this many recent history messages.
        #[arg(long)]
        history: Option<u32>,
    },
    /// Follow a task's progress live until it ends or waits for someone (a stream that
    /// breaks off is resumed where it stopped).
    Watch {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        id: String,
    },
    /// Cancel a task.
    Cancel {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        id: String,
    },
    /// List tasks, most recently updated first.
    List {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Only this context.
        #[arg(long)]
        context: Option<String>,
        /// Only this state (e.g. working, input-required, completed).
        #[arg(long)]
        state: Option<String>,
        /// Tasks per page (1 to 100).
        #[arg(long, default_value_t = 20)]
        page_size: u32,
        /// The token printed for the next page.
        #[arg(long)]
        page_token: Option<String>,
    },
    /// Issues the auditing skills recorded, each with the heal task that holds it and
    /// its state; needs scope fundi:admin.
    Issues {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Only this skill's (a11y-audit, security-scan, chaos-run).
        #[arg(long)]
        source: Option<String>,
        /// Only those with this status: open, fix-proposed, fixed or resolved.
        #[arg(long)]
        status: Option<String>,
    },
    /// Scheduled runs: recurring tasks owned by whoever creates them; needs scope
    /// fundi:admin.
    Schedules {
        #[command(subcommand)]
        action: ScheduleCommand,
    },
    /// Client credentials vended by fundi (grants): create, list, narrow, revoke; needs
    /// scope fundi:admin.
    Grants {
        #[command(subcommand)]
        action: GrantCommand,
    },
    /// Requests for access by other agents: list, approve (vending a grant), reject;
    /// needs scope fundi:approve or fundi:admin.
    Access {
        #[command(subcommand)]
        action: AccessCommand,
    },
    /// The audit log: every grant, revocation and admin change, oldest first; needs
    /// scope fundi:admin.
    Audit {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Only records after this sequence number (the `next` of the previous page).
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Records per page (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: u64,
    },
    /// The faults a chaos run injected into a task's traffic, in order; needs scope
    /// fundi:admin.
    ChaosEvents {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The chaos run's task.
        task: String,
        /// Only events after this sequence number (the `next` of the previous page).
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Events per page (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: u64,
    },
    /// A one-time link that signs you in to the web console (as the user of these
    /// credentials, with their scopes); it works once, for ten minutes.
    Console {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Tasks waiting for an approver (gated skills, runtime.approvals); needs scope
    /// fundi:approve (or fundi:approve:SKILL, or fundi:admin).
    Approvals {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Approve a waiting task: it runs, on a narrower input if --data gives one.
    Approve {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        id: String,
        /// A narrower input for the skill (JSON), e.g. '{"maxPages": 2}'.
        #[arg(long)]
        data: Option<String>,
    },
    /// Reject a waiting task: it ends rejected, with the reason.
    Reject {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        id: String,
        /// Why (told to the requester and recorded).
        #[arg(long)]
        reason: String,
    },
    /// The peers this server delegates to, with what their cards say (needs scope
    /// fundi:delegate); `add` and `remove` change them (fundi:admin).
    #[command(args_conflicts_with_subcommands = true)]
    Peers {
        #[command(subcommand)]
        action: Option<Box<PeerCommand>>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Push deliveries that were given up (dead letters); needs scope fundi:admin.
    DeadLetters {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Deliver a dead-lettered push config again, from its first undelivered event.
    Replay {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The task id.
        task: String,
        /// The push config id.
        config: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleCommand {
    /// Create a schedule: at each time of CRON, a task of SKILL is submitted, owned by
    /// you and authorised by your client's scopes at that time.
    Create {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The skill each firing runs.
        #[arg(long)]
        skill: String,
        /// When: five fields (minute hour day-of-month month day-of-week, e.g.
        /// "0 3 * * *" for 03:00 every day), or six with seconds first.
        #[arg(long)]
        cron: String,
        /// The IANA time zone CRON is read in (default: UTC), e.g. Europe/Berlin.
        #[arg(long)]
        time_zone: Option<String>,
        /// The skill's input as JSON, e.g. '{"url": "https://staging.example/"}'.
        #[arg(long)]
        data: Option<String>,
        /// Text sent with each firing.
        #[arg(long)]
        text: Option<String>,
    },
    /// List the schedules.
    List {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Show a schedule, with its latest firing.
    Show {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The schedule id.
        id: String,
    },
    /// Stop a schedule from firing (it is kept).
    Pause {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The schedule id.
        id: String,
    },
    /// Let a paused schedule fire again, from its next time after now.
    Resume {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The schedule id.
        id: String,
    },
    /// Delete a schedule (the tasks it submitted stay).
    Delete {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The schedule id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum GrantCommand {
    /// Vend a client credential: prints its token once (fundi keeps only a digest).
    Create {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The client's name, as its requests are attributed.
        #[arg(long)]
        client: String,
        /// The scopes it holds, comma-separated (e.g. fundi:audit,fundi:security).
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// How long it admits requests ("30d", "12h"); for ever when absent.
        #[arg(long)]
        expires: Option<String>,
    },
    /// List the grants (never their tokens).
    List {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Take scopes away from a grant: it keeps only these (effective at its next request).
    Narrow {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The grant id.
        id: String,
        /// The scopes it keeps, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
    },
    /// Revoke a grant: its next request is refused.
    Revoke {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The grant id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PeerCommand {
    /// List the peers (the default).
    List {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Read a peer's agent card now (revalidated) and show it.
    Discover {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The peer's name.
        name: String,
    },
    /// Add a peer for good (kept in the store; the same name again replaces it).
    Add {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The peer's name (lower-case letters, digits, '-').
        name: String,
        /// Its agent card's URL, or its base URL.
        #[arg(long)]
        peer_url: String,
        /// The bearer token fundi sends it.
        #[arg(long, env = "FUNDI_PEER_TOKEN", hide_env_values = true)]
        peer_token: Option<String>,
        /// The user token fundi sends a fundi peer.
        #[arg(long, env = "FUNDI_PEER_USER_TOKEN", hide_env_values = true)]
        peer_user_token: Option<String>,
        /// Let it be on a loopback or private address.
        #[arg(long)]
        allow_private_networks: bool,
        /// Other hosts its card's interfaces may point at.
        #[arg(long)]
        interface_host: Vec<String>,
    },
    /// Remove a peer added at run time.
    Remove {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The peer's name.
        name: String,
    },
}
