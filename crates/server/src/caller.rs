//! Who sent an HTTP request, a leaf every floor may name: sessions, the sandbox's planted-code
//! warnings and the web view tell callers apart by it.

use std::sync::Arc;

/// Who sent an HTTP request: the name of the token it carried. The HTTP listener puts it in the
/// request's extensions; callers without a session are told apart by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller(pub Arc<str>);
