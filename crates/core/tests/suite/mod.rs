mod common;
mod jobs;
mod output;
mod pty;
mod spill;
mod termination;
