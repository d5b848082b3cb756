//! A listing page filled record by record, each trimmed as the query asks
//! (`history_length`, `without_artifacts`), until the page's byte bound: every store
//! fills its pages the same way, so a page never holds more than the bound (and one
//! record being measured) whatever the tasks hold.

use std::io;

use super::{Cursor, ListPage, ListQuery, TaskRecord};

/// A page being filled, in listing order.
#[derive(Debug)]
pub struct PageFill<'q> {
    query: &'q ListQuery,
    bytes: usize,
    records: Vec<TaskRecord>,
    last: Option<Cursor>,
    full: bool,
}

impl<'q> PageFill<'q> {
    /// An empty page for `query`.
    pub fn new(query: &'q ListQuery) -> PageFill<'q> {
        PageFill {
            query,
            bytes: 0,
            records: Vec::new(),
            last: None,
            full: false,
        }
    }

    /// Adds the record listed at `position`, trimmed as the query asks. Returns false,
    /// leaving it out, when it would take the page past `max_bytes`; the page's first
    /// record is always taken, so that a listing always moves on.
    pub fn push(&mut self, position: Cursor, record: TaskRecord) -> bool {
        if self.full {
            return false;
        }
        let mut record = record;
        record.task.limit_history(self.query.history_length);
        if self.query.without_artifacts {
            record.task.artifacts.clear();
        }
        if let Some(max) = self.query.max_bytes {
            let size = encoded_len(&record);
            if !self.records.is_empty() && self.bytes.saturating_add(size) > max {
                self.full = true;
                return false;
            }
            self.bytes = self.bytes.saturating_add(size);
        }
        self.records.push(record);
        self.last = Some(position);
        true
    }

    /// The page. `next` is where the listing continues after the records the store
    /// walked; a page the bound ended continues after its last record instead.
    pub fn finish(self, next: Option<Cursor>, total: usize) -> ListPage {
        let next = match self.full {
            true => self.last,
            false => next,
        };
        ListPage {
            records: self.records,
            next,
            total,
        }
    }
}

/// The length of a record's task as JSON, counted without writing it anywhere.
fn encoded_len(record: &TaskRecord) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a task that cannot be encoded counts as empty.
    let _ = serde_json::to_writer(&mut counter, &record.task);
    counter.0
}

struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
