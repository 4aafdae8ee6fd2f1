mod common;
mod output;
mod termination;
