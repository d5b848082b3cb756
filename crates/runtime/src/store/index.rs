//! The listing index the in-process stores keep (memory, sled): one entry per task,
//! ordered by (update time, id), and the page planning they share.

use serde::{Deserialize, Serialize};

use super::{Cursor, ListQuery, StoreError, TaskRecord};
use crate::model::{ContextId, SkillId, TaskId, TaskState, UserId};

/// What listing needs to filter a task without reading its snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// When the task last changed, in milliseconds since the epoch.
    #[serde(rename = "t")]
    pub ts_ms: i64,
    /// The task.
    #[serde(rename = "i")]
    pub task_id: TaskId,
    /// Its context.
    #[serde(rename = "c")]
    pub context_id: ContextId,
    /// Its state's number ([`TaskState::number`]).
    #[serde(rename = "s")]
    pub state: u8,
    /// Who created it.
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<UserId>,
    /// The task's skill; `None` in entries written before the index kept it.
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<SkillId>,
}

impl IndexEntry {
    /// The entry of `record` as it stands.
    pub fn of(record: &TaskRecord) -> IndexEntry {
        IndexEntry {
            ts_ms: record.task.status.timestamp.timestamp_millis(),
            task_id: record.task.id.clone(),
            context_id: record.task.context_id.clone(),
            state: record.state().number(),
            owner: record.owner.clone(),
            skill: Some(record.skill.clone()),
        }
    }

    /// The task's state, if its number is one this build knows.
    pub fn state(&self) -> Option<TaskState> {
        TaskState::from_number(self.state.into())
    }

    fn matches(&self, query: &ListQuery) -> bool {
        query
            .context_id
            .as_ref()
            .is_none_or(|c| c == &self.context_id)
            && query.state.is_none_or(|s| Some(s) == self.state())
            && query.owner.access().sees(self.owner.as_deref())
    }

    /// True when this entry sorts strictly after (is older than) the cursor.
    fn is_past(&self, cursor: &Cursor) -> bool {
        (self.ts_ms, &self.task_id) < (cursor.ts_ms, &cursor.task_id)
    }
}

/// Two streams of entries, each newest first, as one.
pub fn merge_newest_first<'a>(
    a: impl Iterator<Item = Result<IndexEntry, StoreError>> + 'a,
    b: impl Iterator<Item = Result<IndexEntry, StoreError>> + 'a,
) -> impl Iterator<Item = Result<IndexEntry, StoreError>> + 'a {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || {
        let from_a = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) | (Some(Err(_)), _) => true,
            (None, Some(_)) | (_, Some(Err(_))) => false,
            (Some(Ok(x)), Some(Ok(y))) => (x.ts_ms, &x.task_id) >= (y.ts_ms, &y.task_id),
        };
        if from_a { a.next() } else { b.next() }
    })
}

/// The ids of one page, where the next page starts, and the number of matches.
pub struct PagePlan {
    /// The page's tasks with their positions in the listing.
    pub ids: Vec<Cursor>,
    /// Where the next page starts, when there is one.
    pub next: Option<Cursor>,
    /// How many tasks match the query.
    pub total: usize,
}

/// Reads the skill of a task whose index entry does not say it (one written before the
/// index kept skills), for a listing by skill.
pub type SkillOf<'a> = &'a dyn Fn(&TaskId) -> Result<Option<SkillId>, StoreError>;

/// Walks index entries in newest-first order and picks the page the query asks for.
/// One pass: counts every match (for `totalSize`) and stops at `updated_after`. With
/// `known_total` (the store keeps counts), it stops as soon as the page is full.
pub fn plan_page(
    entries: impl Iterator<Item = Result<IndexEntry, StoreError>>,
    query: &ListQuery,
    known_total: Option<usize>,
    skill_of: SkillOf<'_>,
) -> Result<PagePlan, StoreError> {
    let floor = query.updated_after.map(|t| t.timestamp_millis());
    let mut plan = PagePlan {
        ids: Vec::new(),
        next: None,
        total: 0,
    };
    let mut more = false;
    for entry in entries {
        let entry = entry?;
        if floor.is_some_and(|floor| entry.ts_ms < floor) {
            break;
        }
        if !entry.matches(query) {
            continue;
        }
        if let Some(wanted) = &query.skill {
            let skill = match &entry.skill {
                Some(skill) => Some(skill.clone()),
                None => skill_of(&entry.task_id)?,
            };
            if skill.as_ref() != Some(wanted) {
                continue;
            }
        }
        plan.total += 1;
        if query.cursor.as_ref().is_some_and(|c| !entry.is_past(c)) {
            continue;
        }
        if plan.ids.len() < query.limit {
            let position = Cursor {
                ts_ms: entry.ts_ms,
                task_id: entry.task_id,
            };
            plan.next = Some(position.clone());
            plan.ids.push(position);
        } else {
            more = true;
            if known_total.is_some() {
                break;
            }
        }
    }
    if !more {
        plan.next = None;
    }
    if let Some(total) = known_total {
        plan.total = total;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn entry(id: &str, ts_ms: i64, skill: Option<&str>) -> IndexEntry {
        IndexEntry {
            ts_ms,
            task_id: TaskId::from(id),
            context_id: ContextId::from("c"),
            state: TaskState::Completed.number(),
            owner: None,
            skill: skill.map(Into::into),
        }
    }

    #[test]
    fn entries_written_before_skills_were_kept_are_listed_by_their_records_skill() {
        let entries = [
            entry("new-echo", 4, Some("echo")),
            entry("old-echo", 3, None),
            entry("new-audit", 2, Some("audit")),
            entry("old-audit", 1, None),
        ];
        let asked = RefCell::new(Vec::new());
        let skill_of = |id: &TaskId| {
            asked.borrow_mut().push(id.to_string());
            Ok(Some(id.as_str().split('-').nth(1).unwrap().into()))
        };
        let query = ListQuery {
            skill: Some("echo".into()),
            limit: 10,
            ..ListQuery::default()
        };
        let plan = plan_page(entries.into_iter().map(Ok), &query, None, &skill_of).unwrap();
        let ids: Vec<&str> = plan.ids.iter().map(|c| c.task_id.as_str()).collect();
        assert_eq!(ids, ["new-echo", "old-echo"]);
        assert_eq!(plan.total, 2);
        assert_eq!(
            *asked.borrow(),
            ["old-echo", "old-audit"],
            "only entries without a skill are read"
        );
    }

    #[test]
    fn an_entry_without_a_skill_reads_back_from_the_older_encoding() {
        let old = r#"{"t":1,"i":"a","c":"c","s":3}"#;
        let read: IndexEntry = serde_json::from_str(old).unwrap();
        assert_eq!(read.skill, None);
        let written = serde_json::to_string(&entry("a", 1, Some("echo"))).unwrap();
        assert!(written.contains(r#""k":"echo""#), "{written}");
    }
}
