//! The one body type of every reply the listener sends: rmcp's event streams, the view's pages
//! and streams, a reply held for one write (`hold`). Boxed, so each answers with the body it
//! has, and a connection still serves one type.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

pub type Body = BoxBody<Bytes, Infallible>;
