//! `echo`: echoes the user's text. For smoke tests, demos and benchmarks it can also emit
//! progress steps and ask for input first. It is resumable: after a restart it continues
//! from its last checkpoint (the step it reached, the answer it got). Its steps are
//! posted (`SkillContext::post_progress_with_checkpoint`: steps that come faster than
//! the store writes share a commit); `{"waitEachStep": true}` makes each step wait until
//! it is stored instead (`progress_with_checkpoint`). Messages sent while it works are
//! queued (`MessagePolicy::Enqueue`): before each step it echoes those waiting as
//! `working` notes, and a message that arrives after its last step starts its next run.

use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::{
    Artifact, InputRefused, Message, MessagePolicy, Part, Role, Skill, SkillCard, SkillContext,
    SkillError, SkillInput, SkillOutput,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod step_log;
use step_log::StepLog;

/// Largest `steps` a message may ask for.
const MAX_STEPS: u64 = 10_000;
/// Largest `delayMs` a message may ask for.
const MAX_DELAY_MS: u64 = 60_000;
/// Largest `idleS` a message may ask for: a day.
const MAX_IDLE_S: u64 = 86_400;

/// Defaults for messages that carry no data part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct EchoConfig {
    /// Progress events before completing. Default: 0.
    pub steps: u64,
    /// Pause before each progress event, in ms. Default: 0.
    pub delay_ms: u64,
    /// For fault drills: a file each step's start and end are appended to, with the
    /// process that ran it (see `echo/step_log.rs`); a step starts only while this node
    /// still holds the task. Unset (the default): no log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_log: Option<std::path::PathBuf>,
}

/// The `echo` skill.
#[derive(Debug, Clone, Default)]
pub struct EchoSkill {
    config: EchoConfig,
}

impl EchoSkill {
    /// An echo skill with these defaults.
    pub fn new(config: EchoConfig) -> EchoSkill {
        EchoSkill { config }
    }
}

/// What a message asks of echo (its data part), with the configured defaults.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    steps: u64,
    delay: Duration,
    ask_input: bool,
    wait_each_step: bool,
    /// How long to wait idle before the steps.
    idle: Duration,
}

/// What a run has got to, saved as the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Progress {
    #[serde(default)]
    asked: bool,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    step: u64,
    /// When the idle wait ends (ms since the Unix epoch), once it has begun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle_until: Option<u64>,
}

impl EchoSkill {
    fn plan(&self, data: Option<&Value>) -> Result<Plan, SkillError> {
        let number = |key: &str, default: u64, max: u64| -> Result<u64, SkillError> {
            match data.and_then(|d| d.get(key)) {
                None | Some(Value::Null) => Ok(default),
                // Protobuf clients send every JSON number as a double (3 arrives as 3.0).
                Some(v) => whole_number(v).filter(|n| *n <= max).ok_or_else(|| {
                    SkillError::Rejected(format!(
                        "echo: data part field {key:?} must be a whole number from 0 to {max}, got {v}"
                    ))
                }),
            }
        };
        let flag = |key: &str| -> Result<bool, SkillError> {
            match data.and_then(|d| d.get(key)) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(SkillError::Rejected(format!(
                    "echo: data part field {key:?} must be true or false, got {v}"
                ))),
            }
        };
        Ok(Plan {
            steps: number("steps", self.config.steps, MAX_STEPS)?,
            delay: Duration::from_millis(number("delayMs", self.config.delay_ms, MAX_DELAY_MS)?),
            ask_input: flag("askInput")?,
            wait_each_step: flag("waitEachStep")?,
            idle: Duration::from_secs(number("idleS", 0, MAX_IDLE_S)?),
        })
    }
}

/// Waits idle for `idle` once, from the first run that reaches it to the end: its end is
/// in the checkpoint, so a run woken after its task parked for the wait, or resumed
/// after a restart, waits only what is left.
async fn wait_idle(
    ctx: &SkillContext,
    progress: &mut Progress,
    idle: Duration,
) -> Result<(), SkillError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let until = match progress.idle_until {
        Some(until) => until,
        None => {
            let until = now + idle.as_millis() as u64;
            progress.idle_until = Some(until);
            ctx.checkpoint(json!(progress)).await?;
            until
        }
    };
    if until > now {
        ctx.idle(Duration::from_millis(until - now)).await?;
    }
    Ok(())
}

/// A JSON number that is a non-negative whole number, written as an integer or not.
fn whole_number(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        let f = value.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    })
}

#[async_trait]
impl Skill for EchoSkill {
    /// The data part against the schema the card declares.
    fn check(&self, message: &fundi_runtime::Message) -> Result<(), fundi_runtime::InputRefused> {
        crate::schemas::check("echo", message)
    }

    fn card(&self) -> SkillCard {
        SkillCard::new(
            "echo",
            "Echoes the text it is sent. A data part {\"steps\": N, \"delayMs\": M} \
                          makes it report N progress steps M ms apart ({\"waitEachStep\": true}: \
                          each one stored before the next); {\"askInput\": true} makes it ask \
                          for the text first; {\"idleS\": S} makes it wait S seconds idle \
                          before its steps. Messages sent while it works are echoed \
                          before its next step.",
        )
        .name("Echo")
        .tags(["echo", "demo", "test"])
        .examples(["hello"])
        .input_modes(["text/plain", "application/json"])
        .output_modes(["text/plain"])
        .resumable()
        .while_working(MessagePolicy::Enqueue)
        .input_schema(crate::schemas::of("echo").unwrap_or_default())
    }

