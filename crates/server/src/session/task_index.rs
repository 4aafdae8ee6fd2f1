//! A session's tasks (the tasks extension, docs/BEHAVIOUR.md §11): task id → the job it is.
//! The session owns the index; `tasks/ext.rs` answers `tasks/get` and `tasks/cancel` from it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// A session's tasks: task id → the job it is.
#[derive(Default)]
pub(crate) struct TaskIndex {
    pub(crate) entries: Mutex<HashMap<String, Entry>>,
}

/// One task: its job's id, when it was made, and whether `tasks/cancel` stopped it.
pub(crate) struct Entry {
    pub(crate) job: String,
    pub(crate) created: SystemTime,
    pub(crate) cancelled: bool,
}
