//! A skill of one's own served over A2A by fundi's server: the same gateway, auth gate,
//! limits and durable tasks as `fundi serve`, in a few lines. The program serves on a
//! loopback port, sends itself one A2A `SendMessage` with both credentials through
//! `fundi-client`, prints the answer and stops.
//!
//! `cargo run -p example-served-skill -- "make this loud"`

use std::collections::BTreeMap;

use fundi::Server;
use fundi::config::{AppConfig, StoreKind};
use fundi_client::a2a::TaskState;
use fundi_client::{Client, Credentials, user_message};
use fundi_gateway::StaticClient;
use fundi_runtime::{Skill, SkillCard, SkillContext, SkillError, SkillInput, SkillOutput};
use tokio_util::sync::CancellationToken;

/// Upper-cases text; callers need the scope `demo:shout`.
struct Shout;

#[async_trait::async_trait]
impl Skill for Shout {
    fn card(&self) -> SkillCard {
        SkillCard::new("shout", "Upper-cases text")
            .example("hello")
            .scope("demo:shout")
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        ctx.status("shouting").await?;
        Ok(SkillOutput::text(input.message.text().to_uppercase()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = std::env::args().nth(1).unwrap_or_else(|| "hello".into());
    // Credentials made for this run: a client allowed to shout, and one user.
    let (client_token, user_token) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let mut config = AppConfig::default();
    config.store.kind = StoreKind::Memory;
    config.skills.enabled = Vec::new();
    config.auth.static_tokens.clients = BTreeMap::from([(
        "demo".to_owned(),
        StaticClient {
            token: client_token.to_string(),
            scopes: vec!["demo:shout".into()],
        },
    )]);
    config.auth.static_tokens.users = BTreeMap::from([("ann".to_owned(), user_token.to_string())]);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/a2a", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(
        Server::builder()
            .config(config)
            .skill(Shout)
            .serve(listener, shutdown.clone()),
    );

    let fundi = Client::new(&url, "the tokens this program made");
    let ann = Credentials::new(client_token.to_string(), user_token.to_string());
    let task = fundi
        .send_message(&ann, &user_message(&text, None, None), false)
        .await?;
    let said = task.status.message.as_ref().and_then(|m| m.text());
    println!("{:?}: {}", task.status.state, said.unwrap_or_default());
    shutdown.cancel();
    server.await??;
    match task.status.state {
        TaskState::Completed => Ok(()),
        state => Err(format!("the task ended {state:?}").into()),
    }
}