    /// A narrowing asks for no more steps and no longer a delay than the original did,
    /// and no input question it did not ask.
    fn narrow(&self, original: &Message, narrowed: &Value) -> Result<(), InputRefused> {
        let reason = |e: SkillError| e.to_string();
        let asked = self.plan(original.data()).map_err(reason)?;
        let offered = self.plan(Some(narrowed)).map_err(reason)?;
        if offered.steps > asked.steps {
            return Err(format!(
                "steps {} is more than the {} asked",
                offered.steps, asked.steps
            )
            .into());
        }
        if offered.delay > asked.delay {
            return Err(format!(
                "delayMs {} is longer than the {} asked",
                offered.delay.as_millis(),
                asked.delay.as_millis()
            )
            .into());
        }
        if offered.ask_input && !asked.ask_input {
            return Err("askInput was not asked".into());
        }
        Ok(())
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        // The plan comes from the message this run starts from, or when that has none
        // (an answer, after a restart) from the one that created the task.
        let first = input
            .history
            .iter()
            .find(|m| m.role == Role::User)
            .unwrap_or(&input.message);
        let plan = self.plan(input.message.data().or_else(|| first.data()))?;
        let mut progress: Progress = match &input.checkpoint {
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| SkillError::Failed(format!("echo: unreadable checkpoint: {e}")))?,
            None => Progress::default(),
        };

        let text = if !plan.ask_input {
            input.message.text()
        } else if let Some(answer) = &progress.answer {
            answer.clone()
        } else {
            let answer = if progress.asked && input.resumed {
                // Woken after a restart by the user's answer.
                input.message.text()
            } else {
                progress.asked = true;
                ctx.checkpoint(json!(progress)).await?;
                ctx.request_input("What should I echo?").await?.text()
            };
            progress.answer = Some(answer.clone());
            ctx.checkpoint(json!(progress)).await?;
            answer
        };

        if !plan.idle.is_zero() {
            wait_idle(&ctx, &mut progress, plan.idle).await?;
        }

        let log = self
            .config
            .step_log
            .as_deref()
            .map(|path| StepLog::new(path, &input.task_id));
        while progress.step < plan.steps {
            let logged = match &log {
                Some(log) => {
                    ctx.ensure_still_held().await?;
                    Some(log.start(progress.step + 1)?)
                }
                None => None,
            };
            if plan.delay.is_zero() {
                // No sleep at all: tokio's timer has 1 ms resolution, so even a zero sleep
                // would cost about a millisecond per step.
                if ctx.is_cancelled() {
                    return Err(SkillError::Canceled);
                }
            } else {
                tokio::select! {
                    () = ctx.cancelled() => return Err(SkillError::Canceled),
                    () = tokio::time::sleep(plan.delay) => {}
                }
            }
            // Messages sent meanwhile, echoed as they are taken.
            while let Some(message) = ctx.try_next_message().await? {
                ctx.status(format!("echo: {}", message.text())).await?;
            }
            progress.step += 1;
            let fraction = progress.step as f64 / plan.steps as f64;
            let note = format!("step {} of {}", progress.step, plan.steps);
            if plan.wait_each_step {
                ctx.progress_with_checkpoint(fraction, note, json!(progress))
                    .await?;
            } else {
                ctx.post_progress_with_checkpoint(fraction, note, json!(progress))
                    .await?;
            }
            if let Some(step) = logged {
                step.finish(plan.wait_each_step);
            }
        }

        let reply = Message::agent(vec![Part::text(text.clone())]);
        let artifact = Artifact::new("echo", "echo", vec![Part::text(text)]);
        Ok(SkillOutput {
            message: Some(reply),
            artifacts: vec![artifact],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_takes_defaults_and_refuses_bad_values_by_name() {
        let echo = EchoSkill::new(EchoConfig {
            steps: 3,
            delay_ms: 7,
            step_log: None,
        });
        assert_eq!(
            echo.plan(None).unwrap(),
            Plan {
                steps: 3,
                delay: Duration::from_millis(7),
                ask_input: false,
                wait_each_step: false,
                idle: Duration::ZERO,
            }
        );
        let plan = echo.plan(Some(&json!({"idleS": 3600}))).unwrap();
        assert_eq!(plan.idle, Duration::from_secs(3600));
        let plan = echo
            .plan(Some(&json!({"steps": 5, "delayMs": 0, "askInput": true})))
            .unwrap();
        assert_eq!(
            (plan.steps, plan.ask_input, plan.wait_each_step),
            (5, true, false)
        );
        let plan = echo.plan(Some(&json!({"waitEachStep": true}))).unwrap();
        assert!(plan.wait_each_step);
        // As protobuf clients send them.
        let plan = echo
            .plan(Some(&json!({"steps": 4.0, "delayMs": 20.0})))
            .unwrap();
        assert_eq!((plan.steps, plan.delay), (4, Duration::from_millis(20)));
        for (bad, field) in [
            (json!({"steps": -1}), "steps"),
            (json!({"steps": 10_001}), "steps"),
            (json!({"steps": 2.5}), "steps"),
            (json!({"delayMs": "slow"}), "delayMs"),
            (json!({"askInput": "yes"}), "askInput"),
            (json!({"waitEachStep": 1}), "waitEachStep"),
            (json!({"idleS": 86_401}), "idleS"),
        ] {
            match echo.plan(Some(&bad)) {
                Err(SkillError::Rejected(text)) => assert!(text.contains(field), "{text}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
