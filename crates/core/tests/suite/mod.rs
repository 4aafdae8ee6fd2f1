mod common;
mod jobs;
mod output;
mod pty;
mod termination;
