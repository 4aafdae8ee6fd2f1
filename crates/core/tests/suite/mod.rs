mod common;
mod jobs;
mod output;
mod pty;
mod spawn;
mod spill;
mod stops;
mod termination;
