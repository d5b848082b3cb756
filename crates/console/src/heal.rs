//! "Heal this" on the issues page: starts a heal of the issue as the viewer would through
//! the API (the heal skill's scope, its input checks), then goes to the new task's page.

use axum::extract::{Path, State};
use axum::response::Response;
use fundi_runtime::{Message, Part, SubmitRequest};
use serde::Deserialize;
use serde_json::json;

use crate::actions::back_to;
use crate::gate::{Change, Csrf};
use crate::issues::heal_skill;
use crate::page::Problem;
use crate::tasks::encode;
use fundi_gateway::AppState;

#[derive(Deserialize)]
pub(super) struct Heal {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    repository: String,
    #[serde(default)]
    site: String,
    #[serde(default)]
    root: String,
}

impl Csrf for Heal {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn heal(
    State(state): State<AppState>,
    Path(issue): Path<String>,
    Change(viewer, form): Change<Heal>,
) -> Result<Response, Problem> {
    let Some(skill) = heal_skill(&state, &viewer) else {
        return Err(Problem::forbidden(
            "healing an issue needs the heal-issue skill on this server and its scope \
             (fundi:heal)",
        ));
    };
    let repository = form.repository.trim();
    if repository.is_empty() {
        return Err(Problem::bad_form(
            "name the repository to heal the issue in",
        ));
    }
    let mut data = json!({"issue": issue, "repository": repository});
    for (key, value) in [("site", form.site.trim()), ("root", form.root.trim())] {
        if !value.is_empty() {
            data[key] = json!(value);
        }
    }
    let mut message = Message::user(vec![Part::text("heal"), Part::data(data)]);
    message.metadata = Some(serde_json::from_value(json!({"skill": skill})).unwrap_or_default());
    let caller = viewer.caller();
    let request = SubmitRequest::new(message)
        .owner(Some(caller.user))
        .client(Some(caller.client))
        .grants(caller.grants);
    let started = state.runtime().submit(request).await?;
    Ok(back_to(&format!(
        "/console/tasks/{}",
        encode(started.task.id.as_str())
    )))
}
