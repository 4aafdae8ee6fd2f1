//! Client sessions that come back after a restart (docs/BEHAVIOUR.md §14), through rmcp's own
//! mechanism: with a `SessionStore`, rmcp keeps each session's `initialize` after the handshake,
//! and a request naming an id it does not hold in memory is served by a session it makes anew
//! under that id, replaying the kept `initialize` first. This store keeps it in the state dir
//! (`agentty_server::Kept`, which also keeps the session's caller and job table), so the id
//! survives the process.
//!
//! A kept session comes back only to its caller: the gate refuses another caller's request
//! naming it as it refuses an unknown id, and a file that names no caller brings nothing back.

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use agentty_server::Agentty;

/// rmcp's session store, in the state dir.
pub struct Store(pub Agentty);

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let kept = self.0.kept();
        if kept.owner(id).is_none() {
            return Ok(None);
        }
        Ok(kept
            .load_initialize(id)
            .and_then(|state| serde_json::from_value(state).ok()))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.0
            .kept()
            .save_initialize(id, serde_json::to_value(state)?);
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.0
            .kept()
            .forget(&agentty_server::kept::Key::Session(id.to_owned()));
        Ok(())
    }
}
