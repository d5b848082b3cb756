//! The actors behind the runtime: one `Supervisor`, one `TaskActor` per live task.
//! Embedders never see them; `RuntimeHandle` and `SkillContext` talk to them.

mod call;
mod fanout;
mod idle;
mod journal;
mod park;
mod phase;
mod rest;
mod run_task;
mod skill_run;
mod slot_queue;
mod slot_wait;
mod slots;
mod supervisor;
mod supervisor_msg;
mod task_actor;
mod task_msg;
mod task_state;
mod writer;

pub(crate) use call::{NoAnswer, call_actor};
pub(crate) use fanout::{LiveEvents, follower};
pub(crate) use journal::{Creation, NewTask, TaskJournal};
pub(crate) use slots::{Reserved, Slots};
pub(crate) use supervisor::CardTerms;
pub(crate) use supervisor::{Supervisor, SupervisorArgs};
pub(crate) use supervisor_msg::{LiveCount, Routed, Spawn, SupervisorMsg};
pub(crate) use task_msg::{StartMode, TaskMsg};
pub use writer::MAX_QUEUED_MESSAGES;
